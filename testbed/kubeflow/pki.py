"""A test CA and server certificates made on the fly (cryptography), for the HTTPS endpoint of
the Kubeflow test bed and its TLS faults (another CA, another host, nearly expired)."""
from __future__ import annotations

import dataclasses
import datetime as dt
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclasses.dataclass(frozen=True)
class Issued:
    cert: Path
    key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "gpuconform test bed"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(key, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


class TestCA:
    __test__ = False

    def __init__(self, folder: Path, name: str):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.timezone.utc)
        self.subject = _name(f"gpuconform {name} CA")
        self.cert = (x509.CertificateBuilder().subject_name(self.subject).issuer_name(self.subject)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=30))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                     .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), True)
                     .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), False)
                     .sign(self.key, hashes.SHA256()))
        self.bundle = self.folder / f"{name}-ca.pem"
        self.bundle.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, label: str, names: list[str], *, days: float = 30) -> Issued:
        """A server certificate for ``names`` valid ``days`` more (negative: expired that long ago,
        after a day of validity)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.timezone.utc)
        start = now - dt.timedelta(hours=1) if days > 0 else now + dt.timedelta(days=days - 1)
        alt = [x509.IPAddress(ipaddress.ip_address(n)) if n.replace(".", "").isdigit() else x509.DNSName(n)
               for n in names]
        cert = (x509.CertificateBuilder().subject_name(_name(names[0])).issuer_name(self.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(now + dt.timedelta(days=days))
                .add_extension(x509.SubjectAlternativeName(alt), critical=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), False)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
                .sign(self.key, hashes.SHA256()))
        out = Issued(self.folder / f"{label}.crt", self.folder / f"{label}.key")
        out.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, out.key)
        return out
