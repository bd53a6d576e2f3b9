"""End to end over HTTPS: Debian's nginx terminates TLS in front of a real relay with certificates
from a throwaway certificate authority the test makes, and every client of ours checks them.

- The CLI (AsyncHTTPClient for requests, its own WebSocket client for `wss://`) trusts the test
  CA only when it is named the documented way, `SSL_CERT_FILE`; then friends share, message and
  go live over `https://` and `wss://`. Without it, and for a certificate with the wrong host
  name, an expired one and a self-signed one, every command refuses with one clear line that
  says which — and so does `coords watch` for the live channel.
- The Python host (`coordscore.transport`) does the same with Python's default SSL context.
- The relay's push deliveries go to an `https://` endpoint checked against `SSL_CERT_FILE`.
- The relay reaches PostgreSQL with `sslmode=verify-full` and `sslrootcert` (the trust store
  for a database), and a certificate that does not match is refused in one line.
"""
import datetime
import ipaddress
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from e2e_support import BIN, ROOT, Nginx, Relay, alice_and_bob, coords, data, free_port, passphrase_env
from test_live import Running
from test_push import Receiver

UTC = datetime.timezone.utc
DAY = datetime.timedelta(days=1)


def _name(common_name):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(path, *pems):
    with open(path, "wb") as f:
        f.write(b"".join(pems))
    os.chmod(path, 0o600)
    return str(path)


class Authority:
    """A certificate authority that exists for one test: its certificate is `self.path`."""

    def __init__(self, directory):
        self.dir = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(UTC)
        self.certificate = (
            x509.CertificateBuilder().subject_name(_name("Coords test CA")).issuer_name(_name("Coords test CA"))
            .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - DAY).not_valid_after(now + 2 * DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256()))
        self.path = _write(os.path.join(directory, "ca.pem"), self.certificate.public_bytes(serialization.Encoding.PEM))

    def issue(self, label, names=("localhost",), addresses=("127.0.0.1",), valid=(-DAY, 2 * DAY), self_signed=False):
        """A server certificate and key (PEM files) for `names` and `addresses`, valid from now +
        valid[0] to now + valid[1]; signed by this authority, or by its own key."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(UTC)
        issuer_key, issuer_name = (key, _name(label)) if self_signed else (self.key, self.certificate.subject)
        alternative = [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
        builder = (
            x509.CertificateBuilder().subject_name(_name(label)).issuer_name(issuer_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now + valid[0]).not_valid_after(now + valid[1])
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName(alternative), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False))
        certificate = builder.sign(issuer_key, hashes.SHA256())
        certificate_path = _write(os.path.join(self.dir, f"{label}.crt"), certificate.public_bytes(serialization.Encoding.PEM))
        key_path = _write(os.path.join(self.dir, f"{label}.key"), key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        return certificate_path, key_path


# What each refused certificate looks like, and the words the one line must contain.
BAD = {
    "wrong-name": (dict(names=("relay.invalid",), addresses=()), "is not valid for localhost"),
    "expired": (dict(valid=(-30 * DAY, -10 * DAY)), "expired on"),
    "self-signed": (dict(self_signed=True), "is self-signed"),
}


@pytest.fixture(scope="module")
def authority(tmp_path_factory):
    return Authority(str(tmp_path_factory.mktemp("ca")))


@pytest.fixture(scope="module")
def relay(tmp_path_factory):
    with Relay(str(tmp_path_factory.mktemp("relay") / "data"), args=["--rate", "0", "--key-rate", "0", "--trust-forwarded-for"]) as running:
        yield running


def trusting(authority):
    """The CLI's environment with the test CA added the documented way."""
    return passphrase_env(SSL_CERT_FILE=authority.path)


def without_ca():
    env = passphrase_env()
    env.pop("SSL_CERT_FILE", None)
    env.pop("SSL_CERT_DIR", None)
    return env


