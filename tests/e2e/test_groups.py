"""Groups end to end through a real coords-relay (PROTOCOL.md §11), on its LMDB store and on
PostgreSQL (Debian's, started by the test): three homes with the CLI, five Python hosts.

Each person is a separate data directory; every envelope goes through the relay's mailbox.
"""
import os
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("COORDSCORE_LIB", os.path.join(ROOT, ".build", "debug", "libcoordscore.so"))

import coordscore as cc  # noqa: E402
from coordscore import transport  # noqa: E402
from e2e_support import Relay, all_friends, coords, data, free_port, passphrase_env  # noqa: E402

FAST = {"keychain_cost": "minimum", "backup_cost": "minimum", "durability": "no_sync"}
PG = os.path.join(ROOT, "scripts", "pg-test-server.sh")
# Every home talks from 127.0.0.1: the per-address limits would meter them as one.
NO_LIMITS = ["--rate", "0", "--key-rate", "0", "--message-rate", "0", "--mailbox-per-address", "0"]


@pytest.fixture(params=["lmdb", "postgres"])
def relay(request, tmp_path):
    """A relay on LMDB, or on a throwaway PostgreSQL server (stopped and removed afterwards)."""
    if request.param == "lmdb":
        with Relay(str(tmp_path / "relay"), args=NO_LIMITS) as started:
            yield started
        return
    directory = tempfile.mkdtemp(prefix="coords-pg-")
    url = subprocess.run([PG, "start", directory, str(free_port()), str(os.getpid())], check=True, capture_output=True,
                         text=True, timeout=120).stdout.strip().splitlines()[-1]
    try:
        with Relay(str(tmp_path / "relay"), args=NO_LIMITS + ["--postgres", url]) as started:
            yield started
    finally:
        subprocess.run([PG, "kill", directory], capture_output=True, timeout=60)
        subprocess.run(["rm", "-rf", directory], check=False)


# ---- Three homes through the CLI ---------------------------------------------------------------

def test_three_homes_create_talk_and_two_admins_at_once_agree(relay, tmp_path):
    env = passphrase_env()
    homes = all_friends(env, tmp_path, relay.url, ["alice", "bob", "carol"])

    created = data(env, homes["alice"], "group", "create", "Porto", "Bob", "Carol")
    assert created["group"]["is_admin"] and len(created["group"]["members"]) == 3 and created["queued"] == 0
    for name in ["bob", "carol"]:
        coords(env, homes[name], "inbox")
    groups = data(env, homes["bob"], "groups")["groups"]
    assert [(g["name"], g["status"], g["is_admin"]) for g in groups] == [("Porto", "member", False)]

    sent = data(env, homes["alice"], "send", "--group", "Porto", "at the station")
    assert sent["copies"] == 2 and sent["queued"] == 0
    inbox = coords(env, homes["carol"], "inbox").stdout
    assert "[Porto] Alice" in inbox and "at the station" in inbox
    chat = data(env, homes["bob"], "chat", "--group", "Porto")
    assert [m["text"] for m in chat["messages"]] == ["at the station"]
    assert chat["messages"][0]["group"] == created["group"]["id"]

    # A non-admin may not change the group.
    refused = coords(env, homes["bob"], "group", "rename", "Porto", "Bob's", expect=1)
    assert "admin" in refused.stderr

    # Two admins rename at the same time: everyone shows the same conflict, then the same state.
    data(env, homes["alice"], "group", "admin", "Porto", "Bob", "on")
    for name in ["bob", "carol"]:
        coords(env, homes[name], "inbox")
    data(env, homes["alice"], "group", "rename", "Porto", "Porto A")
    data(env, homes["bob"], "group", "rename", "Porto", "Porto B")
    for name in ["alice", "bob", "carol", "alice", "bob"]:
        coords(env, homes[name], "inbox")
    views = [data(env, home, "groups")["groups"][0] for home in homes.values()]
    assert all(v["in_conflict"] for v in views), views
    assert len({v["name"] for v in views}) == 1 and len({v["epoch"] for v in views}) == 1
    name = views[0]["name"]
    data(env, homes["alice"], "group", "rename", name, "Porto")
    for home in homes.values():
        coords(env, home, "inbox")
    views = [data(env, home, "groups")["groups"][0] for home in homes.values()]
    assert [(v["name"], v["in_conflict"]) for v in views] == [("Porto", False)] * 3

    # Sharing with the group seals for its members (Carol's own share paused still reaches her).
    coords(env, homes["alice"], "pause", "Carol")
    shared = data(env, homes["alice"], "share", "--group", "Porto", "--lat", "41.15", "--lon", "-8.61")
    assert shared["recipient_count"] == 3
    fetched = data(env, homes["carol"], "fetch")
    assert any(f["name"] == "Alice" and f["location"] for f in fetched["friends"]), fetched


