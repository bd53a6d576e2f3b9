"""Files as messages end to end (PROTOCOL.md §12) with the CLI through a real coords-relay on each
of its stores (memory, LMDB, and PostgreSQL started by the test): `coords send NAME --file`,
the announcement in `inbox`/`chat`, and `coords save`, including a relay killed in the middle
of an upload and a download.
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import tempfile
import time

import sys

import pytest

from e2e_support import BIN, ROOT, Relay, alice_and_bob, all_friends, coords, data, free_port, passphrase_env

sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("COORDSCORE_LIB", os.path.join(ROOT, ".build", "debug", "libcoordscore.so"))

import coordscore as cc  # noqa: E402
from coordscore import transport  # noqa: E402

FAST = {"keychain_cost": "minimum", "backup_cost": "minimum", "durability": "no_sync"}

PG = os.path.join(ROOT, "scripts", "pg-test-server.sh")
NO_LIMITS = ["--rate", "0", "--key-rate", "0", "--message-rate", "0", "--mailbox-per-address", "0"]


@pytest.fixture(params=["memory", "lmdb", "postgres"])
def store(request, tmp_path):
    """The relay arguments of one store (a throwaway PostgreSQL server for `postgres`)."""
    if request.param == "memory":
        yield ["--memory"] + NO_LIMITS
        return
    if request.param == "lmdb":
        yield NO_LIMITS
        return
    directory = tempfile.mkdtemp(prefix="coords-pg-")
    url = subprocess.run([PG, "start", directory, str(free_port()), str(os.getpid())], check=True, capture_output=True,
                         text=True, timeout=120).stdout.strip().splitlines()[-1]
    try:
        yield NO_LIMITS + ["--postgres", url]
    finally:
        subprocess.run([PG, "stop", directory], capture_output=True, timeout=60)


def make_file(path, size, seed=b"coords"):
    """`size` bytes that differ in every chunk (so a moved chunk would be noticed)."""
    block = hashlib.sha256(seed).digest() * 2048  # 64 KiB
    with open(path, "wb") as f:
        written = 0
        counter = 0
        while written < size:
            piece = (counter.to_bytes(8, "big") + block)[: min(65_536, size - written)]
            f.write(piece)
            written += len(piece)
            counter += 1
    return path


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_a_file_goes_to_a_friend_and_is_saved_byte_for_byte(tmp_path, store):
    env = passphrase_env()
    with Relay(str(tmp_path / "relay"), args=store) as relay:
        alice, bob = alice_and_bob(env, tmp_path, relay.url)
        photo = make_file(tmp_path / "harbour.jpg", 300_000)
        sent = data(env, alice, "send", "Bob", "the view from here", "--file", str(photo))
        assert sent["queued"] is False and sent["error"] is None
        assert sent["file"]["name"] == "harbour.jpg" and sent["file"]["size"] == 300_000 and sent["file"]["type"] == "image/jpeg"
        assert "key" not in sent["file"] and "sha256" not in sent["file"]

        inbox = coords(env, bob, "inbox").stdout
        line = next(l for l in inbox.splitlines() if "harbour.jpg" in l)
        assert "the view from here [file: harbour.jpg, 293.0 KiB, image/jpeg] — coords save " in line, inbox
        message_id = re.search(r"coords save ([0-9a-f-]{36}) PATH", line).group(1)
        chat = data(env, bob, "chat", "Alice")["messages"]
        assert [m["file"]["name"] for m in chat if m["kind"] == "file"] == ["harbour.jpg"]
        assert all("key" not in (m["file"] or {}) for m in chat)

        downloads = tmp_path / "downloads"
        downloads.mkdir()
        saved = data(env, bob, "save", message_id, str(downloads))
        assert saved["path"] == str(downloads / "harbour.jpg")
        assert digest(downloads / "harbour.jpg") == digest(photo)
        assert os.listdir(downloads) == ["harbour.jpg"]

        # An existing file is not replaced without --force; with it, it is.
        refused = coords(env, bob, "save", message_id, str(downloads / "harbour.jpg"), expect=1)
        assert "exists; choose another path or add --force" in refused.stderr
        coords(env, bob, "save", message_id, str(downloads / "harbour.jpg"), "--force")
        assert digest(downloads / "harbour.jpg") == digest(photo)

        # The sender can fetch their own file back too (from their own relay).
        coords(env, alice, "save", message_id, str(tmp_path / "mine.jpg"))
        assert digest(tmp_path / "mine.jpg") == digest(photo)

        # An empty file and a name without an extension.
        empty = make_file(tmp_path / "notes", 0)
        sent = data(env, alice, "send", "Bob", "--file", str(empty), "--type", "text/plain")
        data(env, bob, "inbox")
        data(env, bob, "save", sent["id"], str(tmp_path / "notes-copy"))
        assert open(tmp_path / "notes-copy", "rb").read() == b""


def test_a_file_goes_to_a_group_once_and_every_member_saves_it(tmp_path):
    env = passphrase_env()
    with Relay(str(tmp_path / "relay"), args=["--memory"] + NO_LIMITS) as relay:
        homes = all_friends(env, tmp_path, relay.url, ["alice", "bob", "carol"])
        data(env, homes["alice"], "group", "create", "Trip", "Bob", "Carol")
        for name in ["bob", "carol"]:
            coords(env, homes[name], "inbox")
        photo = make_file(tmp_path / "summit.jpg", 150_000)
        sent = data(env, homes["alice"], "send", "--group", "Trip", "--file", str(photo))
        assert sent["copies"] == 2 and sent["file"]["name"] == "summit.jpg"
        for name in ["bob", "carol"]:
            inbox = coords(env, homes[name], "inbox").stdout
            assert f"[Trip] Alice" in inbox and f"[file: summit.jpg, 146.5 KiB, image/jpeg] — coords save {sent['id']} PATH" in inbox, inbox
            coords(env, homes[name], "save", sent["id"], str(tmp_path / f"{name}.jpg"))
            assert digest(tmp_path / f"{name}.jpg") == digest(photo)
        chat = data(env, homes["bob"], "chat", "--group", "Trip")["messages"]
        assert [m["file"]["name"] for m in chat] == ["summit.jpg"]


def test_a_full_disk_while_saving_loses_nothing_already_stored(tmp_path):
    """`coords save` under a file-size limit (RLIMIT_FSIZE, with SIGXFSZ ignored: writes past it
    fail with EFBIG, as on a full disk): it stops with one line, leaves neither the file nor its
    temporary, and Bob's store and messages are as before; without the limit it saves."""
    import resource

    env = passphrase_env()
    with Relay(str(tmp_path / "relay"), args=["--memory"] + NO_LIMITS) as relay:
        alice, bob = alice_and_bob(env, tmp_path, relay.url)
        photo = make_file(tmp_path / "photo.jpg", 400_000)
        sent = data(env, alice, "send", "Bob", "look", "--file", str(photo))
        data(env, bob, "inbox")
        before = data(env, bob, "chat", "Alice")
        target = tmp_path / "out" / "photo.jpg"
        target.parent.mkdir()

        def small_disk():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (150_000, 150_000))

        result = subprocess.run([os.path.join(BIN, "coords"), "save", sent["id"], str(target), "--home", str(bob)], env=env,
                                capture_output=True, text=True, timeout=60, preexec_fn=small_disk)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "cannot write" in result.stderr and "nothing was saved" in result.stderr, result.stderr
        assert os.listdir(target.parent) == []
        assert data(env, bob, "chat", "Alice") == before
        data(env, bob, "save", sent["id"], str(target))
        assert digest(target) == digest(photo)


