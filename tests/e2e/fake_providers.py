"""Stand-ins for Apple's and Google's push services, speaking their published protocols, for the
push gateway's tests (no machine here reaches the real ones).

Debian's nginx terminates TLS and HTTP/2 (ALPN h2, as APNs requires) and passes each request,
with the protocol it arrived over in `X-Protocol`, to a Python server on loopback that checks
it the way the provider documents and answers as scripted:

- APNs (Apple, "Sending notification requests to APNs", "Establishing a token-based connection
  to APNs", "Handling notification responses from APNs"): `POST /3/device/<hex token>` over
  HTTP/2; `authorization: bearer <JWT>` signed ES256 by the publisher's key with `kid` and the
  team's `iss` and an `iat` under an hour old (else 403 `ExpiredProviderToken`); `apns-topic`,
  `apns-push-type`, `apns-priority` (5 for background), `apns-collapse-id` of at most 64 bytes;
  a JSON payload of at most 4 KiB. Errors are JSON `{"reason": ...}`.
- OAuth2 (RFC 7523; Google, "Using OAuth 2.0 for Server to Server Applications"):
  `POST /token` with `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` and an RS256
  assertion from the service account (`iss`, `scope`, `aud` = the token URI, `exp` at most an
  hour after `iat`); answers `{"access_token", "expires_in", "token_type": "Bearer"}`.
- FCM HTTP v1 (Firebase, "Send messages with the FCM HTTP v1 API", "FCM error codes"):
  `POST /v1/projects/<id>/messages:send` with a live bearer token (else 401 `UNAUTHENTICATED`)
  and a `message` of `token`, `data`, `android`; errors as `google.rpc.Status` JSON with an
  `FcmError` detail.

The signatures are checked with Python's `cryptography` — an implementation independent of the
gateway's swift-crypto. Every check that fails is recorded in `violations` as well as answered.
"""
import base64
import http.server
import json
import os
import secrets
import threading
import time
import urllib.parse

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from e2e_support import Nginx

KEY_ID, TEAM_ID, TOPIC = "ABCDE12345", "FGHIJ67890", "org.example.coords"
PROJECT, CLIENT_EMAIL = "coords-test", "gateway@coords-test.iam.gserviceaccount.com"
FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
APNS_WAKE = {"aps": {"content-available": 1}}


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def write_secret(path, data):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)
    return str(path)


class Credentials:
    """A publisher's APNs key (.p8) and Firebase service account, written to `directory`."""

    def __init__(self, directory, token_uri):
        self.apns_key = ec.generate_private_key(ec.SECP256R1())
        self.p8 = write_secret(os.path.join(directory, "AuthKey.p8"), self.apns_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        self.fcm_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.fcm_key_id = secrets.token_hex(20)
        self.token_uri = token_uri
        account = {
            "type": "service_account", "project_id": PROJECT, "private_key_id": self.fcm_key_id,
            "private_key": self.fcm_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                      serialization.NoEncryption()).decode(),
            "client_email": CLIENT_EMAIL, "client_id": "1", "token_uri": token_uri,
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        }
        self.service_account = write_secret(os.path.join(directory, "service-account.json"), json.dumps(account).encode())


