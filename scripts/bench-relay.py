#!/usr/bin/env python3
"""Relay load test: coords-relay (release) on loopback under wrk, with the in-memory, the LMDB
and the PostgreSQL store, and two PostgreSQL-backed relays behind nginx
(deploy/nginx/coords-relay.conf), all measured in the same run. Writes JSON results to the path given.

Rows: uploads/s (durable LMDB vs memory, durable PostgreSQL vs LMDB: paired, `paired_stores`), fetches of 50 ids/s, p50/p99
latency at peak and at about 80 % of peak, peak RSS of the relay, two nodes vs one, and (full run)
RSS over a mixed soak. PostgreSQL is Debian's, started in a temporary directory
(scripts/pg-test-server.sh) with its defaults (fsync and synchronous_commit on).
Growth (`growth`): one durable LMDB relay filled to 10k, 100k and 1M keys, measured at each size.
Mailbox (`mailbox`): one durable LMDB relay holding 10k and 100k waiting envelopes: posts, lists, acks.
Usage: bench-relay.py <out.json> [--quick] [--growth-only | --mailbox-only | --paired-only]
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELAY = os.path.join(ROOT, "Apps", ".build", "release", "coords-relay")
BODIES = os.path.join(ROOT, "Benchmarks", ".build", "release", "RelayLoadBodies")
LUA = os.path.join(ROOT, "Benchmarks", "relay.lua")
PRELOAD_LUA = os.path.join(ROOT, "Benchmarks", "relay-preload.lua")
QUICK = "--quick" in sys.argv
DURATION = 3 if QUICK else 10
SOAK = 0 if QUICK else 300
THREADS, CONNECTIONS = 2, 64
# The paired store runs: rounds of short runs against the three stores, and the seeded keys they share.
PAIR_ROUNDS = 4 if QUICK else 12
PAIR_SECONDS = 2 if QUICK else 3
PAIR_KEYS = 20_000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PG_SCRIPT = os.path.join(ROOT, "scripts", "pg-test-server.sh")
NGINX_SITE = os.path.join(ROOT, "deploy", "nginx", "coords-relay.conf")


class Postgres:
    """A throwaway PostgreSQL server; `database()` makes a new empty database and returns its URL."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="coords-bench-pg-")
        for _ in range(8):
            self.port = 20000 + int.from_bytes(os.urandom(2), "big") % 10000
            if subprocess.run([PG_SCRIPT, "start", self.dir, str(self.port), str(os.getpid())],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
                break
        else:
            raise RuntimeError("PostgreSQL did not start (make deps installs it)")
        self.count = 0

    def database(self):
        self.count += 1
        name = f"bench{self.count}"
        subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "coords", "-d", "coords", "-qAt",
                        "-c", f"CREATE DATABASE {name}"], check=True, env=dict(os.environ, PGPASSWORD="coords-test"),
                       stdout=subprocess.DEVNULL)
        return f"postgres://coords:coords-test@127.0.0.1:{self.port}/{name}"

    def settle(self, url):
        """Brings the database at `url` to a state every run reaches alike: CHECKPOINT (no write-back
        of earlier phases left to compete with the next) and VACUUM ANALYZE (fresh planner
        statistics and visibility map, instead of whatever autovacuum happened to have done by then:
        fetches of the same ids differed by 20 % between two runs without it)."""
        subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", url.rsplit("/", 1)[-1], "-qAt",
                        "-c", "CHECKPOINT", "-c", "VACUUM ANALYZE"], check=True, env=dict(os.environ, PGPASSWORD="coords-test"),
                       stdout=subprocess.DEVNULL)

    def rss_kib(self):
        """Resident memory of all the server's processes (postmaster, backends, writers)."""
        total = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if not f.read().startswith(b"postgres"):
                        continue
                with open(f"/proc/{pid}/status") as f:
                    total += next((int(l.split()[1]) for l in f if l.startswith("VmRSS:")), 0)
            except OSError:
                pass
        return total

    def stop(self):
        subprocess.run([PG_SCRIPT, "stop", self.dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


class Nginx:
    """Debian's nginx with deploy/nginx/coords-relay.conf in front of `ports`."""

    def __init__(self, ports):
        self.dir = tempfile.mkdtemp(prefix="coords-bench-nginx-")
        self.port = free_port()
        site = open(NGINX_SITE).read().replace("127.0.0.1:8080", f"127.0.0.1:{self.port}")
        servers = "\n".join(f"    server 127.0.0.1:{p} max_fails=3 fail_timeout=5s;" for p in ports)
        site = site.replace("    server 127.0.0.1:8081 max_fails=3 fail_timeout=5s;\n    server 127.0.0.1:8082 max_fails=3 fail_timeout=5s;", servers)
        with open(os.path.join(self.dir, "site.conf"), "w") as f:
            f.write(site)
        temp = "\n".join(f"    {k}_temp_path {self.dir}/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        with open(os.path.join(self.dir, "nginx.conf"), "w") as f:
            f.write(f"daemon off;\nworker_processes 1;\npid {self.dir}/nginx.pid;\nerror_log {self.dir}/error.log warn;\n"
                    f"events {{ worker_connections 4096; }}\nhttp {{\n    access_log off;\n{temp}\n    include {self.dir}/site.conf;\n}}\n")
        self.process = subprocess.Popen(["nginx", "-p", self.dir, "-c", os.path.join(self.dir, "nginx.conf"), "-e",
                                         os.path.join(self.dir, "error.log")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_for_port(port):
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


class Relay:
    def __init__(self, store, url=None, pool=16, extra=()):
        self.store = store
        self.url = url
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="coords-bench-relay-")
        args = [RELAY, "--port", str(self.port), "--rate", "0", "--key-rate", "0", "--log-level", "error"]
        if store == "memory":
            args += ["--memory"]
        elif store == "postgres":
            args += ["--postgres", url, "--postgres-pool-size", str(pool), "--trust-forwarded-for"]
        else:
            args += ["--data-dir", os.path.join(self.dir, "data")]
        self.args = args + list(extra)
        self.process = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port)

    def rss_kib(self, field="VmRSS"):
        with open(f"/proc/{self.process.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        peak = self.rss_kib("VmHWM")
        self.process.terminate()
        self.process.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)
        return peak

    def restart(self):
        """Stops the relay (SIGTERM) and starts it again on the same store; returns the seconds
        from the new process's start to its first answer."""
        self.process.terminate()
        self.process.wait(timeout=60)
        start = time.time()
        self.process = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"GET /api/version HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
                    if s.recv(64).startswith(b"HTTP/1.1 200"):
                        return time.time() - start
            except OSError:
                pass
            if self.process.poll() is not None or time.time() - start > 120:
                raise RuntimeError("the relay did not come back after a restart")
            time.sleep(0.005)

    def data_bytes(self):
        """Bytes the store's files occupy on disk (LMDB's data file is sparse)."""
        total = 0
        for root, _, files in os.walk(os.path.join(self.dir, "data")):
            for name in files:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
        return total


def wrk(port, bodies, method, duration, delay_ms=0, connections=CONNECTIONS, first=0):
    out = subprocess.run(["wrk", f"-t{THREADS}", f"-c{connections}", f"-d{duration}s", "--timeout", "5s", "-s", LUA,
                          f"http://127.0.0.1:{port}", "--", bodies, method, "/api/location", str(THREADS), str(delay_ms),
                          str(first)],
                         capture_output=True, text=True, check=True).stdout
    line = [l for l in out.splitlines() if l.startswith("{")][-1]
    r = json.loads(line)
    r["rate"] = r["requests"] / (r["duration_us"] / 1e6)
    return r


class Bodies:
    """Hands each wrk run against one relay a fresh range of upload bodies: the relay refuses a
    replayed signature, and a refusal is cheaper than a store, which would flatter the latency."""

    def __init__(self, count):
        self.count, self.next = count, 0

    def take(self, run):
        first = self.next
        result = run(first)
        # Thread i sends bodies first+i, first+i+T, … (T threads), and threads progress unevenly:
        # in the worst case one thread sent every request, reaching first + T × requests. The
        # next run starts past that, plus the requests in flight when wrk stopped. (A margin of
        # 1.25 × requests was too small: 3 s runs of 22,000 requests replayed bodies, refused.)
        self.next += THREADS * result["requests"] + 1000
        if self.next > self.count:
            print(f"warning: {self.next} bodies needed, {self.count} generated; later runs replay bodies", flush=True)
        return result


def quartiles(values):
    """Median and quartiles (p25, p75) of a list, interpolated like numpy's default."""
    v = sorted(values)

    def at(q):
        x = q * (len(v) - 1)
        i = int(x)
        return v[i] if i + 1 >= len(v) else v[i] + (v[i + 1] - v[i]) * (x - i)
    return {"median": at(0.5), "p25": at(0.25), "p75": at(0.75)}


def paired_stores(postgres, uploads, count, work):
    """The store ratios, paired like the Swift suite's rows: the memory, LMDB and PostgreSQL
    relays run side by side and short wrk runs alternate between them (memory, LMDB, PostgreSQL,
    then backwards, ...), so a machine that slows down slows every store alike. Each round gives
    LMDB ÷ memory and PostgreSQL ÷ LMDB for uploads (of fresh keys, each relay its own range of
    `uploads`) and for fetches of 50 ids. Every relay first receives the same 20,000 seeded keys
    (each body sent once) and the fetches ask for those, so every id is found on every store and
    the answers are the same size. Returns each store's runs and the ratios' median and quartiles."""
    stores = ("memory", "lmdb", "postgres")
    seeded = os.path.join(work, "paired")
    os.makedirs(seeded, exist_ok=True)
    subprocess.run([BODIES, "seeded", "0", str(PAIR_KEYS), str(10 ** 12), "280", seeded], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([BODIES, "fetches", str(PAIR_KEYS), "2000", seeded], check=True, stdout=subprocess.DEVNULL)
    relays = {store: Relay(store, postgres.database() if store == "postgres" else None) for store in stores}
    try:
        for relay in relays.values():
            send_once(relay.port, os.path.join(seeded, "uploads.txt"), seeded)
        fresh = {store: Bodies(count) for store in stores}
        runs = {kind: {store: [] for store in stores} for kind in ("uploads", "fetches")}
        for kind in ("uploads", "fetches"):
            postgres.settle(relays["postgres"].url)
            os.sync()  # and no dirty pages of the phase before left for the kernel to write during this one
            for round_ in range(PAIR_ROUNDS):
                for store in (stores if round_ % 2 == 0 else reversed(stores)):
                    port = relays[store].port
                    if kind == "uploads":
                        run = fresh[store].take(lambda first: wrk(port, uploads, "PUT", PAIR_SECONDS, first=first))
                    else:
                        run = wrk(port, os.path.join(seeded, "fetches.txt"), "POST", PAIR_SECONDS)
                    runs[kind][store].append(run)
        peaks = {store: relay.rss_kib("VmHWM") for store, relay in relays.items()}
        database_rss = postgres.rss_kib()
    finally:
        for relay in relays.values():
            relay.stop()
    ratios = {}
    for kind in ("uploads", "fetches"):
        for ours, base in (("lmdb", "memory"), ("postgres", "lmdb")):
            per_round = [a["rate"] / b["rate"] for a, b in zip(runs[kind][ours], runs[kind][base])]
            ratios[f"{ours}_vs_{base}_{kind}"] = dict(quartiles(per_round), rounds=per_round)
    report = __import__("bench-report")  # the spread every report and comparison states
    summary = ", ".join(f"{name} {r['median']:.2f}× (±{100 * report.spread(r):.0f} %)" for name, r in ratios.items())
    print(f"paired stores ({PAIR_ROUNDS} rounds of {PAIR_SECONDS} s): {summary}", flush=True)
    return {"rounds": PAIR_ROUNDS, "seconds": PAIR_SECONDS, "keys": PAIR_KEYS, "runs": runs, "ratios": ratios,
            "peak_rss_kib": peaks, "database_rss_kib": database_rss}


def paced(port, bodies, method, peak, count):
    """About 80 % of `peak`: each connection waits `delay` ms before every request (wrk's
    delay() hook; latency is measured without it). Latency falls as load falls, so the delay is
    calibrated with short runs until the achieved rate is within 5 % of the target; the measured
    run is kept once it lands within 10 % (at most three tries). Every run uses unsent bodies."""
    target = 0.8 * peak["rate"]
    fresh = Bodies(count)
    delay = max(1.0, CONNECTIONS * 1000 / target - peak["p50_us"] / 1000)
    for _ in range(5):
        probe = fresh.take(lambda first: wrk(port, bodies, method, 2, round(delay, 1), first=first))
        if abs(probe["rate"] - target) / target < 0.05:
            break
        delay = max(0.1, delay * probe["rate"] / target)
    # A 2 s probe can mislead (the store grows, fsync cost drifts): the measured run is repeated,
    # with the delay corrected, while it lands more than 10 % away from the target.
    for _ in range(3):
        result = fresh.take(lambda first: wrk(port, bodies, method, DURATION, round(delay, 1), first=first))
        if abs(result["rate"] - target) / target < 0.10:
            break
        delay = max(0.1, delay * result["rate"] / target)
    result["target_rate"] = target
    return result


def send_once(port, bodies, work):
    """Sends every line of `bodies` once (Benchmarks/relay-preload.lua) and returns wrk's report
    with `seconds` (first request to last answer, from the threads' markers) and `rate`."""
    marker = os.path.join(work, "sent-")
    for name in os.listdir(work):
        if name.startswith("sent-"):
            os.unlink(os.path.join(work, name))
    run = subprocess.Popen(["wrk", f"-t{THREADS}", f"-c{CONNECTIONS}", "-d3600s", "--timeout", "5s", "-s", PRELOAD_LUA,
                            f"http://127.0.0.1:{port}", "--", bodies, "PUT", "/api/location", str(THREADS), marker],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    started = time.time()
    while sum(name.startswith("sent-") for name in os.listdir(work)) < THREADS:
        if run.poll() is not None or time.time() - started > 1800:
            run.kill()
            raise RuntimeError("sending the bodies once did not finish")
        time.sleep(0.05)
    run.send_signal(signal.SIGINT)
    out, _ = run.communicate(timeout=60)
    report = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    marks = []
    for i in range(THREADS):
        with open(f"{marker}{i}") as f:
            first, last, sent, complete = f.read().split()
            if complete != "complete":
                raise RuntimeError(f"sending {bodies}: thread {i} lost answers (a connection failed); wrk said {out.strip()}")
            marks.append((float(first), float(last), int(sent)))
    report["seconds"] = max(m[1] for m in marks) - min(m[0] for m in marks)
    report["sent"] = sum(m[2] for m in marks)
    report["rate"] = report["sent"] / max(report["seconds"], 1e-6)
    if report["non2xx"] or report["socket_errors"]:
        raise RuntimeError(f"sending {bodies}: {report['non2xx']} refusals, {report['socket_errors']} socket errors")
    return report


def growth(work):
    """How the durable LMDB relay's cost grows with stored keys (10k, 100k, 1M; quick: 10k,
    100k). One relay is filled in chunks of 100,000 seeded keys (RelayLoadBodies seeded: a
    bounded generator, each body sent once), and at each size: uploads/s as updates of stored
    keys (the size stays put while measuring), fetches of 50 stored ids/s, their p99, the
    relay's RSS, the store's bytes on disk and the time from a restart to the first answer."""
    sizes = [10_000, 100_000] if QUICK else [10_000, 100_000, 1_000_000]
    relay = Relay("lmdb")
    loaded, rows = 0, []
    uploads = os.path.join(work, "uploads.txt")
    fetches = os.path.join(work, "fetches.txt")
    for size in sizes:
        started = time.time()
        while loaded < size:
            chunk = min(100_000, size - loaded)
            subprocess.run([BODIES, "seeded", str(loaded), str(chunk), str(10 ** 12), "280", work], check=True)
            send_once(relay.port, uploads, work)
            loaded += chunk
            print(f"growth: {loaded:,} keys stored", flush=True)
        fill_s = time.time() - started
        # Updates of stored keys, key i % size, each later body of a key one second newer.
        subprocess.run([BODIES, "seeded", "0", str(60_000 if QUICK else 200_000), str(size), "285", work], check=True)
        subprocess.run([BODIES, "fetches", str(size), "2000", work], check=True)
        os.sync()  # the bodies and the fill's writes, flushed before the measured runs
        up = wrk(relay.port, uploads, "PUT", DURATION)
        fetch = wrk(relay.port, fetches, "POST", DURATION)
        row = {"keys": size, "uploads": up, "fetches": fetch, "rss_kib": relay.rss_kib(), "disk_bytes": relay.data_bytes(),
               "fill_s": fill_s, "restart_s": relay.restart()}
        rows.append(row)
        print(f"growth {size:,} keys: {up['rate']:.0f} uploads/s (p99 {up['p99_us'] / 1000:.1f} ms, non-2xx {up['non2xx']}), "
              f"{fetch['rate']:.0f} fetches/s (p99 {fetch['p99_us'] / 1000:.1f} ms), RSS {row['rss_kib'] / 1024:.0f} MiB, "
              f"disk {row['disk_bytes'] / 1048576:.0f} MiB, restart {row['restart_s'] * 1000:.0f} ms", flush=True)
    relay.stop()
    return rows


def mailbox(work):
    """How the durable LMDB relay's mailbox (§7.3) grows with waiting envelopes (10k, 100k;
    quick: 10k). 1,000 mailboxes; envelopes are sealed and signed by RelayLoadBodies (16
    senders, about 600 bytes each) and every request is sent exactly once (relay-preload.lua),
    timed from the first request to the last answer. At each size: POST of 10,000 new envelopes
    (size +10 % at 100k), 20,000 recipient-signed GETs of 50 (each with a fresh signature, as the
    relay accepts one once) of random mailboxes, and the acks of the 10,000 just posted (back to
    the size); the relay's RSS and the store's bytes on disk."""
    sizes = [10_000] if QUICK else [10_000, 100_000]
    mailboxes, step, lists = 1_000, 10_000, 20_000
    relay = Relay("lmdb", extra=["--message-rate", "0", "--mailbox-size", "1000"])
    envelopes = os.path.join(work, "envelopes.txt")
    next_index, rows = 0, []

    def post(count):
        nonlocal next_index
        first = next_index
        subprocess.run([BODIES, "envelopes", str(first), str(count), str(mailboxes), work], check=True)
        next_index += count
        return first, send_once(relay.port, envelopes, work)

    for size in sizes:
        started = time.time()
        while next_index < size:
            post(min(50_000, size - next_index))
        fill_s = time.time() - started
        first, posted = post(step)
        subprocess.run([BODIES, "lists", str(mailboxes), str(lists), work], check=True)
        listed = send_once(relay.port, os.path.join(work, "lists.txt"), work)
        subprocess.run([BODIES, "acks", str(first), str(step), str(mailboxes), work], check=True)
        acked = send_once(relay.port, os.path.join(work, "acks.txt"), work)
        row = {"waiting": size, "mailboxes": mailboxes, "posts": posted, "lists": listed, "acks": acked,
               "rss_kib": relay.rss_kib(), "disk_bytes": relay.data_bytes(), "fill_s": fill_s}
        rows.append(row)
        print(f"mailbox {size:,} waiting: {posted['rate']:.0f} posts/s (p99 {posted['p99_us'] / 1000:.1f} ms), "
              f"{listed['rate']:.0f} lists of 50/s (p99 {listed['p99_us'] / 1000:.1f} ms), "
              f"{acked['rate']:.0f} acks/s (p99 {acked['p99_us'] / 1000:.1f} ms), RSS {row['rss_kib'] / 1024:.0f} MiB, "
              f"disk {row['disk_bytes'] / 1048576:.0f} MiB", flush=True)
    relay.stop()
    return rows


def main():
    out_path = sys.argv[1]
    work = tempfile.mkdtemp(prefix="coords-bench-bodies-")
    if "--growth-only" in sys.argv:  # the growth tables alone (for working on them)
        results = {"duration_s": DURATION, "growth": growth(work), "mailbox": mailbox(work)}
        shutil.rmtree(work, ignore_errors=True)
        with open(out_path, "w") as f:
            json.dump(results, f, indent=1)
        return
    if "--mailbox-only" in sys.argv:
        results = {"duration_s": DURATION, "mailbox": mailbox(work)}
        shutil.rmtree(work, ignore_errors=True)
        with open(out_path, "w") as f:
            json.dump(results, f, indent=1)
        return
    count = 250_000 if QUICK else 600_000
    if "--paired-only" in sys.argv:
        postgres = Postgres()
        subprocess.run([BODIES, str(count), work], check=True, stdout=subprocess.DEVNULL)
        results = {"duration_s": DURATION, "paired": paired_stores(postgres, os.path.join(work, "uploads.txt"), count, work)}
        postgres.stop()
        shutil.rmtree(work, ignore_errors=True)
        with open(out_path, "w") as f:
            json.dump(results, f, indent=1)
        return

    def make_bodies():
        """Fresh bodies: their timestamps stay inside the relay's window for about ten minutes."""
        subprocess.run([BODIES, str(count), work], check=True, stdout=subprocess.DEVNULL)
        # Hundreds of MiB of bodies were just written: flushed now, not by the kernel in the middle
        # of a durable run, where an fsync waiting behind them once made the LMDB relay's upload
        # p99 218 ms instead of 20.
        os.sync()
        return os.path.join(work, "uploads.txt"), os.path.join(work, "fetches.txt")

    results = {"duration_s": DURATION, "connections": CONNECTIONS, "wrk_threads": THREADS}
    postgres = Postgres()
    uploads, fetches = make_bodies()
    results["paired"] = paired_stores(postgres, uploads, count, work)
    uploads, fetches = make_bodies()
    for store in ("memory", "lmdb", "postgres"):
        relay = Relay(store, postgres.database())
        up = wrk(relay.port, uploads, "PUT", DURATION)
        fetch = wrk(relay.port, fetches, "POST", DURATION)
        database_rss = postgres.rss_kib() if store == "postgres" else 0
        peak_rss = relay.stop()
        relay = Relay(store, postgres.database())  # fresh store: the paced run must not replay bodies
        up80 = paced(relay.port, uploads, "PUT", up, count)
        relay.stop()
        results[store] = {"uploads": up, "fetches": fetch, "uploads_80": up80, "peak_rss_kib": peak_rss}
        if database_rss:
            results[store]["database_rss_kib"] = database_rss
        print(f"{store}: {up['rate']:.0f} uploads/s (p99 {up['p99_us'] / 1000:.1f} ms, non-2xx {up['non2xx']}), "
              f"{fetch['rate']:.0f} fetches/s; at {up80['rate']:.0f}/s p99 {up80['p99_us'] / 1000:.1f} ms "
              f"(non-2xx {up80['non2xx']}); "
              f"peak RSS {peak_rss / 1024:.0f} MiB", flush=True)
    # Two PostgreSQL-backed relays behind nginx vs one relay behind the same nginx (the proxy hop
    # is then in both), on one database. Half the pool each, so the database sees the same
    # number of connections.
    uploads, fetches = make_bodies()
    url = postgres.database()
    one = Relay("postgres", url)
    proxy = Nginx([one.port])
    single = {"uploads": wrk(proxy.port, uploads, "PUT", DURATION), "fetches": wrk(proxy.port, fetches, "POST", DURATION)}
    proxy.stop()
    single["peak_rss_kib"] = one.stop()
    url = postgres.database()
    nodes = [Relay("postgres", url, pool=8), Relay("postgres", url, pool=8)]
    proxy = Nginx([n.port for n in nodes])
    double = {"uploads": wrk(proxy.port, uploads, "PUT", DURATION), "fetches": wrk(proxy.port, fetches, "POST", DURATION)}
    proxy.stop()
    double["peak_rss_kib"] = [n.stop() for n in nodes]
    results["nginx_one_node"], results["nginx_two_nodes"] = single, double
    postgres.stop()
    print(f"behind nginx: one node {single['uploads']['rate']:.0f} uploads/s, {single['fetches']['rate']:.0f} fetches/s; "
          f"two nodes {double['uploads']['rate']:.0f} uploads/s, {double['fetches']['rate']:.0f} fetches/s", flush=True)
    results["growth"] = growth(work)
    results["mailbox"] = mailbox(work)
    if SOAK:
        uploads, fetches = make_bodies()
        relay = Relay("lmdb")
        wrk(relay.port, uploads, "PUT", 5)  # fill the store first
        samples = []
        start = time.time()
        soak = subprocess.Popen(["wrk", f"-t{THREADS}", "-c16", f"-d{SOAK}s", "-s", LUA, f"http://127.0.0.1:{relay.port}",
                                 "--", fetches, "POST", "/api/location", str(THREADS), "0"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while soak.poll() is None:
            samples.append([round(time.time() - start), relay.rss_kib()])
            time.sleep(15)
        relay.stop()
        results["soak"] = {"seconds": SOAK, "rss_kib": samples}
        print(f"soak: RSS {samples[1][1] / 1024:.0f} → {samples[-1][1] / 1024:.0f} MiB over {SOAK} s", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
