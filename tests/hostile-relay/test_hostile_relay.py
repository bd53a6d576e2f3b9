"""The client against a hostile relay (issue 37, PROTOCOL.md §4.1).

Every attack points the `coords` CLI at a scripted relay on loopback (hostile_relay.py) that
answers with something huge, endless, slow, malformed, repeated, redirected or someone else's.
The client runs under a memory limit (`prlimit --as`) and a wall-clock limit; it must end with a
clear error (or keep running, for `coords watch`), within its stated deadlines, with bounded
memory, and with its stored state unchanged. A new attack is one more test here.
"""
import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import uuid

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from e2e_support import BIN, befriend, passphrase_env  # noqa: E402
from hostile_relay import (HostileRelay, answer, endless_body, live_upgrade_then, response, send_all,  # noqa: E402
                           silent, slow_body, ws_frame)

# Heap and anonymous memory of the client process (prlimit --data, RLIMIT_DATA): unlike --as it
# leaves room for the LMDB map (a shared file mapping of 1 GiB address space, not memory used).
MEMORY_LIMIT = 512 << 20
UNAVAILABLE = 69
# Characters that would drive a terminal: none may reach standard output or error raw.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]")


def coords(home, *args, timeout=90):
    """Runs `coords ARGS --home HOME` under the memory limit; returns (result, seconds)."""
    started = time.time()
    result = subprocess.run(["prlimit", f"--data={MEMORY_LIMIT}", "--", os.path.join(BIN, "coords"), *args, "--home", str(home)],
                            env=passphrase_env(), capture_output=True, text=True, timeout=timeout, errors="replace")
    return result, time.time() - started


def ok(home, *args):
    result, _ = coords(home, *args)
    assert result.returncode == 0, f"coords {' '.join(args)} → {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


