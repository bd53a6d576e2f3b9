"""The benchmark report's verdicts (scripts/bench-report.py): how a paired ratio and its stated
spread are judged against a target. No library needed: the report is plain Python."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("bench_report", os.path.join(ROOT, "scripts", "bench-report.py"))
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)


def test_a_tight_spread_is_judged_by_the_ratio():
    assert report.verdict(0.91, 0.04, 0.9) == "pass"
    assert report.verdict(0.89, 0.04, 0.9) == "MISS"  # even though 0.89 × 1.04 reaches 0.9


def test_a_wide_spread_is_an_interval():
    assert report.verdict(0.97, 0.06, 0.9) == "pass"  # 0.912 … 1.028: wholly above
    assert report.verdict(0.41, 0.09, 0.5) == "MISS"  # 0.373 … 0.447: wholly below, not "noisy"
    assert report.verdict(0.47, 0.106, 0.5) == "noisy"  # 0.420 … 0.520: the target is inside
    assert report.verdict(0.98, 0.13, 0.9) == "noisy"


def test_the_spread_of_a_paired_ratio():
    # Half the interquartile range when that is the widest of the three measures.
    measured = {"median": 1.0, "p25": 0.9, "p75": 1.1}
    assert abs(report.spread(measured) - 0.1) < 1e-9
    ratio, shown, s = report.paired_cell(measured)
    assert (ratio, shown) == (1.0, "1.00× ±10 %") and abs(s - 0.1) < 1e-9
    assert report.spread({"median": 0, "p25": 0, "p75": 0}) == float("inf")
