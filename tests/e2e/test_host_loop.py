"""A host that only runs the one wake (issue 61): `due()` → perform → `report()` → sleep until
`next_wake()`. Against a real coords-relay, every end of a share — pause, remove, block, and a
share's `until` passing — is resealed by the core without the host asking, and the friend can no
longer open the newest blob; the C example `examples/host-loop.c` (libcurl) is the same loop in C.

The library comes from the build (COORDSCORE_LIB, `make lib`), the package from the checkout.
"""
import json
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("COORDSCORE_LIB", os.path.join(ROOT, ".build", "debug", "libcoordscore.so"))

import coordscore as cc  # noqa: E402
from coordscore import transport  # noqa: E402
from e2e_support import Relay  # noqa: E402

FAST = {"keychain_cost": "minimum", "backup_cost": "minimum", "durability": "no_sync"}


def now_ms():
    return int(time.time() * 1000)


def loop_until_quiet(app, turns=10):
    """The host: turns of the loop until nothing is due now; returns every (request, answer)."""
    seen = []
    for _ in range(turns):
        answers = transport.run_once(app)
        if not answers:
            return seen
        seen += answers
    raise AssertionError(f"the loop never ran out of requests: {[(r.purpose, a.result) for r, a in seen[-5:]]}")


def newest_of(reader, friend_id):
    """What `reader` makes of `friend_id`'s newest blob: "opens", "unchanged", or the refusal's code."""
    reader.fetch_now()  # as a push or a live notice would
    for request, answer in transport.run_once(reader):
        if request.purpose == "fetch":
            locations = answer.detail["locations"]
            if any(f["id"] == friend_id for f in locations["updated"]):
                return "opens"
            for rejection in locations["rejected"]:
                if rejection["id"] == friend_id:
                    return rejection["error"]["code"]
            if friend_id in locations["unchanged"]:
                return "unchanged"
    return None


@pytest.fixture(scope="module")
def relay(tmp_path_factory):
    with Relay(str(tmp_path_factory.mktemp("relay"))) as running:
        yield running


@pytest.mark.parametrize("how", ["pause", "remove", "block", "expire"])
def test_every_end_of_a_share_is_resealed_by_a_host_that_only_runs_the_loop(relay, tmp_path, how):
    with cc.App(str(tmp_path / "alice"), passphrase="a", **FAST) as alice, \
            cc.App(str(tmp_path / "bob"), passphrase="b", **FAST) as bob, \
            cc.App(str(tmp_path / "carol"), passphrase="c", **FAST) as carol:
        alice_id = alice.create_identity("Alice", relay.url)
        bob_id = bob.create_identity("Bob", relay.url)
        carol.create_identity("Carol", relay.url)
        for friend in (bob, carol):
            alice.add_friend_link(friend.friend_link())
            friend.add_friend_link(alice.friend_link())
        if how == "expire":
            alice.share_with(bob_id, until_ms=now_ms() + 2_000)
        alice.queue_upload(cc.Location(47.3769, 8.5417, accuracy=5, timestamp_ms=now_ms()))
        loop_until_quiet(alice)
        assert alice.outbox() == []
        assert newest_of(bob, alice_id) == "opens"
        assert newest_of(carol, alice_id) == "opens"

        if how == "pause":
            alice.pause(bob_id)
        elif how == "remove":
            alice.remove_friend(bob_id)
        elif how == "block":
            alice.update_friend(bob_id, trust="blocked")
        else:
            wake = alice.next_wake()
            assert wake is not None and wake <= now_ms() + 2_000  # the loop wakes for the share's end
            time.sleep(max(0, wake - now_ms()) / 1000 + 0.05)
        time.sleep(1.05)  # the relay keeps whole-second upload times: the reseal is a newer second
        answers = loop_until_quiet(alice)
        reseals = [a for r, a in answers if r.outbox_kind == "reseal"]
        assert len(reseals) == 1 and reseals[0].outbox.decision == "delivered", answers
        assert newest_of(bob, alice_id) == cc.ERR_NOT_A_RECIPIENT, how
        # Carol opens the reseal: the same fix again ("unchanged"), not a refusal.
        assert newest_of(carol, alice_id) in ("opens", "unchanged")
        carol_view = [f for f in carol.friend_locations() if f.id == alice_id]
        assert carol_view and carol_view[0].location is not None
        assert not any(r.outbox_kind == "reseal" for r, _ in loop_until_quiet(alice))  # owed once


def test_the_c_host_loop_example_delivers_and_fetches_against_a_live_relay(relay, tmp_path):
    example = os.environ.get("COORDS_HOST_LOOP", os.path.join(ROOT, ".build", "c", "host-loop"))
    assert os.path.exists(example), f"{example} is missing: `make host-loop` builds it"
    with cc.App(str(tmp_path / "alice"), passphrase="a", **FAST) as alice, \
            cc.App(str(tmp_path / "bob"), passphrase="b", **FAST) as bob:
        alice_id = alice.create_identity("Alice", relay.url)
        bob.create_identity("Bob", relay.url)
        alice.add_friend_link(bob.friend_link())
        bob.add_friend_link(alice.friend_link())
        alice.queue_upload(cc.Location(-33.8688, 151.2093, accuracy=8, timestamp_ms=now_ms()))
        bob_dir = str(tmp_path / "bob")
        alice_dir = str(tmp_path / "alice")
    # The apps are closed: the C host opens each directory in its own process.
    env = dict(os.environ, COORDS_PASSPHRASE="a")
    sent = subprocess.run([example, alice_dir, "--turns", "3"], env=env, capture_output=True, text=True, timeout=60)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    outbox = [answer["outbox"] for purpose, answer in answers_of(sent.stdout) if purpose == "outbox"]
    assert {"kind": "upload", "decision": "delivered"}.items() <= outbox[0].items(), sent.stdout
    env["COORDS_PASSPHRASE"] = "b"
    read = subprocess.run([example, bob_dir, "--turns", "3"], env=env, capture_output=True, text=True, timeout=60)
    assert read.returncode == 0, read.stdout + read.stderr
    fetched = [answer["locations"] for purpose, answer in answers_of(read.stdout) if purpose == "fetch"]
    assert fetched and fetched[0]["updated"][0]["id"] == alice_id, read.stdout
    assert fetched[0]["updated"][0]["location"]["latitude"] == -33.8688
    assert "next wake in" in read.stdout  # the C host sleeps until the core's next wake


def answers_of(output):
    """(purpose, the core's answer) for each `purpose status: json` line host-loop printed."""
    found = []
    for line in output.splitlines():
        head, _, record = line.partition(": ")
        if record.startswith("{"):
            found.append((head.split(" ")[0], json.loads(record)))
    return found
