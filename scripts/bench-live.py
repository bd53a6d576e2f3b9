#!/usr/bin/env python3
"""Live channel benchmark (PROTOCOL.md §8): coords-relay (release, in memory) on loopback.

1. Latency: K uploaders each upload once a second (K uploads/s in all) to keys Bob watches; Bob's
   core (the coordscore module, the same library the apps link) processes every notice. Reported:
   time from the upload's 204 to Bob's processed update, p50 / p99.
2. Idle subscribers: N WebSocket connections, each watching one key, held open; the relay's RSS
   before and after gives the memory per subscriber.
3. Fan-out: M of those watch the same key; each upload of that key reaches all M. Reported:
   notices delivered per second (from the 204 to the last subscriber's receipt).
Writes JSON to the path given. Usage: bench-live.py <out.json> [--quick]
"""
import asyncio
import base64
import http.client
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
RELAY = os.environ.get("COORDS_RELAY_BIN", os.path.join(ROOT, "Apps", ".build", "release", "coords-relay"))
QUICK = "--quick" in sys.argv
UPLOADERS = 20                       # uploads per second in the latency run
ROUNDS = 5 if QUICK else 20          # seconds of the latency run
IDLE = 1000 if QUICK else 10_000     # idle subscribers held at once
FANOUT = 200 if QUICK else 1000      # subscribers of one key in the fan-out run
FANOUT_UPLOADS = 3 if QUICK else 10

import coordscore as cc  # noqa: E402  (after sys.path)
import websockets  # noqa: E402
from websockets.sync.client import connect as connect_sync  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def start_relay(port, log):
    limit = str(4 * IDLE)
    args = [RELAY, "--memory", "--port", str(port), "--rate", "0", "--key-rate", "0", "--message-rate", "0", "--log-level", "warning",
            "--max-connections", limit, "--max-connections-per-address", limit,
            "--live-max-connections", limit, "--live-connections-per-address", limit]
    process = subprocess.Popen(args, stdout=log, stderr=log)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the relay did not start")


