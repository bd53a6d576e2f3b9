"""scripts/ci.py, the runner of `make test`: times, the table, the JSON, the budget's warnings, the
stop limit, failures and steps side by side — against a throwaway Makefile whose steps sleep,
fail or hang."""
import json
import re
import os
import subprocess
import sys
import time

import pytest

RUNNER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "scripts", "ci.py")

MAKEFILE = """
quick:
\t@echo quick-output
slow:
\t@sleep 1.5; echo slow-output
fail:
\t@echo about-to-fail; exit 3
hang:
\t@sleep 30; touch hung-to-the-end
side-a:
\t@sleep 1; echo side-a-output
side-b:
\t@sleep 1; echo side-b-output
never:
\t@touch never-ran
build:
\t@echo built >> build-count
uses-build: build
\t@echo used
"""


@pytest.fixture()
def work(tmp_path):
    (tmp_path / "Makefile").write_text(MAKEFILE)
    return tmp_path


def run(work, budget, *steps):
    (work / "budget").write_text(budget)
    started = time.monotonic()
    result = subprocess.run([sys.executable, RUNNER, "--budget", str(work / "budget"), "--times", str(work / "out" / "times.json"),
                             "-C", str(work), *steps], capture_output=True, text=True, timeout=60)
    return result, time.monotonic() - started


def times(work):
    return json.loads((work / "out" / "times.json").read_text())


def test_every_step_is_timed_printed_and_written(work):
    result, _ = run(work, "quick 10\nslow 10\nside-a 10\nside-b 10\ntotal 60\nstop 120\n", "quick", "slow", "side-a+side-b")
    assert result.returncode == 0, result.stderr
    record = times(work)
    assert [step["name"] for step in record["steps"]] == ["quick", "slow", "side-a", "side-b"]
    assert all(step["result"] == "ok" for step in record["steps"])
    slow = record["steps"][1]
    assert 1.4 <= slow["seconds"] < 10 and slow["budget"] == 10
    assert record["steps"][2]["with"] == ["side-b"] and record["steps"][3]["with"] == ["side-a"]
    assert record["result"] == "ok" and record["budget"] == 60 and record["cpus"] >= 1
    # side by side: the two one-second steps together take about one second, not two
    assert record["seconds"] < 1.5 + 1.9 + 2.5
    # the steps' own output, the side-by-side logs in full, then the table with the total
    assert "quick-output" in result.stdout and "side-a-output" in result.stdout and "side-b-output" in result.stdout
    assert (work / "out" / "ci-logs" / "side-a.log").read_text().strip() == "side-a-output"
    table = result.stdout[result.stdout.index("wall time of each step"):]
    for name in ("quick", "slow", "side-a", "side-b", "total"):
        assert f"\n{name} " in table
    assert [step["group"] for step in record["steps"]] == [1, 2, 3, 3]
    assert re.search(r"\nside-a +0:01 +0:10 +3  ok\n", table), table
    assert "warning" not in result.stderr


def test_a_step_over_its_budget_warns_by_name_and_the_run_still_passes(work):
    result, _ = run(work, "quick 10\nslow 1\ntotal 1\nstop 120\n", "quick", "slow")
    assert result.returncode == 0
    assert "ci: warning: step slow took 0:02, over its budget of 0:01" in result.stderr
    assert "over its total budget of 0:01" in result.stderr
    assert "ci: warning: step quick" not in result.stderr
    assert times(work)["steps"][1]["result"] == "ok, over budget"
    # the table is kept: --table prints it again with the same warnings
    shown = subprocess.run([sys.executable, RUNNER, "--table", "--times", str(work / "out" / "times.json")],
                           capture_output=True, text=True, timeout=30)
    assert shown.returncode == 0 and "step slow took" in shown.stdout and "\nslow " in shown.stdout


