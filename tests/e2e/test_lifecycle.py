"""The app's life on a phone (docs/MOBILE.md, "The app's life"), with a host that only runs the one
wake against a live coords-relay: a request the OS runs an hour after it was queued, a host frozen
(SIGSTOP) in the middle of a request and resumed, a host killed (SIGKILL) while it queues and
sends and then restarted, and what a push wake does in its few seconds.

Each host that is frozen, killed or runs at another time is a process of its own (Python over
libcoordscore, the same directory as the test's apps); libfaketime (Debian's `faketime`) gives a
process a clock an hour behind.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("COORDSCORE_LIB", os.path.join(ROOT, ".build", "debug", "libcoordscore.so"))

import coordscore as cc  # noqa: E402
from coordscore import transport  # noqa: E402
from e2e_support import Relay, free_port  # noqa: E402

FAST = {"keychain_cost": "minimum", "backup_cost": "minimum"}
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
FAKETIME = f"/usr/lib/{os.uname().machine}-linux-gnu/faketime/libfaketime.so.1"


@pytest.fixture(scope="module")
def relay(tmp_path_factory):
    with Relay(str(tmp_path_factory.mktemp("relay"))) as running:
        yield running


def pair(tmp_path, relay):
    """Alice's and Bob's directories, befriended, prekeys published; returns (dirs, ids). The apps
    are closed: each host below opens a directory in its own process."""
    dirs = {name: str(tmp_path / name) for name in ("alice", "bob")}
    ids = {}
    apps = {name: cc.App(path, passphrase=name, **FAST) for name, path in dirs.items()}
    try:
        for name, app in apps.items():
            ids[name] = app.create_identity(name.title(), relay.url)
        apps["alice"].add_friend_link(apps["bob"].friend_link())
        apps["bob"].add_friend_link(apps["alice"].friend_link())
        for app in apps.values():
            loop_until_quiet(app)
    finally:
        for app in apps.values():
            app.close()
    return dirs, ids


def loop_until_quiet(app, turns=10):
    seen = []
    for _ in range(turns):
        answers = transport.run_once(app)
        if not answers:
            return seen
        seen += answers
    raise AssertionError(f"the loop never ran out of requests: {[(r.purpose, a.result) for r, a in seen[-5:]]}")


def host(script, directory, passphrase, env=None, **popen):
    """A host process: opens `directory` as `app` and runs `script`."""
    code = (f"import coordscore as cc, json, os, sys, time\nfrom coordscore import transport\n"
            f"app = cc.App({directory!r}, passphrase={passphrase!r}, keychain_cost='minimum', backup_cost='minimum')\n"
            + script + "\napp.close()\n")
    return subprocess.Popen([sys.executable, "-c", code], env=env or ENV, text=True, **popen)


def received_texts(directory, passphrase, friend_id):
    """Bob's host, woken: reads the mailbox and returns the texts he holds from `friend_id`."""
    with cc.App(directory, passphrase=passphrase, **FAST) as app:
        app.fetch_now()
        loop_until_quiet(app)
        return [m.text for m in app.history(friend_id) if not m.outgoing]


def test_a_message_the_os_sends_an_hour_after_it_was_queued_arrives(relay, tmp_path):
    """Queued by a process whose clock is an hour behind (libfaketime), sent by a host at the real
    time: the relay accepts it because the host's request is signed when due() hands it out."""
    assert os.path.exists(FAKETIME), "libfaketime is missing: make deps installs Debian's faketime"
    dirs, ids = pair(tmp_path, relay)
    env = dict(ENV, LD_PRELOAD=FAKETIME, FAKETIME="-1h", FAKETIME_DONT_RESET="1")
    queued = host(f"sent = app.send_message({ids['bob']!r}, 'queued an hour ago')\n"
                  f"print(json.dumps({{'sent_at': sent.message.sent_at, 'now': int(time.time() * 1000)}}))",
                  dirs["alice"], "alice", env=env, stdout=subprocess.PIPE)
    out, _ = queued.communicate(timeout=60)
    assert queued.returncode == 0
    record = json.loads(out.strip().splitlines()[-1])
    assert record["sent_at"] < time.time() * 1000 - 3_500_000, "the queuing process did not run an hour behind"
    with cc.App(dirs["alice"], passphrase="alice", **FAST) as alice:
        answers = loop_until_quiet(alice)
        outbox = [a.outbox for r, a in answers if a.result == "outbox"]
        assert outbox and outbox[0].decision == "delivered", answers
        assert alice.outbox() == []
    assert received_texts(dirs["bob"], "bob", ids["alice"]) == ["queued an hour ago"]


