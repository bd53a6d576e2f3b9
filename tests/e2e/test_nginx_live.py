"""End to end: the live channel behind deploy/nginx/coords-relay.conf as shipped.

A relay answers a WebSocket upgrade only as the first request of a connection (PROTOCOL.md §8.1);
a later one gets 400 `upgrade_not_first` (307 before). The shipped nginx file used to send upgrades
through the same keep-alive pool as ordinary requests, so once other traffic had warmed the
pool, upgrades landed on reused connections and failed (3 of 3 in the report; `coords watch`
fell back to polling). These tests warm the pools with steady traffic from several persistent
client connections and then upgrade, through Debian's nginx running the file as written.
"""
import http.client
import socket
import threading
import time

import pytest

from e2e_support import Nginx, Relay, alice_and_bob, coords, passphrase_env
from test_live import Running

UPGRADE = ("GET /v1/relay/live HTTP/1.1\r\nHost: relay.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")


class Traffic:
    """Ordinary requests through the proxy from `clients` persistent connections, each as fast as
    the relay answers, until stopped: nginx's upstream keep-alive pool stays warm and busy."""

    def __init__(self, port, clients=4):
        self.port, self.stop_flag, self.answered, self.failures = port, threading.Event(), 0, []
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(clients)]

    def _run(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        paths = ["/api/version", "/healthz", "/api/version", "/nowhere"]
        n = 0
        while not self.stop_flag.is_set():
            path = paths[n % len(paths)]
            n += 1
            try:
                connection.request("GET", path)
                response = connection.getresponse()
                response.read()
                if response.status != (404 if path == "/nowhere" else 200):
                    self.failures.append((path, response.status))
                self.answered += 1
            except (OSError, http.client.HTTPException) as error:
                self.failures.append((path, repr(error)))
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            time.sleep(0.01)
        connection.close()

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        deadline = time.time() + 10
        while self.answered < 100 and time.time() < deadline:  # the pool is warm
            time.sleep(0.02)
        assert self.answered >= 100, f"only {self.answered} warm-up requests answered: {self.failures[:5]}"
        return self

    def __exit__(self, *exc):
        self.stop_flag.set()
        for thread in self.threads:
            thread.join(timeout=15)


def upgrade_status(port):
    """The status line nginx answers a WebSocket upgrade of /v1/relay/live with (a fresh client
    connection, as every live client opens)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(UPGRADE.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
    return head.split(b"\r\n", 1)[0].decode(errors="replace")


@pytest.fixture
def proxied(tmp_path):
    with Relay(str(tmp_path / "relay"), args=["--rate", "0", "--key-rate", "0", "--trust-forwarded-for"]) as relay:
        with Nginx([relay.port]) as nginx:
            yield relay, nginx


def test_every_upgrade_through_the_shipped_nginx_file_succeeds_while_the_keepalive_pool_is_warm(proxied):
    relay, nginx = proxied
    with Traffic(nginx.port) as traffic:
        statuses = []
        for _ in range(20):
            statuses.append(upgrade_status(nginx.port))
            time.sleep(0.05)
        assert traffic.failures == [], traffic.failures[:5]
    assert statuses == ["HTTP/1.1 101 Switching Protocols"] * 20, statuses
    # The proxy does not publish the relay's metrics.
    connection = http.client.HTTPConnection("127.0.0.1", nginx.port, timeout=10)
    connection.request("GET", "/metrics")
    response = connection.getresponse()
    assert response.status == 404 and b"not_found" in response.read()


def test_coords_watch_goes_live_through_the_shipped_nginx_file_under_other_traffic(proxied, tmp_path):
    relay, nginx = proxied
    env = passphrase_env()
    alice, bob = alice_and_bob(env, tmp_path, nginx.url)
    with Traffic(nginx.port):
        watch = Running(env, bob, "watch", "--interval", "3600")
        try:
            watch.wait_for("Live: watching 1 friend and your mailbox", timeout=20)
            coords(env, alice, "share", "--lat", "47.3769", "--lon", "8.5417")
            line, seconds = watch.wait_for("Alice is at 47.37690, 8.54170", timeout=10)
            assert "(live)" in line, line
            assert not any("refused the upgrade" in seen or "polling" in seen for seen in watch.seen), watch.seen
        finally:
            watch.stop()
