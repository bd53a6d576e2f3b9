#!/usr/bin/env python3
"""Do two benchmark runs agree? Compares the ratio rows of two result directories of the Swift
suite (package-benchmark's JMH file and the paired-*.json side results, as `make bench` leaves
them in Benchmarks/.build/results) and the relay's paired store ratios (relay.json) and says, per row, whether the two ratios agree within the
stated spread: the larger of the two runs' spreads (bench-report.py `spread`: the largest of half
the interquartile range, half the 95 % confidence interval of the median, and the drift within the
run) plus 2 % (paired rows), or 10 % for rows without pairs.

Usage: bench-compare.py <results dir A> <results dir B>   (exit 1 when a row disagrees)
"""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
report = __import__("bench-report")


def ratios(directory):
    """label -> (ratio, half spread as a fraction or None)."""
    rows = report.load_rows(os.path.join(directory, "Current_run.jmh.json"))
    paired = {}
    for path in glob.glob(os.path.join(directory, "paired-*.json")):
        with open(path) as f:
            entry = json.load(f)
        paired[entry["name"]] = entry
    found = {}
    for label, sides in rows.items():
        if "ours" not in sides or "raw" not in sides:
            continue
        if label in paired:
            p = paired[label]
            found[label] = (p["median"], report.spread(p))
        else:
            found[label] = (sides["ours"]["ops_per_s"] / sides["raw"]["ops_per_s"], None)
    # The relay's store-against-store ratios, paired by bench-relay.py (relay.json "paired").
    relay_path = os.path.join(directory, "relay.json")
    if os.path.exists(relay_path):
        with open(relay_path) as f:
            pairs = json.load(f).get("paired", {}).get("ratios", {})
        for key, p in pairs.items():
            found[RELAY_LABELS.get(key, key)] = (p["median"], report.spread(p))
    return found


# bench-relay.py's ratio keys and the rows bench-report.py shows them in.
RELAY_LABELS = {
    "lmdb_vs_memory_uploads": "Relay uploads/s, LMDB (durable) vs memory",
    "lmdb_vs_memory_fetches": "Relay fetches of 50 ids/s, LMDB vs memory",
    "postgres_vs_lmdb_uploads": "Relay uploads/s, PostgreSQL (durable) vs LMDB",
    "postgres_vs_lmdb_fetches": "Relay fetches of 50 ids/s, PostgreSQL vs LMDB",
}


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    a, b = ratios(sys.argv[1]), ratios(sys.argv[2])
    disagree = []
    print(f"{'row':<52} {'A':>7} {'B':>7} {'diff':>7} {'allowed':>8}  result")
    for label in sorted(set(a) & set(b), key=report.order):
        (ra, sa), (rb, sb) = a[label], b[label]
        diff = abs(ra - rb) / max(ra, rb)
        allowed = (max(sa or 0, sb or 0) + 0.02) if sa is not None and sb is not None else 0.10
        ok = diff <= allowed
        if not ok:
            disagree.append(label)
        print(f"{label[:52]:<52} {ra:>6.2f}× {rb:>6.2f}× {100 * diff:>6.1f}% {100 * allowed:>7.1f}%  {'agree' if ok else 'DISAGREE'}")
    only = sorted(set(a) ^ set(b))
    if only:
        print("in one run only: " + ", ".join(only))
    print(f"bench-compare: {len(set(a) & set(b)) - len(disagree)} of {len(set(a) & set(b))} rows agree")
    sys.exit(1 if disagree else 0)


if __name__ == "__main__":
    main()