class DelayingProxy:
    """A TCP proxy to the relay that holds each answer back `delay` seconds: a request is surely in
    flight while the test freezes the host."""

    def __init__(self, target_port, delay):
        self.port, self.target, self.delay = free_port(), target_port, delay
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", self.port))
        self.server.listen(16)
        self.forwarded = 0
        threading.Thread(target=self.accept, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(client,), daemon=True).start()

    def serve(self, client):
        with client, socket.create_connection(("127.0.0.1", self.target)) as upstream:
            def pump(source, sink, hold):
                try:
                    while data := source.recv(65536):
                        if hold:
                            time.sleep(self.delay)
                            hold = False
                        sink.sendall(data)
                except OSError:
                    pass
                finally:
                    try:
                        sink.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
            up = threading.Thread(target=pump, args=(client, upstream, False), daemon=True)
            up.start()
            self.forwarded += 1
            pump(upstream, client, True)
            up.join(timeout=30)

    def close(self):
        self.server.close()


def test_a_host_frozen_in_the_middle_of_a_request_delivers_once_when_resumed(tmp_path):
    """SIGSTOP while the relay's answer is on its way (the proxy holds it 1 s), SIGCONT 3 s later:
    the host reads the answer, reports it, and the message arrives exactly once."""
    with Relay(str(tmp_path / "relay")) as direct:
        proxy = DelayingProxy(direct.port, delay=1.0)
        try:
            dirs, ids = pair(tmp_path, proxy)
            started = host(f"app.send_message({ids['bob']!r}, 'frozen and resumed')\n"
                           "print('queued', flush=True)\n"
                           "answers = transport.run_once(app)\n"
                           "print(json.dumps([[r.purpose, a.result, (a.outbox.decision if a.outbox else None)] for r, a in answers]))\n"
                           "assert not app.outbox(), app.outbox()",
                           dirs["alice"], "alice", stdout=subprocess.PIPE)
            assert started.stdout.readline().strip() == "queued"
            before = proxy.forwarded
            deadline = time.time() + 10
            while proxy.forwarded == before and time.time() < deadline:
                time.sleep(0.01)
            assert proxy.forwarded > before, "the host sent nothing"
            started.send_signal(signal.SIGSTOP)
            time.sleep(3)
            started.send_signal(signal.SIGCONT)
            out, _ = started.communicate(timeout=60)
            assert started.returncode == 0, out
            turns = json.loads(out.strip().splitlines()[-1])
            assert ["outbox", "outbox", "delivered"] in turns, turns
            assert received_texts(dirs["bob"], "bob", ids["alice"]) == ["frozen and resumed"]
        finally:
            proxy.close()


