#!/usr/bin/env python3
"""Runs `make test`'s steps, times each, and keeps the run inside its budget (ci/budget).

    scripts/ci.py [OPTIONS] STEP [STEP ...]   each STEP is a make target; A+B+C runs A, B and C side by side
    scripts/ci.py --table                     the table of the last run (.build/ci-times.json)

    --budget FILE   the budget (default ci/budget)
    --times FILE    where the JSON goes (default .build/ci-times.json); logs go beside it, in ci-logs/
    -C DIR          run make in DIR (default the repository)

A step is `make --no-print-directory STEP`, told with `-o` that every step already passed is up to
date (so `test-e2e` after a `tools` step does not run `swift build` again as a prerequisite, nor
wait on SwiftPM's lock of the build folder for it). Steps run in the order given; the targets of one
`A+B` group run at the same time (use it only for steps that are independent and mostly wait on
sockets or use one core), each into .build/ci-logs/STEP.log, printed whole when it ends so the CI
output stays readable. The first failure ends the run (the rest of its group is waited for).

At the end — also after a failure — it prints one line per step (wall time, budget, result) and the
total, and writes them as JSON to .build/ci-times.json. A step or the total over its budget in
ci/budget is a warning that names it, not a failure: machines of the same kind differ by up to
1.7x in speed, and a red CI lands nothing. Only a total past the budget's `stop` (75 minutes:
certain death at CI's 90-minute wall) ends the run early, with the table.
"""
import datetime
import json
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUDGET_FILE = os.path.join(ROOT, "ci", "budget")
TIMES_FILE = os.path.join(ROOT, ".build", "ci-times.json")


def read_budget(path):
    """{step: seconds} and the `total` and `stop` limits, from lines `NAME SECONDS` (# comments)."""
    budget = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                fields = line.split()
                if len(fields) != 2 or not fields[1].isdigit():
                    sys.exit(f"ci: {path}:{number}: expected 'STEP SECONDS', found {line!r}")
                budget[fields[0]] = int(fields[1])
    except OSError as error:
        sys.exit(f"ci: cannot read the budget {path}: {error}")
    for required in ("total", "stop"):
        if required not in budget:
            sys.exit(f"ci: {path} states no '{required}' line")
    return budget


