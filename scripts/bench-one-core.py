#!/usr/bin/env python3
"""The manager paths on one core, paired against their C floors (docs/PERFORMANCE.md, "One core").

A phone runs the core on whatever core the OS gives the app, often one. This runs each manager
path of the instruction gate's binary (`InstructionGate run NAME ours|c`, built by
`make bench-check`) pinned to CPU 0 (`taskset -c 0`), our side and the C floor alternately, ROUNDS
times each, and prints the floor's time over ours (≥ 0.8× is the target: at least 80 % of the
floor's speed). Wall clock, so it belongs to `make bench`, never to `make test`.

Usage: scripts/bench-one-core.py [ROUNDS]   (COORDS_GATE_BIN: the gate binary)
"""
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GATE = os.environ.get("COORDS_GATE_BIN", os.path.join(ROOT, ".build-static", "release", "InstructionGate"))
# Each path and its iterations per run (a few hundred milliseconds each).
PATHS = [
    ("prepare-upload-8", 400), ("prepare-upload-64", 60), ("process-fetch-50", 20),
    ("prepare-upload-8-forward-secret", 400), ("session-message-1k", 2000),
    ("envelope-seal-1k", 600), ("envelope-open-1k", 600),
    ("group-send-8", 1000), ("group-fetch-50", 15),
]
TARGET = 0.8


def run(name, side, iterations):
    """Microseconds per iteration of one run, pinned to CPU 0."""
    result = subprocess.run(
        ["taskset", "-c", "0", GATE, "run", name, side], capture_output=True, text=True, timeout=600,
        env=dict(os.environ, COORDS_GATE_ITERATIONS=str(iterations)))
    if result.returncode != 0:
        sys.exit(f"bench-one-core: {name} {side} failed: {result.stderr.strip()[-400:]}")
    match = re.search(rf"{re.escape(name)} {side}: (\d+) µs per iteration", result.stderr)
    if not match:
        sys.exit(f"bench-one-core: {name} {side} printed no time: {result.stderr.strip()[-400:]}")
    return int(match.group(1))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    if not os.path.exists(GATE):
        sys.exit(f"bench-one-core: {GATE} is missing: run `make bench-check` first")
    print(f"{'Path (one core, taskset -c 0)':34} {'ours µs':>9} {'floor µs':>9} {'floor/ours':>11} {'range':>13}  result")
    misses = 0
    for name, iterations in PATHS:
        ours, floor = [], []
        for _ in range(rounds):  # alternating, so a slow moment of the machine hits both sides
            ours.append(run(name, "ours", iterations))
            floor.append(run(name, "c", iterations))
        ratios = sorted(f / o for f, o in zip(floor, ours) if o > 0)
        ratio = statistics.median(ratios)
        result = "pass" if ratio >= TARGET else "MISS"
        misses += result == "MISS"
        print(f"{name:34} {statistics.median(ours):9.0f} {statistics.median(floor):9.0f} {ratio:10.2f}× "
              f"{ratios[0]:5.2f}–{ratios[-1]:.2f}×  {result}")
    print(f"bench-one-core: {len(PATHS) - misses} of {len(PATHS)} at ≥ {TARGET}× of their floor on one core ({rounds} pairs each)")


if __name__ == "__main__":
    main()
