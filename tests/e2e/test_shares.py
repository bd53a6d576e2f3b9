"""End to end: expiring and paused shares (PROTOCOL.md §9.3) with real `coords` homes and a relay.

A share for one second ends on its own: Alice's running `coords watch` wakes at that moment and
seals her last position again without Bob, and Bob — who could open the blob a second earlier —
can no longer open what the relay holds; her next upload is not for him either. Pausing and
resuming work the same way, and adding Bob again does not widen an ended share.
"""
import time

from e2e_support import Relay, coords, data, passphrase_env
from test_live import Running


def test_a_share_for_one_second_ends_and_bob_cannot_open_the_next_blob(tmp_path):
    relay = Relay(str(tmp_path / "relay"))
    relay.start()
    env = passphrase_env()
    alice, bob = tmp_path / "alice", tmp_path / "bob"
    watch = None
    try:
        coords(env, alice, "init", "--server", relay.url, "--name", "Alice")
        coords(env, bob, "init", "--server", relay.url, "--name", "Bob")
        data(env, bob, "add", data(env, alice, "whoami")["link"])
        data(env, alice, "add", data(env, bob, "whoami")["link"])

        shared = data(env, alice, "share-with", "Bob", "--for", "1s")
        assert shared["share_state"] == "until"
        assert data(env, alice, "share", "--lat", "47.3769", "--lon", "8.5417")["recipient_count"] == 2
        seen = data(env, bob, "fetch")
        assert seen["friends"][0]["location"]["latitude"] == 47.3769 and seen["rejected"] == []

        # Alice's watch (fetch-only, rounds an hour apart) wakes when the share ends and reseals.
        watch = Running(env, alice, "watch", "--interval", "3600", "--poll")
        line, seconds = watch.wait_for("sealed again for the 0 friends you share with now", timeout=10)
        after = data(env, bob, "fetch")
        assert [r["code"] for r in after["rejected"]] and after["friends"][0]["new"] is False, after
        assert after["friends"][0]["location"]["latitude"] == 47.3769  # the last position he was meant to see
        listed = {f["name"]: f for f in data(env, alice, "friends")["friends"]}
        assert listed["Bob"]["share_state"] == "expired" and listed["Bob"]["sharing"] is False
        assert "expired" in coords(env, alice, "friends").stdout

        # Her next upload is not for him; adding him again does not widen the ended share.
        assert data(env, alice, "share", "--lat", "47.4", "--lon", "8.6")["recipient_count"] == 1
        data(env, alice, "remove", "Bob")
        data(env, alice, "add", data(env, bob, "whoami")["link"])
        assert data(env, alice, "friends")["friends"][0]["share_state"] == "expired"
        assert data(env, bob, "fetch")["friends"][0]["location"]["latitude"] == 47.3769

        # Share again with no end; pause; resume.
        assert data(env, alice, "share-with", "Bob")["share_state"] == "on"
        data(env, alice, "share", "--lat", "47.5", "--lon", "8.7")
        assert data(env, bob, "fetch")["friends"][0]["location"]["latitude"] == 47.5
        paused = data(env, alice, "pause", "Bob")
        assert paused["resealed"] is True
        assert data(env, bob, "fetch")["rejected"]
        text = coords(env, alice, "share-with", "Bob", "--until", "2099-01-01T00:00:00Z").stdout
        assert text.startswith("Sharing with Bob: until 2099-01-01T00:00:00Z"), text
        assert "--for must be a duration" in coords(env, alice, "share-with", "Bob", "--for", "soon", expect=1).stderr
    finally:
        if watch:
            watch.stop()
        relay.stop()
