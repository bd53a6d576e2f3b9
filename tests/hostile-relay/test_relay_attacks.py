"""Attacks on the relay itself (issue 59): its object storage and its memory, as an outsider with
throwaway keys would try them, with the attack sizes that were reported.

- Object storage reserved away: 52 throwaway keys announce two 100 MiB objects each and store
  nothing; an honest upload must still be accepted (the relay's total counts what is stored).
- Objects filling the disk the mailbox needs: on a 24 MiB filesystem, 20 MiB of objects from
  throwaway keys must leave room for the mailbox (the free-space floor), and a disk that does fill
  answers 507 `storage_full`, never 500.
- Unauthenticated bodies: 240 connections each sending a 4 MiB − 1 object part with bad headers
  must not grow the relay's memory (the signature is checked before the body is read), and
  signed bodies in flight stay within the relay's body budget (503 `busy` beyond).

Requests are signed here with libsodium through ctypes (PROTOCOL.md §7.3), not with project code.
"""
import base64
import ctypes
import ctypes.util
import hashlib
import http.client
import json
import os
import socket
import subprocess
import sys
import time
import uuid

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from e2e_support import BIN, free_port  # noqa: E402

_sodium = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
assert _sodium.sodium_init() >= 0

MAX_STORED = 104_883_200  # OBJECT_MAX_STORED (§12.1)
PART = 4_194_304  # OBJECT_PART_MAX
NO_LIMITS = ["--rate", "0", "--key-rate", "0", "--message-rate", "0", "--mailbox-per-address", "0",
             "--max-connections-per-address", "2000", "--max-connections", "4000"]


class Key:
    """A throwaway Ed25519 identity (libsodium)."""

    def __init__(self):
        self.pk = ctypes.create_string_buffer(32)
        self.sk = ctypes.create_string_buffer(64)
        assert _sodium.crypto_sign_keypair(self.pk, self.sk) == 0

    @property
    def public(self):
        return self.pk.raw

    @property
    def peer(self):
        return hashlib.sha256(self.public).hexdigest()

    def sign(self, message):
        signature = ctypes.create_string_buffer(64)
        assert _sodium.crypto_sign_detached(signature, None, message, ctypes.c_ulonglong(len(message)), self.sk) == 0
        return signature.raw


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed_headers(key, method, path):
    """The §7.3 headers of `key` for `method` and `path` (with its query)."""
    timestamp = str(int(time.time()))
    signature = key.sign(f"coords-mailbox-v1|{method}|{path}|{timestamp}".encode())
    return {"X-Coords-Key": b64u(key.public), "X-Coords-Timestamp": timestamp, "X-Coords-Signature": b64u(signature)}


