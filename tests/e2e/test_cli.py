"""End to end: the `coords` CLI against a live `coords-relay` on loopback (run by `make test`).

Two homes exchange links, share and fetch, remove a friend, delete a position, survive the
relay going down (the outbox delivers when it is back), and refuse a wrong passphrase.
"""
import json
import os
import subprocess

import pytest

from e2e_support import BIN, QUEUED, ROOT, Relay, coords, data, passphrase_env


@pytest.fixture
def world(tmp_path):
    with Relay(str(tmp_path / "relay")) as relay:
        yield relay, relay.url, tmp_path, passphrase_env()


def test_two_friends_share_fetch_remove_delete_and_survive_an_outage(world):
    relay, server, tmp, env = world
    alice, bob = tmp / "alice", tmp / "bob"
    out = coords(env, alice, "init", "--server", server, "--name", "Alice").stdout
    assert "Created your identity" in out and "coord://127.0.0.1" in out
    coords(env, bob, "init", "--server", server, "--name", "Bob")
    assert "already" in coords(env, alice, "init", "--server", server, "--name", "Alice", expect=1).stderr

    alice_link, bob_link = data(env, alice, "whoami")["link"], data(env, bob, "whoami")["link"]
    added = data(env, bob, "add", alice_link)
    assert added["name"] == "Alice" and added["server"] == server  # same relay: Bob's own server string
    assert data(env, alice, "add", bob_link)["safety_number"] == added["safety_number"]
    assert "Safety number" in coords(env, bob, "add", alice_link).stdout  # adding again is harmless
    assert "#" * 14 in coords(env, alice, "whoami").stdout  # the QR code's finder row (not a terminal)

    # Alice shares; Bob sees her, verified, with an age.
    assert "Shared 47.37690, 8.54170 ±12 m with 1 friend" in coords(env, alice, "share", "--lat", "47.3769", "--lon", "8.5417", "--accuracy", "12").stdout
    fetched = data(env, bob, "fetch")
    [friend] = fetched["friends"]
    assert friend["name"] == "Alice" and friend["new"] and friend["signature"] == "signed"
    assert friend["location"]["latitude"] == 47.3769 and not fetched["rejected"] and not fetched["failures"]
    assert friend["place"].endswith(", Switzerland") and friend["place_phrase"].startswith("in Zürich")  # offline geocoding
    table = coords(env, bob, "fetch").stdout
    assert "Alice" in table and "47.37690, 8.54170" in table and "signed" in table and " s " in table
    assert "in Zürich" in table
    friends = coords(env, bob, "friends").stdout
    assert "Alice" in friends and "47.37690" in friends and "VERIFIED" in friends
    coords(env, bob, "verify", "Alice")
    assert data(env, bob, "friends")["friends"][0]["trust"] == "verified"

    # Bob shares; Alice sees him.
    coords(env, bob, "share", "--lat", "52.52", "--lon", "13.405")
    assert data(env, alice, "fetch")["friends"][0]["location"]["longitude"] == 13.405

    # Messages both ways: sealed, acknowledged, with a delivery receipt.
    assert "Sent to Bob." in coords(env, alice, "send", "Bob", "on my way 🚲").stdout
    inbox = data(env, bob, "inbox")
    assert [m["text"] for m in inbox["received"]] == ["on my way 🚲"] and inbox["conversations"][0]["name"] == "Alice"
    assert data(env, bob, "inbox")["received"] == []  # acknowledged: the relay forgot it
    coords(env, bob, "send", "Alice", "see you")
    chat = data(env, alice, "chat", "Bob")["messages"]
    assert [(m["text"], m["status"]) for m in chat] == [("on my way 🚲", "delivered"), ("see you", "received")]
    assert "no friend" in coords(env, alice, "send", "Nobody", "hi", expect=1).stderr
    # A text that starts with "-" goes after "--" (which ends the options, so --home comes first).
    sent = subprocess.run([os.path.join(BIN, "coords"), "send", "--home", str(alice), "Bob", "--", "-5 °C here"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert sent.returncode == 0, sent.stderr
    assert [m["text"] for m in data(env, bob, "inbox")["received"]][-1] == "-5 °C here"

    # Sharing an older position than the relay has is impossible (stale), a newer one works.
    coords(env, alice, "share", "--lat", "47.40", "--lon", "8.55")

    # The western and southern hemispheres: negative values follow their option (issue 38).
    assert "Shared -33.86880, -9.14000" in coords(env, alice, "share", "--lat", "-33.8688", "--lon", "-9.14", "--alt", "-12").stdout
    moved = data(env, bob, "fetch")["friends"][0]["location"]
    assert (moved["latitude"], moved["longitude"]) == (-33.8688, -9.14)

    # Alice removes Bob: her next position is not sealed for him.
    assert "Removed Bob" in coords(env, alice, "remove", "Bob").stdout
    assert "with 0 friends" in coords(env, alice, "share", "--lat", "1", "--lon", "2").stdout
    after = data(env, bob, "fetch")
    assert [r["code"] for r in after["rejected"]] == [313]  # not a recipient
    assert after["friends"][0]["location"]["latitude"] == -33.8688  # the last one he fetched and could open
    assert "has not shared with your current key yet" in coords(env, bob, "fetch").stdout  # with what it means

    # The relay goes down: Alice's share is queued, then delivered by her next command.
    relay.stop()
    queued = coords(env, alice, "share", "--lat", "3", "--lon", "4", expect=QUEUED).stdout
    assert "queued" in queued
    assert data(env, alice, "outbox")["entries"][0]["kind"] == "upload"
    relay.start()  # same port, same data directory
    flushed = coords(env, alice, "outbox", "flush").stdout
    assert "delivered upload" in flushed
    assert data(env, alice, "outbox")["entries"] == []
    coords(env, alice, "add", bob_link)
    assert data(env, bob, "fetch")["failures"] == []

    # Alice deletes her position: the relay forgets it.
    assert "deleted" in coords(env, alice, "delete").stdout
    relay_answer = subprocess.run(["curl", "-s", "-X", "POST", "-H", "Content-Type: application/json", "-d",
                                   json.dumps({"ids": [data(env, alice, "whoami")["id"]]}), server + "/api/location"],
                                  capture_output=True, text=True)
    assert json.loads(relay_answer.stdout) == {data(env, alice, "whoami")["id"]: None}


def test_wrong_passphrase_missing_home_and_backups(world):
    _, server, tmp, env = world
    home = tmp / "carol"
    assert "coords init" in coords(env, home, "friends", expect=1).stderr
    coords(env, home, "init", "--server", server, "--name", "Carol")
    wrong = dict(env, COORDS_PASSPHRASE="not my passphrase")
    assert "wrong passphrase" in coords(wrong, home, "friends", expect=1).stderr

    backup = tmp / "carol.backup"
    assert "Wrote an encrypted backup" in coords(env, home, "backup", "export", str(backup)).stdout
    assert oct(os.stat(backup).st_mode & 0o777) == "0o600"
    # Exporting over an existing world-readable file makes it private too (it used to stay 0644).
    existing = tmp / "existing.backup"
    existing.write_bytes(b"old")
    os.chmod(existing, 0o644)
    coords(env, home, "backup", "export", str(existing))
    assert oct(os.stat(existing).st_mode & 0o777) == "0o600"
    assert existing.read_bytes() != b"old"
    restored = tmp / "restored"
    assert "Restored identity" in coords(env, restored, "backup", "import", str(backup)).stdout
    assert data(env, restored, "whoami")["id"] == data(env, home, "whoami")["id"]
    bad = dict(env, COORDS_BACKUP_PASSPHRASE="nope")
    assert "passphrase does not open this backup" in coords(bad, tmp / "other", "backup", "import", str(backup), expect=1).stderr


def test_clear_errors_for_bad_input(world):
    _, server, tmp, env = world
    home = tmp / "dave"
    coords(env, home, "init", "--server", server, "--name", "Dave")
    assert "latitude 95.0 is outside" in coords(env, home, "share", "--lat", "95", "--lon", "0", expect=1).stderr
    assert "invalid friend link" in coords(env, home, "add", "https://nope", expect=1).stderr
    assert "no friend" in coords(env, home, "remove", "Nobody", expect=1).stderr
    assert "not an absolute http" in coords(env, tmp / "eve", "init", "--server", "ftp://x", "--name", "E", expect=1).stderr


def test_one_version_everywhere(world):
    _, server, _, _ = world
    version = open(os.path.join(ROOT, "VERSION")).read().strip()
    # The release, the commit built from (two builds that both say the release differ here), and
    # for the relay the schemas of its stores.
    import re
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    head = git.stdout.strip() if git.returncode == 0 else "unknown"  # a source tarball is not a checkout
    assert re.fullmatch(r"[0-9a-f]{12}|unknown", head), head
    lines = {}
    for tool in ("coords", "coords-relay"):
        result = subprocess.run([os.path.join(BIN, tool), "--version"], capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, (tool, result.stdout, result.stderr)
        lines[tool] = result.stdout.strip()
    assert re.fullmatch(re.escape(version) + r" \(commit " + head + r"(-dirty)?\)", lines["coords"]), lines
    relay = re.fullmatch(re.escape(version) + r" \(commit " + head + r"(-dirty)?, LMDB schema (\d+), PostgreSQL schema (\d+)\)", lines["coords-relay"])
    assert relay, lines
    import urllib.request
    metrics = urllib.request.urlopen(server + "/metrics", timeout=10).read().decode()
    info = re.search(r'^coords_relay_build_info\{([^}]*)\} 1(\.0)?$', metrics, re.M)
    assert info, metrics[:500]
    labels = dict(re.findall(r'(\w+)="([^"]*)"', info.group(1)))
    assert labels["version"] == version and labels["commit"].startswith(head), labels
    assert (labels["lmdb_schema"], labels["postgres_schema"]) == (relay.group(2), relay.group(3)), labels
    import yaml
    with open(os.path.join(ROOT, "docs", "openapi.yaml")) as f:
        assert yaml.safe_load(f)["info"]["version"] == version  # the API description of this relay


def test_adding_a_friend_shares_at_once_and_shows_who_has_not_added_you_back(world):
    """The Coords design: adding a friend always triggers an upload (the last position, sealed
    again for them), `coords add` says truthfully what happened and prints your own link and QR
    code, and `coords friends` shows who has not added you back."""
    relay, server, tmp, env = world
    alice, bob, carol = tmp / "alice", tmp / "bob", tmp / "carol"
    for home, name in ((alice, "Alice"), (bob, "Bob"), (carol, "Carol")):
        coords(env, home, "init", "--server", server, "--name", name)
    links = {home: data(env, home, "whoami")["link"] for home in (alice, bob, carol)}
    coords(env, alice, "share", "--lat", "-33.8688", "--lon", "151.2093")  # before Bob is her friend

    added = data(env, alice, "add", links[bob])
    assert added["share"] == "sent" and added["shared_fix_ms"] > 1e12, added
    data(env, bob, "add", links[alice])
    [seen] = data(env, bob, "fetch")["friends"]  # Alice did not share again: the add did
    assert seen["location"]["latitude"] == -33.8688 and seen["location"]["timestamp_ms"] == added["shared_fix_ms"]
    assert {f["name"]: f["reciprocal"] for f in data(env, bob, "friends")["friends"]} == {"Alice": True}
    assert {f["name"]: f["reciprocal"] for f in data(env, alice, "friends")["friends"]} == {"Bob": False}
    listing = coords(env, alice, "friends").stdout
    assert "Not added you back yet" in listing and "Bob" in listing.split("Not added you back yet")[1]

    # Text: what happened, the safety number, then your own link and its QR code.
    out = coords(env, bob, "add", links[carol]).stdout  # Bob has shared nothing yet
    assert "Carol will see your position from your next `coords share` on." in out
    assert links[bob] in out and "#" * 14 in out and "You see Carol's position once they add you too" in out
    assert links[bob] not in coords(env, bob, "add", links[carol], "--no-qr").stdout.split("Your link for them:")[0]
    assert "#" * 14 not in coords(env, bob, "add", links[carol], "--no-qr").stdout

    # The relay is down: the share waits in the outbox and goes out when it is back.
    relay.stop()
    out = coords(env, alice, "add", links[carol]).stdout
    assert "goes to Carol once your relay answers" in out, out
    assert [e["kind"] for e in data(env, alice, "outbox")["entries"]] == ["reseal"]
    relay.start()
    coords(env, alice, "outbox", "flush")
    data(env, carol, "add", links[alice])
    [seen] = data(env, carol, "fetch")["friends"]
    assert seen["location"]["latitude"] == -33.8688
