"""The relay on a PostgreSQL cluster that fails (issue 64; docs/RELAY.md, "High availability"):
two coords-relay nodes reach the primary through HAProxy, which follows Patroni's health checks,
and read fetches from the synchronous standby (tests/ha/cluster.py: three etcd members, three
Patroni-managed PostgreSQL servers in synchronous mode, HAProxy — Debian's packages). Under a
steady load through both relays — signed uploads and deletes (tests/ha/load.py), sealed messages
and one-time prekey claims through the Python package (tests/ha/traffic.py) — each scenario fails
a part of the cluster; then every upload and delete a relay acknowledged must still be there,
every accepted message must arrive, no one-time prekey may have been handed out twice nor an
answered request be accepted again, no request may get anything but 204 or 503 with Retry-After,
and the relays must serve again by themselves. The outage clients saw — the
longest time without an acknowledged write — is measured and written to
.build/ha-results.json (docs/RELAY.md reports it).

Scenarios, in order, on one cluster: a switchover by `patronictl`; kill -9 of the primary's
machine (Patroni and PostgreSQL), which later rejoins as a standby; SIGKILL of etcd's leader.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from cluster import Cluster, wait_for  # noqa: E402
from e2e_support import ROOT, Relay  # noqa: E402
from load import Load  # noqa: E402
from traffic import Messages, Prekeys  # noqa: E402

RESULTS = {}
LOADS = []  # every scenario's load: its acknowledged writes must survive the later scenarios too
# The most a scenario's outage may last: Patroni's TTL (10 s) for a dead primary, plus HAProxy's
# checks and the relays' 5 s database deadline.
LONGEST_OUTAGE = 25.0


@pytest.fixture(scope="module")
def cluster():
    # Not under pytest's tmp_path (0700 root): the postgres user must reach its nodes' directories.
    directory = tempfile.mkdtemp(prefix="coords-ha-")
    os.chmod(directory, 0o755)
    try:
        with Cluster(directory) as running:
            yield running
    finally:
        # The logs of every part (etcd, Patroni, PostgreSQL, HAProxy) stay in .build/ha-logs.
        logs = os.path.join(ROOT, ".build", "ha-logs")
        shutil.rmtree(logs, ignore_errors=True)
        shutil.copytree(directory, logs, ignore=lambda folder, names: [n for n in names if not n.endswith(".log") and
                                                                       not os.path.isdir(os.path.join(folder, n))],
                        ignore_dangling_symlinks=True, dirs_exist_ok=True)
        shutil.rmtree(directory, ignore_errors=True)
    with open(os.path.join(ROOT, ".build", "ha-results.json"), "w") as f:
        json.dump(RESULTS, f, indent=2)
    print("\nfailover outages (s): " + json.dumps(RESULTS))


@pytest.fixture(scope="module")
def relays(cluster, tmp_path_factory):
    directory = tmp_path_factory.mktemp("relays")
    nodes = [Relay(str(directory / f"relay{i}"), log_path=str(directory / f"relay{i}.log"),
                   args=["--postgres", cluster.url, "--postgres-read", cluster.read_url, "--rate", "0", "--key-rate", "0",
                         "--message-rate", "0", "--mailbox-per-address", "0"])
             for i in range(2)]
    for node in nodes:
        node.start()
    yield nodes
    for node in nodes:
        node.stop()


def scenario(name, cluster, relays, fail, settle=4.0):
    """Runs `fail(cluster)` under load — uploads and deletes, messages, one-time prekey claims —
    then checks every acknowledged write and records the outage."""
    work = tempfile.mkdtemp(prefix="coords-ha-hosts-")
    messages = Messages([r.url for r in relays], work)
    prekeys = Prekeys([r.url for r in relays], [r.port for r in relays], work)
    try:
        return _scenario(name, cluster, relays, fail, settle, messages, prekeys)
    finally:
        messages.close()
        shutil.rmtree(work, ignore_errors=True)


def _scenario(name, cluster, relays, fail, settle, messages, prekeys):
    with Load([r.port for r in relays]) as load, messages, prekeys:
        wait_for("the first acknowledged writes", lambda: load.count() >= 50, timeout=30)
        before = load.count()
        started = time.time()
        fail(cluster)
        # Served again by themselves: acknowledged writes through both relays after the failure.
        counts = load.count()
        wait_for("writes acknowledged again", lambda: load.count() >= counts + 50, timeout=60)
        time.sleep(settle)
        ended = time.time()
    longest, failing = load.outage(started, ended)
    RESULTS[name] = {"longest_without_an_acknowledged_write_s": round(longest, 2), "first_error_to_recovery_s": round(failing, 2),
                     "answers": {str(k): v for k, v in sorted(load.statuses(started).items())},
                     "acknowledged_before": before, "acknowledged_after": load.count(), "deletes": len(load.deleted),
                     "read_backs": load.reads, "stale_read_backs": load.stale_reads(started, ended),
                     "stale_read_backs_outside_the_failure": load.stale_reads(0, started)}
    # Before the failure, on a healthy cluster, a fetch through the other relay (from the
    # synchronous standby) sees every acknowledged upload.
    assert load.stale_reads(0, started) == 0, RESULTS[name]
    assert load.refused == [], load.refused[:5]  # only 204, or 503 with Retry-After
    LOADS.append(load)
    for relay in relays:
        for earlier in LOADS:
            missing, resurrected = earlier.lost(relay.port)
            assert (missing, resurrected) == ([], []), f"{name}: {len(missing)} acknowledged uploads lost, {len(resurrected)} deletes undone"
    undelivered = messages.undelivered()
    RESULTS[name].update({"messages_accepted": len(messages.accepted), "message_answers": {str(k): v for k, v in messages.statuses.items()},
                          "one_time_prekeys_handed_out": len(prekeys.handed)})
    assert messages.errors == [], messages.errors[:3]
    assert undelivered == set(), f"{name}: {len(undelivered)} of {len(messages.accepted)} accepted messages never arrived"
    assert prekeys.handed and prekeys.twice() == [], f"{name}: one-time prekeys handed out twice: {prekeys.twice()[:3]}"
    assert prekeys.replays_accepted() == 0, f"{name}: a claim request was accepted twice"
    assert longest < LONGEST_OUTAGE, RESULTS[name]
    return load


def test_a_switchover_loses_nothing(cluster, relays):
    old = cluster.leader()

    def switchover(c):
        c.patronictl("switchover", "--force")
        wait_for("a new leader", lambda: c.leader() not in (None, old), timeout=60)
    scenario("switchover", cluster, relays, switchover)


def test_killing_the_primary_fails_over_to_the_synchronous_standby_and_loses_nothing(cluster, relays):
    standby = wait_for("a synchronous standby", cluster.sync_standby, timeout=60)
    old = cluster.leader()
    assert old and standby is not old

    def kill(c):
        old.kill()
        new = wait_for("a new leader", lambda: (lambda leader: leader if leader not in (None, old) else None)(c.leader()), timeout=60)
        assert new is standby  # synchronous mode promotes only the synchronous standby
    scenario("kill -9 primary", cluster, relays, kill)
    # The dead machine comes back as a standby of the new primary (pg_rewind), and a
    # synchronous standby is there again before the next scenario.
    old.start()
    wait_for("the old primary to rejoin as a standby", lambda: old.status().get("role") == "replica" and old.status().get("state") == "running",
             timeout=120)
    wait_for("a synchronous standby", cluster.sync_standby, timeout=60)


def test_losing_the_etcd_leader_costs_nothing(cluster, relays):
    stopped = []

    def stop_leader(c):
        leader = wait_for("etcd's leader named by etcdctl", c.etcd_leader, timeout=30)
        leader.stop(signal.SIGKILL)
        stopped.append(leader)
        time.sleep(5)  # a new etcd leader is elected; Patroni keeps its lock through the others
        wait_for("a Patroni leader after etcd's re-election", c.leader, timeout=30)
    try:
        scenario("etcd leader killed", cluster, relays, stop_leader)
    finally:
        for member in stopped:
            member.start()


def test_a_primary_cut_off_for_ten_seconds_loses_nothing_and_no_two_primaries_take_writes(cluster, relays):
    """The primary's link down for 10 s (its namespace reaches nothing): it cannot renew its
    leader key, so it stops being primary, and in synchronous mode no commit on it is
    acknowledged while its standby is out of reach; the others elect a new primary once the key
    expires. Link up again: exactly one primary, every acknowledged write there."""
    old = cluster.leader()
    outcome = {}

    def cut(c):
        old.isolate(True)
        cut_at = time.time()
        try:
            # Cut off, it must stop taking writes by itself before anyone else may be promoted
            # (Patroni demotes a leader that cannot reach etcd within retry_timeout).
            while time.time() < cut_at + 10:
                if "read-only after" not in outcome and old.writable() is not True:
                    outcome["read-only after"] = round(time.time() - cut_at, 2)
                time.sleep(0.25)
        finally:
            old.isolate(False)
        assert outcome.get("read-only after", 99) < 10, outcome
        leaders = wait_for("one primary", lambda: (lambda found: found if len(found) == 1 else None)(
            [n for n in c.nodes if _role(n) == "master"]), timeout=60)
        outcome["primary after"] = leaders[0].name
        outcome["failed over"] = leaders[0] is not old
    scenario("primary cut off 10 s", cluster, relays, cut)
    RESULTS["primary cut off 10 s"].update(outcome)
    wait_for("every node running again", lambda: all(_role(n) in ("master", "replica") for n in cluster.nodes), timeout=120)
    wait_for("a synchronous standby", cluster.sync_standby, timeout=60)


def _role(node):
    try:
        return node.status().get("role")
    except OSError:
        return None


def test_fetches_read_the_synchronous_standby_and_fall_back_to_the_primary_without_it(cluster, relays):
    """--postgres-read: the relays' fetches go to the synchronous standby (its server has their
    sessions) and see every acknowledged upload (remote_apply); with that standby killed they
    are answered by the primary, and nothing is lost."""
    standby = wait_for("a synchronous standby", cluster.sync_standby, timeout=60)
    with Load([r.port for r in relays]) as load:
        wait_for("writes read back", lambda: load.reads >= 200, timeout=60)
    assert load.stale == [], load.stale[:5]
    assert cluster.sessions(standby) > 0  # the relays read there

    def kill_standby(c):
        standby.kill()
        time.sleep(3)
    scenario("synchronous standby killed", cluster, relays, kill_standby)
    standby.start()
    wait_for("the standby back", lambda: _role(standby) == "replica", timeout=120)


def test_a_url_with_several_hosts_is_refused_with_the_way_to_do_it():
    """libpq's multi-host URLs are not followed (the relay connects to one address): the relay
    says to put HAProxy in front, in one line, and --postgres-read alone is refused."""
    relay = os.path.join(ROOT, "Apps", ".build", "debug", "coords-relay")
    run = subprocess.run([relay, "--port", "0", "--postgres",
                          "postgres://coords:x@10.0.0.11:5432,10.0.0.12:5432/coords?target_session_attrs=read-write"],
                         capture_output=True, text=True, timeout=60)
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode == 69 and len(lines) == 1 and "several hosts" in lines[0] and "HAProxy" in lines[0], run.stderr
    run = subprocess.run([relay, "--port", "0", "--postgres-read", "postgres://coords@127.0.0.1:5001/coords"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 64 and "--postgres-read needs --postgres" in run.stderr, run.stderr
