"""The push gateway (PROTOCOL.md §8.8, docs/PUSH.md) against stand-ins for APNs, Google's OAuth2
token endpoint and FCM that speak the providers' published protocols (tests/e2e/fake_providers.py:
Debian's nginx for TLS and HTTP/2, the checks and answers in Python).

- Each provider gets a correctly signed, content-free wake; APNs over HTTP/2.
- Every documented answer: gone tokens (APNs 410, 400 BadDeviceToken / DeviceTokenNotForTopic;
  FCM 404 UNREGISTERED, 400 naming message.token, 403 SENDER_ID_MISMATCH) answer 404; 429 and 5xx
  are retried (Retry-After honoured, bounded) and answer 502 once attempts run out; an expired
  provider token is replaced once, then the wake retried; setup errors answer 502 unretried.
- Provider tokens: the APNs JWT is signed anew after --apns-token-refresh; the FCM access token is
  obtained once for many wakes and again before it expires.
- Hostile input (big bodies, other methods, forged, damaged and other gateways' tokens, floods
  per token and per relay address) is refused before any provider hears of it.
- End to end: relays with mailboxes registered to the gateway (`coords push register --gateway`),
  behind the shipped deploy/nginx/coords-push-gateway.conf with TLS; a message posted; the fake
  APNs and FCM each receive exactly one wake with no content, and the relay never saw the device
  token.
"""
import base64
import http.client
import json
import os
import secrets
import ssl
import subprocess
import sys
import time

import pytest

from e2e_support import BIN, ROOT, Nginx, Relay, alice_and_bob, coords, data, free_port, passphrase_env
from fake_providers import KEY_ID, PROJECT, TEAM_ID, TOPIC, Providers, fcm_error
from test_https import Authority

sys.path.insert(0, os.path.join(ROOT, "python"))
import coordscore as cc  # noqa: E402

GATEWAY = os.path.join(BIN, "coords-push-gateway")
APNS_DEVICE = "ab" * 32
FCM_DEVICE = "fcm-registration:" + "x" * 40


