"""The relay operator's kit end to end (run by `make test`): the OpenAPI description held against a
live relay by schemathesis, JSON logs with an access log that carries no secrets, process
metrics, and backups and restores exactly as docs/RELAY.md writes them."""
import datetime
import json
import socket
import os
import re
import subprocess
import sys
import urllib.request

from e2e_support import BIN, ROOT, Relay, alice_and_bob, coords, data, passphrase_env

SPEC = os.path.join(ROOT, "docs", "openapi.yaml")
NO_LIMITS = ["--rate", "0", "--key-rate", "0", "--message-rate", "0", "--mailbox-per-address", "0"]


def test_schemathesis_finds_no_server_error_and_nothing_that_contradicts_the_spec(tmp_path):
    relay = Relay(tmp_path / "relay", args=["--memory", *NO_LIMITS, "--log-level", "warning"])
    relay.start()
    try:
        # Every check but positive_data_acceptance: schema-valid random keys are rarely valid curve
        # points or signatures, so the relay rightly answers 400/401 — a JSON Schema cannot say that.
        result = subprocess.run(
            [sys.executable, "-m", "schemathesis.cli", "run", SPEC, "--url", relay.url,
             "--checks", "all", "--exclude-checks", "positive_data_acceptance",
             "--phases", "examples,coverage,fuzzing,stateful", "--max-examples", "25", "--seed", "20261123",
             "--workers", "1", "--no-color", "--request-timeout", "10", "--generation-database", "none"],
            capture_output=True, text=True, timeout=900, cwd=tmp_path)
    finally:
        relay.stop()
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-8000:]
    assert re.search(r"Tested: 24\b", output), output[-3000:]  # every operation of the spec ran (3 prekeys §10.3, 3 objects §12.4)
    counts = re.search(r"(\d+) generated, (\d+) passed", output)
    assert counts and counts[1] == counts[2] and int(counts[1]) >= 200, output[-3000:]  # a real run, all passed
    assert relay.process is None and "error" not in relay.log().lower(), relay.log()[-3000:]


def test_json_logs_have_stable_keys_and_the_access_log_carries_no_keys_blobs_or_signatures(tmp_path):
    relay = Relay(tmp_path / "relay", args=["--log-format", "json", *NO_LIMITS])
    relay.start()
    env = passphrase_env()
    alice, bob = alice_and_bob(env, tmp_path, relay.url)
    alice_id, bob_id = data(env, alice, "whoami")["id"], data(env, bob, "whoami")["id"]
    coords(env, alice, "share", "--lat", "47.3769", "--lon", "8.5417")
    fetched = data(env, bob, "fetch")
    coords(env, alice, "send", "Bob", "a secret sentence")
    coords(env, bob, "inbox")
    coords(env, alice, "delete")
    relay.stop()

    lines = [line for line in relay.log().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    for record in records:
        assert list(record)[:4] == ["ts", "level", "logger", "msg"], record
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["ts"])
        assert all(isinstance(value, str) for value in record.values())
    access = [r for r in records if r["msg"] == "request"]
    routes = {(r["method"], r["route"]) for r in access}
    assert {("PUT", "/api/location"), ("POST", "/api/location"), ("DELETE", "/api/location"), ("GET", "/api/version"),
            ("POST", "/v1/relay/messages"), ("GET", "/v1/relay/messages")} <= routes, routes
    for r in access:
        assert {"method", "route", "status", "duration_ms", "request_bytes", "response_bytes"} <= set(r), r
        assert int(r["status"]) in range(100, 600) and float(r["duration_ms"]) >= 0
    text = "\n".join(lines)
    secrets = [alice_id, bob_id, "a secret sentence"]
    secrets += [f["location"] and str(f["location"]["latitude"]) for f in fetched["friends"]]
    for secret in filter(None, secrets):
        assert secret not in text, f"{secret!r} appears in the log"
    # Nothing long enough to be a key (43), a signature (86) or a blob: the longest token allowed
    # is the 32-hex-digit request id.
    tokens = re.findall(r"[A-Za-z0-9_+/=-]{33,}", text.replace(str(tmp_path), "TMP"))
    assert tokens == [], tokens[:5]
    assert any(r["msg"] == "coords-relay starting" for r in records)


def test_metrics_show_process_cpu_memory_descriptors_and_the_build(tmp_path):
    with Relay(tmp_path / "relay", args=["--memory"]) as relay:
        text = urllib.request.urlopen(relay.url + "/metrics", timeout=10).read().decode()
    values = dict(re.findall(r"^(process_[a-z_]+) (\S+)$", text, re.M))
    assert float(values["process_cpu_seconds_total"]) > 0
    assert 1 << 20 < float(values["process_resident_memory_bytes"]) < 4 << 30
    assert float(values["process_virtual_memory_bytes"]) >= float(values["process_resident_memory_bytes"])
    assert 3 <= float(values["process_open_fds"]) <= float(values["process_max_fds"])
    started = float(values["process_start_time_seconds"])
    assert abs(started - datetime.datetime.now().timestamp()) < 300
    assert "# TYPE process_cpu_seconds_total counter" in text and "# TYPE process_open_fds gauge" in text
    version = open(os.path.join(ROOT, "VERSION")).read().strip()
    assert f'coords_relay_build_info{{version="{version}",' in text


