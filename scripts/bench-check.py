#!/usr/bin/env python3
"""The instruction-count gate (`make bench-check`, part of `make test`).

Runs every operation of Benchmarks/Sources/InstructionGate twice under
`valgrind --tool=callgrind` — through CoordsCore and through the same libsodium/LMDB calls in C —
and counts the instructions of the measured loop only (callgrind client requests around it; the
dump's `totals`, which sums every thread — the manager paths run on libdispatch workers).
Instruction counts repeat exactly on the same binary, so unlike wall-clock ratios they cannot be
moved by a busy machine: ours ÷ C above an operation's budget fails the run.

Usage: bench-check.py [--json OUT] [NAME ...]   (env COORDS_GATE_BIN: the gate binary)
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GATE = os.environ.get("COORDS_GATE_BIN", os.path.join(ROOT, "Benchmarks", ".build", "release", "InstructionGate"))


def fail(message):
    print(f"bench-check: error: {message}", file=sys.stderr)
    sys.exit(2)


def operations():
    try:
        listed = subprocess.run([GATE, "list"], capture_output=True, text=True, check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        fail(f"cannot run {GATE} ({error}); build it with make bench-check")
    found = []
    for line in listed.splitlines():
        name, iterations, budget = line.split()
        found.append((name, int(iterations), float(budget)))
    return found


def stripped_copy(directory):
    """The gate without its DWARF (Debian's valgrind 3.19 gives up on the Swift toolchain's)."""
    copy = os.path.join(directory, "InstructionGate")
    subprocess.run(["cp", GATE, copy], check=True)
    subprocess.run(["strip", "--strip-debug", copy], check=True)
    return copy


def instructions(binary, name, side, iterations):
    """Instructions per iteration of `name` on `side`, from the dump the gate's marker wrote."""
    with tempfile.TemporaryDirectory() as directory:
        out = os.path.join(directory, "callgrind.out")
        result = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=no", "--compress-strings=no",
             binary, "run", name, side],
            capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            fail(f"{name} ({side}) exited with {result.returncode}:\n{result.stderr[-3000:]}")
        for path in sorted(glob.glob(out + "*")):
            with open(path, errors="replace") as f:
                text = f.read()
            if "Client Request: gate" not in text:
                continue
            match = re.search(r"^totals: (\d+)", text, re.M)
            if match:
                return int(match.group(1)) / iterations
        fail(f"{name} ({side}): no callgrind dump from the gate's marker (is callgrind.h the valgrind one?)")


def main():
    args = sys.argv[1:]
    out = None
    if "--json" in args:
        index = args.index("--json")
        out = args[index + 1]
        del args[index:index + 2]
    started = time.time()
    chosen = [op for op in operations() if not args or op[0] in args]
    rows, failures = [], []
    scratch = tempfile.TemporaryDirectory()
    binary = stripped_copy(scratch.name)
    print(f"{'operation':<28} {'ours/op':>13} {'C/op':>13} {'ratio':>7} {'budget':>7}  result")
    for name, iterations, budget in chosen:
        ours = instructions(binary, name, "ours", iterations)
        c = instructions(binary, name, "c", iterations)
        ratio = ours / c if c else float("inf")
        passed = ratio <= budget
        rows.append({"operation": name, "ours": ours, "c": c, "ratio": ratio, "budget": budget, "pass": passed})
        print(f"{name:<28} {ours:>13,.0f} {c:>13,.0f} {ratio:>6.3f}× {budget:>6.2f}×  {'pass' if passed else 'OVER BUDGET'}", flush=True)
        if not passed:
            failures.append(name)
    if out:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1)
    print(f"bench-check: {len(rows) - len(failures)} of {len(rows)} within budget ({time.time() - started:.0f} s)")
    if failures:
        print("bench-check: over budget: " + ", ".join(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
