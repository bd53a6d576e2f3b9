"""The design's background case through the C ABI (the coordscore module): an upload is prepared
and queued, the process is killed (SIGKILL) before the relay's answer is processed, the app is
launched again in a new process, and the answer is handed to it then. Nothing is lost, nothing is
sent twice, and the friend sees the position.
"""
import json
import os
import signal
import subprocess
import sys

from e2e_support import ROOT, Relay

sys.path.insert(0, os.path.join(ROOT, "python"))

import coordscore as cc  # noqa: E402
from coordscore import transport  # noqa: E402

# Run in a child process: the first line of standard output is the result as JSON.
CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import coordscore as cc
step, home = sys.argv[2], sys.argv[3]
with cc.App(home, passphrase="ann", keychain_cost="minimum") as app:
    if step == "prepare":
        app.create_identity("Ann", sys.argv[4])
        app.add_friend_link(sys.argv[5])
        upload, outbox_id = app.queue_upload(cc.Location(-33.8688, 151.2093, 0.0, 8.0, int(time.time() * 1000) - 1000))
        print(json.dumps({"id": outbox_id, "fix": upload.fix_timestamp, "request": upload.request.to_json()}), flush=True)
        time.sleep(3600)  # killed here: the answer is never processed in this process
    elif step == "due":
        print(json.dumps([{"id": e.id, "kind": e.kind} for e in app.outbox_due(ignore_backoff=True)]), flush=True)
    elif step == "finish":
        report = app.outbox_report(int(sys.argv[4]), int(sys.argv[5]), bytes.fromhex(sys.argv[6]))
        try:
            app.queue_upload(cc.Location(1.0, 2.0, 0.0, 5.0, int(sys.argv[7]) - 1))
            stale = False
        except cc.WireError as error:
            stale = error.code == cc.ERR_STALE_LOCATION
        print(json.dumps({"decision": report.decision, "due": len(app.outbox_due(ignore_backoff=True)), "stale": stale}), flush=True)
"""


def child(*args, kill_after_line=False):
    """Runs a step in a fresh process; returns its first line of output as JSON (killing the
    process with SIGKILL right after that line when asked)."""
    command = [sys.executable, "-c", CHILD, os.path.join(ROOT, "python"), *map(str, args)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if kill_after_line:
        process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    assert line, process.stderr.read()
    if kill_after_line:
        assert process.returncode == -signal.SIGKILL
    else:
        assert process.returncode == 0, process.stderr.read()
    return json.loads(line)


def test_an_upload_answered_after_a_kill_and_a_relaunch_is_recorded_once(tmp_path):
    with Relay(str(tmp_path / "relay")) as relay, \
            cc.App(str(tmp_path / "bob"), passphrase="bob", keychain_cost="minimum") as bob:
        bob.create_identity("Bob", relay.url)
        ann_home = str(tmp_path / "ann")
        prepared = child("prepare", ann_home, relay.url, bob.friend_link(), kill_after_line=True)
        # The relaunched app still holds the upload, due: a process killed before any answer loses nothing.
        assert child("due", ann_home) == [{"id": prepared["id"], "kind": "upload"}]
        # The request reaches the relay (the OS finished it in the background); the answer comes back later.
        answer = transport.send(cc.Request.from_json(prepared["request"]))
        assert 200 <= answer.status < 300, answer
        finished = child("finish", ann_home, prepared["id"], answer.status, answer.body.hex(), prepared["fix"])
        # Recorded once: delivered, gone from the outbox, and an older fix is now refused as stale.
        assert finished == {"decision": "delivered", "due": 0, "stale": True}, finished
        bob.add_friend_link(_link(ann_home))
        [seen] = [f for f in _fetch(bob) if f.location]
        assert seen.location.latitude == -33.8688 and seen.location.timestamp_ms == prepared["fix"]


def _link(home):
    with cc.App(home, passphrase="ann", keychain_cost="minimum") as app:
        return app.friend_link()


def _fetch(app):
    for request in app.prepare_fetches():
        app.process_fetch_response(transport.send(request).body)
    return app.friend_locations()
