#!/usr/bin/env python3
"""What the core costs a phone's battery (docs/PERFORMANCE.md, "Battery"): CPU time and wake-ups.

Three rows, against a live relay on loopback, the library from COORDSCORE_LIB (a release build:
`make bench-battery` uses the portable one):

  share   Sharing once a minute with 10 friends (shares a second apart here, 5 rounds of 12, so no
          upload is refused as not newer): the CPU time the core spends on one share on the
          calling thread (queue_upload, due, report: sealing for 11 recipients, signing, the outbox
          and the upload state), against the crypto floor of a share in C (scripts/battery_floor.c:
          the benchmark suite's cb_blob_seal for 11 X25519 keys and cb_sign), in alternating
          rounds. Target: at most 1.2× the floor. The friends publish no prekeys (legacy blobs, the
          floor's shape); the transport's CPU is the host's and is not counted.
  wake    A background wake (a push): fetch_now and the loop until nothing is due, with 10 friends'
          positions and 5 messages waiting: the core's CPU time on the calling thread and the
          requests it made; three wakes of fresh apps, the median and the first.
  idle    `coords watch --interval 60` with 10 friends and the live channel connected, for
          120 s after it settled: the process's CPU time (each thread's schedstat), context
          switches and wake-ups (runs of 0.1 s readings in which any thread switched), per hour,
          against what was asked for: the relay's ping every 30 s (§8.4) and the core's upkeep
          turns (friends and mailbox watched live are not fetched periodically). Target: no
          wake-up beyond those. The polling itself costs the watched process nothing (it reads
          /proc).

Usage: scripts/bench-battery.py OUT.json [--quick]   (COORDS_BIN_DIR: coords and coords-relay)
Wall clock and scheduler counts: `make bench`, never `make test`.
"""
import ctypes
import json
import re
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

import coordscore as cc  # noqa: E402
from coordscore import transport  # noqa: E402
from e2e_support import BIN, Relay, all_friends, coords, passphrase_env  # noqa: E402

FAST = {"keychain_cost": "minimum", "backup_cost": "minimum", "durability": "no_sync"}
FRIENDS = 10
TARGET_SHARE = 1.2


def floor_binary(work):
    """Builds scripts/battery_floor.c against the benchmark suite's C baseline."""
    out = os.path.join(work, "battery-floor")
    subprocess.run(["cc", "-O2", "-I", os.path.join(ROOT, "Benchmarks", "Sources", "CBaseline", "include"),
                    os.path.join(ROOT, "scripts", "battery_floor.c"), os.path.join(ROOT, "Benchmarks", "Sources", "CBaseline", "baseline.c"),
                    "-lsodium", "-llmdb", "-o", out], check=True)
    return out


def now_ms():
    return int(time.time() * 1000)


def timed(function, *args):
    """Calls a raw C function of the library (the buffer it returns is read and freed after the
    clock stops): (its CPU seconds on this thread, the bytes). Only the core's own work is timed,
    not the Python binding's JSON decoding."""
    buffer, error = cc.CoordsBuffer(), cc.CoordsErrorStruct()
    started = time.thread_time()
    code = function(*args, ctypes.byref(buffer), ctypes.byref(error))
    spent = time.thread_time() - started
    data = ctypes.string_at(buffer.data, buffer.len) if buffer.data else b""
    cc.lib.coords_buffer_free(ctypes.byref(buffer))
    if code != cc.OK:
        message = ctypes.string_at(error.message).decode() if error.message else ""
        cc.lib.coords_error_free(ctypes.byref(error))
        raise cc.CoordsError.from_code(code, message)
    return spent, data


def loop_until_quiet(app, answers=None):
    """Turns of the loop until nothing is due; returns (core CPU seconds on this thread, requests).
    Each answer's JSON (HostAnswer) is appended to `answers` when given."""
    cpu, requests = 0.0, 0
    for _ in range(20):
        spent, data = timed(cc.lib.coords_app_due, app.handle, 0)
        cpu += spent
        due = [cc.HostRequest.from_json(x) for x in json.loads(data)]
        if not due:
            return cpu, requests
        for item in due:
            status, body = transport._perform(item.request)  # the host's work: not counted
            array = (ctypes.c_uint8 * max(len(body), 1)).from_buffer_copy(body or b"\0")
            spent, answer = timed(cc.lib.coords_app_report, app.handle, item.id, status, ctypes.cast(array, ctypes.POINTER(ctypes.c_uint8)), len(body))
            cpu += spent
            if answers is not None:
                answers.append(json.loads(answer))
            requests += 1
    raise RuntimeError("the loop never ran out of requests")


