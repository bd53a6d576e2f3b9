"""Issue 38, problem 7: the Python package behaves like a careful Python library.

Every error code of the header has its constant; an App dropped without close() releases its
directory with a ResourceWarning; an exception in an update callback is reported, not lost;
wrong types raise TypeError; a Location needs its timestamp.
"""
import base64
import gc
import logging
import os
import re
import threading
import time
import warnings

import pytest

import coordscore as cc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_error_code_of_the_header_is_a_python_constant_with_its_value():
    with open(os.path.join(ROOT, "include", "coordscore.h")) as f:
        header = dict(re.findall(r"#define COORDS_ERR_([A-Z0-9_]+) (\d+)", f.read()))
    assert len(header) > 90
    missing = [name for name in header if not hasattr(cc, "ERR_" + name)]
    assert missing == []
    wrong = {name: (getattr(cc, "ERR_" + name), int(value)) for name, value in header.items()
             if getattr(cc, "ERR_" + name) != int(value)}
    assert wrong == {}
    extra = [name for name in dir(cc) if name.startswith("ERR_") and name[4:] not in header]
    assert extra == []


def test_an_app_dropped_without_close_warns_and_releases_its_directory(tmp_path):
    directory = str(tmp_path / "home")
    app = cc.App(directory, passphrase="pw", keychain_cost="minimum")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del app
        gc.collect()
    assert any(issubclass(w.category, ResourceWarning) and "unclosed app" in str(w.message) for w in caught), caught
    # The directory is free again: opening it does not raise StoreError 401 (already open).
    with cc.App(directory, passphrase="pw", keychain_cost="minimum") as again:
        assert again.handle is not None
    # A closed app says nothing when collected.
    closed = cc.App(directory, passphrase="pw", keychain_cost="minimum")
    closed.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del closed
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_with_returns_the_app_itself(tmp_path):
    app = cc.App(str(tmp_path / "h"), passphrase="pw", keychain_cost="minimum")
    with app as entered:
        assert entered is app
    with pytest.raises(cc.ArgumentError):
        _ = app.handle


def _updates_until(app, event, timeout=10):
    deadline = time.time() + timeout
    while not event.is_set() and time.time() < deadline:
        time.sleep(0.02)
    return event.is_set()


def test_an_exception_in_an_update_callback_reaches_on_error_or_the_log(tmp_path, caplog):
    with cc.App(str(tmp_path / "h"), passphrase="pw", keychain_cost="minimum") as app:
        seen, reported, calls = threading.Event(), [], []

        def failing(update):
            calls.append(update)
            raise RuntimeError("host bug")

        app.set_update_callback(failing, on_error=lambda error: (reported.append(error), seen.set()))
        app.create_identity("Alice", "https://relay.test")
        assert _updates_until(app, seen), "no update reached the callback"
        assert isinstance(reported[0], RuntimeError) and str(reported[0]) == "host bug"

        # Without on_error: logged on the "coordscore" logger, with the traceback.
        logged = threading.Event()

        class Catch(logging.Handler):
            def emit(self, record):
                if "update callback raised" in record.getMessage() and record.exc_info:
                    logged.set()

        handler = Catch()
        logging.getLogger("coordscore").addHandler(handler)
        try:
            app.set_update_callback(failing)
            app.add_friend_link(cc.friend_link(cc.generate_identity()[1], "https://relay.test", "Bob"))
            assert _updates_until(app, logged), "the callback's exception was not logged"
        finally:
            logging.getLogger("coordscore").removeHandler(handler)
        assert len(calls) >= 2  # the callback kept being called after raising


def test_wrong_types_raise_type_error_naming_the_python_parameter(tmp_path):
    seed, public = cc.generate_identity()
    with pytest.raises(TypeError, match="recipients"):
        cc.seal(cc.Location(1, 2, timestamp_ms=3), public)  # one key, not a list of keys
    with pytest.raises(TypeError, match="recipient"):
        cc.seal(cc.Location(1, 2, timestamp_ms=3), ["not bytes"])
    with pytest.raises(TypeError, match="location"):
        cc.seal((1, 2, 3), [public])
    with pytest.raises(TypeError, match="server"):
        cc.prepare_upload(seed, cc.Location(1, 2, timestamp_ms=3), [], b"https://relay.test")
    with pytest.raises(TypeError, match="directory"):
        cc.App(str(tmp_path / "h").encode(), passphrase="pw")
    with pytest.raises(TypeError, match="seed"):
        cc.open_blob("not bytes", b"x")


def test_errors_speak_python_not_c(tmp_path):
    with pytest.raises(cc.ArgumentError) as error:
        cc.App(str(tmp_path / "h"))
    assert "passphrase=" in str(error.value) and "options_json" not in str(error.value)


def test_a_location_needs_its_timestamp_and_numbers():
    with pytest.raises(TypeError, match="timestamp_ms"):
        cc.Location(47.37, 8.54)
    with pytest.raises(TypeError, match="timestamp_ms"):
        cc.Location(47.37, 8.54, timestamp_ms=1.5)
    with pytest.raises(TypeError, match="latitude"):
        cc.Location("47.37", 8.54, timestamp_ms=1)
    assert cc.Location(47.37, 8.54, 1, 2, 3).timestamp_ms == 3  # positional still works


def _os_threads():
    """The process's OS threads (Linux: one entry per thread in /proc/self/task)."""
    return sorted(os.listdir("/proc/self/task"))


def test_a_host_sending_to_a_64_member_group_runs_no_thread_but_its_own(tmp_path):
    # Issue 61: the library runs on its caller's thread. Every call — including the ones that run
    # the managers' async code — and a whole turn of the host loop leave the process with the
    # threads it had (the old C ABI ran each call on Swift's pool: 4 threads after a group send).
    fast = dict(keychain_cost="minimum", backup_cost="minimum", durability="no_sync")
    before = _os_threads()
    with cc.App(str(tmp_path / "a"), passphrase="a", **fast) as app:
        app.create_identity("Alice", "http://127.0.0.1:9")
        members = []
        for i in range(63):
            public = cc.generate_identity()[1]
            member = base64.urlsafe_b64encode(public).rstrip(b"=").decode()
            app.add_friend(member, "http://127.0.0.1:9", f"member {i}")
            members.append(member)
        group = app.create_group("Sixty-four", members)
        sent = app.send_group_message(group.group.id, "hello, all of you")
        assert len(sent.queued) == 63
        requests = app.due()
        assert sum(1 for r in requests if r.purpose == "outbox") >= 63
        for request in requests:  # no relay answers: every one is told so, and backs off
            answer = app.report(request.id, 0, b"connection refused")
            assert answer.result in ("outbox", "failed", "prekeys", "bundle"), answer
        assert app.next_wake() is not None
        assert _os_threads() == before


def test_the_loop_refuses_hostile_arguments_and_unknown_tickets(tmp_path):
    fast = dict(keychain_cost="minimum", backup_cost="minimum", durability="no_sync")
    with cc.App(str(tmp_path / "a"), passphrase="a", **fast) as app:
        assert app.due() == [] and app.next_wake() is None  # no identity: nothing to do, ever
        app.create_identity("Alice", "http://127.0.0.1:9")
        assert app.report(12345, 200, b"{}").result == "unknown"
        for status in (-1, 1, 99, 1000):
            with pytest.raises(cc.ArgumentError):
                app.report(1, status)
        with pytest.raises(cc.ArgumentError):
            app.set_fetch_interval(-5)
        app.set_fetch_interval(None)
        app.fetch_now()
        assert {r.purpose for r in app.due()} >= {"mailbox", "prekeys"}
