"""Certificates made on the fly for a loopback control plane (ECDSA P-256, one CA).

Files written under ``<state>/pki``: ca, apiserver (serving), admin (system:masters),
kube-controller-manager, kube-scheduler, apiserver-kubelet-client, kwok (kubelet serving),
and the service-account signing key pair ``sa.key``/``sa.pub``.
"""
from __future__ import annotations

import dataclasses
import datetime
import ipaddress
from pathlib import Path

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
except ImportError:  # the real GPU node's payload carries its certificates issued (testbed/gpunode)
    x509 = None

VALIDITY = datetime.timedelta(days=7)


@dataclasses.dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


class PKI:
    def __init__(self, directory: Path):
        if x509 is None:
            raise RuntimeError("issuing certificates needs the cryptography package")
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.timezone.utc)
        self._not_before = now - datetime.timedelta(minutes=5)
        self._not_after = now + VALIDITY
        self._ca_key = ec.generate_private_key(ec.SECP256R1())
        self._ca_cert = (
            x509.CertificateBuilder()
            .subject_name(_name("gpuconform-testbed-ca"))
            .issuer_name(_name("gpuconform-testbed-ca"))
            .public_key(self._ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._not_before)
            .not_valid_after(self._not_after)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .sign(self._ca_key, hashes.SHA256())
        )
        self.ca = Pair(self.dir / "ca.crt", self.dir / "ca.key")
        self.ca.cert.write_bytes(self._ca_cert.public_bytes(serialization.Encoding.PEM))
        _write_key(self._ca_key, self.ca.key)

    def issue(self, name: str, cn: str, org: str | None = None, *, server: bool = False,
              client: bool = False, hosts: tuple[str, ...] = ()) -> Pair:
        key = ec.generate_private_key(ec.SECP256R1())
        usages = []
        if server:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(cn, org))
            .issuer_name(self._ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._not_before)
            .not_valid_after(self._not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        if hosts:
            sans: list[x509.GeneralName] = []
            for h in hosts:
                try:
                    sans.append(x509.IPAddress(ipaddress.ip_address(h)))
                except ValueError:
                    sans.append(x509.DNSName(h))
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._ca_key, hashes.SHA256())
        pair = Pair(self.dir / f"{name}.crt", self.dir / f"{name}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, pair.key)
        return pair

    def service_account_keys(self) -> Pair:
        key = ec.generate_private_key(ec.SECP256R1())
        pair = Pair(self.dir / "sa.pub", self.dir / "sa.key")
        _write_key(key, pair.key)
        pair.cert.write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        return pair


def kubeconfig(server: str, ca: Path, client: Pair, user: str) -> str:
    """A kubeconfig with file references (absolute paths), one cluster/user/context."""
    return (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        "- name: gpuconform-testbed\n"
        "  cluster:\n"
        f"    server: {server}\n"
        f"    certificate-authority: {ca.resolve()}\n"
        "users:\n"
        f"- name: {user}\n"
        "  user:\n"
        f"    client-certificate: {client.cert.resolve()}\n"
        f"    client-key: {client.key.resolve()}\n"
        "contexts:\n"
        "- name: gpuconform-testbed\n"
        "  context:\n"
        "    cluster: gpuconform-testbed\n"
        f"    user: {user}\n"
        "current-context: gpuconform-testbed\n"
    )
