#!/usr/bin/env python3
"""Attachment throughput (PROTOCOL.md §12): a file of SIZE MiB (default 100) through `coords send
--file` and `coords save` against a coords-relay on its durable LMDB store on loopback, against
two floors measured in the same run on the same bytes:

- C: the same libsodium calls (XChaCha20-Poly1305 per 64 KiB chunk, SHA-256 of the object),
  called directly (ctypes into libsodium: one call per 64 KiB chunk, so the call costs nothing
  that shows);
- curl: the same sealed parts PUT to the same relay with the same signed headers (prepared
  before the clock starts), and the object downloaded with curl to /dev/null.

The floor of an upload is the time C takes to seal plus the time curl takes to move the bytes
(sealing then sending, done by the fastest tools); ours is `coords send --file` end to end
(reading, sealing, signing, sending, the message). The same for a download: curl, then C
opening and writing the file durably (a write per chunk, one fsync), as `coords save` must. Each
is the median of ROUNDS rounds, the rounds interleaving ours, C and curl (the machine's noise
hits both sides alike). Also the peak RSS of each CLI process and of the relay (VmHWM). Writes
JSON to the path given and prints a table.

Usage: bench-attachments.py <out.json> [--size MiB] [--rounds N] [--bin DIR] [--lib PATH]
  --bin: where coords and coords-relay are (default Apps/.build/release)
  --lib: libcoordscore.so for preparing the curl parts (default .build/release)
"""
import ctypes
import ctypes.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))


