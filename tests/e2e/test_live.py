"""End to end: the live channel (PROTOCOL.md §8) between two `coords` homes and a real relay.

Bob runs `coords watch` (live by default) with a round interval of an hour, so anything he sees
within seconds came over the live channel: Alice's new position, her message, her position after
the relay restarted (reconnect and catch-up). A relay started with --no-live is polled instead.
`coords chat --follow` shows a message as it arrives.
"""
import os
import queue
import subprocess
import threading
import time

import pytest

from e2e_support import BIN, QUEUED, ROOT, Relay, alice_and_bob, coords, passphrase_env


class Running:
    """A long-running `coords` command whose output lines are read as they come."""

    def __init__(self, env, home, *args):
        self.process = subprocess.Popen([os.path.join(BIN, "coords"), *args, "--home", str(home)], env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.lines, self.seen = queue.Queue(), []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text, timeout):
        """The first line containing `text` within `timeout` seconds, and how long it took."""
        started = time.time()
        while time.time() - started < timeout:
            try:
                line = self.lines.get(timeout=max(0.01, timeout - (time.time() - started)))
            except queue.Empty:
                break
            self.seen.append(line)
            if text in line:
                return line, time.time() - started
        raise AssertionError(f"no line with {text!r} within {timeout} s; saw:\n" + "\n".join(self.seen))

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


@pytest.fixture
def pair(tmp_path):
    """Alice and Bob, friends both ways, on one relay; Bob's `coords watch` stopped afterwards."""
    with Relay(str(tmp_path / "relay")) as relay:
        env = passphrase_env()
        alice, bob = alice_and_bob(env, tmp_path, relay.url)
        running = []
        yield relay, env, alice, bob, running
        for process in running:
            process.stop()


def live(pair, *args):
    """Bob's `coords ARGS…`, running until the test ends, once its live connection is subscribed."""
    relay, env, alice, bob, running = pair
    process = Running(env, bob, *args)
    running.append(process)
    process.wait_for("Live: watching 1 friend and your mailbox", timeout=20)
    return process


def test_watch_shows_a_move_and_a_message_within_a_second_and_survives_a_relay_restart(pair):
    relay, env, alice, bob, running = pair
    watch = live(pair, "watch", "--interval", "3600")

    coords(env, alice, "share", "--lat", "47.3769", "--lon", "8.5417")
    line, seconds = watch.wait_for("Alice is at 47.37690, 8.54170", timeout=5)
    assert "(live)" in line and seconds < 2.0, (line, seconds)

    coords(env, alice, "send", "Bob", "on my way")
    line, seconds = watch.wait_for("Alice: on my way", timeout=5)
    assert seconds < 2.0, seconds

    # The relay restarts; Alice shares while it is down (queued), then delivers. Bob's watch
    # reconnects (backoff from 1 s) and sees the new position without a polling round.
    relay.stop()
    watch.wait_for("Live connection to", timeout=10)
    coords(env, alice, "share", "--lat", "47.4", "--lon", "8.6", expect=QUEUED)
    relay.start()
    coords(env, alice, "outbox", "flush")
    watch.wait_for("Alice is at 47.40000, 8.60000", timeout=70)


def test_a_relay_without_the_live_channel_is_polled(tmp_path):
    with Relay(str(tmp_path / "relay"), args=["--no-live"]) as relay:
        env = passphrase_env()
        bob = tmp_path / "bob"
        coords(env, bob, "init", "--server", relay.url, "--name", "Bob")
        watch = Running(env, bob, "watch", "--interval", "1", "--count", "2")
        try:
            watch.wait_for("has no live channel; polling it.", timeout=20)
            assert watch.process.wait(timeout=20) == 0  # the rounds still run and end the command
        finally:
            watch.stop()


def test_chat_follow_shows_a_message_as_it_arrives(pair):
    relay, env, alice, bob, running = pair
    chat = live(pair, "chat", "Alice", "--follow")
    coords(env, alice, "send", "Bob", "are you there?")
    _, seconds = chat.wait_for("Alice: are you there?", timeout=5)
    assert seconds < 2.0, seconds
    # --follow prints lines; it refuses --json.
    assert "--follow" in coords(env, bob, "chat", "Alice", "--follow", "--json", expect=1).stderr


def test_the_demo_shows_both_users_moving_and_chatting_live():
    result = subprocess.run(["bash", os.path.join(ROOT, "scripts", "demo.sh")], capture_output=True, text=True, timeout=180,
                            env=dict(os.environ, COORDS_BIN_DIR=BIN))
    assert result.returncode == 0, result.stdout + result.stderr
    live = result.stdout.split("9. Live:")[1].split("10. ")[0]
    for line in ("Bob is at 52.51950, 13.40160", "Bob: Live, no polling.", "Alice is at 47.37420, 8.54110", "Alice: I can see you moving."):
        assert line in live, live
