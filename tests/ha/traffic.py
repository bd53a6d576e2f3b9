"""Traffic besides uploads for the failover suite, through the Python package (the real core):

- `Messages`: Alice sends Bob sealed messages (PROTOCOL.md §7) through one relay node while Bob
  reads and acknowledges his mailbox through the other; every envelope a relay accepted (202)
  must reach Bob.
- `Prekeys`: owners publish one-time prekeys (§10.2); claimers with fresh keys ask for their
  bundles with signed requests (§10.3) through both nodes, paced so the claims span the failure;
  no one-time prekey may be handed out twice, and a claim request that was answered may not be
  accepted again when replayed (each signature is accepted once, §7.3).
"""
import ctypes
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
import coordscore as cc  # noqa: E402
from coordscore import transport  # noqa: E402

from load import Background, _sodium, b64u  # noqa: E402

FAST = {"keychain_cost": "minimum", "backup_cost": "minimum", "durability": "no_sync"}


def _answer(req):
    try:
        answer = transport.send(req)
        return answer.status, answer.body
    except transport.TransportError:
        return 0, b""


class Messages(Background):
    """Alice (home: the first relay) sends Bob (home: the second) one message after another."""

    def __init__(self, urls, directory):
        self.dir = tempfile.mkdtemp(prefix="messages-", dir=directory)
        self.alice = cc.App(os.path.join(self.dir, "alice"), passphrase="a", **FAST)
        self.bob = cc.App(os.path.join(self.dir, "bob"), passphrase="b", **FAST)
        self.alice_id = self.alice.create_identity("Alice", urls[0])
        self.bob_id = self.bob.create_identity("Bob", urls[1])
        # By id and server (a friend link names a host, which a client reaches over https).
        self.alice.add_friend(self.bob_id, urls[1], "Bob")
        self.bob.add_friend(self.alice_id, urls[0], "Alice")
        self.accepted, self.received = set(), set()
        self.statuses, self.errors = {}, []
        self.lock = threading.Lock()

    def _send(self):
        try:
            self._sending()
        except Exception as error:  # noqa: BLE001 — reported by the test, not lost in a thread
            self.errors.append(repr(error))

    def _sending(self):
        while self.running:
            sent = self.alice.send_message(self.bob_id, "a message the cluster must keep")
            status, body = _answer(sent.request)
            self.alice.outbox_report(sent.outbox_id, status, body)
            with self.lock:
                self.statuses[status] = self.statuses.get(status, 0) + 1
            if status == 202:
                with self.lock:
                    self.accepted.add(sent.message.id)
            else:
                time.sleep(0.1)  # it stays in Alice's outbox; counted only once a relay accepted it
            time.sleep(0.02)

    def _read_once(self):
        status, body = _answer(self.bob.prepare_message_fetch())
        if status != 200:
            return 0
        outcome = self.bob.process_messages(body)
        with self.lock:
            self.received.update(m.id for m in outcome.received)
        for ack in outcome.acks:
            _answer(ack)
        return len(outcome.received)

    def _read(self):
        try:
            while self.running:
                self._read_once()
                time.sleep(0.3)
        except Exception as error:  # noqa: BLE001 — reported by the test
            self.errors.append(repr(error))

    def targets(self):
        return [self._send, self._read]

    def undelivered(self):
        """The accepted messages Bob has not received after reading his mailbox to the end."""
        deadline = time.time() + 30
        while time.time() < deadline:
            if self._read_once() == 0 and self.accepted <= self.received:
                break
            time.sleep(0.2)
        return self.accepted - self.received

    def close(self):
        self.alice.close()
        self.bob.close()


def _signed_get(port, path):
    """A GET of `path` with the §7.3 headers of a fresh key: (status, body, headers sent)."""
    public, secret = ctypes.create_string_buffer(32), ctypes.create_string_buffer(64)
    _sodium.crypto_sign_keypair(public, secret)
    timestamp = str(int(time.time()))
    message = f"coords-mailbox-v1|GET|{path}|{timestamp}".encode()
    signature = ctypes.create_string_buffer(64)
    _sodium.crypto_sign_detached(signature, None, message, ctypes.c_ulonglong(len(message)), secret)
    headers = {"X-Coords-Key": b64u(public.raw), "X-Coords-Timestamp": timestamp, "X-Coords-Signature": b64u(signature.raw)}
    status, _, body = _request_with(port, "GET", path, headers)
    return status, body, headers


def _request_with(port, method, path, headers):
    import http.client
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    except OSError:
        return 0, {}, b""
    finally:
        connection.close()


class Prekeys(Background):
    """`owners` fresh identities (home: the first relay) publish 100 one-time prekeys each; a
    claimer asks for their bundles, one every `pace` s, alternating relays and owners."""

    def __init__(self, urls, ports, directory, owners=8, pace=0.15):
        self.ports, self.pace = list(ports), pace
        self.dir = tempfile.mkdtemp(prefix="prekeys-", dir=directory)
        self.owners = []
        for index in range(owners):
            with cc.App(os.path.join(self.dir, f"owner{index}"), passphrase="o", **FAST) as app:
                owner = app.create_identity(f"Owner {index}", urls[0])
                status, body = _answer(app.prepare_prekey_upload())
                assert status == 200 and app.process_prekey_upload(status, body) == 100, (status, body[:200])
                self.owners.append(owner)  # the id is the b64u public key the bundle route takes
        self.handed = {}  # (owner, one-time prekey id) -> how many times it was handed out
        self.answered = []  # (port, path, headers) of claims answered 200
        self.lock = threading.Lock()

    def _claim(self):
        import json
        turn = 0
        while self.running:
            owner = self.owners[turn % len(self.owners)]
            port = self.ports[turn % len(self.ports)]
            turn += 1
            path = "/v1/relay/prekeys/" + owner
            status, body, headers = _signed_get(port, path)
            if status == 200:
                one_time = json.loads(body).get("oneTimePrekey")
                with self.lock:
                    self.answered.append((port, path, headers))
                    if one_time:
                        key = (owner, one_time["id"], one_time["key"])
                        self.handed[key] = self.handed.get(key, 0) + 1
            time.sleep(self.pace)

    def targets(self):
        return [self._claim]

    def twice(self):
        with self.lock:
            return [key for key, count in self.handed.items() if count > 1]

    def replays_accepted(self, sample=30):
        """Claims answered 200, sent again as they were: how many a relay accepts a second time."""
        with self.lock:
            claims = self.answered[-sample:]
        return sum(1 for port, path, headers in claims if _request_with(self.ports[1 - self.ports.index(port)], "GET", path, headers)[0] == 200)
