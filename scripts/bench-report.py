#!/usr/bin/env python3
"""Turns a benchmark run into the performance table (stdout) and docs/PERFORMANCE.md.

Inputs: the JMH JSON package-benchmark wrote, and the relay results of bench-relay.py.
Every `[ours]` row is paired with its `[raw]` row (the same libsodium/LMDB calls in C, same
process, same run); the ratio is ours ÷ raw in operations per second (1.0 = no overhead).
Usage: bench-report.py <jmh.json> <relay.json> <PERFORMANCE.md> [--quick]
"""
import datetime
import glob
import json
import math
import os
import platform
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTES = os.path.join(ROOT, "Benchmarks", "notes.json")


# A paired ratio whose spread (± half of it) exceeds this share of its median is judged on its
# interval (`verdict`): noisy when the target lies inside it.
MAX_SPREAD = 0.10


def target_for(name):
    if name.startswith("Store random get, borrowing"):
        return 0.8  # issue 24: a get lends the mapped bytes, like the C baseline's read; issue 39: sealed, LMDB + one open
    if name.startswith("Store insert one transaction each, durable, sealed"):
        return 0.8  # issue 39: LMDB's durable put + one seal
    if name.startswith("Store"):
        return 0.5
    if name.startswith("Manager"):
        return 0.8  # issue 24: the path an app calls against the crypto inside it, in C
    if name.startswith(("Ed25519", "X25519", "AES", "Blob", "Envelope")):
        return 0.9
    if name.startswith("Attachment"):
        return 0.8  # issue 43: the same AEAD and digest over the same bytes in C
    if name.startswith("Geocode nearest, 15000"):
        return 50  # the index against a full scan: a speed-up, not an overhead
    return None


CATEGORIES = ["Ed25519 sign", "Ed25519 verify", "X25519", "Ed25519→X25519", "AES-256-GCM seal", "AES-256-GCM open",
              "Blob seal", "Blob open", "Store insert one transaction ", "Store insert one transaction each, durable",
              "Store insert one transaction each, no-sync", "Store random", "Manager", "Geocod", "Envelope", "Message", "Attachment"]


def order(label):
    """Logical order: category, then size or recipient count, cached before converting."""
    category = next((i for i, c in enumerate(CATEGORIES) if label.startswith(c)), len(CATEGORIES))
    size = 0
    m = re.search(r"(\d+) (B|KiB|MiB)\b", label)
    if m:
        size = int(m.group(1)) * {"B": 1, "KiB": 1024, "MiB": 1 << 20}[m.group(2)]
    m = re.search(r"N=(\d+)", label) or re.search(r"(\d+) friends", label) or re.search(r"of (\d+)", label)
    if m:
        size = int(m.group(1))
    return (category, "converting" in label, size, label)


