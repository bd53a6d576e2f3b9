"""The Python host against the hostile relay (issue 37): an App from the coordscore package,
talking to the scripted relay through coordscore.transport.send, as a Python host does. Every
attack ends with a clear exception within the stated deadline, with bounded memory (the answer
is never read past its cap), and with the App's stored state unchanged.

The library comes from the build (COORDSCORE_LIB, `make lib`) like tests/python; the package
from the checkout.
"""
import json
import os
import resource
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("COORDSCORE_LIB", os.path.join(ROOT, ".build", "debug", "libcoordscore.so"))

import coordscore as cc  # noqa: E402
from coordscore import transport  # noqa: E402
from hostile_relay import HostileRelay, answer, endless_body, response, send_all, silent, slow_body  # noqa: E402


@pytest.fixture
def relay():
    with HostileRelay() as hostile:
        yield hostile


@pytest.fixture
def app(relay, tmp_path):
    """An App with an identity on the hostile relay and one friend there."""
    with cc.App(str(tmp_path / "home"), passphrase="correct horse battery", keychain_cost="minimum") as app:
        app.create_identity("Alice", relay.url)
        _, friend = cc.generate_identity()
        app.add_friend(cc.b64url(friend), relay.url, "Bob")
        yield app


def state(app):
    return [f.to_json() for f in app.friends()], [f.to_json() for f in app.friend_locations()]


def fetch_request(app):
    requests = app.prepare_fetches()
    assert len(requests) == 1 and requests[0].max_response_bytes == 4394800
    return requests[0]


def test_the_defaults_are_the_protocols_limits():
    assert (transport.CONNECT_TIMEOUT, transport.IDLE_TIMEOUT, transport.TOTAL_TIMEOUT) == (5.0, 15.0, 30.0)


def test_an_endless_answer_is_cut_at_the_fetch_limit(relay, app):
    before = state(app)
    relay.attack("POST", "/api/location", endless_body())
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.time()
    with pytest.raises(transport.AnswerTooLarge, match="more than 4394800 bytes"):
        transport.send(fetch_request(app))
    assert time.time() - started < 30
    # Never more than the cap held: the peak grew by a few MiB at most, not by what was sent.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before < 64 * 1024  # KiB
    assert state(app) == before


def test_a_slow_answer_meets_the_whole_request_deadline(relay, app):
    relay.attack("POST", "/api/location", slow_body(interval=0.5, seconds=60))
    started = time.time()
    with pytest.raises(transport.RelayUnreachable, match="no complete answer within 3 s"):
        transport.send(fetch_request(app), total_timeout=3)
    assert 2.5 <= time.time() - started < 8


def test_a_silent_relay_is_given_up_after_the_silence_limit(relay, app):
    relay.attack("GET", "/v1/relay/messages", silent(seconds=60))
    started = time.time()
    with pytest.raises(transport.RelayUnreachable, match="silent for 2 s"):
        transport.send(app.prepare_message_fetch(), idle_timeout=2)
    assert time.time() - started < 8


def test_a_redirect_is_the_answer_not_followed(relay, app):
    with HostileRelay() as elsewhere:
        relay.attack("POST", "/api/location", answer(307, b"", [("Location", elsewhere.url + "/api/location")]))
        reply = transport.send(fetch_request(app))
        assert reply.status == 307 and reply.body == b""
        assert elsewhere.requests == []


def test_a_malformed_answer_is_refused_and_changes_nothing(relay, app):
    before = state(app)
    for body in [b"not json", b"[]", b'{"x": 1}', b"{" * 100000, json.dumps({"A" * 43: {"blob": "!!", "updated": -1}}).encode()]:
        relay.attack("POST", "/api/location", answer(200, body))
        reply = transport.send(fetch_request(app))
        assert reply.status == 200
        try:
            app.process_fetch_response(reply.body)
        except cc.CoordsError:
            pass
    assert state(app) == before


def test_an_oversized_mailbox_answer_is_refused_before_it_is_parsed(relay, app):
    request = app.prepare_message_fetch()
    assert request.max_response_bytes == 17681200
    relay.attack("GET", "/v1/relay/messages", endless_body())
    with pytest.raises(transport.AnswerTooLarge):
        transport.send(request)


def test_wrong_types_and_urls_are_refused_before_any_io():
    with pytest.raises(TypeError):
        transport.send("http://127.0.0.1:9/")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        transport.send(cc.Request("ftp://x/", "GET", {}, ""))
    with pytest.raises(transport.RelayUnreachable, match="cannot reach"):
        transport.send(cc.Request("http://127.0.0.1:9/api/version", "GET", {}, ""))