def test_a_host_killed_while_it_queues_and_sends_loses_nothing_and_repeats_nothing(relay, tmp_path):
    """SIGKILL at an arbitrary point of a host that queues 30 messages and sends them as it goes;
    a restarted host sends the rest. Every message whose send_message returned before the kill
    arrives, exactly once (the record of them is written after each call returns)."""
    dirs, ids = pair(tmp_path, relay)
    record = tmp_path / "queued.txt"
    script = (f"with open({str(record)!r}, 'a') as out:\n"
              f"    for i in range(30):\n"
              f"        app.send_message({ids['bob']!r}, f'message {{i}}')\n"
              f"        out.write(f'message {{i}}\\n'); out.flush(); os.fsync(out.fileno())\n"
              f"        if i % 3 == 2: transport.run_once(app)\n")
    killed = host(script, dirs["alice"], "alice")
    deadline = time.time() + 60
    while (not record.exists() or len(record.read_text().splitlines()) < 8) and time.time() < deadline:
        time.sleep(0.005)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    queued = record.read_text().splitlines()
    assert 8 <= len(queued) < 30, f"the kill came at {len(queued)} messages"
    with cc.App(dirs["alice"], passphrase="alice", **FAST) as alice:  # the restarted host
        loop_until_quiet(alice)
        assert alice.outbox() == []
        stored = [m.text for m in alice.history(ids["bob"])]
    texts = received_texts(dirs["bob"], "bob", ids["alice"])
    assert len(texts) == len(set(texts)), "a message arrived twice"
    assert set(queued) <= set(texts), sorted(set(queued) - set(texts))
    assert set(texts) <= set(stored)  # at most the one being queued at the kill beyond the record


def test_a_push_wake_reads_the_mailbox_and_owes_nothing_in_two_turns(relay, tmp_path):
    """What a push wake may do in its few seconds: fetch_now() and two turns of the loop read
    every waiting message and acknowledge them; nothing more is due afterwards."""
    dirs, ids = pair(tmp_path, relay)
    with cc.App(dirs["alice"], passphrase="alice", **FAST) as alice:
        for i in range(5):
            alice.send_message(ids["bob"], f"wake {i}")
        loop_until_quiet(alice)
    with cc.App(dirs["bob"], passphrase="bob", **FAST) as bob:
        bob.set_fetch_interval(None)  # a phone asleep: only a push wakes it
        bob.fetch_now()
        first = transport.run_once(bob)
        second = transport.run_once(bob)
        purposes = [r.purpose for r, _ in first + second]
        assert "mailbox" in purposes, purposes
        assert sorted(m.text for m in bob.history(ids["alice"])) == [f"wake {i}" for i in range(5)]
        assert transport.run_once(bob) == []  # acks sent, nothing owed
        wake = bob.next_wake()
        assert wake is None or wake > time.time() * 1000 + 30_000, wake
        # The relay holds nothing more for Bob.
        bob.fetch_now()
        answers = transport.run_once(bob)
        mailbox = [a for r, a in answers if r.purpose == "mailbox"]
        assert mailbox and mailbox[0].detail["messages"]["received"] == [], mailbox


def test_two_processes_running_the_loop_settle_one_upload_without_an_error(relay, tmp_path):
    """An app and its extension (or two CLI commands) both run the loop on one directory: each
    hands out the same queued upload (a process knows only its own requests in flight). The
    second to answer finds the entry gone; the core sees the upload acknowledged in the store and
    reports it delivered, not unknown."""
    dirs, ids = pair(tmp_path, relay)
    with cc.App(dirs["alice"], passphrase="alice", **FAST) as alice:
        alice.queue_upload(cc.Location(47.3769, 8.5417, accuracy=5, timestamp_ms=int(time.time() * 1000)))
        mine = [r for r in alice.due() if r.outbox_kind == "upload"]
        assert len(mine) == 1
        other = host("answers = transport.run_once(app)\n"
                     "print(json.dumps([[r.outbox_kind, a.outbox.decision if a.outbox else None] for r, a in answers]))",
                     dirs["alice"], "alice", stdout=subprocess.PIPE)
        out, _ = other.communicate(timeout=60)
        assert other.returncode == 0 and ["upload", "delivered"] in json.loads(out.strip().splitlines()[-1]), out
        status, body = transport._perform(mine[0].request)
        answer = alice.report(mine[0].id, status, body)
        assert answer.result == "outbox" and answer.outbox.decision == "delivered", (status, body, answer)
        assert alice.outbox() == []