def backup_one_liners():
    """The shell block under the backup-one-liners marker of docs/RELAY.md, as written."""
    text = open(os.path.join(ROOT, "docs", "RELAY.md"), encoding="utf-8").read()
    block = text.split("<!-- backup-one-liners", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_backup_and_restore_as_relay_md_writes_them(tmp_path):
    lines = backup_one_liners()
    assert lines[0].startswith("coords-relay backup") and lines[2].startswith("coords-relay restore"), lines
    data_dir, backups = tmp_path / "var-lib-coords-relay", tmp_path / "var-backups-coords-relay"
    relay = Relay(data_dir, args=NO_LIMITS)
    relay.start()
    env = passphrase_env()
    alice, bob = alice_and_bob(env, tmp_path, relay.url)
    coords(env, alice, "share", "--lat", "10.5", "--lon", "20.5")
    coords(env, alice, "send", "Bob", "kept by the backup")

    # The relay stands in for the systemd service: `systemctl stop/start coords-relay` stop and
    # start it; only the paths differ from what RELAY.md says.
    control = tmp_path / "systemctl"
    control.write_text("#!/bin/sh\necho \"$1\" >> \"$SYSTEMCTL_LOG\"\n")
    control.chmod(0o755)
    shell_env = dict(os.environ, PATH=f"{tmp_path}:{BIN}:{os.environ['PATH']}", SYSTEMCTL_LOG=str(tmp_path / "systemctl.log"))

    def run(line):
        line = line.replace("/var/lib/coords-relay", str(data_dir)).replace("/var/backups/coords-relay", str(backups))
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", line], env=shell_env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, (line, result.stdout, result.stderr)
        if line.startswith("systemctl stop"):
            relay.stop()
        elif line.startswith("systemctl start"):
            relay.start()
        return result.stdout

    backup_out = run(lines[0])  # while the relay serves
    assert "1 blobs, 1 messages" in backup_out, backup_out
    [backup] = list(backups.iterdir())
    assert backup.name == datetime.date.today().isoformat()
    assert oct(backup.stat().st_mode & 0o777) == "0o700" and oct((backup / "data.mdb").stat().st_mode & 0o777) == "0o600"
    assert sorted(p.name for p in backup.iterdir()) == ["data.mdb"]

    # After the backup Alice moves and deletes; the restore brings back the backed-up state.
    coords(env, alice, "share", "--lat", "30.5", "--lon", "40.5")
    coords(env, alice, "delete")
    alice_id = data(env, alice, "whoami")["id"]
    assert fetch_ids(relay, [alice_id]) == {alice_id: None}  # deleted on the relay
    # A running relay holds the directory: restore refuses in one line and changes nothing.
    refused = subprocess.run([os.path.join(BIN, "coords-relay"), "restore", "--data-dir", str(data_dir), str(backup)],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 75 and "already serving" in refused.stderr, refused.stderr

    for line in lines[1:]:
        run(line)
    assert (tmp_path / "systemctl.log").read_text().split() == ["stop", "start"]
    assert oct((data_dir / "data.mdb").stat().st_mode & 0o777) == "0o600"
    assert not any(p.name.startswith(".restore") for p in data_dir.iterdir())
    assert fetch_ids(relay, [alice_id])[alice_id]["blob"]  # the backed-up upload is back
    assert data(env, bob, "fetch")["friends"][0]["location"]["latitude"] == 10.5
    assert [m["text"] for m in data(env, bob, "inbox")["received"]] == ["kept by the backup"]
    relay.stop()

    # Refusals: nothing to back up (66), a backup directory in use (73), no backup to restore (66).
    tool = os.path.join(BIN, "coords-relay")
    empty = subprocess.run([tool, "backup", "--data-dir", str(tmp_path / "none"), str(tmp_path / "b1")], capture_output=True, text=True)
    assert empty.returncode == 66 and "no relay data" in empty.stderr
    again = subprocess.run([tool, "backup", "--data-dir", str(data_dir), str(backup)], capture_output=True, text=True)
    assert again.returncode == 73 and "not empty" in again.stderr
    missing = subprocess.run([tool, "restore", "--data-dir", str(data_dir), str(tmp_path / "none")], capture_output=True, text=True)
    assert missing.returncode == 66 and "no backup" in missing.stderr
    # A damaged backup (truncated, or not LMDB at all) is refused in one line — LMDB may crash on
    # such a file, so the check runs in a child process — and the data in place stays as it was.
    before = (data_dir / "data.mdb").read_bytes()
    whole = (backup / "data.mdb").read_bytes()
    for name, damaged in [("truncated", whole[:5000]), ("garbage", os.urandom(len(whole)))]:
        broken = tmp_path / name
        broken.mkdir()
        (broken / "data.mdb").write_bytes(damaged)
        result = subprocess.run([tool, "restore", "--data-dir", str(data_dir), str(broken)], capture_output=True, text=True)
        assert result.returncode == 74 and "damaged" in result.stderr and result.stderr.count("\n") == 1, (name, result.stderr)
        assert (data_dir / "data.mdb").read_bytes() == before


def test_truncated_data_and_unsafe_directories_are_refused_in_one_line(tmp_path):
    """Issue 37, defects 13 and 14: a data.mdb cut to half its size crashed `serve` and `backup`
    with SIGBUS; a world-writable data directory was accepted silently."""
    tool = os.path.join(BIN, "coords-relay")
    data_dir = tmp_path / "data"
    with Relay(data_dir, args=NO_LIMITS) as relay:
        env = passphrase_env()
        alice, _ = alice_and_bob(env, tmp_path, relay.url)
        for i in range(40):
            coords(env, alice, "send", "Bob", "x" * 2000 + str(i))
    whole = (data_dir / "data.mdb").read_bytes()
    assert len(whole) > 16 * 4096
    (data_dir / "data.mdb").write_bytes(whole[: len(whole) // 2])
    serve = subprocess.run([tool, "serve", "--port", "0", "--data-dir", str(data_dir)], capture_output=True, text=True, timeout=60)
    assert serve.returncode == 74 and "cannot be used" in serve.stderr and serve.stderr.count("\n") == 1, (serve.returncode, serve.stderr)
    backup = subprocess.run([tool, "backup", "--data-dir", str(data_dir), str(tmp_path / "b")], capture_output=True, text=True, timeout=60)
    assert backup.returncode == 74 and backup.stderr.count("\n") == 1, (backup.returncode, backup.stderr)
    (data_dir / "data.mdb").write_bytes(whole)

    # Writable by others: refused by serve and restore, nothing created in it.
    data_dir.chmod(0o777)
    serve = subprocess.run([tool, "serve", "--port", "0", "--data-dir", str(data_dir)], capture_output=True, text=True, timeout=60)
    assert serve.returncode == 73 and "writable by other users" in serve.stderr, (serve.returncode, serve.stderr)
    backups = tmp_path / "backups"
    data_dir.chmod(0o700)
    subprocess.run([tool, "backup", "--data-dir", str(data_dir), str(backups)], check=True, capture_output=True, timeout=60)
    data_dir.chmod(0o777)
    restore = subprocess.run([tool, "restore", "--data-dir", str(data_dir), str(backups)], capture_output=True, text=True, timeout=60)
    assert restore.returncode in (73, 75) and "writable by other users" in restore.stderr, (restore.returncode, restore.stderr)
    assert not any(p.name.startswith(".restore") for p in data_dir.iterdir())


def raw_exchange(port, data, wait=5):
    """Sends `data` on a new connection and returns everything read until the relay closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(data)
        out = b""
        try:
            while chunk := sock.recv(65536):
                out += chunk
        except socket.timeout:
            pass
        return out


def test_refusals_are_answered_head_is_get_without_a_body(tmp_path):
    """Issue 37, defect 15: HEAD on GET routes answered 404; a malformed chunked body closed the
    connection without an answer; so did a request asking for an Upgrade other than websocket."""
    with Relay(tmp_path / "relay", args=NO_LIMITS) as relay:
        answer = raw_exchange(relay.port, b"HEAD /api/version HTTP/1.1\r\nHost: x\r\n\r\n"
                                          b"GET /api/version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        head, _, rest = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and b"Content-Length: 39" in head, answer
        assert rest.startswith(b"HTTP/1.1 200"), answer  # no body after the HEAD answer: the next answer follows at once
        assert rest.endswith(b'"name":"coords","version":"2026.11.0"}'), answer
        broken = raw_exchange(relay.port, b"POST /api/location HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                                          b"Content-Type: application/json\r\n\r\nzz\r\nabc\r\n0\r\n\r\n")
        assert broken.startswith(b"HTTP/1.1 400") and b'"error":"malformed_body"' in broken, broken
        # An Upgrade the relay does not offer (curl --http2 sends h2c) is ignored, and the request answered.
        h2c = raw_exchange(relay.port, b"GET /api/version HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings, close\r\n"
                                       b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n")
        assert h2c.startswith(b"HTTP/1.1 200") and h2c.endswith(b'"version":"2026.11.0"}'), h2c
        # A live upgrade pipelined after another request (or on a reused connection) is not the
        # connection's first request: answered, by PROTOCOL.md §8.1, 400 upgrade_not_first; the
        # same upgrade on a fresh connection succeeds.
        upgrade = (b"GET /v1/relay/live HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        pipelined = raw_exchange(relay.port, b"GET /api/version HTTP/1.1\r\nHost: x\r\n\r\n" + upgrade)
        first, _, second = pipelined.partition(b"\r\n\r\n")
        assert first.startswith(b"HTTP/1.1 200"), pipelined
        second = second[second.index(b"HTTP/1.1"):]
        assert second.startswith(b"HTTP/1.1 400") and b"upgrade_not_first" in second, pipelined
        fresh = raw_exchange(relay.port, upgrade, wait=1)
        assert fresh.startswith(b"HTTP/1.1 101"), fresh


def fetch_ids(relay, ids):
    request = urllib.request.Request(relay.url + "/api/location", data=json.dumps({"ids": ids}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    return json.loads(urllib.request.urlopen(request, timeout=10).read())


def test_serve_options_come_in_titled_groups_and_each_group_refuses_its_bad_values(tmp_path):
    relay_bin = os.path.join(BIN, "coords-relay")
    help_text = subprocess.run([relay_bin, "serve", "--help"], capture_output=True, text=True, timeout=30).stdout
    sections = ["NETWORK:", "STORAGE:", "RATE LIMITS:", "MAILBOX:", "CONNECTIONS:", "LIVE CHANNEL:", "PUSH:", "ATTACHMENT OBJECTS:",
                "LOGGING:"]
    positions = [help_text.find(section) for section in sections]
    assert -1 not in positions and positions == sorted(positions), help_text
    assert help_text.find("--postgres-pool-size") > help_text.find("STORAGE:") > help_text.find("--port"), help_text

    # One refusal per group (ArgumentParser runs each group's own checks): usage status 64, the
    # reason in words, nothing served.
    env = {k: v for k, v in os.environ.items() if not k.startswith("COORDS_")}
    for args, extra_env, reason in [
        (["--port", "70000"], {}, "--port must be 0…65535; got 70000"),
        (["--memory", "--postgres", "postgres://coords@127.0.0.1:1/coords"], {}, "--memory and --postgres exclude each other"),
        (["--memory"], {"COORDS_POSTGRES_URL": "postgres://coords@127.0.0.1:1/coords"}, "--memory and --postgres exclude each other"),
        (["--ttl", "0"], {}, "--ttl must be 1…31536000"),
        (["--burst", "0"], {}, "--burst must be 1…1000000"),
        (["--mailbox-size-unsigned=-1"], {}, "--mailbox-size-unsigned must be 0…1000000"),
        (["--idle-timeout", "0"], {}, "--idle-timeout must be 1…86400"),
        (["--live-max-ids", "0"], {}, "--live-max-ids must be 1…1000000"),
        (["--push-max-registrations=-1"], {}, "--push-max-registrations must be 0…10000000"),
        (["--object-count", "0"], {}, "--object-count must be 1…1000000"),
        (["--object-quota", "8"], {}, "--object-quota must be 16…1099511627776"),
        (["--memory"], {"COORDS_OBJECT_TOTAL": "lots"}, "COORDS_OBJECT_TOTAL=lots is not a non-negative whole number"),
        # Issue 37: values that passed before and trapped the relay or were never checked.
        (["--rate", "1e-300"], {}, "--rate must be 0.001…1000000 (or 0 for no limit)"),
        (["--key-rate", "1e-300"], {}, "--key-rate must be 0.001…1000000 (or 0 for no limit)"),
        (["--rate", "nan"], {}, "--rate must be"),
        (["--rate", "inf"], {}, "--rate must be"),
        (["--message-rate=-1"], {}, "--message-rate must be"),
        (["--mailbox-size", "0"], {}, "--mailbox-size must be 1…1000000"),
        (["--max-messages", "0"], {}, "--max-messages must be 1…1000000000"),
        (["--memory"], {"COORDS_RATE": "1e-300"}, "--rate must be 0.001…1000000"),
        (["--log-format", "xml"], {}, "--log-format must be text or json"),
        (["--memory"], {"COORDS_TTL": "soon"}, "COORDS_TTL=soon is not a non-negative whole number"),
    ]:
        port = [] if "--port" in args else ["--port", "0"]
        result = subprocess.run([relay_bin, "serve", *port, *args], capture_output=True, text=True, timeout=30,
                                env={**env, **extra_env}, cwd=tmp_path)
        assert result.returncode == 64 and reason in result.stderr, (args, extra_env, result.returncode, result.stderr)