def option(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


SIZE = int(option("--size", "100")) * 1024 * 1024
ROUNDS = int(option("--rounds", "3"))
BIN = os.path.abspath(option("--bin", os.path.join(ROOT, "Apps", ".build", "release")))
os.environ["COORDS_BIN_DIR"] = BIN
os.environ["COORDSCORE_LIB"] = os.path.abspath(option("--lib", os.path.join(ROOT, ".build", "release", "libcoordscore.so")))
sys.path.insert(0, os.path.join(ROOT, "python"))

import coordscore as cc  # noqa: E402
from coordscore import transport  # noqa: E402
from e2e_support import Relay, alice_and_bob, coords, data, passphrase_env  # noqa: E402

CHUNK = 65536
TIME = "/usr/bin/time"  # GNU time (Debian's `time`; make bench-deps installs it)
sodium = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
sodium.sodium_init()


def nonce_ad(oid, index, last):
    tail = index.to_bytes(4, "big") + bytes([1 if last else 0])
    return oid + tail + b"\0\0\0", b"CoordsCore/object/v1" + oid + tail


def c_seal(key, oid, file):
    """§12.2 with libsodium; returns (object, digest, seconds)."""
    chunks = max(1, -(-len(file) // CHUNK))
    out = ctypes.create_string_buffer(len(file) + 16 * chunks)
    state = ctypes.create_string_buffer(256)
    digest = ctypes.create_string_buffer(32)
    view = memoryview(file)
    started = time.perf_counter()
    sodium.crypto_hash_sha256_init(state)
    at = 0
    for i in range(chunks):
        piece = bytes(view[i * CHUNK:(i + 1) * CHUNK])
        nonce, ad = nonce_ad(oid, i, i == chunks - 1)
        target = ctypes.byref(out, at)
        sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(target, None, piece, ctypes.c_ulonglong(len(piece)), ad,
                                                          ctypes.c_ulonglong(len(ad)), None, nonce, key)
        sodium.crypto_hash_sha256_update(state, target, ctypes.c_ulonglong(len(piece) + 16))
        at += len(piece) + 16
    sodium.crypto_hash_sha256_final(state, digest)
    return out.raw, digest.raw, time.perf_counter() - started


def c_open(key, oid, sealed, digest, target):
    """Opens what c_seal made, checking the digest, and writes the file to `target` durably
    (write per chunk, fsync at the end: what `coords save` must do too); returns seconds."""
    out = ctypes.create_string_buffer(CHUNK)
    state = ctypes.create_string_buffer(256)
    computed = ctypes.create_string_buffer(32)
    view = memoryview(sealed)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        started = time.perf_counter()
        sodium.crypto_hash_sha256_init(state)
        at, i = 0, 0
        while at < len(sealed):
            piece = bytes(view[at:at + CHUNK + 16])
            nonce, ad = nonce_ad(oid, i, at + len(piece) == len(sealed))
            sodium.crypto_hash_sha256_update(state, piece, ctypes.c_ulonglong(len(piece)))
            assert sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(out, None, None, piece, ctypes.c_ulonglong(len(piece)), ad,
                                                                     ctypes.c_ulonglong(len(ad)), nonce, key) == 0
            os.write(fd, memoryview(out)[:len(piece) - 16])
            at, i = at + len(piece), i + 1
        sodium.crypto_hash_sha256_final(state, computed)
        os.fsync(fd)
        seconds = time.perf_counter() - started
    finally:
        os.close(fd)
        os.unlink(target)
    assert computed.raw == digest
    return seconds


def timed(command, env):
    """Runs `command` under GNU time; returns (seconds, its peak RSS in MiB, stdout). (The rusage
    of a child forked from this process would count the pages it shared with this one.)"""
    with tempfile.NamedTemporaryFile() as rss:
        started = time.perf_counter()
        result = subprocess.run([TIME, "-f", "%M", "-o", rss.name, *command], env=env, capture_output=True, text=True, timeout=3600)
        seconds = time.perf_counter() - started
        assert result.returncode == 0, result.stderr
        return seconds, int(open(rss.name).read().split()[-1]) / 1024, result.stdout


def vm_hwm(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def curl_parts(app, path, workdir):
    """The signed part PUTs of an upload of `path` (sealed by the library beforehand, answered as
    if stored), written to files: [(url, headers, file)]."""
    parts = []
    with open(path, "rb") as f, app.begin_upload(f.fileno()) as upload:
        while (request := upload.next()) is not None:
            body = os.path.join(workdir, f"part{len(parts)}")
            with open(body, "wb") as out:
                out.write(cc.request_body(request))
            parts.append((request.url, dict(request.headers), body))
            m = re.search(r"objects/([A-Za-z0-9_-]{22})\?offset=(\d+)&stored=(\d+)&expires=(\d+)", request.url)
            oid, offset, stored, expires = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
            held = offset + os.path.getsize(body)
            upload.process(200, json.dumps({"object": oid, "stored": held, "size": stored, "complete": held == stored,
                                            "expiresAt": expires}).encode())
    return parts, oid


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if len(ordered) % 2 else (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2


def main():
    out_path = next(a for a in sys.argv[1:] if not a.startswith("--") and a not in (option("--size", ""), option("--bin", ""),
                                                                                     option("--lib", ""), option("--rounds", "")))
    curl = shutil.which("curl")
    assert curl, "curl is not installed (make bench-deps installs it)"
    env = passphrase_env()
    work = tempfile.mkdtemp(prefix="coords-bench-attach-")
    results = {"size_mib": SIZE // (1 << 20), "rounds": ROUNDS}
    times = {name: [] for name in ("up", "down", "c_seal", "c_open", "curl_up", "curl_down")}
    rss = {"up": [], "down": []}
    try:
        source = os.path.join(work, "file.bin")
        with open(source, "wb") as f:
            f.write(os.urandom(SIZE))
        relay = Relay(os.path.join(work, "relay"), args=["--rate", "0", "--key-rate", "0", "--message-rate", "0",
                                                         "--mailbox-per-address", "0", "--object-quota", str(4 << 30)])
        relay.start()
        try:
            from pathlib import Path
            alice, bob = alice_and_bob(env, Path(work), relay.url)
            rss_before = vm_hwm(relay.process.pid)
            with cc.App(os.path.join(work, "py"), passphrase="bench", keychain_cost="minimum", durability="no_sync") as app:
                app.create_identity("Curl", relay.url)
                for round_ in range(ROUNDS):
                    # The C floors in a process of their own: this one stays small, so the CLI
                    # processes it starts (forked from it) report their own peak RSS, not a copy
                    # of a 100 MiB buffer.
                    floors = json.loads(subprocess.run([sys.executable, os.path.abspath(__file__), "--floor", source, "--bin", BIN,
                                                        "--lib", os.environ["COORDSCORE_LIB"]], check=True,
                                                       capture_output=True, text=True, timeout=600).stdout)
                    times["c_seal"].append(floors["seal"])
                    times["c_open"].append(floors["open"])
                    seconds, peak, out = timed([os.path.join(BIN, "coords"), "send", "Bob", "--file", source, "--json", "--home", alice],
                                               env)
                    times["up"].append(seconds)
                    rss["up"].append(peak)
                    sent = json.loads(out)
                    coords(env, bob, "inbox")
                    copy = os.path.join(work, "copy.bin")
                    seconds, peak, _ = timed([os.path.join(BIN, "coords"), "save", sent["id"], copy, "--home", bob], env)
                    times["down"].append(seconds)
                    rss["down"].append(peak)
                    os.unlink(copy)
                    # curl: the same sealed parts with the same kind of signed headers (a fresh
                    # object each round), then the object down.
                    parts, curl_oid = curl_parts(app, source, work)
                    command = [curl, "-sS", "--fail"]
                    for i, (url, headers, body) in enumerate(parts):
                        if i:
                            command.append("--next")
                        command += ["-X", "PUT", "-o", "/dev/null", "-H", "Expect:", "--data-binary", "@" + body]  # no 1 s wait
                        for name, value in headers.items():
                            command += ["-H", f"{name}: {value}"]
                        command.append(url)
                    started = time.perf_counter()
                    subprocess.run(command, check=True, timeout=3600)
                    times["curl_up"].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    subprocess.run([curl, "-sS", "--fail", "-o", "/dev/null", f"{relay.url}/v1/relay/objects/{curl_oid}"], check=True,
                                   timeout=3600)
                    times["curl_down"].append(time.perf_counter() - started)
                    for _, _, body in parts:
                        os.unlink(body)
                    print(f"  round {round_ + 1}/{ROUNDS}: send {times['up'][-1]:.2f} s, save {times['down'][-1]:.2f} s", file=sys.stderr)
            relay_rss = vm_hwm(relay.process.pid)
        finally:
            relay.stop()
        mib = SIZE / (1 << 20)
        m = {name: median(values) for name, values in times.items()}
        results.update({
            "upload": {"seconds": m["up"], "mib_per_s": mib / m["up"], "floor_seconds": m["c_seal"] + m["curl_up"],
                       "ratio": (m["c_seal"] + m["curl_up"]) / m["up"], "client_peak_rss_mib": max(rss["up"])},
            "download": {"seconds": m["down"], "mib_per_s": mib / m["down"], "floor_seconds": m["c_open"] + m["curl_down"],
                         "ratio": (m["c_open"] + m["curl_down"]) / m["down"], "client_peak_rss_mib": max(rss["down"])},
            "c": {"seal_mib_per_s": mib / m["c_seal"], "open_mib_per_s": mib / m["c_open"]},
            "curl": {"upload_mib_per_s": mib / m["curl_up"], "download_mib_per_s": mib / m["curl_down"]},
            "seconds": times, "relay_peak_rss_mib": relay_rss, "relay_rss_before_mib": rss_before, "binaries": BIN,
        })
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)
    u, d = results["upload"], results["download"]
    print(f"attachments, {results['size_mib']} MiB through an LMDB relay on loopback ({BIN}), medians of {ROUNDS} rounds:")
    print(f"  send --file  {u['mib_per_s']:7.1f} MiB/s  floor (C seal {results['c']['seal_mib_per_s']:.0f} MiB/s + curl "
          f"{results['curl']['upload_mib_per_s']:.0f} MiB/s) → {u['ratio']:.2f}×   peak RSS {u['client_peak_rss_mib']:.0f} MiB")
    print(f"  save         {d['mib_per_s']:7.1f} MiB/s  floor (curl {results['curl']['download_mib_per_s']:.0f} MiB/s + C open and "
          f"durable write {results['c']['open_mib_per_s']:.0f} MiB/s) → {d['ratio']:.2f}×   peak RSS {d['client_peak_rss_mib']:.0f} MiB")
    print(f"  relay peak RSS {results['relay_peak_rss_mib']:.0f} MiB (before the transfers: {results['relay_rss_before_mib']:.0f} MiB)")


def floor(path):
    """The C floors for the file at `path`, as JSON on standard output."""
    file = open(path, "rb").read()
    key, oid = os.urandom(32), os.urandom(16)
    sealed, digest, seal_s = c_seal(key, oid, file)
    print(json.dumps({"seal": seal_s, "open": c_open(key, oid, sealed, digest, path + ".c-open")}))


if __name__ == "__main__":
    if "--floor" in sys.argv:
        floor(option("--floor", ""))
    else:
        main()