def share_row(relay, work, floor, rounds, shares):
    alice = cc.App(os.path.join(work, "share-alice"), passphrase="a", **FAST)
    alice.create_identity("Alice", relay.url)
    for i in range(FRIENDS):
        seed, public = cc.generate_identity()
        alice.add_friend(cc.b64url(public), relay.url, f"Friend {i}")
    loop_until_quiet(alice)
    ours, theirs = [], []
    for _ in range(rounds):
        cpu = 0.0
        for _ in range(shares):
            fix = cc.Location(47.3769, 8.5417, accuracy=8, timestamp_ms=now_ms()).to_c()
            spent, _ = timed(cc.lib.coords_outbox_queue_upload, alice.handle, ctypes.byref(fix))
            cpu += spent
            answers = []
            spent, _ = loop_until_quiet(alice, answers)
            cpu += spent
            # Every share measured is one the relay stored.
            if not any(a.get("result") == "outbox" and a["outbox"].get("decision") == "delivered" for a in answers):
                raise RuntimeError(f"a share was not delivered: {answers}")
            alice.updates()  # a host drains its updates (not timed)
            # One share a second at most: uploads are signed in whole seconds, strictly
            # increasing, at most 120 s ahead of the clock (SignedTime); a faster burst ends in
            # uploads the relay refuses as not newer, and would measure that path instead.
            time.sleep(1.0)
        ours.append(cpu / shares * 1e6)
        theirs.append(float(subprocess.run([floor, str(shares), str(FRIENDS + 1), "1000"], capture_output=True, text=True,
                                           check=True).stdout))
    alice.close()
    ratios = sorted(o / f for o, f in zip(ours, theirs))
    ratio = statistics.median(ratios)
    return {"ours_us": statistics.median(ours), "floor_us": statistics.median(theirs), "ratio": ratio,
            "range": [ratios[0], ratios[-1]], "target": TARGET_SHARE, "result": "pass" if ratio <= TARGET_SHARE else "MISS",
            "per_hour_cpu_s": statistics.median(ours) * 60 / 1e6}


def shares_only(relay_url, count):
    """`--shares-only URL N` (run under callgrind by instructions_row): N shares of the share row's
    app, a second apart in signed time (the relay's clock is not waited for: under callgrind a
    share takes longer than that)."""
    with tempfile.TemporaryDirectory() as work:
        alice = cc.App(os.path.join(work, "alice"), passphrase="a", **FAST)
        alice.create_identity("Alice", relay_url)
        for i in range(FRIENDS):
            _, public = cc.generate_identity()
            alice.add_friend(cc.b64url(public), relay_url, f"Friend {i}")
        loop_until_quiet(alice)
        for _ in range(count):
            fix = cc.Location(47.3769, 8.5417, accuracy=8, timestamp_ms=now_ms()).to_c()
            timed(cc.lib.coords_outbox_queue_upload, alice.handle, ctypes.byref(fix))
            loop_until_quiet(alice)
            time.sleep(1.0)
        alice.close()


CORE_CALLS = ("ffiOutboxQueueUpload", "ffiAppDue", "ffiAppReport")


def callgrind(command, out):
    """Runs `command` under callgrind; returns {function name: inclusive instructions}."""
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command], check=True,
                   capture_output=True, env=dict(os.environ))
    listing = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out], check=True,
                             capture_output=True, text=True).stdout
    counts = {}
    for line in listing.splitlines():
        match = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*)$", line)
        if not match or match.group(2).startswith("=>"):
            continue
        name = match.group(2).split(" [")[0]
        counts[name] = max(counts.get(name, 0), int(match.group(1).replace(",", "")))
    return counts


