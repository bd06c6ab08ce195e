"""Throw-away PEM certificates for TLS tests: a CA, a broker certificate for 127.0.0.1 and
client certificates, written into a temporary directory (never into the tree)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pki:
    ca: Path
    #: The broker's certificate chain and key in one PEM file (ssl.keystore.location).
    broker: Path
    directory: Path

    def client(self, common_name: str) -> tuple[Path, Path]:
        """A client certificate and key signed by the CA, subject ``CN=..,O=kafkagen``."""
        return _issue(self.directory, common_name, self._ca_key(), self._ca_cert(), False)

    def _ca_key(self) -> ec.EllipticCurvePrivateKey:
        key = serialization.load_pem_private_key((self.directory / "ca.key").read_bytes(), None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        return key

    def _ca_cert(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.ca.read_bytes())


def _name(cn: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafkagen"),
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
        ]
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _issue(
    directory: Path,
    cn: str,
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    server: bool,
) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    cert = builder.sign(ca_key, hashes.SHA256())
    cert_path, key_path = directory / f"{cn}.crt", directory / f"{cn}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(_key_pem(key))
    return cert_path, key_path


def make_pki(directory: Path) -> Pki:
    ca_key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("test-ca"))
        .issuer_name(_name("test-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    ca = directory / "ca.crt"
    ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    (directory / "ca.key").write_bytes(_key_pem(ca_key))
    cert, key = _issue(directory, "broker", ca_key, ca_cert, True)
    broker = directory / "broker.pem"
    broker.write_bytes(cert.read_bytes() + key.read_bytes())
    return Pki(ca, broker, directory)