def refused_everywhere(env, home, url, words):
    """A home on `url` whose relay's certificate is refused: `share` queues and says why, `inbox`
    fails with a line per request that says why, and `coords watch` reports the live channel's
    refusal the same way — each a single line, with `words` in it and nothing else to decode."""
    coords(env, home, "init", "--server", url, "--name", "Carol")  # init does not contact the relay
    shared = coords(env, home, "share", "--lat", "-33.8688", "--lon", "151.2093", expect=75)
    assert words in shared.stdout and "queued" in shared.stdout, shared.stdout
    inbox = coords(env, home, "inbox", expect=69)
    lines = [line for line in inbox.stderr.splitlines() if line.strip()]
    assert lines and all(words in line and line.startswith("coords: ") for line in lines), inbox.stderr
    assert "\x1b" not in inbox.stderr and "NIOSSL" not in inbox.stderr and "BoringSSL" not in inbox.stderr, inbox.stderr
    watch = Running(env, home, "watch", "--interval", "3600")
    try:
        line, _ = watch.wait_for("Live connection to " + url, timeout=20)
        assert words in line, line
    finally:
        watch.stop()


def test_friends_share_message_and_go_live_over_https_and_wss(authority, relay, tmp_path):
    env = trusting(authority)
    with Nginx([relay.port], tls=authority.issue("good")) as proxy:
        assert proxy.url.startswith("https://localhost:")
        alice, bob = alice_and_bob(env, tmp_path, proxy.url)
        coords(env, alice, "share", "--lat", "-33.8688", "--lon", "151.2093")
        seen = data(env, bob, "fetch")
        assert [round(f["location"]["latitude"], 4) for f in seen["friends"]] == [-33.8688], seen
        coords(env, alice, "send", "Bob", "over TLS")
        assert [m["text"] for m in data(env, bob, "inbox")["received"]] == ["over TLS"]
        watch = Running(env, bob, "watch", "--interval", "3600")
        try:
            watch.wait_for("Live: watching 1 friend and your mailbox on " + proxy.url, timeout=20)
            coords(env, alice, "share", "--lat", "47.3769", "--lon", "8.5417")
            line, _ = watch.wait_for("Alice is at 47.37690, 8.54170", timeout=10)
            assert "(live)" in line, line
            coords(env, alice, "send", "Bob", "live over wss")
            watch.wait_for("live over wss", timeout=10)
        finally:
            watch.stop()


def test_without_the_ca_named_every_request_is_refused_and_nothing_is_lost(authority, relay, tmp_path):
    env = trusting(authority)
    with Nginx([relay.port], tls=authority.issue("good-too")) as proxy:
        refused_everywhere(without_ca(), tmp_path / "carol", proxy.url, "issued by an authority this computer does not trust")
        unreadable = coords(passphrase_env(SSL_CERT_FILE=str(tmp_path / "missing.pem")), tmp_path / "carol", "inbox", expect=69)
        assert "SSL_CERT_FILE names" in unreadable.stderr and "missing.pem" in unreadable.stderr, unreadable.stderr
        # Trusted again, the queued share goes out: nothing was lost meanwhile.
        assert "delivered" in coords(env, tmp_path / "carol", "outbox", "flush").stdout


@pytest.mark.parametrize("label", sorted(BAD))
def test_a_refused_certificate_is_named_in_one_line(authority, relay, tmp_path, label):
    spec, words = BAD[label]
    with Nginx([relay.port], tls=authority.issue(label, **spec)) as proxy:
        refused_everywhere(trusting(authority), tmp_path / "carol", proxy.url, words)


def test_push_wakes_go_to_an_https_endpoint_the_relay_checks(authority, tmp_path, monkeypatch):
    receiver = Receiver(tls=authority.issue("push"))
    rogue = Receiver(tls=authority.issue("push-self-signed", self_signed=True))
    monkeypatch.setenv("SSL_CERT_FILE", authority.path)  # the relay process inherits it
    env = trusting(authority)
    try:
        with Relay(str(tmp_path / "relay"), args=["--push-allow-loopback"]) as relay:
            alice, bob = alice_and_bob(env, tmp_path, relay.url)
            data(env, bob, "push", "register", receiver.url)
            coords(env, alice, "send", "Bob", "wake up")
            receiver.wait(1)
            assert [(path, body) for path, _, body in receiver.hits] == [("/up/bob-token", b'{"type":"coords-wake"}')]
            data(env, bob, "push", "register", rogue.url)  # accepted: only a delivery meets the certificate
            coords(env, alice, "send", "Bob", "again")
            deadline = time.time() + 30  # wakes are 5 s apart at least
            while "the push endpoint's certificate is self-signed" not in relay.log() and time.time() < deadline:
                time.sleep(0.1)
            assert "the push endpoint's certificate is self-signed" in relay.log()
            assert rogue.hits == []
    finally:
        receiver.close()
        rogue.close()