def clock(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def table(record):
    """The per-step table as text lines (also what `--table` prints)."""
    lines = [f"{'step':<24} {'wall':>7} {'budget':>7}  {'group':>5}  result", "-" * 64]
    for step in record["steps"]:
        wall = clock(step["seconds"]) if step["seconds"] is not None else "-"
        budget = clock(step["budget"]) if step["budget"] is not None else "-"
        lines.append(f"{step['name']:<24} {wall:>7} {budget:>7}  {step.get('group', '-'):>5}  {step['result']}")
    lines.append("-" * 64)
    lines.append(f"{'total':<24} {clock(record['seconds']):>7} {clock(record['budget']):>7}  {'':>5}  {record['result']}")
    lines.append("(the steps of one group ran side by side)")
    return lines


def warnings(record):
    found = []
    for step in record["steps"]:
        if step["seconds"] is not None and step["budget"] is not None and step["seconds"] > step["budget"]:
            found.append(f"ci: warning: step {step['name']} took {clock(step['seconds'])}, over its budget of "
                         f"{clock(step['budget'])} (ci/budget)")
    if record["seconds"] > record["budget"]:
        found.append(f"ci: warning: make test took {clock(record['seconds'])}, over its total budget of "
                     f"{clock(record['budget'])} (ci/budget): find the step that grew in the table above")
    return found


class Run:
    def __init__(self, groups, budget, directory, times):
        self.budget = budget
        self.directory = directory
        self.times = times
        self.logs = os.path.join(os.path.dirname(times), "ci-logs")
        self.made = []
        self.started = time.monotonic()
        self.record = {
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cpus": os.cpu_count(), "seconds": 0.0, "budget": budget["total"], "stop": budget["stop"],
            "result": "running", "steps": [],
        }
        for number, group in enumerate(groups, 1):
            for name in group:
                self.record["steps"].append({
                    "name": name, "seconds": None, "budget": budget.get(name), "result": "not run",
                    "group": number, "with": [other for other in group if other != name],
                })
        for name in {name for group in groups for name in group}:
            if name not in budget:
                print(f"ci: warning: step {name} has no budget in ci/budget", file=sys.stderr)

    def step(self, name):
        return next(step for step in self.record["steps"] if step["name"] == name)

    def elapsed(self):
        return time.monotonic() - self.started

    def run_group(self, group):
        """Runs the steps of one group; False when one failed or the run was stopped."""
        alone = len(group) == 1
        os.makedirs(self.logs, exist_ok=True)
        running = {}
        if not alone:
            print(f"ci: {' + '.join(group)} side by side (their output follows as each ends; logs in {self.logs})",
                  flush=True)
        for name in group:
            log = None if alone else open(os.path.join(self.logs, f"{name}.log"), "w", encoding="utf-8")
            made = [flag for done in self.made if done != name for flag in ("-o", done)]
            process = subprocess.Popen(["make", "--no-print-directory", *made, name], cwd=self.directory, stdout=log or None,
                                       stderr=subprocess.STDOUT if log else None, start_new_session=True)
            running[name] = (process, time.monotonic(), log)
            self.step(name)["result"] = "running"
        ok = True
        while running:
            if self.elapsed() > self.budget["stop"]:
                for name, (process, began, log) in running.items():
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait()
                    self.finish(name, began, log, "STOPPED (total past the stop limit)")
                print(f"ci: error: make test passed {clock(self.budget['stop'])}, its stop limit (ci/budget): "
                      "stopped before CI's wall ends it with nothing to show", file=sys.stderr, flush=True)
                self.record["result"] = "stopped"
                return False
            for name, (process, began, log) in list(running.items()):
                if process.poll() is None:
                    continue
                del running[name]
                result = "ok" if process.returncode == 0 else f"FAILED (exit {process.returncode})"
                self.finish(name, began, log, result)
                ok = ok and process.returncode == 0
                if process.returncode == 0:
                    self.made.append(name)
            time.sleep(0.2)
        return ok

    def finish(self, name, began, log, result):
        step = self.step(name)
        step["seconds"] = round(time.monotonic() - began, 1)
        step["result"] = result
        if step["budget"] is not None and step["seconds"] > step["budget"] and result == "ok":
            step["result"] = "ok, over budget"
        if log is not None:
            log.close()
            print(f"ci: ---- {name}: {result} in {clock(step['seconds'])} ----", flush=True)
            with open(log.name, encoding="utf-8", errors="replace") as handle:
                sys.stdout.write(handle.read())
            print(f"ci: ---- end of {name} ----", flush=True)
        else:
            print(f"ci: {name}: {result} in {clock(step['seconds'])}", flush=True)

    def close(self, result):
        self.record["seconds"] = round(self.elapsed(), 1)
        if self.record["result"] == "running":
            self.record["result"] = result
        os.makedirs(os.path.dirname(self.times), exist_ok=True)
        with open(self.times, "w", encoding="utf-8") as handle:
            json.dump(self.record, handle, indent=2)
            handle.write("\n")
        print(f"\nci: wall time of each step ({os.path.relpath(self.times)}; budgets in ci/budget)")
        print("\n".join(table(self.record)))
        for line in warnings(self.record):
            print(line, file=sys.stderr)
        sys.stdout.flush()


def main(arguments):
    budget_file, times, directory, show, steps = BUDGET_FILE, TIMES_FILE, ROOT, False, []
    while arguments:
        argument = arguments.pop(0)
        if argument in ("--budget", "--times", "-C") and arguments:
            value = arguments.pop(0)
            if argument == "--budget":
                budget_file = value
            elif argument == "--times":
                times = os.path.abspath(value)
            else:
                directory = value
        elif argument == "--table":
            show = True
        elif argument.startswith("-") or not argument.strip("+") or "++" in argument:
            sys.exit(__doc__)
        else:
            steps.append(argument)
    if show:
        try:
            with open(times, encoding="utf-8") as handle:
                record = json.load(handle)
        except (OSError, ValueError) as error:
            sys.exit(f"ci: no table yet ({error}): run make test")
        print("\n".join(table(record)))
        for line in warnings(record):
            print(line)
        return 0
    if not steps:
        sys.exit(__doc__)
    groups = [step.strip("+").split("+") for step in steps]
    run = Run(groups, read_budget(budget_file), directory, times)
    result = "ok"
    try:
        for group in groups:
            if not run.run_group(group):
                result = "FAILED"
                break
    except KeyboardInterrupt:
        result = "interrupted"
    run.close(result)
    return 0 if result == "ok" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