def load_rows(path):
    rows = {}
    for bench in json.load(open(path)):
        name = bench["benchmark"].split("CoordsBenchmarks.", 1)[-1].replace("_", " ")
        m = re.match(r"(.*) ×(\d+) \[(ours|raw)\]$", name)
        if not m:
            continue
        label, ops, side = m.group(1), int(m.group(2)), m.group(3)
        wall = bench["secondaryMetrics"].get("Time (wall clock)", {})
        p50 = wall.get("scorePercentiles", {}).get("50.0")
        unit = wall.get("scoreUnit", "μs")
        scale = {"ns": 1e-9, "μs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}.get(unit, 1e-6)
        mallocs = bench["secondaryMetrics"].get("Malloc (total)", {}).get("scorePercentiles", {}).get("50.0")
        if p50:
            rows.setdefault(label, {})[side] = {"ops_per_s": ops / (p50 * scale), "mallocs_per_op": (mallocs or 0) / ops}
    return rows


def machine():
    def run(*args):
        try:
            return subprocess.run(args, capture_output=True, text=True).stdout.strip()
        except OSError:
            return "?"
    cpu = next((l.split(":", 1)[1].strip() for l in run("lscpu").splitlines() if l.startswith("Model name")), platform.processor())
    memory = next((l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")), "0")
    swift = run("swift", "--version").splitlines()[0] if run("swift", "--version") else "?"
    return (f"{cpu}, {os.cpu_count()} cores, {int(memory) // 1024 // 1024} GiB RAM, Linux {platform.release()}; "
            f"{swift}; libsodium {run('pkg-config', '--modversion', 'libsodium')}, LMDB {run('pkg-config', '--modversion', 'lmdb')}")


def fmt(x):
    if x is None:
        return "—"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:,.1f}" if x >= 10 else f"{x:,.2f}"


def bend(sizes, costs, unit):
    """Where a cost per unit stops being flat: the first size whose cost per unit is more than
    25 % above the smallest size's, or None when it stays within that."""
    base = costs[0] / sizes[0] if sizes[0] else 0
    for size, cost in zip(sizes, costs):
        if base and size and cost / size > 1.25 * base:
            return f"per {unit} it rises {cost / size / base:.1f}× by {size:,}"
    return None


def agreement_section(results_dir):
    """Does this run agree with the previous `make bench` (kept in <results>-previous)?"""
    previous = results_dir.rstrip("/") + "-previous"
    if not os.path.exists(os.path.join(previous, "Current_run.jmh.json")):
        return []
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench-compare.py"), previous, results_dir],
                         capture_output=True, text=True)
    lines = out.stdout.splitlines()
    disagree = [l for l in lines if l.rstrip().endswith("DISAGREE")]
    md = ["", "## Agreement with the previous run", "",
          "`scripts/bench-compare.py` against the previous `make bench` on this machine (kept in",
          "`Benchmarks/.build/results-previous`): two ratios agree when they differ by at most the larger spread",
          "of the two paired runs (as in the tables above) plus 2 % (10 % for a row without pairs).", ""]
    md.append(lines[-1].replace("bench-compare: ", "").capitalize() + "." if lines else "The comparison did not run.")
    if disagree:
        md += ["", "Rows that disagree (previous, this run, difference, allowed):", ""]
        md += ["- " + " ".join(l.split()) for l in disagree]
    return md


def median_interval(values):
    """A distribution-free 95 % confidence interval of the median of `values`: the k-th smallest
    and k-th largest, k the largest rank with P(Binomial(n, ½) < k) ≤ 2.5 % (for 12 values the
    3rd and the 10th; for 8 or fewer the whole range)."""
    v = sorted(values)
    n = len(v)
    k = 1
    while k < (n + 1) // 2 and sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n <= 0.025:
        k += 1  # P(Binomial(n, ½) ≤ k) ≤ 2.5 %: rank k + 1 still bounds the median from below
    return v[k - 1], v[n - k]


def spread(measured):
    """The stated spread of a paired ratio, as a share of its median: the largest of half the
    interquartile range of the per-pair ratios (how much one pair varies), half the 95 %
    confidence interval of their median (how well the median is known: with a dozen rounds
    this is the wider one) and their drift, how far the median of the first half of the pairs
    (in the order they ran) lies from the second half's (the quartiles alone miss a machine
    whose speed changes during a run: both halves are tight, yet they disagree, and so would
    another run). Results without the per-pair list give half the range alone."""
    ratio = measured["median"]
    if not ratio:
        return float("inf")
    half_range = (measured["p75"] - measured["p25"]) / 2 / ratio
    in_order = measured.get("ratios") or measured.get("rounds") or []
    drift = interval = 0.0
    if len(in_order) >= 4:
        half = len(in_order) // 2
        drift = abs(median(in_order[:half]) - median(in_order[half:])) / ratio
        low, high = median_interval(in_order)
        interval = (high - low) / 2 / ratio
    return max(half_range, interval, drift)


def paired_cell(measured):
    """(ratio, shown, spread) of a paired ratio with its median and quartiles: shown as
    `0.98× ±2 %` (its `spread`, a share of the ratio)."""
    ratio = measured["median"]
    s = spread(measured)
    return ratio, (f"{ratio:.2f}×" if ratio < 10 else f"{ratio:,.0f}×") + f" ±{100 * s:.0f} %", s


def verdict(ratio, s, target):
    """"pass", "MISS" or "noisy" for a ratio ± its spread `s` against a `≥ target`. Within
    ±MAX_SPREAD/2 the ratio itself decides. A wider spread states an interval, ratio × (1 ± s):
    the row passes or misses when the whole interval lies on one side of the target, and is
    noisy only when the target lies inside it (a wide spread must not hide a clear miss)."""
    if 2 * s <= MAX_SPREAD:
        return "pass" if ratio >= target else "MISS"
    if ratio * (1 - s) >= target:
        return "pass"
    if ratio * (1 + s) < target:
        return "MISS"
    return "noisy"


def median(values):
    v = sorted(values)
    return (v[len(v) // 2] + v[(len(v) - 1) // 2]) / 2


def table_head(*columns):
    """A Markdown table's header and separator lines."""
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def rate_cells(run):
    """`rate | p99 in ms` of one wrk run."""
    return f"{fmt(run['rate'])} | {run['p99_us'] / 1000:.1f}"


def growth_section(results_dir, relay):
    """The "How cost grows" tables: the client with 10/100/1,000 friends (growth-client.json,
    from the Swift suite) and the relay with 10k/100k/1M keys (relay.json "growth")."""
    md = []
    notes = json.load(open(NOTES)) if os.path.exists(NOTES) else {}
    client_path = os.path.join(results_dir, "growth-client.json")
    if os.path.exists(client_path):
        rows = sorted(json.load(open(client_path)).values(), key=lambda r: r["friends"])
        sizes = [r["friends"] for r in rows]
        md += ["", "## How cost grows", "", "### Client with 10, 100 and 1,000 friends", "",
               "One app (no fsync, so the numbers are the code's, not the disk's) grown in place. Prepare upload: median",
               "of 21 (one blob for the user and every friend, signed); fetch requests: how many `POST /api/location` of",
               "at most 50 ids, and the median time to prepare them; processing: every friend's answer once (verify,",
               "open, cache); memory: the benchmark process's RSS and the store's blocks on disk.", "",
               "| Friends | Prepare upload, ms | per friend, µs | Fetch requests | prepare them, ms | Process every answer, ms | per friend, µs | RSS, MiB | Store on disk, KiB |",
               "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            n = r["friends"]
            md.append(f"| {n:,} | {r['prepare_upload_ms']:.2f} | {1000 * r['prepare_upload_ms'] / n:.0f} | {r['fetch_requests']} | "
                      f"{r['prepare_fetches_ms']:.2f} | {r['process_all_ms']:.1f} | {1000 * r['process_all_ms'] / n:.0f} | "
                      f"{r['rss_kib'] / 1024:.0f} | {r['store_kib']:,} |")
        upload_bend = bend(sizes, [r["prepare_upload_ms"] for r in rows], "friend")
        process_bend = bend(sizes, [r["process_all_ms"] for r in rows], "friend")
        md += ["", "Upload and processing grow linearly with friends (" +
               (f"upload: {upload_bend}" if upload_bend else "upload: flat per friend within 25 %") + "; " +
               (f"processing: {process_bend}" if process_bend else "processing: flat per friend within 25 %") + "). " +
               notes.get("_growth_client", "")]
    growth = relay.get("growth")
    if growth:
        md += ["", "### Relay with 10k, 100k and 1M stored keys", "",
               "One release relay on the durable LMDB store, filled in chunks of 100,000 seeded keys (a bounded",
               "generator: `RelayLoadBodies seeded`, each body sent once by `Benchmarks/relay-preload.lua`), measured at",
               "each size with `wrk` on the same two cores: uploads are updates of stored keys (so the size holds while",
               "measuring), fetches ask for 50 stored ids. Restart: SIGTERM, start again, time to the first answer.", "",
               *table_head("Keys", "Uploads/s", "p99, ms", "Fetches of 50/s", "p99, ms", "RSS, MiB", "On disk, MiB", "bytes per key",
                           "Restart to first answer, ms")]
        for r in growth:
            md.append(f"| {r['keys']:,} | {rate_cells(r['uploads'])} | {rate_cells(r['fetches'])} | {r['rss_kib'] / 1024:.0f} | "
                      f"{r['disk_bytes'] / 1048576:.0f} | {r['disk_bytes'] / r['keys']:.0f} | {r['restart_s'] * 1000:.0f} |")
        first, last = growth[0], growth[-1]
        up_change = last["uploads"]["rate"] / first["uploads"]["rate"]
        fetch_change = last["fetches"]["rate"] / first["fetches"]["rate"]
        refused = sum(r["uploads"]["non2xx"] + r["fetches"]["non2xx"] for r in growth)
        md += ["", f"From {first['keys']:,} to {last['keys']:,} keys uploads/s change {up_change:.2f}× and fetches/s "
               f"{fetch_change:.2f}×; disk grows {last['disk_bytes'] / max(first['disk_bytes'], 1):.0f}× for "
               f"{last['keys'] / first['keys']:.0f}× the keys. Responses other than 2xx in these runs: {refused}. " +
               notes.get("_growth_relay", "")]
    mailbox = relay.get("mailbox")
    if mailbox:
        md += ["", "### Mailbox with 10k and 100k waiting envelopes", "",
               "One release relay on the durable LMDB store with 1,000 mailboxes, filled with sealed, signed envelopes",
               "(`RelayLoadBodies envelopes`, 16 senders). At each size, every request sent exactly once by",
               "`Benchmarks/relay-preload.lua` and timed from the first request to the last answer: 10,000 new envelopes",
               "posted, 20,000 recipient-signed lists (`GET …&limit=50`, a fresh signature each; every mailbox once a round, in",
               "random order), then the 10,000 new envelopes acknowledged (back to the size). \"per mailbox\" is before the",
               "10,000 are posted; lists see 10 more.", "",
               *table_head("Waiting", "per mailbox", "Posts/s", "p99, ms", "Lists/s", "p99, ms", "envelopes per list", "Acks/s", "p99, ms",
                           "RSS, MiB", "On disk, MiB", "bytes per envelope")]
        for r in mailbox:
            per = r["waiting"] // r["mailboxes"]
            md.append(f"| {r['waiting']:,} | {per:,} | {rate_cells(r['posts'])} | {rate_cells(r['lists'])} | {min(50, per + 10)} | "
                      f"{rate_cells(r['acks'])} | {r['rss_kib'] / 1024:.0f} | {r['disk_bytes'] / 1048576:.0f} | "
                      f"{r['disk_bytes'] / r['waiting']:,.0f} |")
        first, last = mailbox[0], mailbox[-1]
        changes = ", ".join(f"{what} {last[what]['rate'] / first[what]['rate']:.2f}×" for what in ("posts", "lists", "acks"))
        md += ["", f"From {first['waiting']:,} to {last['waiting']:,} waiting envelopes: {changes}; disk grows "
               f"{last['disk_bytes'] / max(first['disk_bytes'], 1):.1f}× for {last['waiting'] / first['waiting']:.0f}× the envelopes. " +
               notes.get("_growth_mailbox", "")]
    return md


def main():
    jmh, relay_path, out = sys.argv[1], sys.argv[2], sys.argv[3]
    quick = "--quick" in sys.argv
    notes = json.load(open(NOTES)) if os.path.exists(NOTES) else {}
    rows = load_rows(jmh)
    table = []  # metric, ours, baseline, ratio, target, result
    misses = []
    noisy_rows = []

    # Paired, interleaved ratios (Support.swift `paired`): the ratio column when present.
    paired = {}
    for path in glob.glob(os.path.join(os.path.dirname(jmh), "paired-*.json")):
        with open(path) as f:
            entry = json.load(f)
        paired[entry["name"]] = entry

    labels = sorted(rows, key=order)
    for label in labels:
        pair = rows[label]
        ours, raw = pair.get("ours"), pair.get("raw")
        target = target_for(label)
        if ours and raw:
            measured = paired.get(label)
            if measured:
                ratio, shown, s = paired_cell(measured)
            else:
                ratio = ours["ops_per_s"] / raw["ops_per_s"]
                s, shown = 0.0, (f"{ratio:.2f}×" if ratio < 10 else f"{ratio:,.0f}×")
            result = verdict(ratio, s, target) if target else "pass"
            table.append([f"{label} (ops/s)", fmt(ours["ops_per_s"]), fmt(raw["ops_per_s"]), shown,
                          f"≥ {target}×" if target else "—", result])
            if result == "MISS":
                misses.append(label)
            if result == "noisy":
                noisy_rows.append(label)
        elif ours:
            table.append([f"{label} (ops/s)", fmt(ours["ops_per_s"]), "—", "—", "—", "info"])
    for label in labels:
        ours = rows[label].get("ours")
        if ours and label.startswith("Blob"):
            table.append([f"{label}: allocations per operation", fmt(ours["mallocs_per_op"]), "0 (C)", "—", "small constant", "info"])

    geocoding_path = os.path.join(os.path.dirname(jmh), "geocoding.json")
    geocoding = json.load(open(geocoding_path)) if os.path.exists(geocoding_path) else {}
    for label, facts in sorted(geocoding.items()):
        table.append([f"Geocoding {label}: places / memory held, MiB / load, ms",
                      f"{facts['places']:,} / {facts['bytes'] / 1048576:.1f} / {facts['load_ms']:.0f}", "—", "—", "—", "info"])

    relay = json.load(open(relay_path)) if os.path.exists(relay_path) else None
    if relay and "memory" in relay:
        mem, lmdb = relay["memory"], relay["lmdb"]
        p99 = lmdb["uploads_80"]["p99_us"] / 1000
        # A refused request (replayed body, rate limit) is answered without touching the store:
        # any in a load run would make its numbers flatter than real traffic.
        stores = [store for store in ("memory", "lmdb", "postgres") if store in relay]
        refused = sum(relay[store][run]["non2xx"] for store in stores for run in ("uploads", "fetches", "uploads_80"))
        pairs = relay.get("paired")
        if pairs:
            refused += sum(run["non2xx"] for kind in pairs["runs"].values() for runs in kind.values() for run in runs)

        def store_ratio(metric, ours, base, kind, target):
            """A store-against-store row: paired (the median of per-round ratios, rates the
            medians of the rounds) when the run has pairs, else the two long runs' rates."""
            if pairs:
                ratio, shown, s = paired_cell(pairs["ratios"][f"{ours}_vs_{base}_{kind}"])
                rates = [median([run["rate"] for run in pairs["runs"][kind][store]]) for store in (ours, base)]
                return (metric, fmt(rates[0]), fmt(rates[1]), shown, f"≥ {target}×", verdict(ratio, s, target))
            ratio = relay[ours][kind]["rate"] / relay[base][kind]["rate"]
            return (metric, fmt(relay[ours][kind]["rate"]), fmt(relay[base][kind]["rate"]), f"{ratio:.2f}×", f"≥ {target}×", ratio >= target)

        checks = [
            store_ratio("Relay uploads/s, LMDB (durable) vs memory", "lmdb", "memory", "uploads", 0.7),
            store_ratio("Relay fetches of 50 ids/s, LMDB vs memory", "lmdb", "memory", "fetches", 0.9),
            ("Relay uploads/s, LMDB (absolute)", fmt(lmdb["uploads"]["rate"]), "—", "—", "order of 10,000", lmdb["uploads"]["rate"] >= 3000),
            ("Relay load runs: responses other than 2xx", str(refused), "—", "—", "0", refused == 0),
            (f"Relay upload p99 at {fmt(lmdb['uploads_80']['rate'])}/s ({100 * lmdb['uploads_80']['rate'] / lmdb['uploads']['rate']:.0f} % of peak), ms", f"{p99:.1f}", "—", "—", "< 20 ms", p99 < 20),
        ]
        if "postgres" in relay:
            checks += [
                store_ratio("Relay uploads/s, PostgreSQL (durable) vs LMDB", "postgres", "lmdb", "uploads", 0.5),
                store_ratio("Relay fetches of 50 ids/s, PostgreSQL vs LMDB", "postgres", "lmdb", "fetches", 0.5),
            ]
        for metric, ours_v, base, ratio, target, ok in checks:
            result = ok if isinstance(ok, str) else ("pass" if ok else "MISS")
            table.append([metric, ours_v, base, ratio, target, result])
            if result == "MISS":
                misses.append(metric)
            if result == "noisy":
                noisy_rows.append(metric)
        if "postgres" in relay:
            pg = relay["postgres"]
            table.append([f"Relay (postgres) upload p99 at {fmt(pg['uploads_80']['rate'])}/s ({100 * pg['uploads_80']['rate'] / pg['uploads']['rate']:.0f} % of peak), ms",
                          f"{pg['uploads_80']['p99_us'] / 1000:.1f}", "—", "—", "—", "info"])
            if pg.get("database_rss_kib"):
                table.append(["PostgreSQL server RSS after the postgres runs (all its processes), MiB", fmt(pg["database_rss_kib"] / 1024), "—", "—", "—", "info"])
        if "nginx_two_nodes" in relay:
            one, two = relay["nginx_one_node"], relay["nginx_two_nodes"]
            for run, label in (("uploads", "uploads/s"), ("fetches", "fetches of 50 ids/s")):
                ratio = two[run]["rate"] / one[run]["rate"]
                table.append([f"Relay {label} behind nginx, two PostgreSQL nodes vs one", fmt(two[run]["rate"]), fmt(one[run]["rate"]), f"{ratio:.2f}×",
                              "— (2 cores: overhead, not speed-up)", "info"])
            table.append(["Relay peak RSS behind nginx, one node / each of two nodes, MiB",
                          f"{one['peak_rss_kib'] / 1024:.0f} / " + " + ".join(f"{k / 1024:.0f}" for k in two["peak_rss_kib"]), "—", "—", "—", "info"])
            bad = sum(r[run]["non2xx"] + r[run]["socket_errors"] for r in (one, two) for run in ("uploads", "fetches"))
            if bad:
                table.append(["Relay behind nginx: non-2xx or socket errors", str(bad), "—", "—", "0", "MISS"])
                misses.append("Relay behind nginx errors")
        for store in stores:
            r = relay[store]
            table.append([f"Relay ({store}) upload latency p50 / p99 at peak, ms", f"{r['uploads']['p50_us'] / 1000:.1f} / {r['uploads']['p99_us'] / 1000:.1f}",
                          "—", "—", "—", "info"])
            table.append([f"Relay ({store}) fetch latency p50 / p99 at peak, ms", f"{r['fetches']['p50_us'] / 1000:.1f} / {r['fetches']['p99_us'] / 1000:.1f}",
                          "—", "—", "—", "info"])
            table.append([f"Relay ({store}) peak RSS, MiB", fmt(r["peak_rss_kib"] / 1024), "—", "—", "—", "info"])
            bad = r["uploads"]["non2xx"] + r["uploads"]["socket_errors"]
            if bad:
                table.append([f"Relay ({store}) non-2xx or socket errors during the upload run", str(bad), "—", "—", "0", "MISS"])
                misses.append(f"Relay ({store}) errors")
        if "soak" in relay:
            samples = [kib for _, kib in relay["soak"]["rss_kib"]]
            if len(samples) >= 3:
                growth = (samples[-1] - samples[1]) / samples[1]
                ok = growth < 0.10
                table.append([f"Relay RSS over a {relay['soak']['seconds']} s soak, MiB (after warm-up → end)",
                              f"{samples[1] / 1024:.0f} → {samples[-1] / 1024:.0f}", "—", f"{growth * 100:+.1f} %", "flat (< 10 %)",
                              "pass" if ok else "MISS"])
                if not ok:
                    misses.append("Relay soak")

    live_path = os.path.join(os.path.dirname(relay_path), "live.json")
    live = json.load(open(live_path)) if os.path.exists(live_path) else None
    if live:  # scripts/bench-live.py: the live channel (PROTOCOL.md §8)
        lat = live["latency"]
        ok = lat["p99_ms"] < 50 and lat["processed"] == lat["uploads"]
        table.append([f"Live: upload 204 → subscriber's processed update at {lat['uploads_per_second']}/s, p50 / p99, ms",
                      f"{lat['p50_ms']:.1f} / {lat['p99_ms']:.1f}", "—", "—", "p99 < 50 ms", "pass" if ok else "MISS"])
        if not ok:
            misses.append("Live latency")
        idle = live["idle"]
        table.append([f"Live: {idle['subscribers']:,} idle subscribers held, relay RSS per subscriber, KiB",
                      f"{idle['rss_per_subscriber_kib']:.1f}", "—", "—", "—", "info"])
        table.append([f"Live: fan-out of one upload to {idle['fanout_subscribers']:,} subscribers, notices/s",
                      fmt(idle["notices_per_second"]), "—", "—", "—", "info"])

    attach_path = os.path.join(os.path.dirname(relay_path), "attachments.json")
    attach = json.load(open(attach_path)) if os.path.exists(attach_path) else None
    if attach:  # scripts/bench-attachments.py: a file through the CLI and an LMDB relay (PROTOCOL.md §12)
        for side, what, floor in (("upload", "coords send --file", "C AEAD + curl"),
                                  ("download", "coords save", "curl + C AEAD + write and fsync")):
            row = attach[side]
            ok = row["ratio"] >= 0.8
            table.append([f"Attachment {attach['size_mib']} MiB, {what}, MiB/s (baseline: {floor}, same bytes; "
                          f"medians of {attach.get('rounds', 1)} rounds)",
                          f"{row['mib_per_s']:.1f}", f"{attach['size_mib'] / row['floor_seconds']:.1f}", f"{row['ratio']:.2f}×", "≥ 0.8",
                          "pass" if ok else "MISS"])
            if not ok:
                misses.append(f"Attachment {side}")
            table.append([f"Attachment {attach['size_mib']} MiB, {what}, client peak RSS, MiB", f"{row['client_peak_rss_mib']:.0f}", "—",
                          "—", "< 128", "pass" if row["client_peak_rss_mib"] < 128 else "MISS"])
        table.append([f"Attachment {attach['size_mib']} MiB, relay peak RSS, MiB", f"{attach['relay_peak_rss_mib']:.0f}", "—", "—",
                      "< 256", "pass" if attach["relay_peak_rss_mib"] < 256 else "MISS"])

    header = ["Metric", "Ours", "Baseline", "Ratio", "Target", "Result"]
    widths = [max(len(str(r[i])) for r in [header] + table) for i in range(6)]
    text = "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header] + table)
    try:
        print(text)
    except BrokenPipeError:
        pass

    # When the measuring ended (the newest results file), not when this report was written.
    results = os.path.dirname(os.path.abspath(jmh))
    finished = max(os.path.getmtime(os.path.join(results, name)) for name in os.listdir(results) if name.endswith(".json"))
    date = datetime.datetime.fromtimestamp(finished, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md = [
        "# Performance",
        "",
        f"Measured {date} by `make {'bench-quick' if quick else 'bench'}` on: {machine()}.",
        "" if not quick else "\n**Quick run** (short samples): numbers are indicative; `make bench` gives the reference.",
        "Each `[ours]` row runs through CoordsCore's API; its baseline performs the same libsodium or LMDB",
        "calls directly from C (`Benchmarks/Sources/CBaseline`), in the same process and run. Ratio = ours ÷ baseline in",
        "operations per second (1.00× = no overhead); rates come from the median wall-clock time of each sample.",
        "Where a ratio shows ±, it is paired: short batches of ours and the baseline interleaved (A B B A …) in one",
        "process, the median of the per-pair ratios ± its spread: the largest of half their interquartile range, half",
        "the 95 % confidence interval of the median, and their drift (how far the first half of the pairs' median lies",
        "from the second half's); a busy machine slows both",
        f"sides of a pair alike. Within ±{int(MAX_SPREAD * 50)} % the ratio decides; a wider spread is an interval, ratio ×",
        "(1 ± spread), that passes or misses only when it lies wholly on one side of the target, and says `noisy` when the",
        "target lies inside it.",
        "The geocoding rows compare the k-d index with a scan that scores every place (the reference core's",
        "algorithm) on the same data: there the ratio is the speed-up.",
        "The relay rows come from `wrk` against the release `coords-relay` on loopback (`scripts/bench-relay.py`),",
        "the LMDB store fsyncing every commit, PostgreSQL (Debian's, defaults: fsync and synchronous_commit on) on the same",
        "machine, nginx with deploy/nginx/coords-relay.conf, rate limits off. The store-against-store relay ratios are paired:",
        "the three relays run side by side, each holding the same 20,000 keys, and rounds of 3 s runs alternate between",
        "them (memory, LMDB, PostgreSQL, then backwards); the ratio is the median of the per-round ratios, the rates",
        "the medians of the rounds, fetches ask for stored ids. The live rows come from `scripts/bench-live.py`",
        "(WebSocket clients and the coordscore module against the release relay in memory, on loopback).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    md += ["| " + " | ".join(str(c) for c in r) + " |" for r in table]
    gate_path = os.path.join(os.path.dirname(relay_path), "instructions.json")
    if os.path.exists(gate_path):  # scripts/bench-check.py: instruction counts, also run by make test
        gate = json.load(open(gate_path))
        md += ["", "## Instruction counts (the gate in `make test`)", "",
               "Instructions per operation under callgrind, ours and the same libsodium/LMDB calls in C, counted",
               "around the measured loop only (`Benchmarks/Sources/InstructionGate`, `scripts/bench-check.py`). They",
               "repeat exactly on the same binary, so a busy machine cannot move them; `make test` fails when a",
               "ratio exceeds its budget.", "",
               "| Operation | Ours | C | Ratio | Budget | Result |", "|---|---|---|---|---|---|"]
        md += [f"| {r['operation']} | {r['ours']:,.0f} | {r['c']:,.0f} | {r['ratio']:.3f}× | ≤ {r['budget']:.2f}× | "
               f"{'pass' if r['pass'] else 'OVER'} |" for r in gate]
    md += migration_section(os.path.join(os.path.dirname(relay_path), "migration.json"))
    md += growth_section(os.path.dirname(jmh), relay or {})
    md += agreement_section(os.path.dirname(jmh))
    md += ["", "## Misses", ""]
    if noisy_rows:
        md.append("Too noisy to judge in this run (rerun on a quieter machine): " + ", ".join(noisy_rows) + ".")
        md.append("")
    if misses:
        for miss in misses:
            note = next((v for k, v in notes.items() if miss.startswith(k)), None)
            md.append(f"- **{miss}**: {note or 'not yet explained; investigate before relying on this number.'}")
    else:
        md.append("Every target is met in this run.")
    extra = notes.get("_discussion")
    if extra:
        md += ["", "## Notes", "", extra]
    with open(out, "w") as f:
        f.write("\n".join(md) + "\n")
    try:
        print(f"\nwrote {out}")
    except BrokenPipeError:
        pass


def migration_section(path):
    """The migration of a 1.0.0 store into the sealed store (scripts/bench-migration.sh)."""
    if not os.path.exists(path):
        return []
    m = json.load(open(path))
    return ["", "## Migrating a 1.0.0 store (sealed at rest)", "",
            "`scripts/bench-migration.sh` writes a 1.0.0 data directory (plaintext store, schema 3: 50 friends and",
            "the messages below) in one process and opens it with `CoordsApp` in another, which seals it into a new",
            "file, durably, and wipes the old one (docs/STORE.md). Peak RSS is the migrating process's own (VmHWM).", "",
            "| Messages | Time | Peak RSS | Store before | Store after |", "|---|---|---|---|---|",
            f"| {m['messages']:,} | {m['migrate_ms'] / 1000:.2f} s | {m['peak_rss_kib'] / 1024:.1f} MiB | "
            f"{m['plain_kib'] / 1024:.1f} MiB | {m['sealed_kib'] / 1024:.1f} MiB |"]


if __name__ == "__main__":
    main()
