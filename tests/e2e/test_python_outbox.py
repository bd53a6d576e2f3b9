"""The Python host drives the outbox through the core alone (issue 40): `outbox_due` hands out
what to send, `outbox_report` takes the relay's answer and the core decides; the host holds no
delivery policy. A real coords-relay goes down and comes back; its short signature window makes
a queued upload's signature stale, which the core signs again; a message whose first answer was
lost is answered 409, which the core counts as delivered.

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


def now_ms():
    return int(time.time() * 1000)


def by_kind(reports):
    return {report.kind: report for report in reports}


def test_a_python_host_rides_out_an_outage_through_due_and_report(tmp_path):
    # A two-second window: a request signed before the outage is stale when the relay is back.
    relay = Relay(str(tmp_path / "relay"), args=["--signature-window", "2"])
    relay.start()
    try:
        with cc.App(str(tmp_path / "alice"), passphrase="a", **FAST) as alice, \
                cc.App(str(tmp_path / "bob"), passphrase="b", **FAST) as bob:
            alice_id = alice.create_identity("Alice", relay.url)
            bob_id = bob.create_identity("Bob", relay.url)
            alice.add_friend_link(bob.friend_link())
            bob.add_friend_link(alice.friend_link())

            # The relay goes down: a position and a message are queued; every attempt is retried later.
            relay.stop()
            fix = cc.Location(-33.8688, 151.2093, accuracy=8, timestamp_ms=now_ms())
            upload, upload_id = alice.queue_upload(fix)
            sent = alice.send_message(bob_id, "are you there?")
            assert alice.outbox_next_wake() <= now_ms()
            reports = transport.deliver_outbox(alice)
            assert sorted(r.kind for r in reports) == ["message", "upload"]
            assert all(r.decision == "retry" and "cannot reach" in r.reason for r in reports), reports
            assert alice.outbox_due() == [], "backing off"
            wake = alice.outbox_next_wake()
            assert wake is not None and now_ms() < wake <= now_ms() + 1200

            time.sleep(4)  # the upload's signature is older than the relay's window (2 s) now, in whole seconds too
            relay.start()
            # The message went out once behind the core's back (its answer was lost): the relay has it.
            queued_message = next(e for e in alice.outbox() if e.kind == "message")
            assert transport.send(queued_message.request).status == 202
            time.sleep(max(0, wake - now_ms()) / 1000)

            reports = by_kind(transport.deliver_outbox(alice))
            assert reports["message"].decision == "delivered", reports  # 409: the relay already had it
            assert reports["upload"].decision == "sign_again", reports  # 401 timestamp_too_old
            assert [m.status for m in alice.history(bob_id)] == ["sent"]

            # Signed again by the core (a new timestamp), then taken.
            due = alice.outbox_due(ignore_backoff=True)
            assert [e.id for e in due] == [upload_id] and due[0].request != upload.request
            assert by_kind(transport.deliver_outbox(alice, ignore_backoff=True))["upload"].decision == "delivered"
            assert alice.outbox() == [] and alice.outbox_next_wake() is None
            # The delivery recorded the upload as acknowledged: the same fix is stale now.
            try:
                alice.prepare_upload(fix)
                raise AssertionError("an acknowledged fix uploads again")
            except cc.CoordsError as error:
                assert error.code == cc.ERR_STALE_LOCATION

            # Bob sees both.
            located = {}
            for request in bob.prepare_fetches():
                located = bob.process_fetch_response(transport.send(request).body)
            assert [f.location.latitude for f in located.updated] == [-33.8688]
            answer = transport.send(bob.prepare_message_fetch())
            assert [m["text"] for m in bob.process_messages(answer.body).received] == ["are you there?"]
            assert sent.message.id in [m.id for m in bob.history(alice_id)]

            # Reporting twice, or an entry that never was: nothing changes, and it says so.
            assert alice.outbox_report(upload_id, 204).decision == "unknown"
            # A refusal the core cannot fix is dropped with the relay's reason.
            _, doomed = alice.queue_upload(cc.Location(1, 2, timestamp_ms=now_ms()))
            report = alice.outbox_report(doomed, 400, b'{"error":"invalid_blob","message":"no"}')
            assert report.decision == "dropped" and "invalid_blob" in report.reason and alice.outbox() == []
    finally:
        relay.stop()


def test_stateless_prepares_in_one_second_carry_increasing_timestamps():
    seed, _ = cc.generate_identity()
    fix = cc.Location(10, 20, timestamp_ms=now_ms())
    stamps = []
    for _ in range(5):
        body = cc.prepare_upload(seed, fix, [], "https://relay.test").body
        stamps.append(json.loads(body)["timestamp"])
    assert all(a < b for a, b in zip(stamps, stamps[1:])), stamps
