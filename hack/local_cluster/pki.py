"""Throw-away certificates for the local control plane.

One CA signs the API server's serving certificate (127.0.0.1 and localhost) and
client certificates (admin is in ``system:masters``; the other components get
their own identities so that RBAC stays realistic). A separate RSA key signs
ServiceAccount tokens. Everything is valid for a week: the cluster is for tests.

The certificates carry the extensions a real cluster's (kubeadm's) do, because
strict verifiers reject chains without them: Python 3.13 turns on OpenSSL's
X509_V_FLAG_X509_STRICT in ssl.create_default_context(), which fails with
"Missing Authority Key Identifier" (and similar) otherwise. Every certificate has
a subject key identifier, every certificate signed by the CA an authority key
identifier, basicConstraints is critical everywhere, and keyUsage names exactly
what each key does.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=7)


def _key():
    # P-256 is fast to generate and accepted by every component.
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attrs = []
    if organization:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs)


def _key_usage(*, digital_signature: bool = False, cert_sign: bool = False) -> x509.KeyUsage:
    # EC keys sign; they never encipher keys, so key_encipherment stays off even on
    # TLS certificates (it only applies to RSA key transport).
    return x509.KeyUsage(
        digital_signature=digital_signature, key_cert_sign=cert_sign, crl_sign=cert_sign,
        content_commitment=False, key_encipherment=False, data_encipherment=False,
        key_agreement=False, encipher_only=False, decipher_only=False,
    )


def _builder(subject: x509.Name, public_key, *, issuer_name: x509.Name, issuer_key) -> x509.CertificateBuilder:
    """A certificate for ``public_key`` with the identifiers strict chain building needs.

    ``issuer_key`` is the signer's public key: the authority key identifier is
    derived from it the same way as the issuer's own subject key identifier, so the
    two match (for the self-signed CA both are its own).
    """
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key), critical=False
        )
    )


def _leaf(subject: x509.Name, public_key, usage, *, ca_name: x509.Name, ca_key) -> x509.CertificateBuilder:
    """An end-entity certificate: not a CA, signs TLS handshakes, for one purpose."""
    return (
        _builder(subject, public_key, issuer_name=ca_name, issuer_key=ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(digital_signature=True), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )


class PKI:
    """Writes and names the certificate files in one directory."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.ca_crt = directory / "ca.crt"
        self.ca_key = directory / "ca.key"
        self.serving_crt = directory / "apiserver.crt"
        self.serving_key = directory / "apiserver.key"
        self.sa_key = directory / "sa.key"
        self.sa_pub = directory / "sa.pub"

    def client_files(self, name: str) -> tuple[Path, Path]:
        return self.dir / f"{name}.crt", self.dir / f"{name}.key"

    def create(self, clients: dict[str, tuple[str, str | None]]) -> None:
        """Create CA, serving cert, SA keys and one client cert per entry.

        ``clients`` maps a file stem to (common name, organization).
        """
        self.dir.mkdir(parents=True, exist_ok=True)
        ca_key = _key()
        ca_name = _name("applyset-local-ca")
        ca = (
            _builder(ca_name, ca_key.public_key(), issuer_name=ca_name, issuer_key=ca_key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(_key_usage(digital_signature=True, cert_sign=True), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        _write_key(self.ca_key, ca_key)
        _write_cert(self.ca_crt, ca)

        serving_key = _key()
        serving = (
            _leaf(_name("kube-apiserver"), serving_key.public_key(), ExtendedKeyUsageOID.SERVER_AUTH,
                  ca_name=ca_name, ca_key=ca_key)
            .add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                        x509.DNSName("localhost"),
                        x509.DNSName("kubernetes.default.svc"),
                    ]
                ),
                critical=False,
            )
            .sign(ca_key, hashes.SHA256())
        )
        _write_key(self.serving_key, serving_key)
        _write_cert(self.serving_crt, serving)

        for stem, (common_name, organization) in clients.items():
            key = _key()
            cert = _leaf(
                _name(common_name, organization), key.public_key(), ExtendedKeyUsageOID.CLIENT_AUTH,
                ca_name=ca_name, ca_key=ca_key,
            ).sign(ca_key, hashes.SHA256())
            crt_path, key_path = self.client_files(stem)
            _write_key(key_path, key)
            _write_cert(crt_path, cert)

        # ServiceAccount token signing key; RSA is what every verifier accepts.
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        _write_key(self.sa_key, sa_key)
        self.sa_pub.write_bytes(
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
