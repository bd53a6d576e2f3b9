"""Signed writes against relays, counted: every upload a relay acknowledged (204) is remembered
with its blob, so a test can check afterwards that each one is still there. The uploads are
PROTOCOL.md §4's `PUT /api/location`, signed with libsodium (ctypes) by a fresh key each, so
every acknowledged write is its own row and none can hide behind a later one.
"""
import base64
import ctypes
import ctypes.util
import http.client
import json
import os
import threading
import time

_sodium = ctypes.CDLL(ctypes.util.find_library("sodium"))
assert _sodium.sodium_init() >= 0


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _sign(secret, message):
    signature = ctypes.create_string_buffer(64)
    _sodium.crypto_sign_detached(signature, None, message, ctypes.c_ulonglong(len(message)), secret)
    return b64u(signature.raw)


def signed_upload():
    """(pubkey b64u, body bytes, blob b64u, secret key): an upload by a new key of 64 random bytes."""
    public, secret = ctypes.create_string_buffer(32), ctypes.create_string_buffer(64)
    _sodium.crypto_sign_keypair(public, secret)
    blob = os.urandom(64)
    timestamp = int(time.time())
    key = b64u(public.raw)
    signature = _sign(secret, blob + timestamp.to_bytes(8, "big"))
    body = json.dumps({"pubkey": key, "timestamp": timestamp, "blob": b64u(blob), "signature": signature}).encode()
    return key, body, b64u(blob), secret


def signed_delete(key, secret):
    """The body of `DELETE /api/location` for `key` (PROTOCOL.md §6), signed a second after its
    upload (a delete must be newer than the upload it removes)."""
    timestamp = int(time.time()) + 1
    signature = _sign(secret, b"coords-delete-v1" + timestamp.to_bytes(8, "big"))
    return json.dumps({"pubkey": key, "timestamp": timestamp, "signature": signature}).encode()


def request(port, method, path, body=None, timeout=5):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


class Background:
    """Work on threads while a `with` block runs: `targets()` names the functions, each of which
    loops while `self.running`; leaving the block stops and joins them."""

    running = False

    def targets(self):
        raise NotImplementedError

    def __enter__(self):
        self.running = True
        self.threads = [threading.Thread(target=target, daemon=True) for target in self.targets()]
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.running = False
        for thread in self.threads:
            thread.join(timeout=30)


class Load(Background):
    """Writers uploading to `ports` in turn until stopped; every fourth upload acknowledged is
    deleted again at once. `acknowledged` maps each key whose upload a relay answered 204 (and
    that was not deleted) to its blob; `deleted` holds the keys whose delete was answered 204.
    A write that got no 2xx may or may not have been committed, so its key is checked neither
    way. `events` is (time, status) for every answer (0: no answer within 15 s); `refused`
    collects the answers other than 204 and 503 with `Retry-After`."""

    def __init__(self, ports, writers=4):
        self.ports, self.writers = list(ports), writers
        self.acknowledged, self.deleted, self.events, self.refused = {}, set(), [], []
        # Every acknowledged upload is fetched at once through the other relay: (time, key) of
        # those the fetch did not return (a stale read), and how many were checked.
        self.stale, self.reads = [], 0
        self.lock = threading.Lock()

    def _read_back(self, port, key, blob):
        try:
            status, _, body = request(port, "POST", "/api/location", json.dumps({"ids": [key]}).encode(), timeout=15)
        except OSError:
            return
        if status != 200:
            return  # an outage, counted by the writes
        entry = json.loads(body).get(key)
        with self.lock:
            self.reads += 1
            if not entry or entry.get("blob") != blob:
                self.stale.append((time.time(), key))

    def _send(self, port, method, body):
        try:
            status, headers, answer = request(port, method, "/api/location", body, timeout=15)
        except OSError:
            status, headers, answer = 0, {}, b""
        with self.lock:
            self.events.append((time.time(), status))
            if status not in (0, 204) and not (status == 503 and headers.get("Retry-After")):
                self.refused.append((method, status, answer[:200]))
        return status

    def _write(self, index):
        turn = index
        while self.running:
            port = self.ports[turn % len(self.ports)]
            turn += 1
            key, body, blob, secret = signed_upload()
            status = self._send(port, "PUT", body)
            if status == 204 and turn % 4 == 0:
                deleted = self._send(port, "DELETE", signed_delete(key, secret))
                with self.lock:
                    if deleted == 204:
                        self.deleted.add(key)
                continue
            with self.lock:
                if status == 204:
                    self.acknowledged[key] = blob
            if status == 204:
                self._read_back(self.ports[turn % len(self.ports)], key, blob)
            else:
                time.sleep(0.05)

    def targets(self):
        return [lambda index=index: self._write(index) for index in range(self.writers)]

    def count(self):
        with self.lock:
            return len(self.acknowledged)

    def outage(self, since, until):
        """The outage as clients saw it between `since` and `until`: the longest time without an
        acknowledged write (s), and from the first answer other than 204 to the first 204 after
        the last one (s; 0 when every answer was 204)."""
        with self.lock:
            events = sorted(e for e in self.events if since <= e[0] <= until)
        acknowledged = [since] + [t for t, s in events if s == 204] + [until]
        longest = max(b - a for a, b in zip(acknowledged, acknowledged[1:]))
        failures = [t for t, s in events if s != 204]
        if not failures:
            return longest, 0.0
        recovered = next((t for t, s in events if t > failures[-1] and s == 204), until)
        return longest, recovered - failures[0]

    def stale_reads(self, since, until):
        with self.lock:
            return len([t for t, _ in self.stale if since <= t <= until])

    def statuses(self, since=0):
        with self.lock:
            counts = {}
            for t, s in self.events:
                if t >= since:
                    counts[s] = counts.get(s, 0) + 1
            return counts

    def lost(self, port):
        """(acknowledged uploads a fetch through `port` does not return with their blob,
        acknowledged deletes whose key it still returns)."""
        with self.lock:
            items = list(self.acknowledged.items()) + [(key, None) for key in self.deleted]
        missing, resurrected = [], []
        for start in range(0, len(items), 50):
            batch = items[start:start + 50]
            status, _, body = request(port, "POST", "/api/location", json.dumps({"ids": [k for k, _ in batch]}).encode(), timeout=20)
            assert status == 200, (status, body[:200])
            answer = json.loads(body)
            missing += [k for k, blob in batch if blob is not None and (not answer.get(k) or answer[k].get("blob") != blob)]
            resurrected += [k for k, blob in batch if blob is None and answer.get(k)]
        return missing, resurrected
