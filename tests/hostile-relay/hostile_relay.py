"""A scripted hostile relay on loopback: every answer a client parses can be replaced by an
attack (huge, endless, slow, malformed, repeated, redirected, someone else's).

The relay answers honestly by default (version, uploads, empty fetches, an empty mailbox) so a
home can be set up against it; a test then installs attacks with `relay.attack(METHOD, PATH,
responder)`. A responder is called with the connection's socket and the parsed request and
writes whatever bytes it likes; `relay.requests` records every request that arrived (method,
path, headers, body), so a test can count what the client sent (acks, signed fetches, …).
"""
import base64
import hashlib
import json
import socket
import socketserver
import threading
import time

WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Request:
    """One HTTP request as the hostile relay read it."""

    def __init__(self, method, target, headers, body):
        self.method, self.target, self.headers, self.body = method, target, headers, body
        self.path = target.split("?", 1)[0]

    def header(self, name):
        return self.headers.get(name.lower())


def read_request(sock):
    """Reads one request (head and Content-Length body) from `sock`; None at end of stream."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
        if len(data) > 1 << 20:
            return None
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return Request(method, target, headers, rest[:length])


def send_all(sock, data):
    """Writes `data`; False when the client went away."""
    try:
        sock.sendall(data)
        return True
    except OSError:
        return False


def response(status, body=b"", headers=(), reason="X"):
    """The bytes of a complete HTTP/1.1 answer."""
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\n"
    for name, value in headers:
        head += f"{name}: {value}\r\n"
    return head.encode() + b"\r\n" + body


# ---- Responders: each takes (sock, request, relay) and writes what it likes. ----------------

def answer(status, body=b"", headers=()):
    """An ordinary answer."""
    return lambda sock, request, relay: send_all(sock, response(status, body, headers))


def endless_body(chunk=b"x" * 65536, seconds=60):
    """A chunked answer that never ends (until the client leaves or `seconds` pass)."""
    def responder(sock, request, relay):
        if not send_all(sock, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"):
            return
        deadline = time.time() + seconds
        piece = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
        while time.time() < deadline and send_all(sock, piece):
            pass
    return responder


def slow_body(interval=2.0, seconds=60):
    """A 200 whose body arrives one byte every `interval` seconds (a read timeout never fires)."""
    def responder(sock, request, relay):
        if not send_all(sock, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"):
            return
        deadline = time.time() + seconds
        while time.time() < deadline and send_all(sock, b" "):
            time.sleep(interval)
    return responder


def silent(seconds=60):
    """Accepts the request and never answers."""
    def responder(sock, request, relay):
        deadline = time.time() + seconds
        while time.time() < deadline and not relay.stopping.is_set():
            time.sleep(0.2)
    return responder


def websocket_accept(key):
    return base64.b64encode(hashlib.sha1(key.encode() + WS_GUID).digest()).decode()


def upgrade(correct_accept=True):
    """The bytes of a `101` for `request`, with a right or a wrong Sec-WebSocket-Accept."""
    def head(request):
        accept = websocket_accept(request.header("sec-websocket-key") or "") if correct_accept else "d3JvbmcgYWNjZXB0IGtleSE="
        return (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                b"Sec-WebSocket-Accept: " + accept.encode() + b"\r\n\r\n")
    return head


def ws_frame(payload, opcode=0x1, fin=True):
    """An unmasked server frame."""
    if isinstance(payload, str):
        payload = payload.encode()
    first = (0x80 if fin else 0) | opcode
    n = len(payload)
    if n < 126:
        return bytes([first, n]) + payload
    if n < 65536:
        return bytes([first, 126]) + n.to_bytes(2, "big") + payload
    return bytes([first, 127]) + n.to_bytes(8, "big") + payload


def read_ws_frames(sock, timeout=0.01):
    """Reads and discards whatever masked client frames are waiting (non-blocking-ish)."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass
    finally:
        sock.settimeout(None)