def instructions_row(relay, work, floor):
    """A share's instructions on the calling thread against the floor's, under callgrind: runs of
    5 and 15 shares (and floor iterations), the difference over 10, so setup cancels out. The
    core's part is the inclusive count of the three C calls a share makes (queue, due, report)."""
    def core(counts):
        # The C function's own entry is the largest that names it (closures and thunks are inside it).
        return sum(max((v for k, v in counts.items() if call in k), default=0) for call in CORE_CALLS)
    ours, theirs = [], []
    for count in (5, 15):
        ours.append(core(callgrind([sys.executable, os.path.abspath(__file__), "--shares-only", relay.url, str(count)],
                                   os.path.join(work, f"share-{count}.callgrind"))))
        theirs.append(callgrind([floor, str(count), str(FRIENDS + 1)], os.path.join(work, f"floor-{count}.callgrind")).get("PROGRAM TOTALS", 0))
    per_share, floor_per_share = (ours[1] - ours[0]) / 10, (theirs[1] - theirs[0]) / 10
    ratio = per_share / floor_per_share if floor_per_share else float("inf")
    return {"ours_instructions": per_share, "floor_instructions": floor_per_share, "ratio": ratio}


def wake_row(relay, work):
    bob = cc.App(os.path.join(work, "wake-bob"), passphrase="b", **FAST)
    bob_id = bob.create_identity("Bob", relay.url)
    bob_link = bob.friend_link()
    friends = []
    for i in range(FRIENDS):
        friend = cc.App(os.path.join(work, f"wake-friend-{i}"), passphrase="f", **FAST)
        friend.create_identity(f"Friend {i}", relay.url)
        friend.add_friend_link(bob_link)
        bob.add_friend_link(friend.friend_link())
        friends.append(friend)
    loop_until_quiet(bob)
    for i, friend in enumerate(friends):
        friend.queue_upload(cc.Location(47.0 + i / 100, 8.5, accuracy=10, timestamp_ms=now_ms()))
        if i < 5:
            friend.send_message(bob_id, f"message {i}")
        loop_until_quiet(friend)
    bob.set_fetch_interval(None)
    bob.fetch_now()
    cpu, requests = loop_until_quiet(bob)
    positions = sum(1 for f in bob.friend_locations() if f.location is not None)
    messages = sum(len([m for m in bob.history(c.friend_id) if not m.outgoing]) for c in bob.conversations())
    for app in friends + [bob]:
        app.close()
    return {"cpu_ms": cpu * 1e3, "requests": requests, "positions": positions, "messages": messages}


def thread_counts(pid):
    """{thread id: (CPU ns, context switches)} of a process's live threads."""
    out = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as handle:
                cpu = int(handle.read().split()[0])
            switches = 0
            with open(f"/proc/{pid}/task/{task}/status") as handle:
                for line in handle:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        switches += int(line.split()[1])
            out[task] = (cpu, switches)
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that just ended
    return out