class Gateway:
    """`coords-push-gateway serve` on a loopback port with the providers' credentials; it trusts
    the test CA through SSL_CERT_FILE as a deployment would trust the system's."""

    def __init__(self, directory, providers, authority, args=(), key=None):
        self.dir, self.port, self.process = directory, free_port(), None
        self.key = key or os.path.join(directory, "gateway.key")
        if not os.path.exists(self.key):
            subprocess.run([GATEWAY, "keygen", self.key], check=True, capture_output=True)
        self.public_key = subprocess.run([GATEWAY, "public-key", self.key], check=True, capture_output=True, text=True).stdout.strip()
        credentials = providers.credentials
        self.command = [
            GATEWAY, "serve", "--port", str(self.port), "--key", self.key,
            "--apns-key", credentials.p8, "--apns-key-id", KEY_ID, "--apns-team-id", TEAM_ID, "--apns-topic", TOPIC,
            "--apns-url", providers.url, "--apns-development-url", providers.url,
            "--fcm-service-account", credentials.service_account, "--fcm-url", providers.url, *args]
        self.env = dict(os.environ, SSL_CERT_FILE=authority.path)
        self.log_path = os.path.join(directory, "gateway.log")

    def __enter__(self):
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(self.command, env=self.env, stdout=log, stderr=log)
        deadline = time.time() + 20
        while time.time() < deadline:
            assert self.process.poll() is None, self.log()
            try:
                if self.get("/healthz")[0] == 200:
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the gateway did not start: " + self.log())

    def __exit__(self, *exc):
        self.process.terminate()
        assert self.process.wait(timeout=15) == 0, self.log()

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def request(self, method, path, body=b"", headers=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        answer = (response.status, dict(response.getheaders()), response.read())
        connection.close()
        return answer

    def get(self, path):
        return self.request("GET", path)

    def wake(self, token, body=b'{"type":"coords-wake"}', headers=None):
        status, headers, answer = self.request("POST", "/up/" + token, body, dict({"Content-Type": "application/json"}, **(headers or {})))
        return status, headers, json.loads(answer) if answer else None

    def token(self, platform, device, environment=None, key=None):
        endpoint = cc.push_gateway_endpoint("https://gateway.example", key or self.public_key, platform, device, environment)
        return endpoint.rsplit("/", 1)[1]

    def metrics(self):
        return self.get("/metrics")[2].decode()


@pytest.fixture(scope="module")
def authority(tmp_path_factory):
    return Authority(str(tmp_path_factory.mktemp("ca")))


@pytest.fixture
def providers(tmp_path, authority):
    running = Providers(str(tmp_path), authority)
    yield running
    running.close()
    assert running.violations == [], running.violations


def test_each_provider_gets_one_signed_wake_with_no_content(tmp_path, providers, authority):
    with Gateway(str(tmp_path), providers, authority) as gateway:
        assert gateway.get("/v1/gateway/key")[2] == json.dumps({"key": gateway.public_key}, separators=(",", ":")).encode()
        assert gateway.wake(gateway.token("apns", APNS_DEVICE))[:1] == (200,)
        assert gateway.wake(gateway.token("apns", "cd" * 32, "development"))[0] == 200
        assert gateway.wake(gateway.token("fcm", FCM_DEVICE))[0] == 200
        apns = providers.of("apns")
        assert [r["device"] for r in apns] == [APNS_DEVICE, "cd" * 32]
        for request in apns:
            assert request["protocol"] == "HTTP/2.0"
            assert json.loads(request["body"]) == {"aps": {"content-available": 1}}
            assert request["headers"]["apns-collapse-id"] == "coords-wake"
            assert abs(int(request["headers"]["apns-expiration"]) - (time.time() + 86400)) < 120
            header, claims = request["jwt"]
            assert header == {"alg": "ES256", "kid": KEY_ID} and abs(claims["iat"] - time.time()) < 60
        assert apns[0]["headers"]["authorization"] == apns[1]["headers"]["authorization"]  # one provider token, reused
        [oauth] = providers.of("oauth")
        assert oauth["jwt"][0] == {"alg": "RS256", "kid": providers.credentials.fcm_key_id, "typ": "JWT"}
        [fcm] = providers.of("fcm")
        assert json.loads(fcm["body"]) == {"message": {"token": FCM_DEVICE, "data": {"type": "coords-wake"},
                                                       "android": {"priority": "HIGH", "collapse_key": "coords-wake", "ttl": "86400s"}}}
        metrics = gateway.metrics()
        assert 'coords_gateway_wakes_total{result="delivered",status="200"} 3' in metrics, metrics
        assert 'coords_gateway_provider_tokens_made_count{provider="apns"} 1' in metrics, metrics
        assert APNS_DEVICE not in gateway.log() and FCM_DEVICE not in gateway.log()


GONE = [
    ("apns", APNS_DEVICE, (410, {"reason": "Unregistered", "timestamp": 1700000000000}, {})),
    ("apns", APNS_DEVICE, (400, {"reason": "BadDeviceToken"}, {})),
    ("apns", APNS_DEVICE, (400, {"reason": "DeviceTokenNotForTopic"}, {})),
    ("fcm", FCM_DEVICE, (404, fcm_error(404, "NOT_FOUND", "UNREGISTERED"), {})),
    ("fcm", FCM_DEVICE, (400, fcm_error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", token_field=True), {})),
    ("fcm", FCM_DEVICE, (403, fcm_error(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH"), {})),
]


def test_every_documented_answer_maps_to_what_the_relay_acts_on(tmp_path, providers, authority):
    with Gateway(str(tmp_path), providers, authority, args=["--rate-per-token", "0"]) as gateway:
        for platform, device, answer in GONE:  # the device is gone: 404, the relay drops it; never retried
            providers.script[device] = [answer]
            before = len(providers.of(platform))
            status, _, body = gateway.wake(gateway.token(platform, device))
            assert (status, body["error"]) == (404, "device_gone"), (answer, body)
            assert len(providers.of(platform)) == before + 1

        # 429 with Retry-After, then 503: retried after the pause asked for, then delivered.
        providers.script[APNS_DEVICE] = [(429, {"reason": "TooManyRequests"}, {"Retry-After": "1"}),
                                         (503, {"reason": "ServiceUnavailable"}, {})]
        started, before = time.time(), len(providers.of("apns"))
        assert gateway.wake(gateway.token("apns", APNS_DEVICE))[0] == 200
        assert len(providers.of("apns")) == before + 3 and time.time() - started >= 1.0
        # 5xx on every attempt: 502 with Retry-After after three attempts.
        providers.script[FCM_DEVICE] = [(500, fcm_error(500, "INTERNAL", "INTERNAL"), {})] * 3
        before = len(providers.of("fcm"))
        status, headers, body = gateway.wake(gateway.token("fcm", FCM_DEVICE))
        assert (status, body["error"]) == (502, "provider_unavailable") and int(headers["Retry-After"]) >= 1
        assert len(providers.of("fcm")) == before + 3
        # A Retry-After past the gateway's deadline is not waited out: handed to the relay.
        providers.script[FCM_DEVICE] = [(429, fcm_error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"), {"Retry-After": "120"})]
        started = time.time()
        status, headers, _ = gateway.wake(gateway.token("fcm", FCM_DEVICE))
        assert (status, headers["Retry-After"]) == (502, "120") and time.time() - started < 5
        # The gateway's own setup refused: 502, not retried, not dropped.
        providers.script[APNS_DEVICE] = [(400, {"reason": "BadTopic"}, {})]
        before = len(providers.of("apns"))
        status, _, body = gateway.wake(gateway.token("apns", APNS_DEVICE))
        assert (status, body["error"]) == (502, "provider_refused") and len(providers.of("apns")) == before + 1

        # An expired provider token: a new one once, then the wake goes through.
        providers.script[APNS_DEVICE] = [(403, {"reason": "ExpiredProviderToken"}, {})]
        time.sleep(1.1)  # the token in use is older than a second: replaced, not reused
        before = len(providers.of("apns"))
        assert gateway.wake(gateway.token("apns", APNS_DEVICE))[0] == 200
        first, second = providers.of("apns")[before:]
        assert first["headers"]["authorization"] != second["headers"]["authorization"]
        # Expired twice in a row: refreshed once only, then 502.
        time.sleep(1.1)
        providers.script[APNS_DEVICE] = [(403, {"reason": "ExpiredProviderToken"}, {})] * 2
        before = len(providers.of("apns"))
        assert gateway.wake(gateway.token("apns", APNS_DEVICE))[0] == 502
        assert len(providers.of("apns")) == before + 2

        # FCM's access token revoked: 401, a new one from the token endpoint once, then delivered.
        oauth_before = len(providers.of("oauth"))
        providers.expire_access_tokens()
        time.sleep(1.1)
        assert gateway.wake(gateway.token("fcm", FCM_DEVICE))[0] == 200
        assert len(providers.of("oauth")) == oauth_before + 1
        # The token endpoint refuses the service account: 502, nothing sent to FCM.
        providers.expire_access_tokens()
        time.sleep(1.1)
        providers.script["oauth"] = [(400, {"error": "invalid_grant"}, {})] * 2
        before = len(providers.of("fcm"))
        assert gateway.wake(gateway.token("fcm", FCM_DEVICE))[0] == 502
        assert len(providers.of("fcm")) == before + 1  # the 401 that started it; no send without a token

        metrics = gateway.metrics()
        for line in ['coords_gateway_provider_errors_total{provider="apns",reason="Unregistered"} 1',
                     'coords_gateway_provider_errors_total{provider="fcm",reason="UNREGISTERED"} 1',
                     'coords_gateway_provider_errors_total{provider="apns",reason="ExpiredProviderToken"} 3',
                     'coords_gateway_provider_errors_total{provider="fcm",reason="oauth_invalid_grant"}',
                     'coords_gateway_wakes_total{result="device_gone",status="404"} 6']:
            assert line in metrics, (line, metrics)


def test_provider_tokens_are_renewed_before_they_expire(tmp_path, authority):
    providers = Providers(str(tmp_path), authority, token_lifetime=4)  # FCM access tokens of 4 s
    try:
        with Gateway(str(tmp_path), providers, authority, args=["--apns-token-refresh", "2", "--rate-per-token", "0"]) as gateway:
            apns, fcm = gateway.token("apns", APNS_DEVICE), gateway.token("fcm", FCM_DEVICE)
            for _ in range(3):
                assert gateway.wake(apns)[0] == 200 and gateway.wake(fcm)[0] == 200
            time.sleep(2.5)  # past the APNs refresh age, and past half the access token's life
            assert gateway.wake(apns)[0] == 200 and gateway.wake(fcm)[0] == 200
            tokens = [r["headers"]["authorization"] for r in providers.of("apns")]
            assert tokens[:3] == [tokens[0]] * 3 and tokens[3] != tokens[0]
            assert len(providers.of("oauth")) == 2  # one for the first three wakes, one renewed early
            assert all(r["headers"]["authorization"] for r in providers.of("fcm"))
            assert 'coords_gateway_provider_tokens_made_count{provider="fcm"} 2' in gateway.metrics()
    finally:
        providers.close()
    assert providers.violations == [], providers.violations


def test_hostile_input_is_refused_before_any_provider_hears_of_it(tmp_path, providers, authority):
    args = ["--rate-per-token", "6", "--rate-per-address", "600"]
    with Gateway(str(tmp_path), providers, authority, args=args) as gateway:
        token = gateway.token("apns", APNS_DEVICE)
        assert gateway.wake(token, body=b"x" * 1025)[0] == 413
        assert gateway.wake(token, body=b"x" * 100_000)[0] == 413
        assert gateway.request("GET", "/up/" + token)[0] == 405
        assert gateway.request("DELETE", "/up/" + token)[0] == 405
        other = os.path.join(str(tmp_path), "other.key")
        subprocess.run([GATEWAY, "keygen", other], check=True, capture_output=True)
        other_public = subprocess.run([GATEWAY, "public-key", other], check=True, capture_output=True, text=True).stdout.strip()
        flipped = token[:100] + ("A" if token[100] != "A" else "B") + token[101:]
        forged = [secrets.token_urlsafe(560)[:747], token[:-1], token + "A", flipped, "", "../metrics",
                  gateway.token("apns", APNS_DEVICE, key=other_public), "%00" * 10, "A" * 747]
        for bad in forged:
            status, _, body = gateway.wake(bad)
            # No route (an empty or dotted path): 404 or 405 with nothing to say; a token: unknown_token.
            assert status in (404, 405) and (body is None or body["error"] in ("unknown_token", "method_not_allowed")), (bad, status, body)
        assert providers.requests == []  # nothing reached a provider

        # Per device: six a minute; the seventh (a fresh sealing of the same token) waits.
        statuses = [gateway.wake(gateway.token("apns", APNS_DEVICE))[0] for _ in range(12)]
        assert statuses.count(200) == 10 and statuses[-1] == 429, statuses  # the burst of 10, then limited
        status, headers, body = gateway.wake(token)
        assert status == 429 and body["error"] == "token_rate_limited" and int(headers["Retry-After"]) >= 1
        assert len(providers.of("apns")) == 10
    # Per relay address: a burst, then 429 for that address only.
    with Gateway(os.path.join(str(tmp_path)), providers, authority, key=os.path.join(str(tmp_path), "gateway.key"),
                 args=["--rate-per-address", "1", "--rate-per-token", "0"]) as gateway:
        seen = len(providers.requests)
        statuses = [gateway.wake("A" * 747)[0] for _ in range(620)]
        assert statuses.count(404) == 600 and statuses[-1] == 429, statuses.count(429)
        assert len(providers.requests) == seen


def test_the_gateway_refuses_credentials_it_cannot_use_in_one_line(tmp_path, providers, authority):
    key = os.path.join(str(tmp_path), "gateway.key")
    subprocess.run([GATEWAY, "keygen", key], check=True, capture_output=True)
    again = subprocess.run([GATEWAY, "keygen", key], capture_output=True, text=True)
    assert again.returncode == 73 and "never overwritten" in again.stderr
    os.chmod(providers.credentials.p8, 0o644)
    gateway = Gateway(str(tmp_path), providers, authority)
    run = subprocess.run(gateway.command, env=gateway.env, capture_output=True, text=True, timeout=30)
    assert run.returncode == 78 and "can be read by other users" in run.stderr and "chmod 600" in run.stderr, run.stderr
    os.chmod(providers.credentials.p8, 0o600)
    with open(providers.credentials.p8, "w") as f:
        f.write("not a key")
    run = subprocess.run(gateway.command, env=gateway.env, capture_output=True, text=True, timeout=30)
    assert run.returncode == 78 and "not a P-256 private key" in run.stderr, run.stderr
    run = subprocess.run([GATEWAY, "serve", "--key", key, "--apns-key-id", KEY_ID], capture_output=True, text=True)
    assert run.returncode == 64 and "APNs needs all four" in run.stderr, run.stderr
    assert providers.requests == []


def test_relay_to_gateway_to_providers_end_to_end(tmp_path, providers, authority):
    """Alice's mailbox wakes her iPhone, Bob's his Android phone, through the shipped nginx file in
    front of the gateway; each provider hears exactly one content-free wake."""
    relay = Relay(str(tmp_path / "relay"), args=["--push-allow-loopback"])
    env = passphrase_env(SSL_CERT_FILE=authority.path)
    with Gateway(str(tmp_path), providers, authority, args=["--trust-forwarded-for"]) as gateway, \
            GatewayNginx(gateway.port, authority.issue("gateway")) as proxy:
        os.environ["SSL_CERT_FILE"] = authority.path  # the relay checks the gateway's certificate with it
        try:
            relay.start()
        finally:
            del os.environ["SSL_CERT_FILE"]
        try:
            alice, bob = alice_and_bob(env, tmp_path, relay.url)
            registered = data(env, alice, "push", "register", "--gateway", proxy.url, "--gateway-key", gateway.public_key,
                              "--apns", APNS_DEVICE)
            assert registered["endpoint"].startswith(proxy.url + "/up/") and APNS_DEVICE not in registered["endpoint"]
            data(env, bob, "push", "register", "--gateway", proxy.url, "--gateway-key", gateway.public_key, "--fcm", FCM_DEVICE)

            coords(env, bob, "send", "Alice", "a sentence nobody in the middle may read")
            coords(env, alice, "send", "Bob", "another one")
            [apns] = providers.wait("apns", 1)
            [fcm] = providers.wait("fcm", 1)
            time.sleep(1)
            assert len(providers.of("apns")) == 1 and len(providers.of("fcm")) == 1
            assert apns["device"] == APNS_DEVICE and fcm["device"] == FCM_DEVICE
            for request in (apns, fcm):
                assert b"sentence" not in request["body"] and b"another" not in request["body"]
            assert json.loads(apns["body"]) == {"aps": {"content-available": 1}}
            assert json.loads(fcm["body"])["message"]["data"] == {"type": "coords-wake"}
            assert [m["text"] for m in data(env, alice, "inbox")["received"]] == ["a sentence nobody in the middle may read"]

            # What the relay holds and logs names the gateway, never the device or the platform.
            relay.stop()
            for root, _, files in os.walk(str(tmp_path / "relay")):
                for name in files:
                    with open(os.path.join(root, name), "rb") as f:
                        content = f.read()
                    assert APNS_DEVICE.encode() not in content and FCM_DEVICE.encode() not in content, name
            assert APNS_DEVICE not in relay.log() and FCM_DEVICE not in relay.log()
            assert "up/" not in proxy.error_log()
            assert 'coords_gateway_wakes_total{result="delivered",status="200"} 2' in gateway.metrics()
        finally:
            relay.stop()


class GatewayNginx(Nginx):
    """Debian's nginx running deploy/nginx/coords-push-gateway.conf as shipped, with TLS on and the
    listen and gateway addresses replaced by the test's ports."""

    SITE = os.path.join(ROOT, "deploy", "nginx", "coords-push-gateway.conf")

    def __init__(self, gateway_port, tls):
        super().__init__([gateway_port], tls=tls)

    def site(self):
        site = open(self.SITE).read()
        upstream = "    server 127.0.0.1:8090;\n"
        assert site.count(upstream) == 1 and "listen 127.0.0.1:8443;" in site, "the shipped nginx file changed shape"
        site = site.replace(upstream, f"    server 127.0.0.1:{self.relay_ports[0]};\n").replace("listen 127.0.0.1:8443;", f"listen 127.0.0.1:{self.port};")
        return self.with_tls(site)
