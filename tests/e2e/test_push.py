"""End to end: push for a sleeping phone (PROTOCOL.md §8.7) with the real `coords` CLI, a real
relay and a real HTTP receiver on loopback standing in for the phone's UnifiedPush distributor.

Bob registers the receiver's URL (`coords push register`); Alice sends him a message; the
receiver gets exactly the constant wake body — nothing that names Alice, the message or its
size — and Bob, woken, fetches the message with `coords inbox`. A relay without the test flag
refuses the loopback endpoint, and one started with --no-push says so in one line.
"""
import http.server
import json
import ssl
import threading
import time

from e2e_support import Relay, alice_and_bob, coords, data, passphrase_env

WAKE = b'{"type":"coords-wake"}'


class Receiver:
    """An HTTP server on loopback that records every POST (path, headers, body); with
    `tls=(certificate, key)` an HTTPS server named localhost instead."""

    def __init__(self, tls=None):
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                hits.append((self.path, dict(self.headers), self.rfile.read(length)))
                self.send_response(201)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/up/bob-token"
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.url = f"https://localhost:{self.server.server_address[1]}/up/bob-token"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, count, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline and len(self.hits) < count:
            time.sleep(0.05)
        return self.hits

    def close(self):
        self.server.shutdown()


def friends(tmp_path, relay):
    env = passphrase_env()
    return (env, *alice_and_bob(env, tmp_path, relay.url))


def test_a_message_wakes_the_registered_endpoint_with_a_constant_body(tmp_path):
    relay = Relay(str(tmp_path / "relay"), args=["--push-allow-loopback"])
    relay.start()
    receiver = Receiver()
    try:
        env, alice, bob = friends(tmp_path, relay)
        registered = data(env, bob, "push", "register", receiver.url, "--ttl", "3600")
        assert registered["endpoint"] == receiver.url and registered["expires_at_ms"] > (time.time() + 3500) * 1000
        text = coords(env, bob, "push", "register", receiver.url).stdout
        assert text.startswith("Registered: your relay wakes " + receiver.url), text

        coords(env, alice, "send", "Bob", "a sentence the relay must not leak")
        hits = receiver.wait(1)
        assert len(hits) == 1, hits
        path, headers, body = hits[0]
        assert path == "/up/bob-token" and body == WAKE
        assert headers.get("Content-Type") == "application/json" and headers.get("Urgency") == "high"
        alice_id = data(env, alice, "whoami")["id"]
        assert alice_id not in json.dumps(headers)  # nothing about the sender

        inbox = data(env, bob, "inbox")  # the woken app fetches
        assert [m["text"] for m in inbox["received"]] == ["a sentence the relay must not leak"]

        assert data(env, bob, "push", "unregister") == {"deleted": True}
        coords(env, alice, "send", "Bob", "after unregistering")
        time.sleep(1)
        assert len(receiver.hits) == 1  # no wake any more
    finally:
        receiver.close()
        relay.stop()


def test_a_loopback_endpoint_is_refused_without_the_test_flag_and_a_relay_without_push_says_so(tmp_path):
    relay = Relay(str(tmp_path / "relay"))
    relay.start()
    try:
        env, alice, bob = friends(tmp_path, relay)
        refused = coords(env, bob, "push", "register", "http://127.0.0.1:9/up", expect=1)
        assert "endpoint_refused" in refused.stderr and "https" in refused.stderr, refused.stderr
        private = coords(env, bob, "push", "register", "https://169.254.169.254/latest", expect=1)
        assert "endpoint_refused" in private.stderr and "not a public address" in private.stderr, private.stderr
        relay.stop()
        relay.args = ["--no-push"]
        relay.start()
        missing = coords(env, bob, "push", "register", "https://push.example.net/up", expect=1)
        assert "does not offer push (404)" in missing.stderr, missing.stderr
    finally:
        relay.stop()