def test_bad_file_arguments_are_refused_before_anything_is_sent(tmp_path):
    env = passphrase_env()
    with Relay(str(tmp_path / "relay"), args=["--memory"]) as relay:
        alice, bob = alice_and_bob(env, tmp_path, relay.url)
        out = coords(env, alice, "send", "Bob", "--file", str(tmp_path / "missing.pdf"), expect=1)
        assert "cannot read" in out.stderr and "No such file" in out.stderr
        out = coords(env, alice, "send", "Bob", "--file", str(tmp_path), expect=1)
        assert "is not a regular file" in out.stderr
        big = tmp_path / "big.bin"
        with open(big, "wb") as f:
            f.truncate(100 * 1024 * 1024 + 1)
        out = coords(env, alice, "send", "Bob", "--file", str(big), expect=1)
        assert "a file may be at most 100.0 MiB" in out.stderr
        small = make_file(tmp_path / "a.txt", 10)
        out = coords(env, alice, "send", "Bob", "--file", str(small), "--type", "text/plain; charset=utf-8", expect=1)
        assert "is not a media type" in out.stderr
        out = coords(env, alice, "send", "--group", "Trip", "--file", str(small), expect=1)
        assert "no group" in out.stderr.lower() or "not found" in out.stderr.lower(), out.stderr
        out = coords(env, bob, "save", "not-an-id", str(tmp_path / "x"), expect=1)
        assert "is not a message id" in out.stderr
        out = coords(env, bob, "save", "00000000-0000-4000-8000-000000000000", str(tmp_path / "x"), expect=1)
        assert "no message" in out.stderr
        assert data(env, bob, "inbox")["received"] == []