def put(connection, body):
    connection.request("PUT", "/api/location", body=body, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    return response.status


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def latency(port, directory):
    """K uploaders, one upload each per second; Bob's core processes every notice."""
    server = f"http://127.0.0.1:{port}"
    keys = [cc.generate_identity() for _ in range(UPLOADERS)]
    with cc.App(os.path.join(directory, "bob"), passphrase="bench", keychain_cost="minimum", backup_cost="minimum") as bob:
        bob_id = bob.create_identity("Bob", server)
        for index, (_, public) in enumerate(keys):
            bob.add_friend(cc.b64url(public), server, f"F{index}")
        [connection] = bob.live_connections()
        sent, processed, lock = {}, {}, threading.Lock()
        done = threading.Event()
        with connect_sync(connection.url, max_size=1 << 20) as socket_:
            for frame in bob.live_opened(server).frames:
                socket_.send(frame)
            first = bob.live_process(server, socket_.recv(timeout=10))
            assert first.type == "subscribed", first

            def reader():
                while not done.is_set():
                    try:
                        text = socket_.recv(timeout=0.5)
                    except TimeoutError:
                        continue
                    notice = json.loads(text)
                    event = bob.live_process(server, text)
                    stamp = time.perf_counter()
                    assert event.type == "locations" and event.outcome.updated, event
                    with lock:
                        processed[(notice["id"], notice["timestamp"])] = stamp

            thread = threading.Thread(target=reader, daemon=True)
            thread.start()
            uploads = http.client.HTTPConnection("127.0.0.1", port)
            for round_ in range(ROUNDS):
                started = time.time()
                for seed, public in keys:
                    fix = cc.Location(47.0 + round_ / 1000, 8.0, timestamp_ms=int(time.time() * 1000))
                    request = cc.prepare_upload(seed, fix, [bob_id], server)
                    body = request.body
                    upload_timestamp = json.loads(body)["timestamp"]
                    status = put(uploads, body)
                    stamp = time.perf_counter()
                    assert status == 204, status
                    with lock:
                        sent[(cc.b64url(public), upload_timestamp)] = stamp
                time.sleep(max(0.0, 1.05 - (time.time() - started)))  # one upload per key per second
            deadline = time.time() + 10
            while time.time() < deadline:
                with lock:
                    if len(processed) >= len(sent):
                        break
                time.sleep(0.05)
            done.set()
            thread.join(timeout=5)
        delays = [(processed[k] - sent[k]) * 1000 for k in sent if k in processed]
        return {"uploads_per_second": UPLOADERS, "uploads": len(sent), "processed": len(delays),
                "p50_ms": statistics.median(delays), "p99_ms": percentile(delays, 0.99), "max_ms": max(delays)}


async def idle_and_fanout(port, relay_pid):
    """N idle subscribers (RSS per subscriber), then fan-out to M of them watching one key."""
    url = f"ws://127.0.0.1:{port}/v1/relay/live"
    hot_seed, hot_public = cc.generate_identity()
    hot = cc.b64url(hot_public)
    before = rss_kib(relay_pid)
    sockets, received = [], {}
    arrival = asyncio.Event()

    async def open_one(index):
        ws = await websockets.connect(url, max_size=1 << 20, ping_interval=None)
        watched = hot if index < FANOUT else cc.b64url(os.urandom(32))
        await ws.send(json.dumps({"type": "subscribe", "ids": [watched]}))
        answer = json.loads(await ws.recv())
        assert answer["type"] == "subscribed", answer
        return ws

    for start in range(0, IDLE, 500):  # in batches, so the relay's accept queue keeps up
        sockets += await asyncio.gather(*(open_one(i) for i in range(start, min(start + 500, IDLE))))
    await asyncio.sleep(1)
    held = rss_kib(relay_pid)

    async def listen(ws):
        async for _ in ws:
            received[id(ws)] = received.get(id(ws), 0) + 1
            if sum(received.values()) >= target[0]:
                arrival.set()

    target = [0]
    listeners = [asyncio.create_task(listen(ws)) for ws in sockets[:FANOUT]]
    server = f"http://127.0.0.1:{port}"
    http_connection = http.client.HTTPConnection("127.0.0.1", port)
    elapsed = 0.0
    for upload in range(FANOUT_UPLOADS):
        arrival.clear()
        target[0] = FANOUT * (upload + 1)
        request = cc.prepare_upload(hot_seed, cc.Location(1, 2, timestamp_ms=int(time.time() * 1000)), [hot], server)
        status = await asyncio.to_thread(put, http_connection, request.body)
        assert status == 204, status
        started = time.perf_counter()
        await asyncio.wait_for(arrival.wait(), timeout=30)
        elapsed += time.perf_counter() - started
        await asyncio.sleep(1.05)  # the next upload needs a later timestamp (seconds)
    for task in listeners:
        task.cancel()
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return {"subscribers": IDLE, "rss_before_kib": before, "rss_held_kib": held,
            "rss_per_subscriber_kib": (held - before) / IDLE,
            "fanout_subscribers": FANOUT, "fanout_uploads": FANOUT_UPLOADS,
            "notices_per_second": FANOUT * FANOUT_UPLOADS / elapsed}


def main():
    out = sys.argv[1]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    # This process holds the IDLE client sockets; the relay, its own process, the server ends.
    if hard < IDLE + 1024:
        raise SystemExit(f"bench-live: the open-file limit ({hard}) is too low for {IDLE} subscribers")
    port = free_port()
    with tempfile.TemporaryDirectory() as directory, open(os.path.join(directory, "relay.log"), "w") as log:
        relay = start_relay(port, log)
        try:
            results = {"latency": latency(port, directory)}
            print(f"live: 204 → processed update at {UPLOADERS}/s: p50 {results['latency']['p50_ms']:.2f} ms, "
                  f"p99 {results['latency']['p99_ms']:.2f} ms", flush=True)
            results["idle"] = asyncio.run(idle_and_fanout(port, relay.pid))
            idle = results["idle"]
            print(f"live: {idle['subscribers']} idle subscribers, {idle['rss_per_subscriber_kib']:.1f} KiB each; "
                  f"fan-out {idle['notices_per_second']:,.0f} notices/s", flush=True)
        finally:
            relay.send_signal(signal.SIGTERM)
            relay.wait(timeout=30)
    with open(out, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