def test_a_file_from_a_hostile_relay_is_refused_and_a_busy_one_is_waited_out(relay, tmp_path, monkeypatch):
    """Pia sends Bob a file through the scripted relay (honest upload); Bob's save_file is served
    the object with a flipped byte, with trailing bytes, busy answers (503, 429, 502) before the
    honest answer, and busy answers without end: the first two are refused and leave no file, the
    third is waited out as the core says and the file arrives whole, the last gives up cleanly."""
    with cc.App(str(tmp_path / "pia"), passphrase="pia", keychain_cost="minimum") as pia, \
            cc.App(str(tmp_path / "bob"), passphrase="bob", keychain_cost="minimum") as bob:
        pia.create_identity("Pia", relay.url)
        bob.create_identity("Bob", relay.url)
        bob_id = pia.add_friend_link(bob.friend_link()).id
        bob.add_friend_link(pia.friend_link())
        relay.calm()
        source = tmp_path / "note.bin"
        source.write_bytes(os.urandom(150_000))
        sent = transport.send_file(pia, bob_id, str(source), "application/octet-stream")
        assert transport.send(sent.request).status == 202
        packets = [json.loads(r.body) for r in relay.received("POST", "/v1/relay/messages") if r.path == "/v1/relay/messages"]
        relay.attack("GET", "/v1/relay/messages", answer(200, {"packets": packets}))
        received = bob.process_messages(transport.send(bob.prepare_message_fetch()).body).received
        assert [m.file.name for m in received if m.file] == ["note.bin"]
        relay.calm()
        oid = sent.message.file.object
        good = relay.objects[oid]
        monkeypatch.setattr(transport.time, "sleep", lambda seconds: None)  # the core's waits, skipped
        target = tmp_path / "copy.bin"

        flipped = bytearray(good)
        flipped[100] ^= 1
        relay.attack("GET", f"/v1/relay/objects/{oid}", answer(200, bytes(flipped)))
        with pytest.raises(cc.WireError) as refused:
            transport.save_file(bob, sent.message.id, str(target))
        assert refused.value.code == cc.ERR_BAD_CHUNK
        # Longer or shorter than asked for (its Content-Length says so): refused at once, never resumed.
        for wrong in (good + b"extra", good[:-1000]):
            before = len(relay.received("GET", f"/v1/relay/objects/{oid}"))
            relay.attack("GET", f"/v1/relay/objects/{oid}", answer(200, wrong))
            with pytest.raises(cc.WireError) as refused:
                transport.save_file(bob, sent.message.id, str(target))
            assert refused.value.code == cc.ERR_OBJECT_MISMATCH and "were asked for" in str(refused.value)
            assert len(relay.received("GET", f"/v1/relay/objects/{oid}")) == before + 1
        assert sorted(os.listdir(tmp_path)) == ["bob", "note.bin", "pia"]

        busy = [(503, [("Retry-After", "2")]), (429, [("Retry-After", "99999")]), (502, [])]
        waits = []

        def busy_first(sock, request, relay_):
            if busy:
                status, headers = busy.pop(0)
                send_all(sock, response(status, {"error": "unavailable", "message": "restarting"}, headers))
            else:
                send_all(sock, response(200, good))

        relay.attack("GET", f"/v1/relay/objects/{oid}", busy_first)
        monkeypatch.setattr(transport.time, "sleep", waits.append)
        transport.save_file(bob, sent.message.id, str(target))
        # The core's decision: the relay's Retry-After, at most a minute (TransferPace), 5 s when it gives none.
        assert not busy and waits == [2, 60, 5] and target.read_bytes() == source.read_bytes()

        waits.clear()
        relay.attack("GET", f"/v1/relay/objects/{oid}", answer(503, {"error": "unavailable"}, [("Retry-After", "1")]))
        with pytest.raises(transport.RelayUnreachable, match="14 tries in a row brought nothing.*kept answering 503"):
            transport.save_file(bob, sent.message.id, str(tmp_path / "never.bin"))
        # The core's transfer rule: 13 waits of the relay's second, then it gives up.
        assert waits == [1] * 13 and not list(tmp_path.glob(".coords-*.part"))


def test_the_host_loop_survives_a_relay_that_answers_everything_with_garbage(relay, app):
    # Issue 61: a host that only runs the one wake (transport.run_once) against a relay that
    # answers every request with garbage, a wrong status or an endless body: each answer becomes
    # a failure with a backoff (or a refusal), nothing is stored, no request is handed out again at
    # once, and the loop never raises. Then the relay turns silent: still bounded.
    before = state(app)
    app.queue_upload(cc.Location(47.37, 8.54, timestamp_ms=int(time.time() * 1000)))
    for body in [b"not json", b"{" * 100000, b'{"packets": 7}', json.dumps({"A" * 43: {"blob": "!!"}}).encode()]:
        relay.attack("*", "/*", answer(200, body))
        app.fetch_now()
        started = time.time()
        answers = transport.run_once(app)
        assert answers and time.time() - started < 30
        for request, decided in answers:
            assert decided.result in ("failed", "outbox", "prekeys", "bundle", "acknowledged", "locations"), (request.purpose, decided)
            if decided.result == "locations":  # an object of ids nobody asked for: ignored, nothing updated
                assert decided.detail["locations"]["updated"] == []
            if decided.result == "failed":
                assert decided.detail["retry_at"] > time.time() * 1000 - 1000
        wake = app.next_wake()
        assert wake is not None and transport.run_once(app) == [] or wake <= time.time() * 1000
    relay.attack("*", "/*", endless_body())
    app.fetch_now()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    answers = transport.run_once(app)
    assert all(decided.result in ("failed", "outbox", "prekeys", "bundle") for _, decided in answers)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before < 64 * 1024  # KiB: never more than a cap held
    friends, locations = state(app)
    assert friends == before[0] and [loc["location"] for loc in locations] == [None]  # nothing of the garbage stored
