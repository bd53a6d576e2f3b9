"""A pytest plugin: one of N interleaved parts of a suite, so `make test` runs a suite that mostly
waits on sockets (tests/e2e, tests/hostile-relay) as two processes side by side.

    COORDS_PYTEST_SHARD=K/N python3 -m pytest -p pytest_shard …   (scripts/ on PYTHONPATH)

keeps tests K, K+N, K+2N, … of the collected order (K from 1) and deselects the others, so the N
parts together run every test exactly once. Without the variable, nothing is deselected.
"""
import os

import pytest


def shard():
    """(K, N) from COORDS_PYTEST_SHARD, or None when it is unset; a malformed value is an error."""
    spec = os.environ.get("COORDS_PYTEST_SHARD", "").strip()
    if not spec:
        return None
    part, _, count = spec.partition("/")
    if not (part.isdigit() and count.isdigit() and 1 <= int(part) <= int(count) <= 64):
        raise pytest.UsageError(f"COORDS_PYTEST_SHARD={spec!r}: expected K/N with 1 <= K <= N <= 64")
    return int(part), int(count)


def pytest_collection_modifyitems(config, items):
    chosen = shard()
    if chosen is None:
        return
    part, count = chosen
    kept = [item for index, item in enumerate(items) if index % count == part - 1]
    dropped = [item for index, item in enumerate(items) if index % count != part - 1]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def pytest_report_header(config):
    chosen = shard()
    return None if chosen is None else f"coords shard: part {chosen[0]} of {chosen[1]} (every {chosen[1]}th test)"
