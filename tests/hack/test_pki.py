"""The local control plane's certificates pass strict X.509 verification.

Python 3.13's ssl.create_default_context() sets VERIFY_X509_STRICT; with it OpenSSL
rejects a chain whose certificates lack the key identifiers a real cluster's have
("Missing Authority Key Identifier", issue #13). These tests turn the flag on
explicitly so that they prove the same on every Python, and also run the
certificates through cryptography's RFC 5280 path validation.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import sys
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import ExtendedKeyUsageOID, ExtensionOID

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))
from local_cluster.cluster import CLIENTS  # noqa: E402
from local_cluster.pki import PKI  # noqa: E402


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> PKI:
    pki = PKI(tmp_path_factory.mktemp("pki"))
    pki.create(CLIENTS)
    return pki


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def ext(cert: x509.Certificate, oid):
    return cert.extensions.get_extension_for_oid(oid)


def strict(ctx: ssl.SSLContext) -> ssl.SSLContext:
    # What Python 3.13 does by default; set here so Python 3.10-3.12 check the same.
    ctx.verify_flags |= ssl.VERIFY_X509_STRICT
    return ctx


def leaf_files(pki: PKI) -> dict[str, tuple[Path, Path]]:
    files = {stem: pki.client_files(stem) for stem in CLIENTS}
    files["apiserver"] = (pki.serving_crt, pki.serving_key)
    return files


def test_ca_is_a_strict_ca(pki):
    ca = load(pki.ca_crt)
    constraints = ext(ca, ExtensionOID.BASIC_CONSTRAINTS)
    assert constraints.critical and constraints.value.ca
    usage = ext(ca, ExtensionOID.KEY_USAGE)
    assert usage.critical and usage.value.key_cert_sign and usage.value.crl_sign
    ski = ext(ca, ExtensionOID.SUBJECT_KEY_IDENTIFIER).value
    assert ski == x509.SubjectKeyIdentifier.from_public_key(ca.public_key())
    # Self-signed: its authority key identifier is its own key identifier.
    assert ext(ca, ExtensionOID.AUTHORITY_KEY_IDENTIFIER).value.key_identifier == ski.digest


@pytest.mark.parametrize("stem", ["apiserver", *CLIENTS])
def test_every_leaf_names_its_key_and_its_issuer(pki, stem):
    ca = load(pki.ca_crt)
    cert = load(leaf_files(pki)[stem][0])
    ca_ski = ext(ca, ExtensionOID.SUBJECT_KEY_IDENTIFIER).value.digest
    aki = ext(cert, ExtensionOID.AUTHORITY_KEY_IDENTIFIER)
    assert not aki.critical and aki.value.key_identifier == ca_ski
    ski = ext(cert, ExtensionOID.SUBJECT_KEY_IDENTIFIER)
    assert ski.value == x509.SubjectKeyIdentifier.from_public_key(cert.public_key())
    constraints = ext(cert, ExtensionOID.BASIC_CONSTRAINTS)
    assert constraints.critical and not constraints.value.ca
    usage = ext(cert, ExtensionOID.KEY_USAGE)
    assert usage.critical and usage.value.digital_signature and not usage.value.key_cert_sign
    purposes = list(ext(cert, ExtensionOID.EXTENDED_KEY_USAGE).value)
    expected = ExtendedKeyUsageOID.SERVER_AUTH if stem == "apiserver" else ExtendedKeyUsageOID.CLIENT_AUTH
    assert purposes == [expected]
    cert.verify_directly_issued_by(ca)


def test_serving_certificate_names_the_addresses_clients_use(pki):
    san = ext(load(pki.serving_crt), ExtensionOID.SUBJECT_ALTERNATIVE_NAME).value
    assert "localhost" in san.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]


def test_rfc5280_path_validation(pki):
    verification = pytest.importorskip("cryptography.x509.verification")
    ca = load(pki.ca_crt)
    store = verification.Store([ca])
    builder = verification.PolicyBuilder().store(store)
    chain = builder.build_server_verifier(x509.DNSName("localhost")).verify(load(pki.serving_crt), [])
    assert chain[-1] == ca
    ip = x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
    builder.build_server_verifier(ip).verify(load(pki.serving_crt), [])
    # Client certificates are left to the handshake tests: cryptography's client
    # verifier follows the Web PKI and wants a SAN, which Kubernetes client
    # certificates (identity in CN and O) do not have.


def handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext, server_hostname: str) -> str:
    """One TLS handshake over a local socket pair; returns the client's view of the server's CN."""
    server_sock, client_sock = socket.socketpair()
    server_error: list[BaseException] = []

    def serve():
        try:
            with server_ctx.wrap_socket(server_sock, server_side=True) as tls:
                tls.sendall(b"ok")
        except (ssl.SSLError, OSError) as exc:
            server_error.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    server_sock.settimeout(10)
    client_sock.settimeout(10)
    thread.start()
    try:
        with client_ctx.wrap_socket(client_sock, server_hostname=server_hostname) as tls:
            assert tls.recv(2) == b"ok"
            subject = dict(item[0] for item in tls.getpeercert()["subject"])
    finally:
        thread.join(timeout=10)
    assert not server_error, server_error
    return subject["commonName"]


@pytest.mark.parametrize("stem", list(CLIENTS))
@pytest.mark.parametrize("server_hostname", ["127.0.0.1", "localhost"])
def test_mutual_tls_with_strict_verification_on_both_sides(pki, stem, server_hostname):
    server_ctx = strict(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
    server_ctx.load_cert_chain(pki.serving_crt, pki.serving_key)
    server_ctx.load_verify_locations(cafile=pki.ca_crt)
    server_ctx.verify_mode = ssl.CERT_REQUIRED  # as the API server's --client-ca-file does
    client_ctx = strict(ssl.create_default_context(cafile=str(pki.ca_crt)))
    client_ctx.load_cert_chain(*pki.client_files(stem))
    assert handshake(server_ctx, client_ctx, server_hostname) == "kube-apiserver"


def test_strict_check_catches_a_certificate_without_key_identifiers(pki, tmp_path):
    """The handshake test above can fail: a serving cert like the old ones is refused."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), None)
    ca = load(pki.ca_crt)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    old_style = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    crt, keyfile = tmp_path / "old.crt", tmp_path / "old.key"
    crt.write_bytes(old_style.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(crt, keyfile)
    client_ctx = strict(ssl.create_default_context(cafile=str(pki.ca_crt)))
    with pytest.raises(ssl.SSLCertVerificationError, match="Missing Authority Key Identifier"):
        handshake(server_ctx, client_ctx, "localhost")