def test_the_python_host_checks_the_relay_certificate(authority, relay, monkeypatch):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from coordscore import Request
    from coordscore.transport import CertificateRefused, send

    def version(url):
        return send(Request(url + "/api/version", "GET", {}, "", max_response_bytes=4096))

    with Nginx([relay.port], tls=authority.issue("python")) as proxy:
        monkeypatch.setenv("SSL_CERT_FILE", authority.path)  # Python's default context reads it
        answer = version(proxy.url)
        assert answer.status == 200 and b"version" in answer.body
        monkeypatch.delenv("SSL_CERT_FILE")
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        with pytest.raises(CertificateRefused, match="issued by an authority this computer does not trust; .*SSL_CERT_FILE"):
            version(proxy.url)
    monkeypatch.setenv("SSL_CERT_FILE", authority.path)
    for label, (spec, words) in sorted(BAD.items()):
        with Nginx([relay.port], tls=authority.issue("python-" + label, **spec)) as proxy:
            with pytest.raises(CertificateRefused) as refused:
                version(proxy.url)
            assert words.replace("expired on", "has expired") in str(refused.value), str(refused.value)
            assert str(refused.value).count("\n") == 0


def test_the_relay_reaches_postgresql_with_verify_full_and_sslrootcert(tmp_path):
    pg = os.path.join(ROOT, "scripts", "pg-test-server.sh")
    directory = tempfile.mkdtemp(prefix="coords-pg-")  # not under tmp_path: the server runs as "postgres"
    url = subprocess.run([pg, "start", directory, str(free_port()), str(os.getpid())], capture_output=True, text=True,
                         check=True).stdout.strip()
    try:
        # The test server's certificate is self-signed for 127.0.0.1 and localhost: as its own root it verifies.
        with open(os.path.join(directory, "data", "server.crt"), "rb") as f:
            root = _write(str(tmp_path / "pg-root.pem"), f.read())
        with Relay(str(tmp_path / "relay-pg"), args=["--postgres", f"{url}?sslmode=verify-full&sslrootcert={root}"]) as verified:
            env = passphrase_env()
            alice, bob = alice_and_bob(env, tmp_path, verified.url)
            coords(env, alice, "share", "--lat", "10", "--lon", "20")
            assert [f["location"]["latitude"] for f in data(env, bob, "fetch")["friends"]] == [10]
        # An authority that did not sign the database's certificate: refused in one line, naming why.
        other = Authority(str(tmp_path))
        refused = subprocess.run([os.path.join(BIN, "coords-relay"), "--port", str(free_port()), "--postgres",
                                  f"{url}?sslmode=verify-full&sslrootcert={other.path}"],
                                 capture_output=True, text=True, timeout=60)
        assert refused.returncode != 0
        assert "PostgreSQL's certificate is self-signed" in refused.stderr + refused.stdout, refused.stderr + refused.stdout
        missing = subprocess.run([os.path.join(BIN, "coords-relay"), "--port", str(free_port()), "--postgres",
                                  f"{url}?sslmode=verify-ca&sslrootcert={tmp_path / 'none.pem'}"],
                                 capture_output=True, text=True, timeout=60)
        assert missing.returncode != 0 and "sslrootcert names" in missing.stderr + missing.stdout, missing.stderr
    finally:
        subprocess.run([pg, "kill", directory], capture_output=True, timeout=60)
        shutil.rmtree(directory, ignore_errors=True)
