"""Handles the library owns: the App (one data directory), place files, file transfers, and the
Python keychain the App can keep its secrets in."""
from __future__ import annotations

import base64
import ctypes
import json
import logging
import threading
import warnings
from ctypes import POINTER, byref, c_bool, c_char_p, c_int32, c_int64, c_uint8, c_uint32, c_uint64, c_void_p
from typing import Any, Callable, Optional, TypeVar

from ._ffi import (_APP, KEYCHAIN_LOAD, KEYCHAIN_REMOVE, KEYCHAIN_SAVE, UPDATE_CALLBACK, CoordsBuffer, CoordsHostRequest,
                   CoordsKeychainCallbacks, _bytes, _buffer_call, _call, _json_call, _take, _text, _utf8, lib)
from .errors import *  # noqa: F401,F403
from .errors import ArgumentError, CoordsError
from .functions import _as_location, _key_list
from .records import *  # noqa: F401,F403
from .records import _Record

_logger = logging.getLogger("coordscore")

MUTED_FOREVER = 2**64 - 1
"""A mute that lasts until unmute() (UINT64_MAX at the C ABI)."""


_Handle = TypeVar("_Handle", bound="_NativeHandle")


class _NativeHandle:
    """A handle from the library, released exactly once: by `close()` or at the end of a `with`
    block. A subclass names the C function that releases it (`_release`) and itself (`_what`, for
    the error a closed handle raises)."""

    _handle: Optional[Any] = None
    _release = ""
    _what = ""

    @property
    def handle(self) -> Any:
        """The raw handle (raises ArgumentError once closed)."""
        if self._handle is None:
            raise ArgumentError(ERR_INVALID_HANDLE, f"the {self._what} is closed")
        return self._handle

    def close(self) -> None:
        """Releases the handle (idempotent from Python's side)."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            _call(getattr(lib, self._release), handle)

    def __enter__(self: _Handle) -> _Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # A handle dropped without close() still keeps its resources (an App keeps its data
        # directory locked: opening it again raises StoreError 401). Release it, and say so the
        # way Python's own files do.
        if self._handle is None:
            return
        try:
            warnings.warn(f"unclosed {self._what} (call close() or use `with`)", ResourceWarning, source=self, stacklevel=2)
            self.close()
        except Exception:  # the interpreter may be shutting down: never raise from a finalizer
            pass


class Places(_NativeHandle):
    """A loaded CGEO place file (e.g. the cities1000 set from `scripts/build-geodata.py --large`).
    Close it (or use `with`) when done; `nearest` works like `nearest_place`."""

    _release, _what = "coords_places_close", "place file"

    def __init__(self, path: str):
        handle = c_void_p()
        _call(lib.coords_places_open, _utf8(path, "path"), byref(handle))
        self._handle = handle

    def nearest(self, latitude: float, longitude: float, accuracy_m: float = 0.0) -> Place:
        """The nearest place in this file (see `nearest_place`)."""
        return Place.from_json(_json_call(lib.coords_places_nearest, self.handle, float(latitude), float(longitude),
                                          float(accuracy_m)))

    def __len__(self) -> int:
        count = c_uint64()
        _call(lib.coords_places_count, self.handle, byref(count))
        return count.value


class FileUpload(_NativeHandle):
    """A file being sent (App.begin_upload; PROTOCOL.md §12). The library reads the file through
    the descriptor one part (at most 4 MiB) at a time; the host sends each request:

        with app.begin_upload(fd) as upload:
            while (request := upload.next()) is not None:
                answer = send(request)              # on no answer: send(upload.probe()) instead
                wait = upload.process(answer.status, answer.body)
                if wait: time.sleep(wait)
            sent = upload.send(friend_id, "image/jpeg", "harbour.jpg", "caption")

    coordscore.transport.send_file does all of this. Close it (or use `with`); the descriptor
    stays the caller's."""

    _what = "upload"

    def __init__(self, handle: Any):
        self._handle = handle

    def close(self) -> None:
        """Frees the upload (idempotent)."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            lib.coords_upload_free(handle)

    def next(self) -> Optional[Request]:
        """The next part's signed PUT, or None once the relay holds the whole file. Raises
        ArgumentError (ERR_FILE_IO: the file could not be read or became shorter)."""
        more = c_int32(0)
        body = _buffer_call(lib.coords_upload_next, self.handle, byref(more))
        return Request.from_json(json.loads(body.decode("utf-8"))) if more.value else None

    def probe(self) -> Request:
        """The empty PUT asking the relay where its bytes end: send it after a lost answer."""
        return Request.from_json(_json_call(lib.coords_upload_probe, self.handle))

    def process(self, status: int, body: bytes, retry_after: Optional[str] = None) -> int:
        """Takes the relay's answer to the last part or probe; returns 0, or the seconds to wait
        before next() asks for the same part again (429, 5xx). Raises WireError (ERR_RELAY_ERROR:
        refused for good, e.g. the quota; ERR_OBJECT_MISMATCH: an answer no honest relay gives)."""
        wait = c_uint64(0)
        _call(lib.coords_upload_process, self.handle, int(status), _bytes(body, "body"), len(body),
              None if retry_after is None else _utf8(retry_after, "retry_after"), byref(wait))
        return wait.value

    def progress(self) -> tuple[int, int]:
        """(bytes of the file the relay holds, the file's size)."""
        sent, size = c_uint64(0), c_uint64(0)
        _call(lib.coords_upload_progress, self.handle, byref(sent), byref(size))
        return sent.value, size.value

    def failed(self, retry_after: int = 0) -> tuple[int, str]:
        """A try failed: no answer (retry_after 0), or process() asked to wait retry_after
        seconds. The core's transfer rule (PROTOCOL.md §12.5) answers (seconds to wait, "") — at
        most 60 — or (0, why) when the upload gives up: 14 failed tries in a row, or its deadline."""
        if retry_after < 0 or retry_after >= 2**64:
            raise ValueError("retry_after must be 0 … 2**64-1")
        wait = c_uint64(0)
        reason = _buffer_call(lib.coords_upload_failed, self.handle, retry_after, byref(wait))
        return wait.value, reason.decode("utf-8", "replace")

    def seconds_left(self) -> int:
        """Seconds until the upload's deadline (at least 1): the timeout for the next request."""
        seconds = c_uint64(0)
        _call(lib.coords_transfer_seconds_left, self.handle, None, byref(seconds))
        return seconds.value

    def send(self, friend_id: str, type: str, name: str = "", caption: str = "") -> "Sent":
        """Announces the finished upload to a friend (a file message, queued like send_message).
        Raises WireError (ERR_OBJECT_MISMATCH: not finished; ERR_MALFORMED_FILE: type or name),
        ManagerError (friend not found, blocked, caption too long)."""
        return Sent.from_json(_json_call(lib.coords_upload_send, self.handle, _utf8(friend_id, "friend_id"), _utf8(type, "type"),
                                         _utf8(name, "name"), _utf8(caption, "caption")))

    def send_group(self, group: str, type: str, name: str = "", caption: str = "") -> "GroupSent":
        """Announces the finished upload to a group (every member fetches the one object); as
        send, and ManagerError ERR_GROUP_NOT_FOUND, ERR_NOT_A_GROUP_MEMBER."""
        return GroupSent.from_json(_json_call(lib.coords_upload_send_group, self.handle, _utf8(group, "group"), _utf8(type, "type"),
                                              _utf8(name, "name"), _utf8(caption, "caption")))


class FileDownload(_NativeHandle):
    """A file being received (App.begin_download): the plaintext is written to the descriptor as
    chunks open. Write to a temporary file; make it final only when finish() returns True, and
    remove it on any error. coordscore.transport.save_file does all of this."""

    _what = "download"

    def __init__(self, handle: Any):
        self._handle = handle

    def close(self) -> None:
        """Frees the download (idempotent)."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            lib.coords_download_free(handle)

    def request(self) -> tuple[Request, int]:
        """The GET to send (with Range after a break) and the most body bytes to read."""
        maximum, buffer = c_uint64(0), CoordsBuffer()
        try:
            _call(lib.coords_download_request, self.handle, byref(buffer), byref(maximum))
        except CoordsError:
            lib.coords_buffer_free(byref(buffer))
            raise
        return Request.from_json(json.loads(_take(buffer).decode("utf-8"))), maximum.value

    def check(self, status: int, retry_after: Optional[str] = None, content_length: Optional[str] = None) -> int:
        """Checks the answer's status (and its Retry-After header, or None) before its body, and
        for a 200 or 206 its Content-Length header (None when it has none): it must be exactly
        what request() asked for (PROTOCOL.md §12.5). Returns 0 when the body is to be read next
        through take(); else (429, 5xx) the seconds (1..60) to wait before sending request()
        again, without reading this body. Raises WireError (ERR_OBJECT_MISMATCH: 404 gone, a 200
        to a range, another status, another length: refused at once, not to be resumed)."""
        wait = c_uint64(0)
        _call(lib.coords_download_check, self.handle, int(status),
              None if retry_after is None else _utf8(retry_after, "retry_after"), byref(wait))
        if wait.value == 0 and content_length is not None:
            _call(lib.coords_download_check_length, self.handle, _utf8(content_length, "content_length"))
        return wait.value

    def pace(self, arrived: int) -> bool:
        """`arrived` more bytes of the answer's body came (call it per read, before take()): False
        when the answer is too slow (under 16 KiB in 30 s) or past the deadline — cut it off and
        call failed()."""
        if arrived < 0 or arrived >= 2**64:
            raise ValueError("arrived must be 0 … 2**64-1")
        keep = c_int32(0)
        _call(lib.coords_download_pace, self.handle, arrived, byref(keep))
        return keep.value == 1

    def failed(self, retry_after: int = 0) -> tuple[int, str]:
        """A try failed: lost, cut off or too slow (retry_after 0), or busy (what check()
        returned). The core's transfer rule (PROTOCOL.md §12.5) answers (seconds to wait, "") — at
        most 60 — or (0, why) when the download gives up: 14 failed tries in a row without a byte
        of progress, or its deadline."""
        if retry_after < 0 or retry_after >= 2**64:
            raise ValueError("retry_after must be 0 … 2**64-1")
        wait = c_uint64(0)
        reason = _buffer_call(lib.coords_download_failed, self.handle, retry_after, byref(wait))
        return wait.value, reason.decode("utf-8", "replace")

    def seconds_left(self) -> int:
        """Seconds until the download's deadline (at least 1): the timeout for the next request."""
        seconds = c_uint64(0)
        _call(lib.coords_transfer_seconds_left, None, self.handle, byref(seconds))
        return seconds.value

    def take(self, data: bytes) -> None:
        """The next bytes of the answer's body. Raises WireError (ERR_BAD_CHUNK,
        ERR_OBJECT_MISMATCH), ArgumentError (ERR_FILE_IO)."""
        if data:
            _call(lib.coords_download_take, self.handle, _bytes(data, "data"), len(data))

    def progress(self) -> tuple[int, int]:
        """(plaintext bytes written, the file's size)."""
        received, size = c_uint64(0), c_uint64(0)
        _call(lib.coords_download_progress, self.handle, byref(received), byref(size))
        return received.value, size.value

    def finish(self) -> bool:
        """After an answer's body ended: True when the whole file arrived and matched its digest
        (the descriptor is fsynced), False when it was cut off (send request() again to resume).
        Raises WireError (ERR_OBJECT_MISMATCH: the digest does not match)."""
        complete = c_int32(0)
        _call(lib.coords_download_finish, self.handle, byref(complete))
        return bool(complete.value)


def request_body(request: Any) -> bytes:
    """The body bytes of a prepared request (a Request or its JSON dict)."""
    return base64.b64decode(request["body_base64"])


# ---- Apps --------------------------------------------------------------------------------

class Keychain:
    """Subclass to keep the app's secrets in your own store; the default keeps them in memory.

    It holds several named entries: the identity seed, the store key `store.dek` (losing it
    makes the store unreadable: StoreError ERR_STORE_KEY_MISSING), and the short-lived keys of
    disappearing messages (`store.shred.*`)."""

    def __init__(self) -> None:
        self.entries: dict[str, bytes] = {}
        self.lock = threading.Lock()

    def save(self, name: str, secret: bytes) -> None:
        """Stores `secret` under `name` (called by the library)."""
        with self.lock:
            self.entries[name] = secret

    def load(self, name: str) -> Optional[bytes]:
        """The secret stored under `name`, or None (called by the library)."""
        with self.lock:
            return self.entries.get(name)

    def remove(self, name: str) -> None:
        """Forgets `name` (called by the library)."""
        with self.lock:
            self.entries.pop(name, None)


class App(_NativeHandle):
    """One CoordsCore data directory. Close it (or use `with`) when done.

    The keychain is a file in the directory, sealed with `passphrase` or a 32-byte `key`, or a
    Python `Keychain`. Other options: keychain_cost / backup_cost ("minimum", "interactive",
    "moderate"), update_capacity, durability ("durable", "no_meta_sync", "no_sync"), places
    ("bundled", "none", or the path of a CGEO file) for the "place" of friend_locations().
    """

    _release, _what = "coords_app_close", "app"

    def __init__(self, directory: str, passphrase: Optional[str] = None, key: Optional[bytes] = None,
                 keychain: Optional[Keychain] = None, **options: Any):
        if passphrase is None and key is None and keychain is None and "key_base64" not in options:
            # In Python's words (the library would name its C parameter, options_json).
            raise ArgumentError(ERR_INVALID_ARGUMENT, "App needs passphrase=, key= (32 bytes) or keychain= to seal the keychain")
        if passphrase is not None:
            options["passphrase"] = passphrase
        if key is not None:
            options["key_base64"] = base64.b64encode(key).decode()
        handle = _APP()
        self._callbacks = None
        self._update_callback: Optional[Any] = None
        if keychain is None:
            _call(lib.coords_app_open, _utf8(directory, "directory"), json.dumps(options).encode(), byref(handle))
        else:
            self._callbacks = self._bridge(keychain)
            _call(lib.coords_app_open_with_keychain, _utf8(directory, "directory"), json.dumps(options).encode(),
                  byref(self._callbacks), byref(handle))
        self._handle = handle

    @staticmethod
    def _bridge(keychain: Keychain) -> CoordsKeychainCallbacks:
        def save(_context: Any, name: bytes, secret: Any, length: int) -> int:
            try:
                keychain.save(name.decode(), ctypes.string_at(secret, length))
                return 0
            except Exception:
                return 3

        def load(_context: Any, name: bytes, out: Any, capacity: int, out_length: Any) -> int:
            try:
                secret = keychain.load(name.decode())
                if secret is None:
                    return 1
                if len(secret) > capacity:
                    return 2
                ctypes.memmove(out, secret, len(secret))
                out_length[0] = len(secret)
                return 0
            except Exception:
                return 3

        def remove(_context: Any, name: bytes) -> int:
            try:
                keychain.remove(name.decode())
                return 0
            except Exception:
                return 3

        # The CFUNCTYPE objects live on the struct, which the App keeps alive.
        return CoordsKeychainCallbacks(None, KEYCHAIN_SAVE(save), KEYCHAIN_LOAD(load), KEYCHAIN_REMOVE(remove))

    # Updates
    def next_update(self, timeout_ms: int = 0) -> Optional[dict[str, Any]]:
        """The next update as a dict, or None when none came within timeout_ms (-1: wait)."""
        try:
            update: dict[str, Any] = _json_call(lib.coords_app_next_update, self.handle, timeout_ms)
            return update
        except CoordsError as error:
            if error.code == ERR_TIMED_OUT:
                return None
            raise

    def updates(self) -> list[dict[str, Any]]:
        """Every update queued right now."""
        out = []
        while (update := self.next_update(0)) is not None:
            out.append(update)
        return out

    def set_update_callback(self, callback: Optional[Callable[[dict[str, Any]], None]],
                            on_error: Optional[Callable[[BaseException], None]] = None) -> None:
        """Calls `callback(update)` from a library thread for every update; None stops it.

        An exception raised by `callback` cannot travel through C to your code: it is passed to
        `on_error(exception)` when given, and otherwise logged with its traceback on the
        `coordscore` logger (logging.getLogger("coordscore")). Either way the next update still
        arrives. The callback runs on a library thread while holding the GIL; keep it short."""
        if callback is None:
            _call(lib.coords_app_set_update_callback, self.handle, UPDATE_CALLBACK(), None)
            self._update_callback = None
            return

        def trampoline(_context: Any, data: Any, length: int) -> None:
            try:
                callback(json.loads(ctypes.string_at(data, length)))
            except Exception as error:  # never let an exception unwind into C
                try:
                    if on_error is not None:
                        on_error(error)
                    else:
                        _logger.error("an update callback raised %r", error, exc_info=error)
                except Exception:
                    _logger.exception("an update callback's on_error raised")

        # The previous callback's thunk stays referenced until the library has stopped (joined)
        # the thread that calls it: freed any earlier, a call still under way would jump into
        # freed memory (a crash seen on a loaded CI machine).
        replacement = UPDATE_CALLBACK(trampoline)
        _call(lib.coords_app_set_update_callback, self.handle, replacement, None)
        self._update_callback = replacement

    # Wallet
    def create_identity(self, name: str, server: str) -> str:
        """Creates this app's identity; returns its public key id. Raises ManagerError (ERR_IDENTITY_EXISTS) when there is one."""
        return _buffer_call(lib.coords_wallet_create_identity, self.handle, _utf8(name, "name"), _utf8(server, "server")).decode()

    def import_seed(self, seed: bytes, name: str, server: str) -> str:
        """Imports an identity from its 32-byte seed; returns its public key id."""
        return _buffer_call(lib.coords_wallet_import_seed, self.handle, _bytes(seed, "seed", 32), _utf8(name, "name"),
                            _utf8(server, "server")).decode()

    def set_profile(self, name: Optional[str] = None, server: Optional[str] = None) -> None:
        """Changes the display name and/or relay of the identity (None leaves a field as it is)."""
        _call(lib.coords_wallet_set_profile, self.handle, _text(name), _text(server))

    def set_strict_mode(self, strict: bool) -> None:
        """Strict mode: fetched entries must carry the uploader's signature."""
        _call(lib.coords_wallet_set_strict_mode, self.handle, strict)

    def info(self) -> WalletInfo:
        """The identity (has_identity is False before one is created)."""
        return WalletInfo.from_json(_json_call(lib.coords_wallet_info, self.handle))

    def public_key(self) -> bytes:
        """The identity's 32-byte Ed25519 public key. Raises ManagerError (ERR_NO_IDENTITY) before one exists."""
        out = (c_uint8 * 32)()
        _call(lib.coords_wallet_public_key, self.handle, out)
        return bytes(out)

    def friend_link(self) -> str:
        """This identity's `coord://` link to give to friends."""
        return _buffer_call(lib.coords_wallet_friend_link, self.handle).decode()

    def safety_number(self, friend_public: bytes) -> str:
        """The safety number to compare in person with a friend."""
        return _buffer_call(lib.coords_wallet_safety_number, self.handle, _bytes(friend_public, "friend_public", 32)).decode()

    def sign(self, message: bytes) -> bytes:
        """Signs `message` with the identity key (64 bytes)."""
        out = (c_uint8 * 64)()
        _call(lib.coords_wallet_sign, self.handle, _bytes(message, "message"), len(message), out)
        return bytes(out)

    def export_backup(self, passphrase: str) -> bytes:
        """An encrypted backup of the identity and friends (Argon2id + AES-256-GCM)."""
        return _buffer_call(lib.coords_wallet_export_backup, self.handle, _utf8(passphrase, "passphrase"))

    def import_backup(self, backup: bytes, passphrase: str) -> str:
        """Restores a backup into this (empty) app; returns the identity's id. Raises ManagerError (ERR_WRONG_BACKUP_PASSPHRASE)."""
        return _buffer_call(lib.coords_wallet_import_backup, self.handle, _bytes(backup, "backup"), len(backup),
                            _utf8(passphrase, "passphrase")).decode()

    # Friends
    def add_friend_link(self, link: str) -> Friend:
        """Adds a friend from a `coord://` link; returns the friend record."""
        return Friend.from_json(_json_call(lib.coords_friends_add_link, self.handle, _utf8(link, "link")))

    def add_friend(self, id: str, server: str, name: str = "", share_with: bool = True, fetch_from: bool = True) -> Friend:
        """Adds a friend by public key id and relay; returns the friend record."""
        record = {"id": id, "server": server, "name": name, "share_with": share_with, "fetch_from": fetch_from}
        return Friend.from_json(_json_call(lib.coords_friends_add, self.handle, json.dumps(record).encode()))

    def update_friend(self, id: str, **changes: Any) -> Friend:
        """Changes fields of a friend (name, share_with, fetch_from, verified, colour, …); returns the record."""
        return Friend.from_json(_json_call(lib.coords_friends_update, self.handle, _utf8(id, "id"), json.dumps(changes).encode()))

    def remove_friend(self, id: str) -> None:
        """Forgets a friend. Raises ManagerError (ERR_FRIEND_NOT_FOUND)."""
        _call(lib.coords_friends_remove, self.handle, _utf8(id, "id"))

    def share_with(self, id: str, until_ms: Optional[int] = None) -> Friend:
        """Shares with a friend until `until_ms` (ms since the epoch; None: no end), resuming a
        paused share (PROTOCOL.md §9.3). When a share ends (its time, pause, remove, block, a
        conflict) the core queues the reseal itself; the host only runs its loop (due/report).

        Raises ManagerError (ERR_FRIEND_NOT_FOUND), ArgumentError for a bad id."""
        until = 0 if until_ms is None else until_ms
        if until < 0 or until >= 2**64:
            raise ValueError("until_ms must be 0 … 2**64-1")
        return Friend.from_json(_json_call(lib.coords_friends_share, self.handle, _utf8(id, "id"), until))

    def resolve_conflict(self, id: str, keep: str) -> Friend:
        """Ends a key conflict (PROTOCOL.md §9.2) after comparing safety numbers again: `keep`
        (one of the friend's conflict_keys) becomes their key, verified.

        Raises ManagerError (ERR_NOT_IN_CONFLICT, ERR_FRIEND_NOT_FOUND)."""
        return Friend.from_json(_json_call(lib.coords_friends_resolve_conflict, self.handle, _utf8(id, "id"), _utf8(keep, "keep")))

    def rotate(self, server: Optional[str] = None, revoke: bool = False) -> dict[str, Any]:
        """Rotates the identity (PROTOCOL.md §9.1): returns {"id", "statement", "statements"
        (OutboxEntry list: send each), "upload" (Upload or None), "delete_previous" (Request)}.
        `revoke` declares the old key compromised (§9.2).

        Raises ManagerError (ERR_NO_IDENTITY, ERR_NO_SERVER), WireError (ERR_INVALID_SERVER_URL)."""
        value = _json_call(lib.coords_wallet_rotate, self.handle, _text(server), bool(revoke))
        return {"id": value["id"], "statement": value["statement"],
                "statements": [OutboxEntry.from_json(x) for x in value["statements"]],
                "upload": None if value["upload"] is None else Upload.from_json(value["upload"]),
                "delete_previous": Request.from_json(value["delete_previous"])}

    def previous_identities(self) -> list[str]:
        """The ids this identity rotated from, oldest first."""
        return list(_json_call(lib.coords_wallet_previous_identities, self.handle))

    def queue_rotation_statements(self) -> list[OutboxEntry]:
        """Re-queues the pending rotation statement for friends still waiting for it."""
        return [OutboxEntry.from_json(x) for x in _json_call(lib.coords_messages_queue_rotation_statements, self.handle)]

    def pause(self, id: str) -> Friend:
        """Pauses sharing with a friend (fetching goes on); the reseal that keeps them from the
        newest blob is queued by the core in the same transaction (the loop, due/report, sends it).

        Raises ManagerError (ERR_FRIEND_NOT_FOUND)."""
        return Friend.from_json(_json_call(lib.coords_friends_pause, self.handle, _utf8(id, "id")))

    def friends(self) -> list[Friend]:
        """Every friend record."""
        return [Friend.from_json(x) for x in _json_call(lib.coords_friends_list, self.handle)]

    # Location
    def prepare_upload(self, fix: Location) -> Upload:
        """A signed upload of `fix` for every friend shared with: {"request", "fix_timestamp_ms", …}."""
        c_fix = _as_location(fix, "fix").to_c()
        return Upload.from_json(_json_call(lib.coords_location_prepare_upload, self.handle, byref(c_fix)))

    def prepare_reseal(self, force: bool = False) -> Optional[Upload]:
        """The last fix sealed again for the friends shared with now, or None when nobody lost
        their share; `force` reseals anyway. A host that runs the loop (due/report) never needs
        it: the core queues every reseal a share's end owes itself.

        Raises ManagerError (ERR_NO_IDENTITY, ERR_NO_SERVER)."""
        value = _json_call(lib.coords_location_prepare_reseal, self.handle, bool(force))
        return None if value is None else Upload.from_json(value)

    def next_share_expiry(self) -> Optional[int]:
        """When the next share ends (ms since the epoch), or None (next_wake() includes it)."""
        out = c_uint64()
        _call(lib.coords_location_next_share_expiry, self.handle, byref(out))
        return out.value or None

    def prepare_delete(self) -> Request:
        """A signed delete of our blob from our relay."""
        return Request.from_json(_json_call(lib.coords_location_prepare_delete, self.handle))

    def mark_upload_succeeded(self, fix_timestamp_ms: int) -> None:
        """Records that the upload of this fix reached the relay."""
        _call(lib.coords_location_mark_upload_succeeded, self.handle, fix_timestamp_ms)

    def mark_upload_failed(self, fix_timestamp_ms: int, reason: str) -> None:
        """Records that the upload of this fix failed (kept for a retry)."""
        _call(lib.coords_location_mark_upload_failed, self.handle, fix_timestamp_ms, _utf8(reason, "reason"))

    def prepare_fetches(self) -> list[Request]:
        """Fetch requests for every friend fetched from, one per relay and 50 ids."""
        return [Request.from_json(x) for x in _json_call(lib.coords_location_prepare_fetches, self.handle)]

    def process_fetch_response(self, body: bytes) -> FetchOutcome:
        """Verifies, opens and caches a fetch response; returns what changed."""
        return FetchOutcome.from_json(_json_call(lib.coords_location_process_fetch_response, self.handle, _bytes(body, "body"), len(body)))

    def friend_locations(self) -> list[FriendLocation]:
        """Every friend's last known position (with a place name when enabled)."""
        return [FriendLocation.from_json(x) for x in _json_call(lib.coords_location_friend_locations, self.handle)]

    # Outbox
    def enqueue(self, kind: str, request: Any, reference: Optional[str] = None) -> int:
        """Queues a prepared request in the outbox; returns its id (ids are never reused).
        `kind` is "upload", "reseal", "delete", "message", "receipt", "rotation" or "request";
        `reference` is an upload's fix timestamp, a message's id or a rotation's friend id.

        Raises ArgumentError (unknown kind), StoreError."""
        out = c_uint64()
        record = request.to_json() if isinstance(request, Request) else request
        _call(lib.coords_outbox_enqueue, self.handle, _utf8(kind, "kind"), json.dumps(record).encode(), _text(reference), byref(out))
        return out.value

    def outbox(self, due_only: bool = False) -> list[OutboxEntry]:
        """The queued requests (only those due now with due_only)."""
        return [OutboxEntry.from_json(x) for x in _json_call(lib.coords_outbox_pending, self.handle, due_only)]

    def queue_upload(self, fix: Location) -> tuple[Upload, int]:
        """Seals and signs an upload of `fix` and queues it in the outbox with its fix (so the
        core can sign it again when it grows stale); returns the upload and its outbox id.
        Deliver it with outbox_due()/outbox_report() (or coordscore.transport.deliver_outbox).

        Raises WireError (ERR_INVALID_LOCATION, ERR_STALE_LOCATION), ManagerError (ERR_NO_IDENTITY,
        ERR_NO_SERVER, ERR_FIX_IN_FUTURE), StoreError."""
        c_fix = _as_location(fix, "fix").to_c()
        record = _json_call(lib.coords_outbox_queue_upload, self.handle, byref(c_fix))
        return Upload.from_json(record), record["outbox_id"]

    def outbox_due(self, ignore_backoff: bool = False) -> list[OutboxEntry]:
        """The requests to send now, oldest first; the core signed again those whose signed time
        was stale or refused (an upload a newer one replaced leaves the outbox instead). Send each
        entry's `request` and give the answer to outbox_report(). With ignore_backoff, entries
        still waiting after a failure are handed out too (a person asked now).

        Raises StoreError."""
        return [OutboxEntry.from_json(x) for x in _json_call(lib.coords_outbox_due, self.handle, ignore_backoff)]

    def outbox_report(self, id: int, status: int, body: bytes = b"") -> OutboxReport:
        """Hands the relay's answer to entry `id` to the core, which decides and records it:
        "delivered" (2xx, or 409 to a message: the relay already has it), "retry" (status 0 = no
        answer, 408, 425, 429, 5xx; after a 1 s … 60 s backoff), "sign_again" (a 401 about the
        signed time), "dropped" (any other status), "unknown" (no such entry). For status 0,
        `body` may describe the failure (UTF-8). Nothing else to call: a delivered upload is
        recorded, a message marked sent, the next rotation statement queued.

        Raises ArgumentError (status not 0 or 100…999), StoreError."""
        return OutboxReport.from_json(_json_call(lib.coords_outbox_report, self.handle, id, status, _bytes(body, "body"), len(body)))

    # The one wake: a host is `while True: for r in due(): report(r.id, *perform(r.request)); sleep until next_wake()`

    def next_wake(self) -> Optional[int]:
        """When to call due() next (ms since the epoch; at or before now when something is due
        already), or None when nothing will be due without a call from the host (no identity yet,
        or nothing queued and no fetch interval). The earliest of every timer the core keeps:
        outbox retries, the end of a share (its reseal), disappearing messages, the next fetch and
        mailbox read, prekey upkeep, push renewal.

        Raises StoreError."""
        out = c_uint64()
        _call(lib.coords_app_next_wake, self.handle, byref(out))
        return out.value or None

    def due(self, now_ms: Optional[int] = None) -> list[HostRequest]:
        """Everything to perform now, each request signed now (outbox entries, fetches, the
        mailbox, acks, prekeys, bundles); the local work that is due (sweeps, the reseal a
        share's end owes) is done first. Perform each `request` and hand the answer to
        report(). A request is not handed out again until reported (or for 2 minutes).
        transport.run_once(app) does the whole round with the reference transport.

        Raises StoreError."""
        return [HostRequest.from_json(x) for x in _json_call(lib.coords_app_due, self.handle, now_ms or 0)]

    def report(self, id: int, status: int, body: bytes = b"") -> HostAnswer:
        """Hands the answer to request `id` (from due()) to the core, which does everything it
        implies: an outbox entry delivered, retried or dropped; positions or messages processed
        (their acks, receipts and resets come out of the next due()); prekeys and bundles
        recorded; a failed fetch retried after the backoff. `status` is the HTTP status, or 0 when
        no answer came (then `body` may describe the failure, UTF-8).

        Raises ArgumentError (status not 0 or 100…999, body too large), StoreError."""
        return HostAnswer.from_json(_json_call(lib.coords_app_report, self.handle, id, status, _bytes(body, "body"), len(body)))

    def fetch_now(self) -> None:
        """Makes the fetch of positions and of the mailbox due now (a push arrived, a live
        connection said something changed, the app came to the foreground)."""
        _call(lib.coords_app_fetch_now, self.handle)

    def set_fetch_interval(self, interval_ms: Optional[int]) -> None:
        """How often positions and the mailbox are fetched when nothing else asks (ms, at least
        1000; default 60000), or None to fetch only after fetch_now().

        Raises ArgumentError (not an integer ≥ 0)."""
        if interval_ms is not None and (not isinstance(interval_ms, int) or interval_ms < 0):
            raise ArgumentError(ERR_INVALID_ARGUMENT, "interval_ms must be a non-negative integer or None")
        _call(lib.coords_app_set_fetch_interval, self.handle, interval_ms or 0)

    def outbox_next_wake(self) -> Optional[int]:
        """When to call outbox_due() next (ms since the epoch; at or before now when something
        is due already), or None when the outbox is empty.

        Raises StoreError."""
        out = c_uint64()
        _call(lib.coords_outbox_next_wake, self.handle, byref(out))
        return out.value or None

    def mark_delivered(self, id: int) -> None:
        """Removes a delivered request from the outbox (prefer outbox_report)."""
        _call(lib.coords_outbox_mark_delivered, self.handle, id)

    def mark_failed(self, id: int, reason: str) -> None:
        """Records a failed attempt; the request is retried with backoff."""
        _call(lib.coords_outbox_mark_failed, self.handle, id, _utf8(reason, "reason"))

    def remove_queued(self, id: int) -> None:
        """Drops a queued request."""
        _call(lib.coords_outbox_remove, self.handle, id)

    # Messages (PROTOCOL.md §7)

    def send_message(self, friend_id: str, text: str) -> Sent:
        """Seals `text` for a friend, stores it and queues it in the outbox: deliver it with
        outbox_due()/outbox_report() (or send `.request` now and hand the answer to
        outbox_report(sent.outbox_id, status, body), which marks it sent)."""
        return Sent.from_json(_json_call(lib.coords_messages_send, self.handle, _utf8(friend_id, "friend_id"), _utf8(text, "text")))

    def begin_upload(self, fd: int) -> FileUpload:
        """Starts sending the regular file open for reading at `fd` (at most 100 MiB) to our
        relay; see FileUpload. Raises ArgumentError (ERR_FILE_IO, ERR_INVALID_ARGUMENT: not a
        regular file), WireError (ERR_OBJECT_MISMATCH: too large), ManagerError (no identity)."""
        handle = c_void_p()
        _call(lib.coords_upload_begin, self.handle, int(fd), byref(handle))
        return FileUpload(handle)

    def begin_download(self, message_id: str, fd: int) -> FileDownload:
        """Starts receiving message `message_id`'s attachment into `fd` (open for writing); see
        FileDownload. Raises ManagerError (ERR_UNKNOWN_MESSAGE, ERR_NO_ATTACHMENT), ArgumentError
        (ERR_FILE_IO)."""
        handle = c_void_p()
        _call(lib.coords_download_begin, self.handle, _utf8(message_id, "message_id"), int(fd), byref(handle))
        return FileDownload(handle)

    def mark_message_sent(self, message_id: str) -> None:
        """Marks a message as accepted by the relay (after 202 or 409) and removes its outbox
        entry; outbox_report does this itself."""
        _call(lib.coords_messages_mark_sent, self.handle, _utf8(message_id, "message_id"))

    def prepare_message_fetch(self) -> Request:
        """A recipient-signed GET of our mailbox (sign a fresh one per attempt)."""
        return Request.from_json(_json_call(lib.coords_messages_prepare_fetch, self.handle))

    def prepare_push_register(self, endpoint: str, ttl_seconds: int | None = None) -> Request:
        """A signed PUT of our relay's /v1/relay/push (PROTOCOL.md §8.7): the relay wakes the
        app at `endpoint` (an https:// UnifiedPush URL; http:// only for a loopback host, in
        tests) when an envelope arrives. `ttl_seconds` None = the relay's default (7 days). The
        core renews it silently: outbox_next_wake() includes the renewal (a day later, or half
        the ttl when shorter) and outbox_due() then hands out a fresh registration (a 400 or 404
        to it ends the renewals). The relay answers 200, 400 endpoint_refused, or 404 (no push).

        Raises CoordsError ERR_INVALID_PUSH_ENDPOINT, ERR_NO_IDENTITY, ERR_NO_SERVER."""
        ttl = 0 if ttl_seconds is None else ttl_seconds
        if ttl < 0 or ttl >= 2**64:
            raise ValueError("ttl_seconds must be 0 … 2**64-1")
        return Request.from_json(_json_call(lib.coords_messages_prepare_push_register, self.handle, _utf8(endpoint, "endpoint"), ttl))

    def prepare_push_unregister(self) -> Request:
        """A signed DELETE of our relay's /v1/relay/push: no more wakes.

        Raises CoordsError ERR_NO_IDENTITY, ERR_NO_SERVER."""
        return Request.from_json(_json_call(lib.coords_messages_prepare_push_unregister, self.handle))

    def process_messages(self, body: bytes) -> MessagesOutcome:
        """Verifies, opens and stores a mailbox response: send the outcome's acks and receipts."""
        return MessagesOutcome.from_json(
            _json_call(lib.coords_messages_process_fetch_response, self.handle, _bytes(body, "body"), len(body)))

    # Forward secrecy (PROTOCOL.md §10)

    def prepare_prekey_upload(self, force: bool = False) -> Optional[Request]:
        """The owner-signed PUT of our relay's /v1/relay/prekeys when something is due (a new
        signed prekey every 7 days; 100 one-time prekeys when the relay's stock is low or
        unknown), or None. Send it and pass the answer to process_prekey_upload.

        Raises CoordsError ERR_NO_IDENTITY, ERR_NO_SERVER."""
        obj = _json_call(lib.coords_prekeys_prepare_upload, self.handle, 1 if force else 0)
        return None if obj is None else Request.from_json(obj)

    def process_prekey_upload(self, status: int, body: bytes) -> Optional[int]:
        """Records the relay's answer to the prekey upload: the stock it now holds, or None
        when it refused the upload.

        Raises CoordsError ERR_INVALID_ARGUMENT (status not 100…999)."""
        out = c_int64()
        _call(lib.coords_prekeys_process_upload, self.handle, status, _bytes(body, "body"), len(body), byref(out))
        return None if out.value < 0 else out.value

    def prepare_prekey_stock(self) -> Request:
        """The owner-signed GET of our relay's /v1/relay/prekeys (our one-time prekey stock)."""
        return Request.from_json(_json_call(lib.coords_prekeys_prepare_stock, self.handle))

    def process_prekey_stock(self, status: int, body: bytes) -> Optional[int]:
        """Records the stock the relay reports (None for any other answer); the next
        prepare_prekey_upload refills a low stock."""
        out = c_int64()
        _call(lib.coords_prekeys_process_stock, self.handle, status, _bytes(body, "body"), len(body), byref(out))
        return None if out.value < 0 else out.value

    def bundles_due(self) -> list[str]:
        """Friends whose prekey bundle should be fetched now (each asked at most once an hour)."""
        return [str(x) for x in _json_call(lib.coords_prekeys_bundles_due, self.handle)]

    def prepare_bundle_request(self, friend_id: str) -> Request:
        """The signed GET of a friend's bundle from their relay.

        Raises CoordsError ERR_FRIEND_NOT_FOUND, ERR_INVALID_PUBLIC_KEY_ID, ERR_NO_IDENTITY."""
        return Request.from_json(_json_call(lib.coords_prekeys_prepare_bundle, self.handle, _utf8(friend_id, "friend_id")))

    def process_bundle(self, friend_id: str, status: int, body: bytes) -> dict[str, Any]:
        """Checks and stores a friend's bundle answer: {"result": "accepted", "one_time": b},
        {"result": "not_offered"} (404) or {"result": "refused", "error": {code, message}}
        (a wrong, unsigned, stale or someone else's bundle: nothing stored)."""
        result: dict[str, Any] = _json_call(
            lib.coords_prekeys_process_bundle, self.handle, _utf8(friend_id, "friend_id"), status, _bytes(body, "body"), len(body))
        return result

    def sweep_sessions(self) -> int:
        """Erases replaced signed prekeys past their keep time, idle sessions and old skipped
        keys (run daily); returns how many prekeys and sessions went."""
        out = c_uint64()
        _call(lib.coords_sessions_sweep, self.handle, byref(out))
        return out.value

    # Groups (PROTOCOL.md §11)

    def create_group(self, name: str, members: list[str]) -> GroupChange:
        """Creates a group with us as its admin and `members` (friends' ids); the statement and
        our sender key are queued for each member.

        Raises ManagerError ERR_INVALID_GROUP_MEMBERS, ERR_TOO_MANY_GROUPS; WireError
        ERR_MALFORMED_GROUP_STATEMENT (the name: 1–64 bytes, no control characters)."""
        return GroupChange.from_json(_json_call(lib.coords_groups_create, self.handle, _utf8(name, "name"),
                                                _utf8(json.dumps(members), "members")))

    def add_to_group(self, group: str, members: list[str]) -> GroupChange:
        """Adds friends to a group (admins only); they read only what is sent after they joined.

        Raises ManagerError ERR_GROUP_NOT_FOUND, ERR_NOT_A_GROUP_ADMIN, ERR_INVALID_GROUP_MEMBERS."""
        return GroupChange.from_json(_json_call(lib.coords_groups_add, self.handle, _utf8(group, "group"),
                                                _utf8(json.dumps(members), "members")))

    def remove_from_group(self, group: str, members: list[str]) -> GroupChange:
        """Removes members (admins only); every remaining member replaces its sender key.

        Raises ManagerError ERR_GROUP_NOT_FOUND, ERR_NOT_A_GROUP_ADMIN, ERR_INVALID_GROUP_MEMBERS."""
        return GroupChange.from_json(_json_call(lib.coords_groups_remove, self.handle, _utf8(group, "group"),
                                                _utf8(json.dumps(members), "members")))

    def rename_group(self, group: str, name: str) -> GroupChange:
        """Renames a group (admins only).

        Raises ManagerError ERR_GROUP_NOT_FOUND, ERR_NOT_A_GROUP_ADMIN; WireError ERR_MALFORMED_GROUP_STATEMENT."""
        return GroupChange.from_json(_json_call(lib.coords_groups_rename, self.handle, _utf8(group, "group"), _utf8(name, "name")))

    def set_group_admin(self, group: str, member: str, is_admin: bool) -> GroupChange:
        """Makes a member an admin or not (admins only; one admin always remains).

        Raises ManagerError ERR_GROUP_NOT_FOUND, ERR_NOT_A_GROUP_ADMIN, ERR_INVALID_GROUP_MEMBERS."""
        return GroupChange.from_json(_json_call(lib.coords_groups_set_admin, self.handle, _utf8(group, "group"),
                                                _utf8(member, "member"), 1 if is_admin else 0))

    def leave_group(self, group: str) -> GroupChange:
        """Leaves a group: the others are told, sending and sharing stop, its keys are erased.

        Raises ManagerError ERR_GROUP_NOT_FOUND, ERR_NOT_A_GROUP_MEMBER."""
        return GroupChange.from_json(_json_call(lib.coords_groups_leave, self.handle, _utf8(group, "group")))

    def delete_group(self, group: str) -> None:
        """Forgets a group we left, were removed from or are the last member of, with its messages.

        Raises ManagerError ERR_GROUP_NOT_FOUND, ERR_STILL_A_GROUP_MEMBER."""
        _call(lib.coords_groups_delete, self.handle, _utf8(group, "group"))

    def set_group_sharing(self, group: str, sharing: bool) -> Optional[OutboxEntry]:
        """Shares positions with the group's members or stops; returns the reseal of the last fix
        queued in the outbox (None when nothing was shared yet or nothing changed).

        Raises ManagerError ERR_GROUP_NOT_FOUND, ERR_NOT_A_GROUP_MEMBER."""
        obj = _json_call(lib.coords_groups_set_sharing, self.handle, _utf8(group, "group"), 1 if sharing else 0)
        return None if obj is None else OutboxEntry.from_json(obj)

    def send_group_message(self, group: str, text: str) -> GroupSent:
        """Seals `text` once with our sender key and queues one envelope per member.

        Raises ManagerError ERR_GROUP_NOT_FOUND, ERR_NOT_A_GROUP_MEMBER, ERR_GROUP_MESSAGE_TOO_LONG."""
        return GroupSent.from_json(_json_call(lib.coords_groups_send, self.handle, _utf8(group, "group"), _utf8(text, "text")))

    def groups(self) -> list[Group]:
        """Every group kept, by name."""
        return [Group.from_json(x) for x in _json_call(lib.coords_groups_list, self.handle)]

    def group_history(self, group: str, limit: int = 0) -> list[Message]:
        """A group's messages, oldest first (the last `limit` when > 0).

        Raises ManagerError ERR_GROUP_NOT_FOUND."""
        return [Message.from_json(x) for x in _json_call(lib.coords_groups_history, self.handle, _utf8(group, "group"), limit)]

    def conversations(self) -> list[Conversation]:
        """One summary per friend with messages."""
        return [Conversation.from_json(x) for x in _json_call(lib.coords_messages_conversations, self.handle)]

    def history(self, friend_id: str, limit: int = 0) -> list[Message]:
        """The messages with a friend, oldest first (the last `limit` when > 0)."""
        return [Message.from_json(x) for x in _json_call(lib.coords_messages_history, self.handle, _utf8(friend_id, "friend_id"), limit)]

    def set_disappearing(self, friend_id: str, seconds: Optional[int]) -> None:
        """Deletes local copies of a conversation's messages after `seconds` (None: keep)."""
        _call(lib.coords_messages_set_disappearing, self.handle, _utf8(friend_id, "friend_id"), seconds or 0)

    def mute(self, conversation: str, until_ms: Optional[int] = None) -> None:
        """Mutes the conversation with a friend (their id) or a group (its id) until `until_ms`
        (Unix ms; None: until unmuted). Messages still arrive; they do not notify.

        Raises ManagerError (ERR_UNKNOWN_CONVERSATION), CoordsError (ERR_INVALID_ARGUMENT)."""
        if until_ms is None:
            until_ms = MUTED_FOREVER
        if not isinstance(until_ms, int) or not 1 <= until_ms <= MUTED_FOREVER:
            raise ValueError("until_ms must be an int from 1 to MUTED_FOREVER (use unmute() to end a mute)")
        _call(lib.coords_messages_mute, self.handle, _utf8(conversation, "conversation"), until_ms)

    def unmute(self, conversation: str) -> None:
        """Ends a mute. Raises ManagerError (ERR_UNKNOWN_CONVERSATION)."""
        _call(lib.coords_messages_mute, self.handle, _utf8(conversation, "conversation"), 0)

    def muted_until(self, conversation: str) -> Optional[int]:
        """Until when the conversation is muted (Unix ms; MUTED_FOREVER: until unmuted), or None
        when it is not muted now. Raises ManagerError (ERR_UNKNOWN_CONVERSATION)."""
        out = c_uint64()
        _call(lib.coords_messages_muted_until, self.handle, _utf8(conversation, "conversation"), byref(out))
        return out.value or None

    def set_quiet_hours(self, window: Optional[str], utc_offset_minutes: int = 0) -> None:
        """Quiet hours "HH:MM-HH:MM" in local time `utc_offset_minutes` from UTC (None: off): no
        message received inside the window notifies. Set it again when the offset changes.

        Raises ManagerError (ERR_INVALID_QUIET_HOURS) for a malformed or empty window or an
        offset beyond 14 hours."""
        if window is None:
            _call(lib.coords_messages_set_quiet_hours, self.handle, -1, 0, 0)
            return
        start, end = c_int32(), c_int32()
        _call(lib.coords_quiet_hours_parse, _utf8(window, "window"), byref(start), byref(end))
        if not isinstance(utc_offset_minutes, int) or not -840 <= utc_offset_minutes <= 840:
            raise ManagerError(ERR_INVALID_QUIET_HOURS, "invalid quiet hours: the offset from UTC is at most 14 hours either way")
        _call(lib.coords_messages_set_quiet_hours, self.handle, start.value, end.value, utc_offset_minutes)

    def set_delivery_receipts(self, on: bool) -> None:
        """Delivery receipts for received texts on (the default) or off (no receipt tells a
        friend, or the relay, when this app fetched)."""
        _call(lib.coords_messages_set_receipts, self.handle, 1 if on else 0)

    def notification_policy(self) -> dict[str, Any]:
        """{"quiet_hours": {"start_minute", "end_minute", "utc_offset_minutes", "text"} | None,
        "delivery_receipts": bool}."""
        policy: dict[str, Any] = _json_call(lib.coords_messages_notification_policy, self.handle)
        return policy

    def sweep_expired_messages(self) -> list[str]:
        """Deletes messages past their disappearing time and destroys the keys they were sealed
        under once their minute has passed (no later copy of the store opens them); returns
        their ids.

        Raises StoreError, ManagerError (ERR_KEYCHAIN_*)."""
        swept: list[str] = _json_call(lib.coords_messages_sweep_expired, self.handle)
        return swept

    def next_message_expiry(self) -> Optional[int]:
        """When sweep_expired_messages() should run next (ms since the epoch), or None when no
        stored message disappears. history() hides a message from its own expiry on.

        Raises StoreError."""
        out = c_uint64()
        _call(lib.coords_messages_next_expiry, self.handle, byref(out))
        return out.value or None

    def rekey(self) -> None:
        """Replaces the store's key: a new random key, every value sealed again under it, the
        old key destroyed. Crash-safe: after a kill at any point the app opens with the old key
        or the new one. Other calls wait while it runs.

        Raises StoreError (ERR_SEALED_VALUE_REJECTED for a damaged value: nothing changes),
        ManagerError (ERR_KEYCHAIN_*)."""
        _call(lib.coords_app_rekey, self.handle)

    # Live channel (PROTOCOL.md §8): this module prepares and processes; you own the WebSockets.

    def live_connections(self) -> list[LiveConnection]:
        """The relays to hold a live WebSocket to (friends grouped by relay; the own relay also
        carries the mailbox). Relays that answered 404 are left out: poll them."""
        return [LiveConnection.from_json(x) for x in _json_call(lib.coords_live_connections, self.handle)]

    def live_opened(self, server: str) -> LiveOpened:
        """A connection to `server` opened: the frames to send and the catch-up to perform."""
        return LiveOpened.from_json(_json_call(lib.coords_live_opened, self.handle, _utf8(server, "server")))

    def live_process(self, server: str, frame: bytes) -> LiveEvent:
        """One text frame (UTF-8 bytes or str) received from `server`. Raises CoordsError for a
        malformed frame (close with 4400 and reconnect)."""
        data = _utf8(frame, "frame") if isinstance(frame, str) else frame
        return LiveEvent.from_json(_json_call(lib.coords_live_process, self.handle, _utf8(server, "server"), _bytes(data, "frame"), len(data)))

    def live_mailbox_fetched(self, server: str) -> Optional[Request]:
        """The mailbox fetch of a "message_waiting" event from `server` was performed (or given
        up). Returns one more signed fetch when message notices arrived meanwhile (perform it and
        call this again), None when the burst is done. Raises CoordsError (NO_IDENTITY, NO_SERVER)."""
        fetch = _json_call(lib.coords_live_mailbox_fetched, self.handle, _utf8(server, "server"))
        return None if fetch is None else Request.from_json(fetch)

    def live_closed(self, server: str, close_code: Optional[int] = None, upgrade_status: Optional[int] = None) -> Optional[int]:
        """The connection to `server` closed (`close_code` the relay sent) or could not be opened
        (`upgrade_status`: the upgrade's HTTP status). Returns the milliseconds to wait before
        reconnecting, or None when the relay has no live channel (404): poll it instead."""
        nxt = _json_call(lib.coords_live_closed, self.handle, _utf8(server, "server"), close_code or 0, upgrade_status or 0)
        return nxt["after_ms"] if nxt["action"] == "reconnect" else None

    def live_stopped(self, server: str) -> None:
        """The host closed its connection to `server` itself (background, stop watching); for a
        close it did not ask for, call live_closed. While a connection is confirmed, due() leaves
        the friends watched there and the mailbox out of its periodic fetches; after this they are
        fetched again, so ask next_wake() again. A relay without a connection is ignored.
        Raises CoordsError (INVALID_ARGUMENT for a server that is not a str)."""
        _call(lib.coords_live_stopped, self.handle, _utf8(server, "server"))