class Watch:
    """`coords watch` (live) under the memory limit, its output collected in a file."""

    def __init__(self, home, tmp_path):
        self.log = tmp_path / "watch.log"
        self.file = open(self.log, "w")
        self.process = subprocess.Popen(
            ["prlimit", f"--data={MEMORY_LIMIT}", "--", os.path.join(BIN, "coords"), "watch", "--interval", "3600", "--home", str(home)],
            env=passphrase_env(), stdout=self.file, stderr=subprocess.STDOUT)

    def peak_rss_mib(self):
        """The process's peak resident memory so far (VmHWM), in MiB."""
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return 0

    def output(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def wait_for(self, text, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if text in self.output():
                return True
            assert self.process.poll() is None, f"coords watch exited with {self.process.returncode}:\n{self.output()}"
            time.sleep(0.2)
        raise AssertionError(f"no {text!r} within {timeout} s:\n{self.output()}")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.file.close()


@pytest.fixture
def relay():
    with HostileRelay() as hostile:
        yield hostile


@pytest.fixture
def homes(relay, tmp_path):
    """Alice and Bob on the hostile relay (answering honestly while they are set up), friends."""
    env = passphrase_env()
    alice, bob = tmp_path / "alice", tmp_path / "bob"
    ok(alice, "init", "--server", relay.url, "--name", "Alice")
    ok(bob, "init", "--server", relay.url, "--name", "Bob")
    befriend(env, alice, bob)
    relay.calm()
    return alice, bob


def friends_of(home):
    """The home's friends as `coords friends --json` lists them (positions included)."""
    return json.loads(ok(home, "friends", "--json").stdout)["friends"]


# ---- Plain requests: size, time, redirects, shape --------------------------------------

def test_endless_fetch_answer_is_cut_at_the_fetch_limit(relay, homes):
    alice, _ = homes
    before = friends_of(alice)
    relay.attack("POST", "/api/location", endless_body())
    result, seconds = coords(alice, "fetch")
    assert result.returncode == UNAVAILABLE, result.stderr
    assert "more than 4394800 bytes" in result.stderr
    assert seconds < 30
    assert friends_of(alice) == before


def test_slow_fetch_answer_meets_the_whole_request_deadline(relay, homes):
    alice, _ = homes
    relay.attack("POST", "/api/location", slow_body(interval=2.0, seconds=60))
    result, seconds = coords(alice, "fetch")
    assert result.returncode == UNAVAILABLE, result.stderr
    assert "no complete answer within 30 s" in result.stderr
    assert 29 <= seconds < 45


def test_a_relay_that_never_answers_is_given_up(relay, homes):
    alice, _ = homes
    relay.attack("GET", "/v1/relay/messages", silent(seconds=60))
    result, seconds = coords(alice, "inbox")
    assert result.returncode == UNAVAILABLE, result.stderr
    assert seconds < 45


def test_redirects_are_not_followed(relay, homes):
    alice, _ = homes
    with HostileRelay() as elsewhere:
        relay.attack("PUT", "/api/location", answer(307, b"", [("Location", elsewhere.url + "/api/location")]))
        result, _ = coords(alice, "share", "--lat", "38.72", "--lon=-9.14")
        assert result.returncode != 0, result.stdout
        assert elsewhere.requests == []
    relay.attack("GET", "/v1/relay/messages", answer(308, b"", [("Location", relay.url + "/elsewhere")]))
    result, _ = coords(alice, "inbox")
    assert result.returncode != 0
    assert relay.received("GET", "/elsewhere") == []


def test_malformed_fetch_answer_changes_nothing(relay, homes):
    alice, _ = homes
    before = friends_of(alice)
    for body in [b"not json", b"[]", b'{"x": 1}', b"{" * 100000, json.dumps({"A" * 43: {"blob": "!!", "updated": -1}}).encode()]:
        relay.attack("POST", "/api/location", answer(200, body))
        result, _ = coords(alice, "fetch")
        assert result.returncode in (0, 2, UNAVAILABLE), result.stderr
        assert "Traceback" not in result.stderr and "Fatal error" not in result.stderr
    assert friends_of(alice) == before


def test_someone_elses_blob_is_refused(relay, homes, tmp_path):
    """The relay files Carol's signed upload under Bob's id: refused, nothing stored."""
    alice, bob = homes
    carol = tmp_path / "carol"
    ok(carol, "init", "--server", relay.url, "--name", "Carol")
    befriend(passphrase_env(), alice, carol)
    relay.calm()
    ok(carol, "share", "--lat", "1.5", "--lon", "2.5")
    upload = json.loads(relay.received("PUT", "/api/location")[-1].body)
    bob_id = json.loads(ok(bob, "whoami", "--json").stdout)["id"]
    forged = {bob_id: {"blob": upload["blob"], "updated": int(time.time()), "timestamp": upload["timestamp"], "signature": upload["signature"]}}
    relay.attack("POST", "/api/location", answer(200, forged))
    result, _ = coords(alice, "fetch", "--json")
    bob_row = [f for f in friends_of(alice) if f["id"] == bob_id][0]
    assert bob_row["location"] is None, bob_row
    assert [r["id"] for r in json.loads(result.stdout)["rejected"]] == [bob_id], result.stdout


def test_strict_mode_refuses_a_position_without_its_signature(relay, homes):
    """The relay serves Bob's real upload without the uploader's signature (as a reference relay
    does): with strict mode off Alice shows it as unverified; after `coords strict on` it is
    refused and nothing is stored; `coords strict off` accepts it again."""
    alice, bob = homes
    relay.calm()
    ok(bob, "share", "--lat", "-33.87", "--lon", "151.21")
    upload = json.loads(relay.received("PUT", "/api/location")[-1].body)
    bob_id = json.loads(ok(bob, "whoami", "--json").stdout)["id"]
    relay.attack("POST", "/api/location", answer(200, {bob_id: {"blob": upload["blob"], "updated": int(time.time())}}))
    assert json.loads(ok(alice, "strict", "--json").stdout) == {"strict": False}
    assert json.loads(ok(alice, "strict", "on", "--json").stdout) == {"strict": True}
    result, _ = coords(alice, "fetch", "--json")
    assert [r["id"] for r in json.loads(result.stdout)["rejected"]] == [bob_id], result.stdout
    assert [f for f in friends_of(alice) if f["id"] == bob_id][0]["location"] is None
    assert "Strict mode is off" in ok(alice, "strict", "off").stdout
    ok(alice, "fetch")
    row = [f for f in friends_of(alice) if f["id"] == bob_id][0]
    assert row["location"]["latitude"] == -33.87 and row["signature"] == "unsigned", row
    result, _ = coords(alice, "strict", "maybe")
    assert result.returncode != 0 and "say on or off" in result.stderr


# ---- Mailbox: what an answer can make the client sign ------------------------------------

def test_one_id_repeated_is_acknowledged_once(relay, homes):
    alice, _ = homes
    packet_id = str(uuid.uuid4())
    relay.attack("GET", "/v1/relay/messages", answer(200, {"packets": [{"id": packet_id}] * 100}))
    result, _ = coords(alice, "inbox")
    acks = relay.received("POST", "/v1/relay/messages/")
    assert [a.path for a in acks] == [f"/v1/relay/messages/{packet_id}/ack"], result.stderr


def test_more_packets_than_asked_for_are_refused_unsigned(relay, homes):
    alice, _ = homes
    packet_id = str(uuid.uuid4())
    relay.attack("GET", "/v1/relay/messages", answer(200, {"packets": [{"id": packet_id}] * 20000}))
    result, _ = coords(alice, "inbox")
    assert result.returncode != 0
    assert "more than the 100 asked for" in result.stderr
    assert relay.received("POST", "/v1/relay/messages/") == []


def test_signed_timestamps_stay_near_the_clock(relay, homes):
    """Many answers with 100 distinct ids each: every signature stays within 120 s of the clock."""
    alice, _ = homes
    for _ in range(3):
        relay.attack("GET", "/v1/relay/messages", answer(200, {"packets": [{"id": str(uuid.uuid4())} for _ in range(100)]}))
        coords(alice, "inbox")
    signed = [int(r.header("x-coords-timestamp")) for r in relay.requests if r.header("x-coords-timestamp")]
    assert len(signed) >= 300
    assert max(signed) <= time.time() + 121


# ---- Output: nothing from a relay drives the terminal -------------------------------------

def test_control_characters_in_a_refusal_are_escaped(relay, homes):
    alice, _ = homes
    hostile = {"error": "\x1b]0;owned\x07", "message": "\x9b31mred\u202e evil \x1b[2J\nfake: line"}
    relay.attack("PUT", "/api/location", answer(400, hostile))
    result, _ = coords(alice, "share", "--lat", "1", "--lon", "2")
    assert result.returncode != 0
    assert "owned" in result.stderr
    assert not CONTROLS.search(result.stdout + result.stderr), repr(result.stderr)
    assert "\\u{1B}" in result.stderr


def test_control_characters_in_json_output_are_escaped(relay, homes):
    alice, _ = homes
    bad_id = "\x9b" + "x" * 35
    relay.attack("GET", "/v1/relay/messages", answer(200, {"packets": [{"id": bad_id, "evil": "\u202e"}]}))
    result, _ = coords(alice, "inbox", "--json")
    assert not CONTROLS.search(result.stdout + result.stderr), repr(result.stdout)
    if result.stdout.strip():
        json.loads(result.stdout)


# ---- The live channel ----------------------------------------------------------------------

def test_wrong_upgrade_with_endless_bytes_is_closed(relay, homes, tmp_path):
    """The reproduced defect: 101 with a wrong Sec-WebSocket-Accept, then bytes without end."""
    alice, _ = homes
    relay.attack("GET", "/v1/relay/live", live_upgrade_then(correct_accept=False, flood=b"\x81\x7e\x40\x00" + b"x" * 16384, seconds=8))
    watch = Watch(alice, tmp_path)
    try:
        watch.wait_for("upgrade answer was refused", timeout=20)
        time.sleep(6)
        assert watch.process.poll() is None, watch.output()
        assert watch.peak_rss_mib() < 256, watch.peak_rss_mib()
    finally:
        watch.stop()


def test_upgrade_that_never_completes_is_given_up(relay, homes, tmp_path):
    alice, _ = homes
    relay.attack("GET", "/v1/relay/live", silent(seconds=60))
    watch = Watch(alice, tmp_path)
    try:
        started = time.time()
        watch.wait_for("no complete upgrade within 10 s", timeout=25)
        assert time.time() - started < 20
    finally:
        watch.stop()


def test_oversized_live_frame_closes_the_connection(relay, homes, tmp_path):
    alice, _ = homes
    relay.attack("GET", "/v1/relay/live", live_upgrade_then(frames=[ws_frame("x" * 20000)], seconds=10))
    watch = Watch(alice, tmp_path)
    try:
        watch.wait_for("broke the WebSocket protocol", timeout=20)
        assert watch.peak_rss_mib() < 256
    finally:
        watch.stop()


def test_message_notice_flood_costs_one_fetch_per_burst(relay, homes, tmp_path):
    alice, _ = homes
    notices = [ws_frame(json.dumps({"type": "message", "id": str(uuid.uuid4())})) for _ in range(2000)]
    relay.attack("GET", "/v1/relay/live", live_upgrade_then(frames=notices, seconds=15))
    watch = Watch(alice, tmp_path)
    try:
        time.sleep(8)
        fetches = relay.received("GET", "/v1/relay/messages")
        # One fetch in flight at a time, however many notices arrive meanwhile (before: one per notice).
        assert 1 <= len(fetches) <= 40, len(fetches)
        signed = [int(r.header("x-coords-timestamp")) for r in relay.requests if r.header("x-coords-timestamp")]
        assert max(signed) <= time.time() + 121
    finally:
        watch.stop()


def test_changed_notice_flood_stays_bounded(relay, homes, tmp_path):
    """§8.3 `changed` (a position too large for a notice): each asks for one ordinary fetch, done
    one at a time; a flood of them costs fetches to that relay only, never memory."""
    alice, bob = homes
    bob_id = json.loads(ok(bob, "whoami", "--json").stdout)["id"]
    notices = [ws_frame(json.dumps({"type": "changed", "id": bob_id})) for _ in range(500)]
    notices += [ws_frame(json.dumps({"type": "changed", "id": "A" * 43}))] * 100  # not subscribed: ignored
    relay.attack("GET", "/v1/relay/live", live_upgrade_then(frames=notices, seconds=15))
    watch = Watch(alice, tmp_path)
    try:
        time.sleep(8)
        assert watch.process.poll() is None, watch.output()
        assert watch.peak_rss_mib() < 256
        fetches = relay.received("POST", "/api/location")
        assert 1 <= len(fetches) <= 502, len(fetches)  # the catch-up, then at most one per notice for Bob
        assert all(json.loads(f.body)["ids"] == [bob_id] for f in fetches)
    finally:
        watch.stop()


def test_close_reasons_and_live_refusals_are_escaped(relay, homes, tmp_path):
    """Text a relay puts in a close frame or in the answer to a live fetch reaches the terminal escaped."""
    alice, bob = homes
    bob_id = json.loads(ok(bob, "whoami", "--json").stdout)["id"]
    close = ws_frame((4400).to_bytes(2, "big") + "\x1b]0;owned\x07\u202e".encode(), opcode=0x8)
    relay.attack("GET", "/v1/relay/live",
                 live_upgrade_then(frames=[ws_frame(json.dumps({"type": "changed", "id": bob_id})), close], seconds=2))
    relay.attack("POST", "/api/location", answer(400, {"error": "\x1b[2J", "message": "\x9b31mred"}))
    watch = Watch(alice, tmp_path)
    try:
        watch.wait_for("closed (4400", timeout=20)
        time.sleep(1)
        output = watch.output()
        assert not CONTROLS.search(output), repr(output)
        assert "\\u{1B}]0;owned" in output
    finally:
        watch.stop()


# ---- Prekey bundles (PROTOCOL.md §10): someone else's, forged, huge ---------------------------

def test_a_wrong_forged_or_huge_prekey_bundle_is_refused(relay, homes, tmp_path):
    """Bob and Carol publish real prekeys; the relay then serves Carol's signed prekey under
    Bob's key, Bob's with a broken signature, or an endless body: each is refused with one line
    on standard error, and Bob stays `legacy` — no session is built on a bundle Bob did not sign."""
    _, bob = homes
    carol = tmp_path / "carol"
    ok(carol, "init", "--server", relay.url, "--name", "Carol")
    ok(bob, "inbox")
    ok(carol, "inbox")
    bob_id = json.loads(ok(bob, "whoami", "--json").stdout)["id"]
    bob_link = json.loads(ok(bob, "whoami", "--json").stdout)["link"]
    signed = {r.header("X-Coords-Key"): json.loads(r.body)["signedPrekey"] for r in relay.received("PUT", "/v1/relay/prekeys")}
    assert len(signed) == 2 and bob_id in signed, "Bob and Carol should each have published prekeys"
    bob_signed = signed.pop(bob_id)
    carol_signed = list(signed.values())[0]
    forged = dict(bob_signed, created=bob_signed["created"] + 1)
    attacks = {
        "someone else's": answer(200, {"key": bob_id, "signedPrekey": carol_signed, "oneTimePrekey": None}),
        "forged": answer(200, {"key": bob_id, "signedPrekey": forged, "oneTimePrekey": None}),
        "huge": endless_body(),
    }
    for index, (name, attack) in enumerate(attacks.items()):
        relay.attack("GET", f"/v1/relay/prekeys/{bob_id}", attack)
        home = tmp_path / f"reader{index}"
        ok(home, "init", "--server", relay.url, "--name", f"Reader {index}")
        ok(home, "add", bob_link)
        result, seconds = coords(home, "inbox")
        assert result.returncode == 0, f"{name}: {result.stderr}"
        assert "forward secrecy" in result.stderr and "prekey" in result.stderr, f"{name}: {result.stderr}"
        assert not CONTROLS.search(result.stderr), name
        assert seconds < 45, name
        assert [f["protection"] for f in friends_of(home)] == ["legacy"], name


# ---- Groups (PROTOCOL.md §11): what a relay can do with statements and version-4 envelopes ----

def peer_id(user_id):
    """The §7.1 peer id of a user id (b64u public key): hex of SHA-256 of the raw key."""
    return hashlib.sha256(base64.urlsafe_b64decode(user_id + "=")).hexdigest()


def test_group_copies_replayed_reordered_withheld_forged_or_someone_elses(relay, homes, tmp_path):
    """Alice runs a group with Bob and Carol. The relay serves Bob his copies out of order, one
    withheld until later, all of them again, Carol's copies, a copy with a changed payload, and
    the group's first statement again after a removal. Bob ends with each message once, in the
    order they were written, the group as Alice made it, and one escaped line per refusal."""
    alice, bob = homes
    carol = tmp_path / "carol"
    ok(carol, "init", "--server", relay.url, "--name", "Carol")
    env = passphrase_env()
    befriend(env, alice, carol)
    befriend(env, bob, carol)
    relay.calm()
    ids = {home: json.loads(ok(home, "whoami", "--json").stdout)["id"] for home in (alice, bob, carol)}
    mark = [0]

    def copies_since(home):
        """The envelopes Alice posted for `home` since the last call (in posting order)."""
        posted = [r for r in relay.received("POST", "/v1/relay/messages") if r.path == "/v1/relay/messages"]
        fresh, mark[0] = posted[mark[0]:], len(posted)
        packets = [json.loads(r.body) for r in fresh]
        mine = [p for p in packets if p["recipientID"] == peer_id(ids[home])]
        theirs = [p for p in packets if p["recipientID"] != peer_id(ids[home])]
        return mine, theirs

    def serve(packets):
        """Bob's mailbox holds `packets` for one fetch; returns his inbox answer and stderr."""
        relay.attack("GET", "/v1/relay/messages", answer(200, {"packets": packets}))
        result, seconds = coords(bob, "inbox", "--json")
        relay.attacks.pop(("GET", "/v1/relay/messages"), None)
        assert result.returncode == 0, result.stderr
        assert seconds < 45 and not CONTROLS.search(result.stderr + result.stdout)
        assert "Traceback" not in result.stderr and "Fatal error" not in result.stderr
        return json.loads(result.stdout), result.stderr

    def group_of(home):
        groups = json.loads(ok(home, "groups", "--json").stdout)["groups"]
        assert len(groups) == 1, groups
        return groups[0]

    def chat():
        return [m["text"] for m in json.loads(ok(bob, "chat", "--group", "Trip", "--json").stdout)["messages"]]

    ok(alice, "group", "create", "Trip", "Bob", "Carol")
    setup, _ = copies_since(bob)
    first_statement = setup
    serve(setup)
    assert sorted(m["id"] for m in group_of(bob)["members"]) == sorted(ids.values())

    sent = {}
    for text in ["one", "two", "three"]:
        ok(alice, "send", "--group", "Trip", text)
        sent[text], _ = copies_since(bob)
        assert len(sent[text]) == 1, sent[text]
    # Reordered, with "two" withheld: both open; "two" opens later from its skipped key.
    answer_json, _ = serve(sent["three"] + sent["one"])
    assert sorted(m["text"] for m in answer_json["received"]) == ["one", "three"]
    answer_json, _ = serve(sent["two"])
    assert [m["text"] for m in answer_json["received"]] == ["two"]
    # Everything again: nothing new, nothing refused.
    answer_json, _ = serve(sent["one"] + sent["two"] + sent["three"] + setup)
    assert answer_json["received"] == [] and answer_json["rejected"] == [], answer_json
    assert chat() == ["one", "two", "three"]

    # Carol's copy, and Bob's copy with a changed payload: refused, and Bob's real copy still opens.
    ok(alice, "send", "--group", "Trip", "four")
    mine, carols = copies_since(bob)
    payload = base64.b64decode(mine[0]["sealedPayloadBase64"])
    changed = dict(mine[0], sealedPayloadBase64=base64.b64encode(payload[:-1] + bytes([payload[-1] ^ 1])).decode())
    answer_json, stderr = serve(carols + [changed])
    assert answer_json["received"] == [] and len(answer_json["rejected"]) == 2, answer_json
    assert all(line.strip() for line in stderr.splitlines())
    answer_json, _ = serve(mine)
    assert [m["text"] for m in answer_json["received"]] == ["four"]
    assert chat() == ["one", "two", "three", "four"]

    # Carol is removed; the relay then replays the statement that first made the group: refused.
    ok(alice, "group", "remove", "Trip", "Carol")
    removal, _ = copies_since(bob)
    serve(removal)
    after = group_of(bob)
    assert sorted(m["id"] for m in after["members"]) == sorted([ids[alice], ids[bob]]) and not after["in_conflict"]
    serve(first_statement)
    assert group_of(bob) == after
    # Alice rotated her chain on the removal: her next message opens for Bob.
    ok(alice, "send", "--group", "Trip", "five")
    mine, _ = copies_since(bob)
    serve(mine)
    assert chat() == ["one", "two", "three", "four", "five"]


# ---- Attachments (PROTOCOL.md §12) -------------------------------------------------------

CHUNK, SEALED_CHUNK = 65_536, 65_552


def file_for_bob(relay, alice, bob, path, **more):
    """Alice sends Bob the file at `path` through the relay (honest upload; `more` other paths
    too) and Bob's inbox takes the announcement. Returns Alice's `send --json` answers (the first
    for `path`) and the object's stored bytes."""
    sent = [json.loads(ok(alice, "send", "Bob", "--file", str(p), "--json").stdout) for p in [path, *more.values()]]
    packets = [json.loads(r.body) for r in relay.received("POST", "/v1/relay/messages") if r.path == "/v1/relay/messages"]
    relay.attack("GET", "/v1/relay/messages", answer(200, {"packets": packets}))
    ok(bob, "inbox")
    relay.calm()
    return sent, relay.objects[sent[0]["file"]["object"]]


def test_a_wrong_cut_reordered_altered_oversized_or_endless_file_is_refused_and_nothing_is_saved(relay, homes, tmp_path):
    """Alice sends Bob a 3-chunk file through the relay (honest upload). The relay then serves Bob
    another object, a cut one, one with two chunks swapped, one with a flipped byte, the object
    with bytes after it, and an endless body. Each `coords save` ends at once with one clear
    line, leaves no file at PATH and no temporary file, and stays within the memory limit."""
    alice, bob = homes
    photo, other = tmp_path / "photo.jpg", tmp_path / "other.jpg"
    photo.write_bytes(bytes(range(256)) * 600)  # 153,600 bytes: 3 chunks
    other.write_bytes(bytes(reversed(range(256))) * 600)
    (sent, sent_other), good = file_for_bob(relay, alice, bob, photo, other=other)
    path = f"/v1/relay/objects/{sent['file']['object']}"
    assert len(good) == 153_600 + 3 * 16
    target = tmp_path / "saved.jpg"

    def refused(responder, expected):
        relay.attack("GET", path, responder)
        result, seconds = coords(bob, "save", sent["id"], str(target))
        relay.calm()
        assert result.returncode == 1, result.stdout + result.stderr
        assert expected in result.stderr, result.stderr
        assert seconds < 30 and not CONTROLS.search(result.stderr)
        assert "Fatal error" not in result.stderr
        assert sorted(os.listdir(tmp_path)) == ["alice", "bob", "other.jpg", "photo.jpg"], os.listdir(tmp_path)

    octet = [("Content-Type", "application/octet-stream")]
    wrong = relay.objects[sent_other["file"]["object"]]
    refused(answer(200, wrong, octet), "nothing was saved: chunk 0 of the attachment does not open")
    swapped = good[SEALED_CHUNK:2 * SEALED_CHUNK] + good[:SEALED_CHUNK] + good[2 * SEALED_CHUNK:]
    refused(answer(200, swapped, octet), "chunk 0 of the attachment does not open")
    flipped = bytearray(good)
    flipped[-5] ^= 1
    refused(answer(200, bytes(flipped), octet), "chunk 2 of the attachment does not open")
    # Shorter or longer than asked for, by its Content-Length: refused at once (§12.5), never resumed with Range.
    refused(answer(200, good[:-100], octet), "the relay announces 153548 bytes where 153648 were asked for")
    refused(answer(200, good + b"more", octet), "the relay announces 153652 bytes where 153648 were asked for")
    refused(endless_body(), "chunk 0 of the attachment does not open")  # refused at its first chunk, read no further than the object
    refused(answer(404, {"error": "no_object", "message": "\x1b[31mgone\x1b[0m"}), "no longer on the relay")
    refused(answer(403, {"error": "forbidden", "message": "\x1b[2Jno"}), "the relay refused to hand out the file (403 forbidden)")
    # Busy once (the core says: wait the relay's Retry-After, then ask again), then honest: the file arrives whole.
    busy = [response(503, {"error": "unavailable"}, [("Retry-After", "1")])]
    relay.attack("GET", path, lambda sock, request, relay_: send_all(sock, busy.pop() if busy else response(200, good, octet)))
    result, seconds = coords(bob, "save", sent["id"], str(target))
    relay.calm()
    assert result.returncode == 0 and "the relay is busy (503); trying again in 1 s" in result.stderr, result.stderr
    assert not busy and 1 <= seconds < 30 and target.read_bytes() == photo.read_bytes()


def test_wrong_upload_answers_send_no_message(relay, homes, tmp_path):
    """The relay answers Alice's upload with a length that is no chunk boundary, the state of
    another object, or a refusal with escape codes: `coords send --file` stops with one clear line
    and announces nothing."""
    alice, _ = homes
    note = tmp_path / "note.txt"
    note.write_bytes(b"x" * 70_000)

    def put_answer(body, status=200):
        def responder(sock, request, relay):
            oid = request.path.rsplit("/", 1)[1]
            value = body(oid) if callable(body) else body
            send_all(sock, response(status, value))
        return responder

    cases = [
        (put_answer(lambda oid: {"object": oid, "stored": 1000, "size": 70_032, "complete": False, "expiresAt": 2**40}), "answered the upload wrongly"),
        (put_answer({"object": "AAAAAAAAAAAAAAAAAAAAAA", "stored": 65_552, "size": 70_032, "complete": False, "expiresAt": 2**40}), "answered the upload wrongly"),
        (put_answer({"error": "quota", "message": "\x1b]0;owned\x07full"}, status=403), "the relay refused to store the file (403 quota)"),
    ]
    for responder, expected in cases:
        relay.calm()
        relay.attack("PUT", "/v1/relay/objects/*", responder)
        result, seconds = coords(alice, "send", "Bob", "--file", str(note))
        assert result.returncode == 1 and expected in result.stderr, result.stderr
        assert seconds < 30 and not CONTROLS.search(result.stderr)
        assert relay.received("POST", "/v1/relay/messages") == [], "a file message went out for an upload that failed"


def test_a_slow_or_busy_relay_cannot_keep_save_waiting_for_hours(relay, homes, tmp_path):
    """Issue 59, defect 6, with the attack's numbers: a body dripping one byte every 10 s is cut
    off as too slow at the end of its first 30 s window, and `503 Retry-After: 3600` is waited out
    for 60 s at most (the core's one rule, TransferPace); the time bound is stated."""
    alice, bob = homes
    photo = tmp_path / "photo.jpg"
    photo.write_bytes(bytes(range(256)) * 600)
    (sent,), good = file_for_bob(relay, alice, bob, photo)
    path = f"/v1/relay/objects/{sent['file']['object']}"

    def drip(sock, request, relay_):
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {len(good)}\r\n\r\n".encode()
        if not send_all(sock, head):
            return
        for byte in good[:8]:
            if relay_.stopping.is_set() or not send_all(sock, bytes([byte])):
                return
            time.sleep(10)

    def lines_until(text, limit):
        """Runs `coords save` and returns its standard error up to the line holding `text`."""
        process = subprocess.Popen(["prlimit", f"--data={MEMORY_LIMIT}", "--", os.path.join(BIN, "coords"), "save", sent["id"],
                                    str(tmp_path / "saved.jpg"), "--home", str(bob)],
                                   env=passphrase_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        started, seen = time.time(), []
        try:
            for line in process.stderr:
                seen.append(line)
                if text in line:
                    return seen, time.time() - started
                assert time.time() - started < limit, seen
        finally:
            process.kill()
            process.wait()
        raise AssertionError(f"no line with {text!r}: {seen}")

    relay.attack("GET", path, drip)
    seen, seconds = lines_until("the relay sends too slowly", 60)
    assert 29 <= seconds < 45, (seconds, seen)
    relay.attack("GET", path, answer(503, {"error": "unavailable", "message": "restarting"}, [("Retry-After", "3600")]))
    seen, seconds = lines_until("trying again in", 20)
    assert "the relay is busy (503); trying again in 60 s" in seen[-1], seen
    relay.calm()
    assert not (tmp_path / "saved.jpg").exists()  # the killed saves leave at most their temporary files


def test_one_friend_cannot_silence_the_mailbox(relay, homes, tmp_path):
    """Issue 59, defect 1, with the attack's numbers: Mallory, Bob's friend, puts Bob in a group
    (a valid statement), withholds her sender key and posts 100 group messages; then Alice writes.
    The relay hands out the oldest 100 unacknowledged envelopes, as a relay does. One `coords
    inbox` shows Alice's text: the 100 are held on Bob's device (16 kept, the rest dropped and
    reported), acknowledged, and no longer stand at the head of the mailbox."""
    alice, bob = homes
    mallory = tmp_path / "mallory"
    ok(mallory, "init", "--server", relay.url, "--name", "Mallory")
    befriend(passphrase_env(), bob, mallory)
    relay.calm()
    bob_peer = peer_id(json.loads(ok(bob, "whoami", "--json").stdout)["id"])

    def posted_for_bob(since):
        posted = [json.loads(r.body) for r in relay.received("POST", "/v1/relay/messages") if r.path == "/v1/relay/messages"]
        return [p for p in posted if p["recipientID"] == bob_peer][since:]

    ok(mallory, "group", "create", "Spam", "Bob")
    setup = posted_for_bob(0)
    assert len(setup) == 2, setup  # the membership statement and Mallory's sender key
    # Hand Bob the statement alone: he is a member, without Mallory's chain.
    for statement in setup:
        relay.attack("GET", "/v1/relay/messages", answer(200, {"packets": [statement]}))
        ok(bob, "inbox")
        relay.attacks.pop(("GET", "/v1/relay/messages"), None)
        if json.loads(ok(bob, "groups", "--json").stdout)["groups"]:
            break
    assert json.loads(ok(bob, "groups", "--json").stdout)["groups"], "no envelope made Bob a member"
    before = len(posted_for_bob(0))
    for i in range(100):
        ok(mallory, "send", "--group", "Spam", f"spam {i}")
    ok(alice, "send", "Bob", "hello")
    mailbox = posted_for_bob(before)
    assert len(mailbox) == 101 and mailbox[-1]["senderID"] != mailbox[0]["senderID"]
    acked = set()

    # The scripted relay closes every attacked connection: it says so, so the client opens a new one.
    def list_messages(sock, request, relay_):
        waiting = [p for p in mailbox if p["id"] not in acked][:100]
        send_all(sock, response(200, {"packets": waiting}, [("Connection", "close")]))

    def ack(sock, request, relay_):
        packet_id = request.path.split("/")[4]
        acked.add(packet_id)
        send_all(sock, response(200, {"deleted": True, "packetID": packet_id}, [("Connection", "close")]))

    relay.attack("GET", "/v1/relay/messages", list_messages)
    relay.attack("POST", "/v1/relay/messages/*", ack)
    result, seconds = coords(bob, "inbox", "--json")
    assert result.returncode == 0, result.stderr
    inbox = json.loads(result.stdout)
    assert [m["text"] for m in inbox["received"]] == ["hello"], inbox["received"]
    # An ack lost on the way (the scripted relay closes every attacked connection) only means the
    # envelope comes again: it is held once, and one dropped stays dropped.
    assert set(inbox["waiting"]) == {p["id"] for p in mailbox[:100]}
    dropped = {r["id"] for r in inbox["rejected"] if r["code"] == 672}
    assert len(dropped) == 100 - 16, inbox["rejected"][:3]
    assert mailbox[-1]["id"] in acked and seconds < 60
    # Nothing is left to block the next fetch.
    ok(bob, "inbox")
    assert acked == {p["id"] for p in mailbox}


def test_a_friends_small_order_prekey_is_refused_and_sharing_goes_on(relay, homes, tmp_path):
    """Issue 59, defect 2: Mallory (a friend whose key this test holds, so it can sign as her)
    publishes a validly signed all-zero signed prekey. Alice refuses the bundle with one line and
    keeps Mallory `legacy`; `coords share` still seals for everyone, and Bob opens Alice's position."""
    from test_relay_attacks import Key, b64u as b64u_nopad

    alice, bob = homes
    mallory = Key()
    mallory_id = b64u_nopad(mallory.public)
    host = relay.url.split("://", 1)[1]
    ok(alice, "add", f"coord://{host}/add/{mallory_id}#Mallory")
    created = int(time.time() * 1000)
    expires = created + 9 * 86_400_000
    spk_id, zero = 7, bytes(32)
    signed = b"coords-prekey-v1" + spk_id.to_bytes(4, "big") + zero + created.to_bytes(8, "big") + expires.to_bytes(8, "big")
    bundle = {"key": mallory_id, "oneTimePrekey": None,
              "signedPrekey": {"id": spk_id, "key": b64u_nopad(zero), "created": created, "expires": expires,
                               "signature": b64u_nopad(mallory.sign(signed))}}
    relay.attack("GET", f"/v1/relay/prekeys/{mallory_id}", answer(200, bundle))
    result, seconds = coords(alice, "share", "--lat", "46.948", "--lon", "7.447")
    assert result.returncode == 0, result.stderr
    assert "small-order" in result.stderr and not CONTROLS.search(result.stderr), result.stderr
    protection = {f["name"]: f["protection"] for f in friends_of(alice)}
    assert protection["Mallory"] == "legacy", protection
    uploads = [json.loads(r.body) for r in relay.received("PUT", "/api/location")]
    assert uploads, "the share was not uploaded"
    upload = uploads[-1]
    entry = {upload["pubkey"]: {"blob": upload["blob"], "updated": upload["timestamp"], "signature": upload["signature"],
                                "timestamp": upload["timestamp"]}}
    relay.attack("POST", "/api/location", answer(200, entry))
    seen = json.loads(ok(bob, "fetch", "--json").stdout)["friends"]
    assert [round(f["location"]["latitude"], 3) for f in seen] == [46.948], seen