def idle_row(relay, work, seconds):
    env = passphrase_env()
    homes = all_friends(env, __import__("pathlib").Path(work) / "idle", relay.url, ["alice"] + [f"friend{i}" for i in range(FRIENDS)])
    for name, home in homes.items():
        if name != "alice":
            coords(env, home, "share", "--lat", "47.1", "--lon", "8.5")
    log_path = os.path.join(work, "idle-watch.txt")
    with open(log_path, "w") as log:
        watch = subprocess.Popen([os.path.join(BIN, "coords"), "watch", "--interval", "60", "--home", str(homes["alice"])],
                                 env=env, stdout=log, stderr=log)
    try:
        deadline = time.time() + 30
        while time.time() < deadline and "Live: watching" not in open(log_path).read():
            time.sleep(0.1)
        live = "Live: watching" in open(log_path).read()
        time.sleep(5)  # settled: connected, first turn done
        # Every thread's counters, read every 0.1 s: a thread's share of the window is its last
        # reading less its first (or all of it when it was born inside the window). A wake event
        # is a run of readings in which the process switched: what woke it and what followed.
        first = thread_counts(watch.pid)
        last = dict(first)
        previous_total, in_event, events = sum(v[1] for v in first.values()), False, 0
        ends = time.time() + seconds
        while time.time() < ends:
            time.sleep(0.1)
            last.update(thread_counts(watch.pid))
            total = sum(v[1] for v in last.values())
            if total != previous_total and not in_event:
                events += 1
            in_event, previous_total = total != previous_total, total
    finally:
        watch.terminate()
        watch.wait(timeout=30)
    cpu = sum(last[t][0] - first.get(t, (0, 0))[0] for t in last) / 1e9
    switches = sum(last[t][1] - first.get(t, (0, 0))[1] for t in last)
    scale = 3600 / seconds
    # The relay pings its one connection every 30 s (PROTOCOL.md §8.4): each is a wake the
    # protocol asks for. The core asks for its upkeep: the prekey and bundle check every
    # 10 minutes (one turn) and the session sweep every hour; with every friend and the mailbox
    # watched live, no periodic fetch.
    pings, core_turns = 3600 / 30, 3600 / 600 + 1
    events_per_hour = events * scale
    unasked = max(0.0, events_per_hour - pings - core_turns)
    return {"seconds": seconds, "live": live, "threads": len(last), "cpu_s_per_hour": cpu * scale,
            "switches_per_hour": switches * scale, "wake_events_per_hour": events_per_hour,
            "pings_per_hour": pings, "core_turns_per_hour": core_turns, "unasked_per_hour": unasked,
            "result": "pass" if unasked <= 3600 / seconds else "MISS"}  # one event of slack: the window's edges


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--shares-only":
        return shares_only(sys.argv[2], int(sys.argv[3]))
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_path, quick = sys.argv[1], "--quick" in sys.argv
    with tempfile.TemporaryDirectory() as work, Relay(os.path.join(work, "relay"), args=["--memory", "--rate", "0", "--key-rate", "0", "--message-rate", "0", "--mailbox-per-address", "0"]) as relay:
        floor = floor_binary(work)
        share = share_row(relay, work, floor, rounds=3 if quick else 5, shares=4 if quick else 12)
        print(f"battery: share to {FRIENDS}: {share['ours_us']:.0f} µs of core CPU against {share['floor_us']:.0f} µs floor: "
              f"{share['ratio']:.2f}× ({share['range'][0]:.2f}–{share['range'][1]:.2f}×, target ≤ {TARGET_SHARE}×) {share['result']}")
        share["instructions"] = instructions_row(relay, work, floor)
        print(f"battery: the same share in instructions (callgrind): {share['instructions']['ours_instructions']:,.0f} against "
              f"{share['instructions']['floor_instructions']:,.0f}: {share['instructions']['ratio']:.2f}×")
        # Three wakes, each of a fresh app: the first in the process also pays the library's
        # first use (type metadata, lazy tables), as a phone's first wake after a launch does.
        wakes = []
        for index in range(3):
            os.makedirs(os.path.join(work, f"wake{index}"))
            wakes.append(wake_row(relay, os.path.join(work, f"wake{index}")))
        wake = dict(wakes[-1], cpu_ms=statistics.median(w["cpu_ms"] for w in wakes), first_cpu_ms=wakes[0]["cpu_ms"],
                    each_cpu_ms=[w["cpu_ms"] for w in wakes])
        print(f"battery: a background wake: {wake['cpu_ms']:.1f} ms of core CPU (median of 3; the process's first "
              f"{wake['first_cpu_ms']:.1f} ms), {wake['requests']} requests, {wake['positions']} positions and {wake['messages']} messages")
        idle = idle_row(relay, work, seconds=30 if quick else 120)
        print(f"battery: coords watch idle with {FRIENDS} friends (live {'connected' if idle['live'] else 'NOT connected'}): "
              f"{idle['cpu_s_per_hour']:.2f} CPU s/h, {idle['wake_events_per_hour']:.0f} wake-ups/h "
              f"({idle['switches_per_hour']:.0f} context switches/h); the relay's pings ask for {idle['pings_per_hour']:.0f}/h, "
              f"the core for {idle['core_turns_per_hour']:.0f}/h: {idle['unasked_per_hour']:.0f}/h unasked {idle['result']}")
    with open(out_path, "w") as handle:
        json.dump({"share": share, "wake": wake, "idle": idle}, handle, indent=1)


if __name__ == "__main__":
    main()
