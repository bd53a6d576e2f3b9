"""End to end: identity rotation and revocation (PROTOCOL.md §9.1–§9.2) with three `coords` homes.

Alice rotates to a new key and relay; Bob and Carol follow without adding her again: her name,
Bob's verified mark and both directions of sharing and messaging carry over. Then the lost-phone
race: a "thief" home holding Alice's old key rotates, while Alice, on a new device restored from
her backup, revokes. Bob receives both and keeps neither silently: Alice is in conflict, sharing
with her pauses, `coords inbox` says so in one line, and `coords verify Alice --key ID` ends it.
"""
import shutil

from e2e_support import Relay, alice_and_bob, befriend, coords, data, passphrase_env


def friend(env, home, name):
    return next(f for f in data(env, home, "friends")["friends"] if f["name"] == name)


def test_alice_rotates_and_bob_and_carol_follow_without_adding_her_again(tmp_path):
    one, two = Relay(str(tmp_path / "one")), Relay(str(tmp_path / "two"))
    one.start()
    two.start()
    env = passphrase_env()
    alice, bob, carol = tmp_path / "alice", tmp_path / "bob", tmp_path / "carol"
    try:
        for home, name in ((alice, "Alice"), (bob, "Bob"), (carol, "Carol")):
            coords(env, home, "init", "--server", one.url, "--name", name)
        befriend(env, alice, bob)
        befriend(env, alice, carol)
        data(env, bob, "verify", "Alice")
        data(env, alice, "share", "--lat", "47.3769", "--lon", "8.5417")
        old_id = data(env, alice, "whoami")["id"]

        rotated = data(env, alice, "rotate", "--server", two.url)
        new_id = rotated["id"]
        assert rotated["previous_id"] == old_id and new_id != old_id
        assert rotated["statements_delivered"] == 2 and rotated["statements_queued"] == 0
        assert rotated["uploaded"] is True and rotated["previous_deleted"] is True
        assert data(env, alice, "whoami")["id"] == new_id

        for home in (bob, carol):
            text = coords(env, home, "inbox").stdout
            assert "1 friend moved to a new key" in text, text
            moved = friend(env, home, "Alice")
            assert moved["id"] == new_id and moved["server"] == two.url and moved["sharing"] is True
        assert friend(env, bob, "Alice")["verified"] is True  # the verified old key vouched for the new one
        assert friend(env, carol, "Alice")["verified"] is False

        # Her position (uploaded by the new identity on the new relay) and a new one reach both.
        seen = data(env, carol, "fetch")["friends"][0]
        assert seen["id"] == new_id and seen["location"]["latitude"] == 47.3769 and seen["signature"] == "signed"
        data(env, alice, "share", "--lat", "47.4", "--lon", "8.6")
        assert data(env, bob, "fetch")["friends"][0]["location"]["latitude"] == 47.4
        # Messages both ways on the new key; Bob's and Carol's shares reach her new key.
        data(env, bob, "send", "Alice", "welcome to the new key")
        assert [m["text"] for m in data(env, alice, "inbox")["received"]] == ["welcome to the new key"]
        data(env, carol, "share", "--lat", "52.52", "--lon", "13.405")
        assert any(f["name"] == "Carol" and f["location"] for f in data(env, alice, "fetch")["friends"])
    finally:
        one.stop()
        two.stop()


def test_a_revocation_racing_a_thief_ends_in_a_conflict_that_bob_resolves(tmp_path):
    relay = Relay(str(tmp_path / "relay"))
    relay.start()
    env = passphrase_env()
    thief, phone = tmp_path / "thief", tmp_path / "new-phone"
    try:
        alice, bob = alice_and_bob(env, tmp_path, relay.url)
        data(env, bob, "share", "--lat", "1", "--lon", "2")
        backup = tmp_path / "alice.backup"
        data(env, alice, "backup", "export", str(backup))
        old_id = data(env, alice, "whoami")["id"]

        # The phone is stolen (the thief has the whole home); Alice restores her backup elsewhere.
        shutil.copytree(alice, thief)
        data(env, phone, "backup", "import", str(backup))
        assert data(env, phone, "whoami")["id"] == old_id

        thiefs = data(env, thief, "rotate")
        revoked = data(env, phone, "revoke")
        assert revoked["revoked"] is True and revoked["id"] != thiefs["id"]

        text = coords(env, bob, "inbox").stdout
        lines = [line for line in text.splitlines() if "conflict" in line]
        assert len(lines) == 1 and lines[0].startswith("Alice: conflict — two different key rotations arrived"), text
        conflicted = friend(env, bob, "Alice")
        assert conflicted["trust"] == "conflict" and conflicted["sharing"] is False
        assert data(env, bob, "share", "--lat", "1.5", "--lon", "2.5")["recipient_count"] == 1  # sharing with her paused

        # Bob compares safety numbers with Alice in person and keeps the key of her new phone.
        kept = data(env, bob, "verify", "Alice", "--key", revoked["id"])
        assert kept["id"] == revoked["id"] and kept["verified"] is True
        assert friend(env, bob, "Alice")["id"] == revoked["id"]
        assert data(env, bob, "share", "--lat", "1.6", "--lon", "2.6")["recipient_count"] == 2
        # The thief's key is refused from now on.
        data(env, thief, "send", "Bob", "it is me, really")
        refused = data(env, bob, "inbox")
        assert refused["received"] == [] and refused["rejected"], refused
    finally:
        relay.stop()
