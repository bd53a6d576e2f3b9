"""Forward secrecy through a real coords-relay (PROTOCOL.md §10): two Python hosts publish their
prekeys, fetch each other's bundles, exchange messages in sessions (version-3 envelopes through
the relay's mailbox) and positions sealed to signed prekeys; the relay hands out each one-time
prekey once, and what the relay stored is version 3, never a downgrade.

The library comes from the build (COORDSCORE_LIB, `make lib`), the package from the checkout.
"""
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("COORDSCORE_LIB", os.path.join(ROOT, ".build", "debug", "libcoordscore.so"))

import coordscore as cc  # noqa: E402
from coordscore import transport  # noqa: E402
from e2e_support import Relay  # noqa: E402

FAST = {"keychain_cost": "minimum", "backup_cost": "minimum", "durability": "no_sync"}


def publish(app):
    request = app.prepare_prekey_upload()
    assert request is not None and request.method == "PUT"
    answer = transport.send(request)
    assert answer.status == 200, answer.body
    return app.process_prekey_upload(answer.status, answer.body)


def fetch_bundle(app, friend_id):
    answer = transport.send(app.prepare_bundle_request(friend_id))
    return app.process_bundle(friend_id, answer.status, answer.body)


def deliver_messages(app):
    """Fetches our mailbox, processes it and sends the acks; returns the outcome."""
    answer = transport.send(app.prepare_message_fetch())
    assert answer.status == 200, answer.body
    outcome = app.process_messages(answer.body)
    for ack in outcome.acks:
        transport.send(ack)
    return outcome


def test_two_python_hosts_talk_and_share_in_forward_secret_sessions(tmp_path):
    with Relay(str(tmp_path / "relay")) as relay, \
            cc.App(str(tmp_path / "alice"), passphrase="a", **FAST) as alice, \
            cc.App(str(tmp_path / "bob"), passphrase="b", **FAST) as bob:
        alice_id = alice.create_identity("Alice", relay.url)
        bob_id = bob.create_identity("Bob", relay.url)
        alice.add_friend_link(bob.friend_link())
        bob.add_friend_link(alice.friend_link())
        assert [f.protection for f in alice.friends()] == ["legacy"]

        # Before Bob publishes, his relay has nothing: he stays legacy, messages are version 2.
        assert alice.bundles_due() == [bob_id]
        assert fetch_bundle(alice, bob_id) == {"result": "not_offered"}
        assert alice.bundles_due() == [], "asked at most once an hour"

        assert publish(bob) == 100
        assert publish(alice) == 100
        assert bob.prepare_prekey_upload() is None, "nothing due right after publishing"
        stock = transport.send(bob.prepare_prekey_stock())
        assert bob.process_prekey_stock(stock.status, stock.body) == 100

        # The relay hands the bundle out; the one-time prekey comes once, and only to a signed request.
        assert fetch_bundle(bob, alice_id) == {"result": "accepted", "one_time": True}
        anonymous = transport.send(cc.Request(relay.url + "/v1/relay/prekeys/" + bob_id, "GET", {}, ""))
        assert anonymous.status == 200 and json.loads(anonymous.body)["oneTimePrekey"] is None
        outcome = fetch_bundle(alice, bob_id)
        assert outcome == {"result": "accepted", "one_time": True}, outcome
        assert [f.protection for f in alice.friends()] == ["forward-secret"]
        stock = transport.send(bob.prepare_prekey_stock())
        assert bob.process_prekey_stock(stock.status, stock.body) == 99, "exactly one of Bob's one-time prekeys went out"

        # Messages both ways in sessions: the relay stores version-3 envelopes.
        sent = alice.send_message(bob_id, "hello, forward-secret Bob")
        assert json.loads(sent.request.body)["protocolVersion"] == 3
        assert transport.send(sent.request).status == 202
        got = deliver_messages(bob)
        assert [m.text for m in got.received] == ["hello, forward-secret Bob"] and got.rejected == []
        reply = bob.send_message(alice_id, "hi Alice")
        assert json.loads(reply.request.body)["protocolVersion"] == 3
        assert transport.send(reply.request).status == 202
        for receipt in got.receipts:
            transport.send(receipt.request)
        back = deliver_messages(alice)
        assert [m.text for m in back.received] == ["hi Alice"] and back.rejected == []
        assert back.delivered == [sent.message.id]

        # Positions: Alice's entry for Bob is sealed to his signed prekey, and he opens it.
        fix = cc.Location(46.9480, 7.4474, accuracy=5, timestamp_ms=int(time.time() * 1000))
        upload = alice.prepare_upload(fix)
        assert transport.send(upload.request).status == 204
        for fetch in bob.prepare_fetches():
            answer = transport.send(fetch)
            seen = bob.process_fetch_response(answer.body)
        assert [round(loc.location.latitude, 4) for loc in seen.updated] == [46.948]
        assert bob.sweep_sessions() == 0


def test_the_cli_publishes_fetches_bundles_and_talks_in_sessions(tmp_path):
    from e2e_support import alice_and_bob, coords, data, passphrase_env

    env = passphrase_env()
    with Relay(str(tmp_path / "relay")) as relay:
        alice, bob = alice_and_bob(env, tmp_path, relay.url)
        assert [f["protection"] for f in data(env, alice, "friends")["friends"]] == ["legacy"]
        # Bob's inbox publishes his prekeys (Alice has none yet); Alice's then accepts his bundle.
        coords(env, bob, "inbox")
        result = coords(env, alice, "inbox")
        assert "forward secrecy" not in result.stderr, result.stderr
        assert [f["protection"] for f in data(env, alice, "friends")["friends"]] == ["forward-secret"]
        assert "PROTECTION" in coords(env, alice, "friends").stdout
        coords(env, alice, "send", "Bob", "a forward-secret hello")
        got = data(env, bob, "inbox")
        assert [m["text"] for m in got["received"]] == ["a forward-secret hello"] and got["rejected"] == []
        # A version-3 envelope announced Alice to Bob, and he answers in the same session.
        assert [f["protection"] for f in data(env, bob, "friends")["friends"]] == ["forward-secret"]
        coords(env, bob, "send", "Alice", "and back")
        assert [m["text"] for m in data(env, alice, "inbox")["received"]] == ["and back"]


def test_sharing_alone_publishes_prekeys_and_fetches_bundles(tmp_path):
    """Issue 59, defect 11: a user who only shares (never reads messages) still publishes prekeys
    and accepts friends' bundles, so the positions it seals become forward-secret."""
    from e2e_support import alice_and_bob, coords, data, passphrase_env

    env = passphrase_env()
    with Relay(str(tmp_path / "relay")) as relay:
        alice, bob = alice_and_bob(env, tmp_path, relay.url)
        assert [f["protection"] for f in data(env, alice, "friends")["friends"]] == ["legacy"]
        coords(env, bob, "share", "--lat", "46.948", "--lon", "7.447")  # publishes Bob's prekeys
        result = coords(env, alice, "share", "--lat", "47.376", "--lon", "8.541")  # accepts Bob's bundle, then seals
        assert "forward secrecy" not in result.stderr, result.stderr
        assert [f["protection"] for f in data(env, alice, "friends")["friends"]] == ["forward-secret"]
        coords(env, alice, "share", "--lat", "47.377", "--lon", "8.542")
        seen = data(env, bob, "fetch")["friends"]
        assert [f["new"] for f in seen] == [True], seen
        assert [round(f["location"]["latitude"], 3) for f in seen] == [47.377], seen