def verify_jwt(token, algorithm, public_key):
    """(header, claims) of a compact JWS signed with `algorithm`; raises ValueError otherwise."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("not three parts")
    header, claims = json.loads(b64url_decode(parts[0])), json.loads(b64url_decode(parts[1]))
    signature, signed = b64url_decode(parts[2]), (parts[0] + "." + parts[1]).encode()
    if header.get("alg") != algorithm:
        raise ValueError(f"alg {header.get('alg')}")
    try:
        if algorithm == "ES256":
            if len(signature) != 64:
                raise ValueError("an ES256 signature is r||s, 64 bytes")
            der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
            public_key.verify(der, signed, ec.ECDSA(hashes.SHA256()))
        else:
            public_key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        raise ValueError("bad signature")
    return header, claims


class Providers:
    """The fake APNs, OAuth2 and FCM endpoints behind one nginx (TLS, HTTP/2) on loopback.

    `script[device]` is a list of answers (status, body dict or None, headers dict) given to the
    next requests for that device token, in order; then 200. `requests` records every request
    as a dict (kind, path, headers, body, and the verified JWT claims)."""

    def __init__(self, directory, authority, token_lifetime=3600):
        self.requests, self.violations, self.script = [], [], {}
        self.access_tokens = {}  # token -> expiry (time.time())
        self.token_lifetime = token_lifetime
        self.lock = threading.Lock()
        providers = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length) if length <= 65536 else b""
                status, answer, headers = providers.handle(self.path, dict((k.lower(), v) for k, v in self.headers.items()), body)
                data = b"" if answer is None else json.dumps(answer).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        backend = self.server.server_address[1]
        self.proxy = _ProviderNginx(backend, authority.issue("providers"))
        self.proxy.__enter__()
        self.url = self.proxy.url
        self.credentials = Credentials(directory, self.url + "/token")

    def close(self):
        self.proxy.__exit__(None, None, None)
        self.server.shutdown()

    def of(self, kind):
        with self.lock:
            return [r for r in self.requests if r["kind"] == kind]

    def wait(self, kind, count, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline and len(self.of(kind)) < count:
            time.sleep(0.05)
        return self.of(kind)

    def scripted(self, device):
        with self.lock:
            queue = self.script.get(device) or []
            return queue.pop(0) if queue else None

    def violation(self, what):
        with self.lock:
            self.violations.append(what)

    # The three endpoints.

    def handle(self, path, headers, body):
        record = {"path": path, "headers": headers, "body": body, "protocol": headers.get("x-protocol")}
        if path.startswith("/3/device/"):
            record["kind"] = "apns"
            answer = self.apns(path[len("/3/device/"):], headers, body, record)
        elif path == "/token":
            record["kind"] = "oauth"
            answer = self.oauth(body, record)
        elif path == f"/v1/projects/{PROJECT}/messages:send":
            record["kind"] = "fcm"
            answer = self.fcm(headers, body, record)
        else:
            record["kind"] = "unknown"
            self.violation(f"a request to {path}")
            answer = (404, None, {})
        with self.lock:
            self.requests.append(record)
        return answer

    def apns(self, device, headers, body, record):
        if headers.get("x-protocol") != "HTTP/2.0":
            self.violation(f"APNs over {headers.get('x-protocol')}")
            return 400, {"reason": "BadProtocol"}, {}  # APNs speaks HTTP/2 only
        authorization = headers.get("authorization", "")
        if not authorization.startswith("bearer "):
            self.violation("no provider token")
            return 403, {"reason": "MissingProviderToken"}, {}
        try:
            header, claims = verify_jwt(authorization[len("bearer "):], "ES256", self.credentials.apns_key.public_key())
        except ValueError as error:
            self.violation(f"APNs token: {error}")
            return 403, {"reason": "InvalidProviderToken"}, {}
        record["jwt"] = (header, claims)
        if header.get("kid") != KEY_ID or claims.get("iss") != TEAM_ID or set(claims) != {"iss", "iat"}:
            self.violation(f"APNs token names {header}, {claims}")
            return 403, {"reason": "InvalidProviderToken"}, {}
        if not isinstance(claims["iat"], int) or claims["iat"] > time.time() + 60:
            self.violation(f"APNs iat {claims['iat']}")
            return 403, {"reason": "InvalidProviderToken"}, {}
        if claims["iat"] < time.time() - 3600:
            return 403, {"reason": "ExpiredProviderToken"}, {}
        expected = {"apns-topic": TOPIC, "apns-push-type": "background", "apns-priority": "5"}
        for name, value in expected.items():
            if headers.get(name) != value:
                self.violation(f"{name}: {headers.get(name)}")
                return 400, {"reason": "BadTopic" if name == "apns-topic" else "BadPriority"}, {}
        if not 0 < len(headers.get("apns-collapse-id", "").encode()) <= 64:
            self.violation("apns-collapse-id")
            return 400, {"reason": "BadCollapseId"}, {}
        if not headers.get("apns-expiration", "").isdigit():
            self.violation("apns-expiration")
            return 400, {"reason": "BadExpirationDate"}, {}
        if len(device) % 2 or not all(c in "0123456789abcdef" for c in device):
            return 400, {"reason": "BadDeviceToken"}, {}
        try:
            payload = json.loads(body)
        except ValueError:
            self.violation("payload not JSON")
            return 400, {"reason": "BadPayload"}, {}
        if payload != APNS_WAKE or len(body) > 4096:
            self.violation(f"APNs payload {body!r}")
            return 400, {"reason": "BadPayload"}, {}
        record["device"] = device
        scripted = self.scripted(device)
        if scripted:
            return scripted
        return 200, None, {"apns-id": "00000000-0000-0000-0000-000000000001"}

    def oauth(self, body, record):
        form = urllib.parse.parse_qs(body.decode(errors="replace"), strict_parsing=True, keep_blank_values=True)
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"] or len(form.get("assertion", [])) != 1:
            self.violation(f"OAuth form {form}")
            return 400, {"error": "unsupported_grant_type"}, {}
        try:
            header, claims = verify_jwt(form["assertion"][0], "RS256", self.credentials.fcm_key.public_key())
        except ValueError as error:
            self.violation(f"assertion: {error}")
            return 400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}, {}
        record["jwt"] = (header, claims)
        now = time.time()
        good = (header.get("kid") == self.credentials.fcm_key_id and header.get("typ") == "JWT"
                and claims.get("iss") == CLIENT_EMAIL and claims.get("scope") == FCM_SCOPE
                and claims.get("aud") == self.credentials.token_uri
                and isinstance(claims.get("iat"), int) and isinstance(claims.get("exp"), int)
                and abs(claims["iat"] - now) < 300 and 0 < claims["exp"] - claims["iat"] <= 3600)
        if not good:
            self.violation(f"assertion {header}, {claims}")
            return 400, {"error": "invalid_grant"}, {}
        scripted = self.scripted("oauth")
        if scripted:
            return scripted
        token = "ya29." + secrets.token_urlsafe(32)
        with self.lock:
            self.access_tokens[token] = now + self.token_lifetime
        return 200, {"access_token": token, "expires_in": self.token_lifetime, "token_type": "Bearer"}, {}

    def expire_access_tokens(self):
        """Every access token handed out stops working (as after its expiry or a revocation)."""
        with self.lock:
            self.access_tokens.clear()

    def fcm(self, headers, body, record):
        authorization = headers.get("authorization", "")
        with self.lock:
            expiry = self.access_tokens.get(authorization[len("Bearer "):]) if authorization.startswith("Bearer ") else None
        if expiry is None or expiry < time.time():
            return 401, {"error": {"code": 401, "message": "Request had invalid authentication credentials.",
                                   "status": "UNAUTHENTICATED"}}, {}
        try:
            message = json.loads(body)["message"]
        except (ValueError, KeyError, TypeError):
            self.violation(f"FCM body {body!r}")
            return 400, {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "Invalid JSON payload"}}, {}
        android = message.get("android", {})
        good = (set(message) == {"token", "data", "android"} and message["data"] == {"type": "coords-wake"}
                and android.get("priority") == "HIGH" and android.get("collapse_key") == "coords-wake"
                and "notification" not in android and android.get("ttl", "0s").endswith("s"))
        if not good:
            self.violation(f"FCM message {message}")
            return 400, {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "bad message"}}, {}
        record["device"] = message["token"]
        scripted = self.scripted(message["token"])
        if scripted:
            return scripted
        return 200, {"name": f"projects/{PROJECT}/messages/{secrets.token_hex(8)}"}, {}


def fcm_error(status, code, error_code=None, token_field=False):
    """A google.rpc.Status error body as FCM v1 sends it."""
    details = []
    if error_code:
        details.append({"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": error_code})
    if token_field:
        details.append({"@type": "type.googleapis.com/google.rpc.BadRequest",
                        "fieldViolations": [{"field": "message.token", "description": "Invalid registration token"}]})
    return {"error": {"code": status, "message": "scripted", "status": code, "details": details}}


class _ProviderNginx(Nginx):
    """nginx with TLS and HTTP/2 in front of the Python providers; `X-Protocol` tells them which
    protocol the client spoke."""

    def __init__(self, backend, tls):
        super().__init__([backend], tls=tls)

    def site(self):
        return self.with_tls(
            f"server {{\n    listen 127.0.0.1:{self.port};\n    client_max_body_size 64k;\n"
            f"    location / {{\n        proxy_pass http://127.0.0.1:{self.relay_ports[0]};\n"
            f"        proxy_http_version 1.1;\n        proxy_set_header X-Protocol $server_protocol;\n    }}\n}}\n",
            http2=True)