class RelayProcess:
    """`coords-relay` on a loopback port, its data directory optionally on a tmpfs of `tmpfs_mib`
    MiB mounted in a private mount namespace (`unshare -rm`: the mount lives as long as the relay,
    and needs no privilege on the host)."""

    def __init__(self, tmp_path, args=(), tmpfs_mib=None):
        self.port = free_port()
        self.data = tmp_path / f"relay-{self.port}"
        self.data.mkdir()
        self.log_path = tmp_path / f"relay-{self.port}.log"
        relay = [os.path.join(BIN, "coords-relay"), "--port", str(self.port), "--data-dir", str(self.data), *NO_LIMITS, *args]
        if tmpfs_mib:
            script = f'mount -t tmpfs -o size={tmpfs_mib}m,mode=0700 tmpfs "$1" && shift && exec "$@"'
            relay = ["unshare", "-rm", "sh", "-c", script, "sh", str(self.data), *relay]
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(relay, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            assert self.process.poll() is None, f"the relay exited: {self.log()}"
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"the relay did not start: {self.log()}")

    def log(self):
        return self.log_path.read_text(errors="replace")

    def pid(self):
        """The relay's own process (under unshare, the shell execs into it: the same pid)."""
        return self.process.pid

    def peak_rss_mib(self):
        with open(f"/proc/{self.pid()}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        raise AssertionError("no VmHWM")

    def request(self, method, path, body=b"", headers=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            data = response.read()
            return response.status, (json.loads(data) if data.startswith(b"{") else data)
        finally:
            connection.close()

    def put_object(self, key, oid, offset, stored, part, expires=None):
        path = f"/v1/relay/objects/{b64u(oid)}?offset={offset}&stored={stored}&expires={expires or int(time.time()) + 3600}"
        headers = signed_headers(key, "PUT", path)
        headers["Content-Type"] = "application/octet-stream"
        return self.request("PUT", path, part, headers)

    def post_message(self, sender, recipient, payload_bytes=256):
        """A version-2 envelope with `senderKey` (§7.1); the payload is opaque to the relay."""
        now = time.gmtime()
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", now)
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
        envelope = {"protocolVersion": 2, "id": str(uuid.uuid4()), "senderID": sender.peer, "recipientID": recipient.peer,
                    "sealedPayloadBase64": base64.b64encode(os.urandom(payload_bytes)).decode(),
                    "createdAt": created, "expiresAt": expires}
        text = "|".join(["CoordsCore/envelope/v2", "2", envelope["id"], envelope["senderID"], envelope["recipientID"],
                         created, expires, envelope["sealedPayloadBase64"]])
        envelope["signatureBase64"] = base64.b64encode(sender.sign(text.encode())).decode()
        envelope["senderKey"] = b64u(sender.public)
        return self.request("POST", "/v1/relay/messages", json.dumps(envelope).encode(), {"Content-Type": "application/json"})

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)


@pytest.fixture
def relays(tmp_path):
    started = []

    def start(*args, tmpfs_mib=None):
        relay = RelayProcess(tmp_path, args, tmpfs_mib)
        started.append(relay)
        return relay

    yield start
    for relay in started:
        relay.stop()


def test_reservations_without_bytes_never_fill_the_relay(relays):
    relay = relays()
    # 52 throwaway keys × 2 empty PUTs announcing 100 MiB each: 10.2 GB announced, nothing stored.
    for _ in range(52):
        key = Key()
        for _ in range(2):
            status, body = relay.put_object(key, os.urandom(16), 0, MAX_STORED, b"")
            assert status == 200 and body["stored"] == 0, (status, body)
    # An honest upload is still accepted and completes.
    honest, oid = Key(), os.urandom(16)
    part = os.urandom(100_000)
    status, body = relay.put_object(honest, oid, 0, len(part), part)
    assert status == 200 and body["complete"] is True, (status, body)
    status, data = relay.request("GET", f"/v1/relay/objects/{b64u(oid)}")
    assert status == 200 and data == part


def test_the_relay_total_counts_stored_bytes(relays):
    relay = relays("--object-total", "1000000")
    first, second = Key(), Key()
    # Announcing more than the total is no charge against it; storing is.
    assert relay.put_object(first, os.urandom(16), 0, 900_000, b"")[0] == 200
    assert relay.put_object(first, os.urandom(16), 0, 600_000, os.urandom(600_000))[0] == 200
    status, body = relay.put_object(second, os.urandom(16), 0, 600_000, os.urandom(600_000))
    assert status == 507 and body["error"] == "relay_full", (status, body)
    assert relay.put_object(second, os.urandom(16), 0, 300_000, os.urandom(300_000))[0] == 200


def fill_with_objects(relay, megabytes, part_bytes=PART):
    """Throwaway keys upload `megabytes` MiB of objects in parts; returns the statuses."""
    statuses = []
    remaining = megabytes << 20
    while remaining > 0:
        key, oid = Key(), os.urandom(16)
        size = min(remaining, part_bytes)
        status, body = relay.put_object(key, oid, 0, size, os.urandom(size))
        statuses.append((status, body.get("error") if isinstance(body, dict) else None))
        remaining -= size
    return statuses


def test_objects_leave_the_mailbox_its_disk(relays):
    # A 24 MiB filesystem and an 8 MiB floor: 20 MiB of objects from throwaway keys.
    relay = relays("--object-free-floor", str(8 << 20), tmpfs_mib=24)
    statuses = fill_with_objects(relay, 20)
    assert (507, "storage_full") in statuses, statuses
    assert all(status in (200, 507) for status, _ in statuses), statuses
    # The mailbox and the locations still have their room.
    alice, bob = Key(), Key()
    for _ in range(20):
        status, body = relay.post_message(alice, bob)
        assert status == 202, (status, body)
    for _ in range(20):
        key = Key()
        blob, timestamp = os.urandom(143), int(time.time())
        signature = key.sign(blob + timestamp.to_bytes(8, "big"))
        status, body = relay.request("PUT", "/api/location", json.dumps(
            {"pubkey": b64u(key.public), "timestamp": timestamp, "blob": b64u(blob), "signature": b64u(signature)}).encode(),
            {"Content-Type": "application/json"})
        assert status == 204, (status, body)


def test_a_full_disk_answers_507_never_500(relays):
    # No floor: objects fill the filesystem to the last bytes, then the mailbox needs pages.
    relay = relays("--object-free-floor", "0", tmpfs_mib=24)
    statuses = fill_with_objects(relay, 24)
    statuses += fill_with_objects(relay, 4, part_bytes=65_536)
    assert (507, "storage_full") in statuses, statuses
    alice, bob = Key(), Key()
    answers = [relay.post_message(alice, bob, payload_bytes=60_000) for _ in range(40)]
    assert all(status in (202, 507) for status, _ in answers), [a for a in answers if a[0] not in (202, 507)]
    full = [body for status, body in answers if status == 507]
    assert full and all(body["error"] == "storage_full" for body in full), answers[-1]
    assert relay.request("GET", "/healthz")[0] == 200


def open_parts(relay, count, headers_for):
    """`count` connections, each sending an object PUT's headers (Content-Length 4 MiB − 1) and as
    much of the body as the relay takes within a short time, but never its last byte: every body
    stays unfinished, every connection held open."""
    sockets = []
    chunk = os.urandom(1 << 20)
    for index in range(count):
        path, headers = headers_for(index)
        head = f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: {PART - 1}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
        s = socket.create_connection(("127.0.0.1", relay.port))
        s.sendall(head.encode())
        s.setblocking(False)
        sockets.append(s)
    deadline = time.time() + 20
    sent = [0] * count
    target = PART - 2
    while time.time() < deadline and any(n < target for n in sent):
        progressed = False
        for index, s in enumerate(sockets):
            if sent[index] >= target:
                continue
            try:
                n = s.send(chunk[:min(len(chunk), target - sent[index])])
                sent[index] += n
                progressed = progressed or n > 0
            except BlockingIOError:
                pass
            except OSError:
                sent[index] = PART  # the relay answered and closed: nothing more to send
        if not progressed:
            time.sleep(0.05)
    return sockets


def answers_of(sockets, timeout):
    """The status each connection was answered with (None: no answer within `timeout` s)."""
    statuses = []
    for s in sockets:
        s.setblocking(True)
        s.settimeout(timeout)
        try:
            line = s.recv(64).split(b"\r\n")[0].split()
            statuses.append(int(line[1]) if len(line) > 1 else None)
        except OSError:
            statuses.append(None)
        s.close()
    return statuses


def test_unauthenticated_bodies_are_never_buffered(relays):
    relay = relays()
    before = relay.peak_rss_mib()
    bad = {"X-Coords-Key": b64u(Key().public), "X-Coords-Timestamp": str(int(time.time())), "X-Coords-Signature": b64u(bytes(64))}
    sockets = open_parts(relay, 240, lambda _: (f"/v1/relay/objects/{b64u(os.urandom(16))}?offset=0&stored={PART}"
                                                f"&expires={int(time.time()) + 3600}", bad))
    peak = relay.peak_rss_mib()
    statuses = answers_of(sockets, 5)
    assert statuses.count(401) >= 200, statuses
    assert peak - before < 200, f"the relay grew from {before:.0f} to {peak:.0f} MiB"
    assert relay.request("GET", "/healthz")[0] == 200


def test_signed_bodies_in_flight_stay_within_the_budget(relays):
    relay = relays()
    before = relay.peak_rss_mib()

    def signed(_):
        path = f"/v1/relay/objects/{b64u(os.urandom(16))}?offset=0&stored={PART}&expires={int(time.time()) + 3600}"
        return path, signed_headers(Key(), "PUT", path)

    sockets = open_parts(relay, 120, signed)
    peak = relay.peak_rss_mib()
    # Unfinished bodies (one byte short): the budget's 64 MiB hold 16; the rest are turned away.
    statuses = answers_of(sockets, 0.5)
    assert statuses.count(503) >= 90, statuses
    assert peak - before < 300, f"the relay grew from {before:.0f} to {peak:.0f} MiB"
    assert relay.request("GET", "/healthz")[0] == 200


def test_a_fifo_in_place_of_the_store_is_refused_in_one_line(tmp_path):
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    os.mkfifo(data / "data.mdb", 0o600)
    result = subprocess.run([os.path.join(BIN, "coords-relay"), "--port", str(free_port()), "--data-dir", str(data)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert errors and "not an LMDB file" in errors[-1], result.stderr


def raw_exchange(port, data, wait=3.0):
    """Sends `data` on one connection and returns everything the relay answers within `wait` s."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(data)
        s.settimeout(wait)
        out = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except socket.timeout:
            pass
    return out


def test_refused_websocket_upgrades_get_an_http_answer(relays):
    relay = relays()
    head = b"GET /v1/relay/live HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    key = b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    cases = {
        "no key": (head + b"Sec-WebSocket-Version: 13\r\n\r\n", b"400", b"invalid_upgrade"),
        "version 8": (head + b"Sec-WebSocket-Version: 8\r\n" + key + b"\r\n", b"426", b"unsupported_websocket_version"),
        "two keys": (head + b"Sec-WebSocket-Version: 13\r\n" + key + key + b"\r\n", b"400", b"invalid_upgrade"),
        "a key of 15 bytes": (head + b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25j\r\n\r\n", b"400",
                              b"invalid_upgrade"),
        "pipelined second": (b"GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n" + head + b"Sec-WebSocket-Version: 13\r\n" + key + b"\r\n",
                             b"400", b"upgrade_not_first"),
    }
    for name, (request, status, code) in cases.items():
        answer = raw_exchange(relay.port, request)
        last = answer.split(b"HTTP/1.1 ")[-1]
        assert last.startswith(status) and code in last, (name, answer[-300:])
        assert b"Sec-WebSocket-Version: 13" in last or status == b"400" and code == b"upgrade_not_first", (name, last)
    # A valid upgrade still switches protocols.
    answer = raw_exchange(relay.port, head + b"Sec-WebSocket-Version: 13\r\n" + key + b"\r\n", wait=1.0)
    assert answer.startswith(b"HTTP/1.1 101"), answer[:200]