def test_a_step_without_a_budget_is_named(work):
    result, _ = run(work, "total 60\nstop 120\n", "quick")
    assert result.returncode == 0 and "step quick has no budget" in result.stderr


def test_a_failure_ends_the_run_with_the_table_after_its_group(work):
    result, _ = run(work, "quick 10\nfail 10\nside-a 10\nnever 10\ntotal 60\nstop 120\n", "quick", "fail+side-a", "never")
    assert result.returncode == 1
    record = times(work)
    results = {step["name"]: step["result"] for step in record["steps"]}
    assert results == {"quick": "ok", "fail": "FAILED (exit 2)", "side-a": "ok", "never": "not run"}
    assert record["result"] == "FAILED"
    assert not (work / "never-ran").exists()
    assert "about-to-fail" in result.stdout and "\nnever " in result.stdout


def test_a_run_past_the_stop_limit_is_ended_early_with_the_table(work):
    result, elapsed = run(work, "quick 10\nhang 60\nnever 10\ntotal 1\nstop 2\n", "quick", "hang", "never")
    assert result.returncode == 1
    assert elapsed < 15, "the hanging step was not stopped"
    record = times(work)
    assert record["result"] == "stopped"
    assert record["steps"][1]["result"].startswith("STOPPED")
    assert record["steps"][2]["result"] == "not run"
    assert "stop limit" in result.stderr and "\nhang " in result.stdout
    time.sleep(0.5)
    assert not (work / "hung-to-the-end").exists()


def test_a_malformed_budget_is_refused(work):
    result, _ = run(work, "quick ten\n", "quick")
    assert result.returncode != 0 and "expected 'STEP SECONDS'" in result.stderr
    result, _ = run(work, "quick 10\n", "quick")
    assert result.returncode != 0 and "no 'total' line" in result.stderr


def test_a_step_already_passed_is_not_made_again_as_a_prerequisite(work):
    result, _ = run(work, "build 10\nuses-build 10\nquick 10\ntotal 60\nstop 120\n", "build", "uses-build+quick")
    assert result.returncode == 0, result.stderr
    assert (work / "build-count").read_text() == "built\n"
    # alone, the prerequisite is made as usual
    result, _ = run(work, "build 10\nuses-build 10\ntotal 60\nstop 120\n", "uses-build")
    assert result.returncode == 0 and (work / "build-count").read_text() == "built\nbuilt\n"


SHARD_SUITE = """
import pytest

@pytest.mark.parametrize("number", range(7))
def test_number(number):
    print(f"ran {number}")
"""


def shard_run(tmp_path, spec):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(RUNNER), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    if spec is not None:
        env["COORDS_PYTEST_SHARD"] = spec
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "pytest_shard", "-p", "no:cacheprovider", "-v",
                           str(tmp_path / "test_numbers.py")], capture_output=True, text=True, timeout=60, env=env)


def test_the_shards_of_a_suite_run_every_test_exactly_once(tmp_path):
    (tmp_path / "test_numbers.py").write_text(SHARD_SUITE)
    seen = []
    for spec, count in (("1/2", 4), ("2/2", 3)):
        result = shard_run(tmp_path, spec)
        assert result.returncode == 0, result.stdout + result.stderr
        passed = [line for line in result.stdout.splitlines() if "PASSED" in line]
        assert len(passed) == count and f"part {spec[0]} of 2" in result.stdout
        seen += passed
    assert len(set(seen)) == 7
    whole = shard_run(tmp_path, None)
    assert whole.returncode == 0 and whole.stdout.count("PASSED") == 7


@pytest.mark.parametrize("spec", ["0/2", "3/2", "a/b", "1/2/3"])
def test_a_malformed_shard_is_refused(tmp_path, spec):
    (tmp_path / "test_numbers.py").write_text(SHARD_SUITE)
    result = shard_run(tmp_path, spec)
    assert result.returncode != 0 and "COORDS_PYTEST_SHARD" in (result.stdout + result.stderr)