def live_upgrade_then(frames=(), correct_accept=True, flood=None, seconds=30):
    """Answers the live upgrade (right or wrong accept), sends `frames`, then keeps sending
    `flood` (bytes) as fast as the client takes it until `seconds` pass."""
    def responder(sock, request, relay):
        if not send_all(sock, upgrade(correct_accept)(request)):
            return
        for frame in frames:
            if not send_all(sock, frame):
                return
        deadline = time.time() + seconds
        while time.time() < deadline and not relay.stopping.is_set():
            if flood is not None:
                if not send_all(sock, flood):
                    return
            else:
                read_ws_frames(sock, timeout=0.2)
    return responder


class HostileRelay:
    """The scripted relay; `with HostileRelay() as relay:` serves on a free loopback port."""

    def __init__(self):
        self.attacks, self.requests, self.lock = {}, [], threading.Lock()
        self.objects = {}  # object id → bytes stored (honest §12.4 uploads)
        self.stopping = threading.Event()
        relay = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                sock = self.request
                while not relay.stopping.is_set():
                    request = read_request(sock)
                    if request is None:
                        return
                    with relay.lock:
                        relay.requests.append(request)
                        responder = relay.attacks.get((request.method, request.path)) or relay.attacks.get(("*", request.path))
                        for (method, path), attack in relay.attacks.items():  # "/prefix/*" attacks every path under it
                            if responder is None and path.endswith("*") and request.path.startswith(path[:-1]) and method in (request.method, "*"):
                                responder = attack
                    (responder or relay.honest)(sock, request, relay)
                    if responder is not None:
                        return  # an attacked exchange is the connection's last

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def attack(self, method, path, responder):
        """From now on, `method` (or "*") on `path` is answered by `responder` (a `path` ending in
        `*` covers every path that starts with what comes before it)."""
        with self.lock:
            self.attacks[(method, path)] = responder

    def calm(self):
        """Back to honest answers; forgets the recorded requests."""
        with self.lock:
            self.attacks.clear()
            self.requests.clear()

    def received(self, method, prefix):
        """The recorded requests of `method` whose path starts with `prefix`."""
        with self.lock:
            return [r for r in self.requests if r.method == method and r.path.startswith(prefix)]

    @staticmethod
    def honest(sock, request, relay):
        """What an empty, honest relay answers."""
        if request.path == "/api/version":
            send_all(sock, response(200, {"name": "coords", "version": "2026.1.6"}))
        elif request.path == "/api/location" and request.method == "POST":
            send_all(sock, response(200, {}))
        elif request.path == "/api/location":
            send_all(sock, response(204))
        elif request.path == "/v1/relay/messages" and request.method == "GET":
            send_all(sock, response(200, {"packets": []}))
        elif request.path == "/v1/relay/messages" and request.method == "POST":
            send_all(sock, response(202, {"accepted": True, "packetID": "x"}))
        elif request.path.startswith("/v1/relay/messages/"):
            send_all(sock, response(200, {"deleted": True, "packetID": request.path.split("/")[4]}))
        elif request.path.startswith("/v1/relay/objects/") and request.method == "PUT":
            oid = request.path.rsplit("/", 1)[1]
            query = dict(part.split("=", 1) for part in request.target.split("?", 1)[1].split("&"))
            with relay.lock:
                stored = relay.objects.setdefault(oid, b"")
                if int(query["offset"]) != len(stored):
                    send_all(sock, response(409, {"error": "offset_mismatch", "message": "", "stored": len(stored)}))
                    return
                stored = relay.objects[oid] = stored + request.body
            size = int(query["stored"])
            send_all(sock, response(200, {"object": oid, "stored": len(stored), "size": size, "complete": len(stored) == size,
                                          "expiresAt": int(query["expires"])}))
        elif request.path.startswith("/v1/relay/objects/") and request.method == "GET":
            stored = relay.objects.get(request.path.rsplit("/", 1)[1])
            if stored is None:
                send_all(sock, response(404, {"error": "no_object", "message": "no such object"}))
            else:
                send_all(sock, response(200, stored, headers=[("Content-Type", "application/octet-stream")]))
        else:
            send_all(sock, response(404, {"error": "not_found", "message": "no such route"}))

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
