"""The certificate a TLS endpoint serves: does it chain to the CA bundle, does it name the host,
when does it expire. Shared by the cluster library (why the API server refused us) and the
kubeflow library (the served certificate's checks)."""
from __future__ import annotations

import dataclasses
import datetime as dt
import socket
import ssl

from gpuconform.errors import CannotTell


class TlsUnreachable(CannotTell):
    """No TLS connection could be made (network, handshake): the certificate could not be read."""


@dataclasses.dataclass(frozen=True)
class ServedCertificate:
    host: str
    port: int
    subject: str
    issuer: str
    names: tuple[str, ...]          # DNS and IP subject alternative names
    not_after: dt.datetime
    chain_error: str | None         # None: verified against the CA bundle

    def matches(self, host: str) -> bool:
        return any(_name_matches(n, host) for n in self.names)

    def days_left(self, now: dt.datetime | None = None) -> float:
        now = now or dt.datetime.now(dt.timezone.utc)
        return (self.not_after - now).total_seconds() / 86400

    def summary(self) -> str:
        return (f"served by {self.host}:{self.port}\nsubject: {self.subject}\nissuer: {self.issuer}\n"
                f"names: {', '.join(self.names) or 'none'}\nnot after: {self.not_after:%Y-%m-%d %H:%M} UTC\n"
                f"chain: {self.chain_error or 'verified against the CA bundle'}")


def _name_matches(pattern: str, host: str) -> bool:
    pattern, host = pattern.lower().rstrip("."), host.lower().rstrip(".")
    if pattern.startswith("*."):
        head, _, rest = host.partition(".")
        return bool(head) and rest == pattern[2:]
    return pattern == host


def _context(ca_bundle: str | None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=ca_bundle) if ca_bundle else ssl.create_default_context()
    ctx.check_hostname = False  # the name is judged separately, so both faults are reported apart
    return ctx


def _peer_der(host: str, port: int, ctx: ssl.SSLContext, timeout: float) -> bytes:
    with socket.create_connection((host, port), timeout=timeout) as sock:
        with ctx.wrap_socket(sock, server_hostname=host) as tls:
            return tls.getpeercert(binary_form=True)


def served_certificate(host: str, port: int, ca_bundle: str | None, *, timeout: float = 15) -> ServedCertificate:
    """Connect with SNI ``host`` and read the leaf certificate; verify its chain against
    ``ca_bundle`` (None: the system store). Network failures raise :class:`TlsUnreachable`."""
    chain_error = None
    try:
        try:
            der = _peer_der(host, port, _context(ca_bundle), timeout)
        except ssl.SSLCertVerificationError as exc:
            chain_error = exc.verify_message or str(exc)
            insecure = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            insecure.check_hostname = False
            insecure.verify_mode = ssl.CERT_NONE
            der = _peer_der(host, port, insecure, timeout)
    except (OSError, ssl.SSLError) as exc:
        raise TlsUnreachable(f"TLS connection to {host}:{port}: {exc.strerror or exc}") from None
    from cryptography import x509  # here: a run without TLS checks (nodes only) does not load it
    cert = x509.load_der_x509_certificate(der)
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = tuple(san.get_values_for_type(x509.DNSName)) + tuple(
            str(a) for a in san.get_values_for_type(x509.IPAddress))
    except x509.ExtensionNotFound:
        names = ()
    return ServedCertificate(host, port, cert.subject.rfc4514_string(), cert.issuer.rfc4514_string(), names,
                             cert.not_valid_after_utc, chain_error)