def test_a_relay_killed_in_the_middle_of_an_upload_and_a_download(tmp_path, store):
    """The relay is SIGKILLed while Alice uploads and again while Bob downloads; each command
    resumes once the relay is back and the saved file is the sent one."""
    env = passphrase_env()
    port = free_port()
    relay = Relay(str(tmp_path / "relay"), port=port, args=store)
    relay.start()
    try:
        alice, bob = alice_and_bob(env, tmp_path, relay.url)
        big = make_file(tmp_path / "trip.mp4", SIZE)

        def kill_when(process, pattern):
            """SIGKILLs the relay once `process` has written `pattern` on stderr, restarts it."""
            seen = ""
            deadline = time.time() + 600
            while not re.search(pattern, seen) and time.time() < deadline and process.poll() is None:
                seen += os.read(process.stderr.fileno(), 4096).decode(errors="replace")
            assert re.search(pattern, seen), seen
            relay.process.send_signal(signal.SIGKILL)
            relay.process.wait(timeout=10)
            time.sleep(2)
            relay.start()
            return seen

        sender = subprocess.Popen([os.path.join(BIN, "coords"), "send", "Bob", "--file", str(big), "--home", str(alice)],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        seen = kill_when(sender, r"Uploading [0-9.]+ MiB")
        out, err = sender.communicate(timeout=900)
        assert sender.returncode == 0, seen + err.decode(errors="replace")
        assert "connection lost" in seen + err.decode(), seen + err.decode()
        if "--memory" in store:
            return  # the memory store forgets messages with the relay: the upload restarted from 0 and was announced
        inbox = coords(env, bob, "inbox").stdout
        message_id = re.search(r"coords save ([0-9a-f-]{36}) PATH", inbox).group(1)
        saver = subprocess.Popen([os.path.join(BIN, "coords"), "save", message_id, str(tmp_path / "copy.mp4"), "--home", str(bob)],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        seen = kill_when(saver, r"Downloading [0-9.]+ MiB")
        out, err = saver.communicate(timeout=900)
        assert saver.returncode == 0, seen + err.decode(errors="replace")
        assert digest(tmp_path / "copy.mp4") == digest(big)
        assert not list(tmp_path.glob(".coords-*.part"))
    finally:
        relay.stop()


def test_python_hosts_and_the_cli_exchange_files_both_ways(tmp_path):
    """A Python host sends a file to the CLI and receives one from it (the C ABI's streaming
    functions through coordscore.transport), with a relay restart in the middle of the upload."""
    env = passphrase_env()
    port = free_port()
    relay = Relay(str(tmp_path / "relay"), port=port, args=NO_LIMITS)
    relay.start()
    app = cc.App(str(tmp_path / "py"), passphrase="py", **FAST)
    try:
        app.create_identity("Pia", relay.url)
        bob = tmp_path / "bob"
        coords(env, bob, "init", "--server", relay.url, "--name", "Bob")
        bob_id = app.add_friend_link(data(env, bob, "whoami")["link"]).id
        data(env, bob, "add", app.friend_link())

        # Python → CLI; the relay is restarted once the first part is stored.
        source = make_file(tmp_path / "route.gpx", 9 * 1024 * 1024 + 5)
        real_send, restarted = transport.send, []

        def send_then_restart(request, **options):
            answer = real_send(request, **options)
            if request.method == "PUT" and not restarted:
                restarted.append(True)
                relay.process.send_signal(signal.SIGKILL)
                relay.process.wait(timeout=10)
                relay.start()
            return answer

        transport.send = send_then_restart
        try:
            sent = transport.send_file(app, bob_id, str(source), "application/gpx+xml", caption="tomorrow's route")
        finally:
            transport.send = real_send
        assert restarted and sent.message.file and sent.message.file.size == source.stat().st_size
        assert sent.message.file.name == "route.gpx" and "key" not in json.dumps(sent.message.file.to_json())
        transport.deliver_outbox(app, ignore_backoff=True)
        inbox = coords(env, bob, "inbox").stdout
        assert "tomorrow's route [file: route.gpx, 9.0 MiB, application/gpx+xml]" in inbox, inbox
        coords(env, bob, "save", sent.message.id, str(tmp_path / "route-copy.gpx"))
        assert digest(tmp_path / "route-copy.gpx") == digest(source)

        # CLI → Python.
        photo = make_file(tmp_path / "dog.jpg", 200_000, seed=b"dog")
        sent_back = data(env, bob, "send", "Pia", "--file", str(photo))
        answer = transport.send(app.prepare_message_fetch())
        outcome = app.process_messages(answer.body)
        received = [m for m in outcome.received if m.id == sent_back["id"]]
        assert received and received[0].file.name == "dog.jpg" and received[0].file.type == "image/jpeg"
        saved = transport.save_file(app, sent_back["id"], str(tmp_path / "dog-copy.jpg"))
        assert digest(saved) == digest(photo) and oct(os.stat(saved).st_mode & 0o777) == "0o600"
        with pytest.raises(FileExistsError):
            transport.save_file(app, sent_back["id"], saved)
        with pytest.raises(cc.CoordsError) as refused:
            transport.save_file(app, "00000000-0000-4000-8000-000000000000", str(tmp_path / "nothing"))
        assert refused.value.code == cc.ERR_UNKNOWN_MESSAGE
        assert not os.path.exists(tmp_path / "nothing") and not list(tmp_path.glob(".coords-*.part"))
    finally:
        app.close()
        relay.stop()


SIZE = int(os.environ.get("COORDS_E2E_FILE_MIB", "100")) * 1024 * 1024


def test_disguising_and_longest_names_save_safely(tmp_path):
    """Issue 59, defect 7: a name with a right-to-left override or a C1 control is saved with
    those characters replaced, and a valid 255-byte name saves (the temporary file has a name of
    its own)."""
    env = passphrase_env()
    with Relay(str(tmp_path / "relay"), args=["--memory"] + NO_LIMITS) as relay:
        alice, bob = alice_and_bob(env, tmp_path, relay.url)
        outgoing = tmp_path / "outgoing"
        outgoing.mkdir()
        longest = "x" * 251 + ".bin"
        cases = {"invoice\u202egpj.exe": "invoice_gpj.exe", "memo\u0085.txt": "memo_.txt", longest: longest}
        downloads = tmp_path / "downloads"
        downloads.mkdir()
        for name, expected in cases.items():
            path = make_file(outgoing / name, 1000, seed=name.encode())
            sent = data(env, alice, "send", "Bob", "--file", str(path))
            assert sent["file"]["name"] == name and sent["file"]["local_name"] == expected
            data(env, bob, "inbox")
            saved = data(env, bob, "save", sent["id"], str(downloads))
            assert saved["path"] == str(downloads / expected), saved
            assert digest(downloads / expected) == digest(path)
        assert sorted(os.listdir(downloads)) == sorted(cases.values())