# ---- Five Python hosts ---------------------------------------------------------------------------

class Home:
    """One person: an app on its own data directory, talking to the relay over HTTP."""

    def __init__(self, app, name, relay):
        self.app, self.name = app, name
        self.id = app.create_identity(name.capitalize(), relay.url)

    def sync(self):
        """Sends the outbox, fetches the mailbox, processes it, sends the acks and what it queued."""
        transport.deliver_outbox(self.app, ignore_backoff=True)
        answer = transport.send(self.app.prepare_message_fetch())
        assert answer.status == 200, answer.body
        outcome = self.app.process_messages(answer.body)
        assert outcome.rejected == [], (self.name, outcome.rejected)
        for ack in outcome.acks:
            transport.send(ack)
        transport.deliver_outbox(self.app, ignore_backoff=True)
        return outcome

    def texts(self, group):
        return [m.text for m in self.app.group_history(group)]

    def group(self, group_id):
        return next(g for g in self.app.groups() if g.id == group_id)


def settle(homes, rounds=3):
    for _ in range(rounds):
        for home in homes:
            home.sync()


def test_five_homes_join_leave_and_catch_up(relay, tmp_path):
    names = ["alice", "bob", "carol", "dave", "erin"]
    apps = [cc.App(str(tmp_path / name), passphrase=name, **FAST) for name in names]
    try:
        alice, bob, carol, dave, erin = homes = [Home(app, name, relay) for app, name in zip(apps, names)]
        for a in homes:
            for b in homes:
                if a is not b:
                    a.app.add_friend_link(b.app.friend_link())

        group = alice.app.create_group("Family", [bob.id, carol.id, dave.id]).group.id
        settle(homes)
        alice.app.send_group_message(group, "before erin")
        settle(homes)
        assert dave.texts(group) == ["before erin"]

        # Erin joins: she reads what follows, not what came before.
        alice.app.add_to_group(group, [erin.id])
        settle(homes)
        assert erin.group(group).members and len(erin.group(group).members) == 5
        bob.app.send_group_message(group, "welcome erin")
        settle(homes)
        assert erin.texts(group) == ["welcome erin"]

        # Carol is removed: she is told, and reads nothing sent afterwards.
        alice.app.remove_from_group(group, [carol.id])
        settle(homes)
        assert carol.group(group).status == "removed"
        dave.app.send_group_message(group, "carol has left")
        settle(homes)
        assert "carol has left" not in carol.texts(group)
        assert "carol has left" in erin.texts(group) and "carol has left" in alice.texts(group)

        # Dave is away during two changes, then catches up in order.
        alice.app.rename_group(group, "Family 2026")
        settle([alice, bob, erin])
        alice.app.set_group_admin(group, bob.id, True)
        settle([alice, bob, erin])
        bob.app.send_group_message(group, "while dave was away")
        settle([alice, bob, erin])
        dave.sync()
        settle(homes)
        view = dave.group(group)
        assert (view.name, view.epoch, len(view.members)) == ("Family 2026", alice.group(group).epoch, 4)
        assert [m.is_admin for m in view.members if m.id == bob.id] == [True]
        assert dave.texts(group)[-1] == "while dave was away"
        states = {(h.group(group).name, h.group(group).epoch, tuple(m.id for m in h.group(group).members)) for h in [alice, bob, dave, erin]}
        assert len(states) == 1, states
    finally:
        for app in apps:
            app.close()
