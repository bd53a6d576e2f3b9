"""CoordsCore for Python: end-to-end encrypted location sharing, on libcoordscore (the C ABI).

    import coordscore as cc
    seed, public = cc.generate_identity()
    blob = cc.seal(cc.Location(47.3769, 8.5417, timestamp_ms=1763805600000), [public])
    print(cc.open_blob(seed, blob))

The wheel carries a portable libcoordscore.so (it needs only libsodium and LMDB). The library is
found next to this file, then through $COORDSCORE_LIB, then in a source checkout's build folders,
then on the system library path. Every C function has its argtypes/restype set (ctypes would
otherwise truncate pointers to 32 bits), every buffer the library returns is freed, and every
failure raises a subclass of `CoordsError` carrying the library's stable `.code` and `.message`
(docs/ABI.md): `ArgumentError` and `WireError` (also `ValueError`: the input was bad),
`CryptoError`, `StoreError`, `ChannelError`, `ManagerError`, `GeocodingError`.
"""
from __future__ import annotations

import base64
import ctypes
import ctypes.util
import json
import logging
import os
import threading
import warnings
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_bool, c_char_p, c_double, c_float, c_int32, c_int64,
                    c_size_t, c_uint8, c_uint32, c_uint64, c_void_p)
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Optional, TypeVar

_logger = logging.getLogger("coordscore")

__version__ = "1.0.0"
"""The CoordsCore release (the same as `coords_version()`, `coords --version`)."""

ABI_VERSION = 1

# Error codes: every COORDS_ERR_* of include/coordscore.h, with the same name and value
# (tests/python/test_errors.py holds the two against each other).
OK = 0
ERR_NULL_ARGUMENT = 100
ERR_INVALID_LENGTH = 101
ERR_INVALID_UTF8 = 102
ERR_INVALID_ARGUMENT = 103
ERR_INVALID_HANDLE = 104
ERR_TOO_LARGE = 105
ERR_ABI_MISMATCH = 106
ERR_FILE_IO = 107
ERR_INTERNAL = 199
ERR_CRYPTO_INIT = 200
ERR_UNSUPPORTED_HARDWARE = 201
ERR_INVALID_KEY_LENGTH = 202
ERR_INVALID_PUBLIC_KEY = 203
ERR_INVALID_NONCE_LENGTH = 204
ERR_AUTHENTICATION_FAILED = 205
ERR_CIPHERTEXT_TOO_SHORT = 206
ERR_WEAK_PUBLIC_KEY = 207
ERR_INVALID_CRYPTO_PARAMETER = 208
ERR_RANDOM_SOURCE = 209
ERR_CRYPTO_OUT_OF_MEMORY = 210
ERR_INVALID_LOCATION = 300
ERR_INVALID_WIRE_LOCATION = 301
ERR_BLOB_TOO_SHORT = 310
ERR_UNSUPPORTED_BLOB_VERSION = 311
ERR_BLOB_TRUNCATED = 312
ERR_NOT_A_RECIPIENT = 313
ERR_INVALID_EPHEMERAL_KEY = 314
ERR_BLOB_TAMPERED = 315
ERR_INVALID_LOCATION_PLAINTEXT = 316
ERR_TOO_MANY_RECIPIENTS = 317
ERR_NO_RECIPIENTS = 318
ERR_INVALID_RECIPIENT_KEY = 319
ERR_INVALID_BASE64 = 330
ERR_INVALID_BYTE_LENGTH = 331
ERR_INVALID_JSON = 332
ERR_UNEXPECTED_JSON = 333
ERR_INVALID_SERVER_URL = 340
ERR_INVALID_PUBLIC_KEY_ID = 341
ERR_TAMPERED_ENTRY = 342
ERR_UNVERIFIED_ENTRY = 343
ERR_ROLLBACK = 344
ERR_RELAY_ERROR = 345
ERR_STALE_LOCATION = 346
ERR_INVALID_FRIEND_LINK = 350
ERR_INVALID_ENVELOPE = 360
ERR_ENVELOPE_SIGNATURE = 361
ERR_ENVELOPE_NOT_FOR_ME = 362
ERR_ENVELOPE_EXPIRED = 363
ERR_ENVELOPE_TAMPERED = 364
ERR_INVALID_ROTATION = 370
ERR_RETIRED_KEY = 371
ERR_INVALID_PREKEY_BUNDLE = 380
ERR_PREKEY_BUNDLE_EXPIRED = 381
ERR_MALFORMED_SESSION_MESSAGE = 385
ERR_UNKNOWN_PREKEY = 386
ERR_REPLAYED_HANDSHAKE = 387
ERR_DUPLICATE_MESSAGE = 388
ERR_TOO_MANY_SKIPPED = 389
ERR_SESSION_BROKEN = 390
ERR_DOWNGRADE_REFUSED = 391
ERR_PREKEYS_UNAVAILABLE = 392
ERR_MALFORMED_GROUP_STATEMENT = 393
ERR_GROUP_SIGNATURE_INVALID = 394
ERR_MALFORMED_GROUP_MESSAGE = 395
ERR_MALFORMED_FILE = 396
ERR_BAD_CHUNK = 397
ERR_OBJECT_MISMATCH = 398
ERR_QR_UNENCODABLE = 399
ERR_STORE_OPEN_FAILED = 400
ERR_STORE_ALREADY_OPEN = 401
ERR_STORE_FULL = 402
ERR_STORE_CORRUPTED = 403
ERR_STORE_FAILURE = 404
ERR_STORE_CLOSED = 405
ERR_UNKNOWN_TABLE = 410
ERR_TABLE_TYPE_MISMATCH = 411
ERR_TOO_MANY_TABLES = 412
ERR_TRANSACTION_CLOSED = 420
ERR_NESTED_WRITE = 421
ERR_DECODING_FAILED = 430
ERR_ENCODING_FAILED = 431
ERR_INVALID_KEY_SIZE = 432
ERR_SCHEMA_TOO_NEW = 440
ERR_MIGRATION_FAILED = 441
ERR_SEALED_VALUE_REJECTED = 450
ERR_WRONG_STORE_KEY = 451
ERR_STORE_KEY_REQUIRED = 452
ERR_STORE_KEY_MISSING = 453
ERR_UNSEALED_STORE = 454
ERR_UNSUPPORTED_SCAN = 455
ERR_EMPTY = 500
ERR_FULL = 501
ERR_CLOSED = 502
ERR_TIMED_OUT = 503
ERR_CANCELLED = 504
ERR_NO_IDENTITY = 600
ERR_IDENTITY_EXISTS = 601
ERR_INVALID_BACKUP = 602
ERR_WRONG_BACKUP_PASSPHRASE = 603
ERR_UNSUPPORTED_BACKUP_VERSION = 604
ERR_NO_SERVER = 605
ERR_FRIEND_NOT_FOUND = 610
ERR_CANNOT_ADD_SELF = 611
ERR_NOT_IN_CONFLICT = 612
ERR_IN_CONFLICT = 613
ERR_UNKNOWN_UPLOAD = 620
ERR_FIX_IN_FUTURE = 621
ERR_FRIEND_BLOCKED = 630
ERR_MESSAGE_TOO_LONG = 631
ERR_INVALID_MAILBOX_RESPONSE = 632
ERR_INVALID_PUSH_ENDPOINT = 633
ERR_INVALID_QUIET_HOURS = 634
ERR_UNKNOWN_CONVERSATION = 635
ERR_UNKNOWN_MESSAGE = 636
ERR_NO_ATTACHMENT = 637

MUTED_FOREVER = 2**64 - 1
"""A mute that lasts until unmute() (UINT64_MAX at the C ABI)."""
ERR_WRONG_PASSPHRASE = 650
ERR_KEYCHAIN_CORRUPTED = 651
ERR_KEYCHAIN_IO = 652
ERR_KEYCHAIN_INVALID_NAME = 653
ERR_HOST_KEYCHAIN = 654
ERR_GROUP_NOT_FOUND = 660
ERR_NOT_A_GROUP_MEMBER = 661
ERR_NOT_A_GROUP_ADMIN = 662
ERR_TOO_MANY_GROUPS = 663
ERR_INVALID_GROUP_MEMBERS = 664
ERR_GROUP_MESSAGE_TOO_LONG = 665
ERR_NOT_INVITED = 666
ERR_STALE_GROUP_STATEMENT = 667
ERR_GROUP_FORK_LIMIT = 668
ERR_UNKNOWN_GROUP_CHAIN = 669
ERR_GROUP_CHAIN_CONFLICT = 670
ERR_STILL_A_GROUP_MEMBER = 671
ERR_GROUP_MESSAGE_DROPPED = 672
ERR_INVALID_COORDINATE = 700
ERR_DAMAGED_PLACE_DATA = 701
ERR_UNSUPPORTED_PLACE_DATA = 702
ERR_UNREADABLE_PLACE_FILE = 703


class CoordsError(Exception):
    """A failed call: `code` is the stable COORDS_ERR_* value, `message` the library's text.

    `CoordsError.from_code(code, message)` builds the subclass for the code's layer (100–199
    arguments, 200–299 crypto, 300–399 wire format, 400–499 store, 500–599 channels, 600–699
    managers and keychains, 700–799 geocoding)."""

    def __init__(self, code: int, message: str):
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message

    @staticmethod
    def from_code(code: int, message: str) -> "CoordsError":
        """The exception of the right class for `code`."""
        for low, cls in _ERROR_CLASSES:
            if low <= code < low + 100:
                return cls(code, message)
        return CoordsError(code, message)


class ArgumentError(CoordsError, ValueError):
    """100–199: an argument the library refused (NULL, wrong length, not UTF-8, bad option, closed handle)."""


class CryptoError(CoordsError):
    """200–299: a cryptographic operation failed (authentication, invalid key, no AES-NI)."""


class WireError(CoordsError, ValueError):
    """300–399: bytes or text that are not valid Coords wire format (blobs, links, JSON, envelopes)."""


class StoreError(CoordsError):
    """400–499: the LMDB store (already open, full, damaged)."""


class ChannelError(CoordsError):
    """500–599: update channels (closed, timed out)."""


class ManagerError(CoordsError):
    """600–699: app state (no identity, unknown friend, wrong passphrase, damaged keychain)."""


class GeocodingError(CoordsError, ValueError):
    """700–799: place lookups (a position not on Earth, damaged place data)."""


_ERROR_CLASSES = [(100, ArgumentError), (200, CryptoError), (300, WireError), (400, StoreError),
                  (500, ChannelError), (600, ManagerError), (700, GeocodingError)]

CoordsException = CoordsError
"""The name of the base exception before 1.0 (kept as an alias)."""


class CoordsErrorStruct(Structure):
    """The C `CoordsError` {code, message}: message owned by the library (coords_error_free)."""
    _fields_ = [("code", c_int32), ("message", c_void_p)]  # c_void_p: keep the pointer to free it


class CoordsBuffer(Structure):
    """The C `CoordsBuffer` {data, len}: owned by the library until coords_buffer_free."""
    _fields_ = [("data", POINTER(c_uint8)), ("len", c_size_t)]


class CoordsLocation(Structure):
    """The C `CoordsLocation`: degrees, metres, fix time in ms since the epoch."""
    _fields_ = [("latitude", c_double), ("longitude", c_double), ("altitude", c_double), ("accuracy", c_float),
                ("timestamp_ms", c_uint64)]


class CoordsHostRequest(Structure):
    """The C `CoordsHostRequest` of coords_app_due_next (C hosts that parse no JSON; Python uses App.due)."""
    _fields_ = [("id", c_uint64), ("purpose", CoordsBuffer), ("method", CoordsBuffer), ("url", CoordsBuffer),
                ("headers", CoordsBuffer), ("body", CoordsBuffer), ("max_response_bytes", c_uint64)]


KEYCHAIN_SAVE = CFUNCTYPE(c_int32, c_void_p, c_char_p, POINTER(c_uint8), c_size_t)
KEYCHAIN_LOAD = CFUNCTYPE(c_int32, c_void_p, c_char_p, POINTER(c_uint8), c_size_t, POINTER(c_size_t))
KEYCHAIN_REMOVE = CFUNCTYPE(c_int32, c_void_p, c_char_p)
UPDATE_CALLBACK = CFUNCTYPE(None, c_void_p, POINTER(c_uint8), c_size_t)


class CoordsKeychainCallbacks(Structure):
    """The C keychain callback table (see Keychain for the Python side)."""
    _fields_ = [("context", c_void_p), ("save", KEYCHAIN_SAVE), ("load", KEYCHAIN_LOAD), ("remove", KEYCHAIN_REMOVE)]


assert ctypes.sizeof(CoordsLocation) == 40 and ctypes.sizeof(CoordsBuffer) == 2 * ctypes.sizeof(c_void_p)

_U8 = POINTER(c_uint8)
_ERR = POINTER(CoordsErrorStruct)
_BUF = POINTER(CoordsBuffer)
_LOC = POINTER(CoordsLocation)
_APP = c_void_p

# (name, restype, argtypes) for every function of the header.
_SIGNATURES = [
    ("coords_abi_version", c_uint32, []),
    ("coords_version", c_char_p, []),
    ("coords_error_free", None, [_ERR]),
    ("coords_buffer_free", None, [_BUF]),
    ("coords_identity_generate", c_int32, [_U8, _U8, _ERR]),
    ("coords_identity_public_from_seed", c_int32, [_U8, _U8, _ERR]),
    ("coords_sign", c_int32, [_U8, _U8, c_size_t, _U8, _ERR]),
    ("coords_verify", c_int32, [_U8, _U8, c_size_t, _U8, _ERR]),
    ("coords_blob_seal", c_int32, [_LOC, _U8, c_size_t, _BUF, _ERR]),
    ("coords_blob_open", c_int32, [_U8, _U8, c_size_t, _LOC, _ERR]),
    ("coords_prepare_upload", c_int32, [_U8, _LOC, c_char_p, c_char_p, _BUF, _ERR]),
    ("coords_prepare_fetch", c_int32, [c_char_p, _BUF, _ERR]),
    ("coords_process_fetch_response", c_int32, [_U8, _U8, c_size_t, _BUF, _ERR]),
    ("coords_friend_link_generate", c_int32, [_U8, c_char_p, c_char_p, _BUF, _ERR]),
    ("coords_friend_link_parse", c_int32, [c_char_p, _BUF, _ERR]),
    ("coords_public_key_b64url", c_int32, [_U8, _BUF, _ERR]),
    ("coords_qr_encode", c_int32, [c_char_p, _BUF, POINTER(c_uint32), _ERR]),
    ("coords_qr_svg", c_int32, [c_char_p, c_uint32, _BUF, _ERR]),
    ("coords_safety_number", c_int32, [_U8, _U8, _BUF, _ERR]),
    ("coords_may_reuse_fix", c_int32, [c_uint64, c_uint64, c_char_p, POINTER(c_bool), _ERR]),
    ("coords_may_reuse_location", c_int32, [_LOC, c_uint64, c_char_p, POINTER(c_bool), _ERR]),
    ("coords_app_open", c_int32, [c_char_p, c_char_p, POINTER(_APP), _ERR]),
    ("coords_app_open_with_keychain", c_int32, [c_char_p, c_char_p, POINTER(CoordsKeychainCallbacks), POINTER(_APP), _ERR]),
    ("coords_app_close", c_int32, [_APP, _ERR]),
    ("coords_app_rekey", c_int32, [_APP, _ERR]),
    ("coords_app_next_update", c_int32, [_APP, c_int64, _BUF, _ERR]),
    ("coords_app_set_update_callback", c_int32, [_APP, UPDATE_CALLBACK, c_void_p, _ERR]),
    ("coords_wallet_create_identity", c_int32, [_APP, c_char_p, c_char_p, _BUF, _ERR]),
    ("coords_wallet_import_seed", c_int32, [_APP, _U8, c_char_p, c_char_p, _BUF, _ERR]),
    ("coords_wallet_set_profile", c_int32, [_APP, c_char_p, c_char_p, _ERR]),
    ("coords_wallet_set_strict_mode", c_int32, [_APP, c_bool, _ERR]),
    ("coords_wallet_info", c_int32, [_APP, _BUF, _ERR]),
    ("coords_wallet_public_key", c_int32, [_APP, _U8, _ERR]),
    ("coords_wallet_friend_link", c_int32, [_APP, _BUF, _ERR]),
    ("coords_wallet_safety_number", c_int32, [_APP, _U8, _BUF, _ERR]),
    ("coords_wallet_sign", c_int32, [_APP, _U8, c_size_t, _U8, _ERR]),
    ("coords_wallet_export_backup", c_int32, [_APP, c_char_p, _BUF, _ERR]),
    ("coords_wallet_import_backup", c_int32, [_APP, _U8, c_size_t, c_char_p, _BUF, _ERR]),
    ("coords_friends_add_link", c_int32, [_APP, c_char_p, _BUF, _ERR]),
    ("coords_friends_add", c_int32, [_APP, c_char_p, _BUF, _ERR]),
    ("coords_friends_update", c_int32, [_APP, c_char_p, c_char_p, _BUF, _ERR]),
    ("coords_friends_remove", c_int32, [_APP, c_char_p, _ERR]),
    ("coords_friends_list", c_int32, [_APP, _BUF, _ERR]),
    ("coords_location_prepare_upload", c_int32, [_APP, _LOC, _BUF, _ERR]),
    ("coords_location_prepare_delete", c_int32, [_APP, _BUF, _ERR]),
    ("coords_location_mark_upload_succeeded", c_int32, [_APP, c_uint64, _ERR]),
    ("coords_location_mark_upload_failed", c_int32, [_APP, c_uint64, c_char_p, _ERR]),
    ("coords_location_prepare_fetches", c_int32, [_APP, _BUF, _ERR]),
    ("coords_location_process_fetch_response", c_int32, [_APP, _U8, c_size_t, _BUF, _ERR]),
    ("coords_location_friend_locations", c_int32, [_APP, _BUF, _ERR]),
    ("coords_friends_share", c_int32, [_APP, c_char_p, c_uint64, _BUF, _ERR]),
    ("coords_friends_resolve_conflict", c_int32, [_APP, c_char_p, c_char_p, _BUF, _ERR]),
    ("coords_wallet_rotate", c_int32, [_APP, c_char_p, c_bool, _BUF, _ERR]),
    ("coords_wallet_previous_identities", c_int32, [_APP, _BUF, _ERR]),
    ("coords_messages_queue_rotation_statements", c_int32, [_APP, _BUF, _ERR]),
    ("coords_friends_pause", c_int32, [_APP, c_char_p, _BUF, _ERR]),
    ("coords_location_prepare_reseal", c_int32, [_APP, c_bool, _BUF, _ERR]),
    ("coords_location_next_share_expiry", c_int32, [_APP, POINTER(c_uint64), _ERR]),
    ("coords_outbox_enqueue", c_int32, [_APP, c_char_p, c_char_p, c_char_p, POINTER(c_uint64), _ERR]),
    ("coords_outbox_pending", c_int32, [_APP, c_bool, _BUF, _ERR]),
    ("coords_outbox_queue_upload", c_int32, [_APP, _LOC, _BUF, _ERR]),
    ("coords_outbox_due", c_int32, [_APP, c_bool, _BUF, _ERR]),
    ("coords_outbox_report", c_int32, [_APP, c_uint64, c_int32, _U8, c_size_t, _BUF, _ERR]),
    ("coords_outbox_next_wake", c_int32, [_APP, POINTER(c_uint64), _ERR]),
    ("coords_app_next_wake", c_int32, [_APP, POINTER(c_uint64), _ERR]),
    ("coords_app_due", c_int32, [_APP, c_uint64, _BUF, _ERR]),
    ("coords_app_report", c_int32, [_APP, c_uint64, c_int32, _U8, c_size_t, _BUF, _ERR]),
    ("coords_app_fetch_now", c_int32, [_APP, _ERR]),
    ("coords_app_due_next", c_int32, [_APP, c_uint64, POINTER(CoordsHostRequest), _ERR]),
    ("coords_host_request_free", None, [POINTER(CoordsHostRequest)]),
    ("coords_app_set_fetch_interval", c_int32, [_APP, c_uint64, _ERR]),
    ("coords_outbox_mark_delivered", c_int32, [_APP, c_uint64, _ERR]),
    ("coords_outbox_mark_failed", c_int32, [_APP, c_uint64, c_char_p, _ERR]),
    ("coords_outbox_remove", c_int32, [_APP, c_uint64, _ERR]),
    ("coords_envelope_seal", c_int32, [_U8, _U8, _U8, c_size_t, c_uint64, c_uint64, _BUF, _ERR]),
    ("coords_envelope_open", c_int32, [_U8, _U8, c_char_p, c_uint64, _BUF, _ERR]),
    ("coords_messages_send", c_int32, [_APP, c_char_p, c_char_p, _BUF, _ERR]),
    ("coords_messages_mark_sent", c_int32, [_APP, c_char_p, _ERR]),
    ("coords_messages_prepare_fetch", c_int32, [_APP, _BUF, _ERR]),
    ("coords_messages_prepare_push_register", c_int32, [_APP, c_char_p, c_uint64, _BUF, _ERR]),
    ("coords_messages_prepare_push_unregister", c_int32, [_APP, _BUF, _ERR]),
    ("coords_messages_process_fetch_response", c_int32, [_APP, _U8, c_size_t, _BUF, _ERR]),
    ("coords_messages_conversations", c_int32, [_APP, _BUF, _ERR]),
    ("coords_messages_history", c_int32, [_APP, c_char_p, c_uint32, _BUF, _ERR]),
    ("coords_messages_set_disappearing", c_int32, [_APP, c_char_p, c_uint64, _ERR]),
    ("coords_messages_mute", c_int32, [_APP, c_char_p, c_uint64, _ERR]),
    ("coords_messages_muted_until", c_int32, [_APP, c_char_p, POINTER(c_uint64), _ERR]),
    ("coords_messages_set_quiet_hours", c_int32, [_APP, c_int32, c_int32, c_int32, _ERR]),
    ("coords_messages_set_receipts", c_int32, [_APP, c_int32, _ERR]),
    ("coords_messages_notification_policy", c_int32, [_APP, _BUF, _ERR]),
    ("coords_quiet_hours_parse", c_int32, [c_char_p, POINTER(c_int32), POINTER(c_int32), _ERR]),
    ("coords_messages_sweep_expired", c_int32, [_APP, _BUF, _ERR]),
    ("coords_messages_next_expiry", c_int32, [_APP, POINTER(c_uint64), _ERR]),
    ("coords_groups_create", c_int32, [_APP, c_char_p, c_char_p, _BUF, _ERR]),
    ("coords_groups_add", c_int32, [_APP, c_char_p, c_char_p, _BUF, _ERR]),
    ("coords_groups_remove", c_int32, [_APP, c_char_p, c_char_p, _BUF, _ERR]),
    ("coords_groups_rename", c_int32, [_APP, c_char_p, c_char_p, _BUF, _ERR]),
    ("coords_groups_set_admin", c_int32, [_APP, c_char_p, c_char_p, c_int32, _BUF, _ERR]),
    ("coords_groups_leave", c_int32, [_APP, c_char_p, _BUF, _ERR]),
    ("coords_groups_delete", c_int32, [_APP, c_char_p, _ERR]),
    ("coords_groups_set_sharing", c_int32, [_APP, c_char_p, c_int32, _BUF, _ERR]),
    ("coords_groups_send", c_int32, [_APP, c_char_p, c_char_p, _BUF, _ERR]),
    ("coords_groups_list", c_int32, [_APP, _BUF, _ERR]),
    ("coords_groups_history", c_int32, [_APP, c_char_p, c_uint32, _BUF, _ERR]),
    ("coords_prekeys_prepare_upload", c_int32, [_APP, c_int32, _BUF, _ERR]),
    ("coords_prekeys_process_upload", c_int32, [_APP, c_int32, _U8, c_size_t, POINTER(c_int64), _ERR]),
    ("coords_prekeys_prepare_stock", c_int32, [_APP, _BUF, _ERR]),
    ("coords_prekeys_process_stock", c_int32, [_APP, c_int32, _U8, c_size_t, POINTER(c_int64), _ERR]),
    ("coords_prekeys_bundles_due", c_int32, [_APP, _BUF, _ERR]),
    ("coords_prekeys_prepare_bundle", c_int32, [_APP, c_char_p, _BUF, _ERR]),
    ("coords_prekeys_process_bundle", c_int32, [_APP, c_char_p, c_int32, _U8, c_size_t, _BUF, _ERR]),
    ("coords_sessions_sweep", c_int32, [_APP, POINTER(c_uint64), _ERR]),
    ("coords_live_connections", c_int32, [_APP, _BUF, _ERR]),
    ("coords_live_opened", c_int32, [_APP, c_char_p, _BUF, _ERR]),
    ("coords_live_process", c_int32, [_APP, c_char_p, _U8, c_size_t, _BUF, _ERR]),
    ("coords_live_closed", c_int32, [_APP, c_char_p, c_int32, c_int32, _BUF, _ERR]),
    ("coords_live_mailbox_fetched", c_int32, [_APP, c_char_p, _BUF, _ERR]),
    ("coords_geocode_nearest", c_int32, [c_double, c_double, c_double, _BUF, _ERR]),
    ("coords_places_open", c_int32, [c_char_p, POINTER(c_void_p), _ERR]),
    ("coords_places_nearest", c_int32, [c_void_p, c_double, c_double, c_double, _BUF, _ERR]),
    ("coords_places_count", c_int32, [c_void_p, POINTER(c_uint64), _ERR]),
    ("coords_places_close", c_int32, [c_void_p, _ERR]),
    ("coords_upload_begin", c_int32, [_APP, c_int32, POINTER(c_void_p), _ERR]),
    ("coords_upload_next", c_int32, [c_void_p, POINTER(c_int32), _BUF, _ERR]),
    ("coords_upload_probe", c_int32, [c_void_p, _BUF, _ERR]),
    ("coords_upload_process", c_int32, [c_void_p, c_int32, _U8, c_size_t, c_char_p, POINTER(c_uint64), _ERR]),
    ("coords_upload_progress", c_int32, [c_void_p, POINTER(c_uint64), POINTER(c_uint64), _ERR]),
    ("coords_upload_failed", c_int32, [c_void_p, c_uint64, POINTER(c_uint64), _BUF, _ERR]),
    ("coords_upload_send", c_int32, [c_void_p, c_char_p, c_char_p, c_char_p, c_char_p, _BUF, _ERR]),
    ("coords_upload_send_group", c_int32, [c_void_p, c_char_p, c_char_p, c_char_p, c_char_p, _BUF, _ERR]),
    ("coords_upload_free", None, [c_void_p]),
    ("coords_download_begin", c_int32, [_APP, c_char_p, c_int32, POINTER(c_void_p), _ERR]),
    ("coords_download_request", c_int32, [c_void_p, _BUF, POINTER(c_uint64), _ERR]),
    ("coords_download_check", c_int32, [c_void_p, c_int32, c_char_p, POINTER(c_uint64), _ERR]),
    ("coords_download_check_length", c_int32, [c_void_p, c_char_p, _ERR]),
    ("coords_download_pace", c_int32, [c_void_p, c_uint64, POINTER(c_int32), _ERR]),
    ("coords_download_failed", c_int32, [c_void_p, c_uint64, POINTER(c_uint64), _BUF, _ERR]),
    ("coords_transfer_seconds_left", c_int32, [c_void_p, c_void_p, POINTER(c_uint64), _ERR]),
    ("coords_download_take", c_int32, [c_void_p, _U8, c_size_t, _ERR]),
    ("coords_download_progress", c_int32, [c_void_p, POINTER(c_uint64), POINTER(c_uint64), _ERR]),
    ("coords_download_finish", c_int32, [c_void_p, POINTER(c_int32), _ERR]),
    ("coords_download_free", None, [c_void_p]),
]


def _find_library() -> str:
    packaged = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libcoordscore.so")
    if os.path.exists(packaged):
        return packaged
    explicit = os.environ.get("COORDSCORE_LIB")
    if explicit:
        return explicit
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # python/coordscore/ in a checkout
    for build in (".build-static/release", ".build/release", ".build/debug"):
        candidate = os.path.join(root, build, "libcoordscore.so")
        if os.path.exists(candidate):
            return candidate
    found = ctypes.util.find_library("coordscore")
    if found:
        return found
    raise ImportError("libcoordscore.so not found: install the coordscore wheel, run `make lib`, or set COORDSCORE_LIB")


def _load() -> ctypes.CDLL:
    lib = ctypes.CDLL(_find_library())
    for name, restype, argtypes in _SIGNATURES:
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    if lib.coords_abi_version() != ABI_VERSION:
        raise ImportError(f"libcoordscore ABI {lib.coords_abi_version()} does not match this module's {ABI_VERSION}")
    return lib


lib = _load()
"""The raw library, with every signature declared (for callers that want the C functions)."""


def _call(function: Any, *args: Any) -> None:
    """Calls a fallible C function with a trailing CoordsError and raises on failure."""
    error = CoordsErrorStruct()
    code = function(*args, byref(error))
    if code != OK:
        message = ctypes.string_at(error.message).decode("utf-8", "replace") if error.message else ""
        lib.coords_error_free(byref(error))
        raise CoordsError.from_code(code, message)


def _take(buffer: CoordsBuffer) -> bytes:
    """Copies a library buffer into Python bytes and frees it."""
    try:
        return ctypes.string_at(buffer.data, buffer.len) if buffer.data else b""
    finally:
        lib.coords_buffer_free(byref(buffer))


def _buffer_call(function: Any, *args: Any) -> bytes:
    buffer = CoordsBuffer()
    try:
        _call(function, *args, byref(buffer))
    except CoordsError:
        lib.coords_buffer_free(byref(buffer))
        raise
    return _take(buffer)


def _json_call(function: Any, *args: Any) -> Any:
    return json.loads(_buffer_call(function, *args).decode("utf-8"))


def _bytes(data: bytes, name: str, size: Optional[int] = None) -> Any:
    """A read-only view of `data` as uint8_t* (checking fixed sizes here, where C cannot)."""
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"{name} must be bytes")
    if size is not None and len(data) != size:
        raise ValueError(f"{name} must be {size} bytes, got {len(data)}")
    array = (c_uint8 * max(len(data), 1)).from_buffer_copy(bytes(data) or b"\0")
    return ctypes.cast(array, _U8)


def _text(value: Optional[str]) -> Optional[bytes]:
    return None if value is None else _utf8(value, "text")


def _utf8(value: str, name: str) -> bytes:
    """`value` as UTF-8 for the library; TypeError (naming the Python parameter) for anything but str."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be str, got {type(value).__name__}")
    return value.encode("utf-8")


@dataclass(frozen=True)
class Location:
    """A position fix: degrees, metres, and the fix time in ms since the epoch.

    `timestamp_ms` is required (there is no silent default: a fix dated 1970 would be refused as
    stale everywhere); for "now" pass `int(time.time() * 1000)`. Raises TypeError when it is
    missing or a field has the wrong type (range checks are the library's: ERR_INVALID_LOCATION)."""
    latitude: float
    longitude: float
    altitude: float = 0.0
    accuracy: float = 0.0
    timestamp_ms: Optional[int] = None

    def __post_init__(self) -> None:
        if self.timestamp_ms is None:
            raise TypeError("Location needs timestamp_ms (ms since the epoch, e.g. int(time.time() * 1000))")
        if isinstance(self.timestamp_ms, bool) or not isinstance(self.timestamp_ms, int) or self.timestamp_ms < 0:
            raise TypeError(f"timestamp_ms must be a non-negative int (ms since the epoch), got {self.timestamp_ms!r}")
        for name in ("latitude", "longitude", "altitude", "accuracy"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, got {type(value).__name__}")

    def __getitem__(self, key: str) -> Any:
        """Dict-style read access (`location["latitude"]`), as for the other records."""
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)

    def to_c(self) -> CoordsLocation:
        """The C struct for this location."""
        return CoordsLocation(self.latitude, self.longitude, self.altitude, self.accuracy, self.timestamp_ms)

    @classmethod
    def from_c(cls, c: CoordsLocation) -> "Location":
        """A Location from the C struct."""
        return cls(c.latitude, c.longitude, c.altitude, c.accuracy, c.timestamp_ms)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Location":
        """A Location from the library's JSON record."""
        return cls(obj["latitude"], obj["longitude"], obj["altitude_m"], obj["accuracy_m"], obj["timestamp_ms"])



# ---- Typed records (docs/ABI.md, "JSON schemas") -------------------------------------------

class _Record:
    """Base of the typed records. Fields are attributes; `record["field"]` also works (read-only),
    for code written against the dicts of earlier versions. `to_json()` gives the library's JSON."""

    def __getitem__(self, key: str) -> Any:
        if key not in getattr(self, "__dataclass_fields__", {}):
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        """The field `key`, or `default` when the record has no such field."""
        try:
            return self[key]
        except KeyError:
            return default

    def to_json(self) -> dict[str, Any]:
        """The record as the library's JSON object (nested records converted too)."""
        def convert(value: Any) -> Any:
            if isinstance(value, _Record):
                return value.to_json()
            if isinstance(value, Location):
                return {"latitude": value.latitude, "longitude": value.longitude, "altitude_m": value.altitude,
                        "accuracy_m": value.accuracy, "timestamp_ms": value.timestamp_ms}
            if isinstance(value, list):
                return [convert(item) for item in value]
            return value
        return {f.name: convert(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]


def _location(value: Optional[dict[str, Any]]) -> Optional["Location"]:
    return None if value is None else Location.from_json(value)


@dataclass(frozen=True)
class ErrorInfo(_Record):
    """A failure reported inside a result (not raised): the stable code and the library's text."""
    code: int
    message: str

    @classmethod
    def from_json(cls, obj: Optional[dict[str, Any]]) -> Optional["ErrorInfo"]:
        """An ErrorInfo from JSON (None stays None)."""
        return None if obj is None else cls(int(obj["code"]), obj["message"])


@dataclass(frozen=True)
class Request(_Record):
    """A prepared HTTP request: send it with any HTTP client and give the response back."""
    url: str
    method: str
    headers: dict[str, Any]
    body_base64: str
    server: Optional[str] = None
    """Fetch requests only: the relay they go to."""
    ids: Optional[list[Any]] = None
    """Fetch requests only: the public key ids asked for (at most 50)."""
    max_response_bytes: Optional[int] = None
    """The most bytes to read of the answer (PROTOCOL.md §4.1): refuse a longer one."""

    @property
    def body(self) -> bytes:
        """The body bytes."""
        return base64.b64decode(self.body_base64)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Request":
        """A Request from the library's JSON."""
        return cls(obj["url"], obj["method"], dict(obj["headers"]), obj["body_base64"], obj.get("server"), obj.get("ids"),
                   obj.get("max_response_bytes"))

    def to_json(self) -> dict[str, Any]:
        """The library's JSON (the fetch-only keys when present)."""
        out: dict[str, Any] = {"url": self.url, "method": self.method, "headers": self.headers, "body_base64": self.body_base64}
        if self.server is not None:
            out["server"] = self.server
        if self.ids is not None:
            out["ids"] = self.ids
        if self.max_response_bytes is not None:
            out["max_response_bytes"] = self.max_response_bytes
        return out


@dataclass(frozen=True)
class FetchResult(_Record):
    """One entry of a processed fetch response."""
    pubkey: str
    location: Optional["Location"]
    updated: Optional[int]
    upload_timestamp: Optional[int]
    authenticity: str
    """"verified", "unverified", "tampered" or "absent"."""
    error: Optional[ErrorInfo]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "FetchResult":
        """A FetchResult from the library's JSON."""
        return cls(obj["pubkey"], _location(obj["location"]), obj["updated"], obj["upload_timestamp"], obj["authenticity"],
                   ErrorInfo.from_json(obj["error"]))


@dataclass(frozen=True)
class Friend(_Record):
    """A friend: who, where they publish, what we share and fetch, and how much we trust the key."""
    id: str
    name: str
    server: str
    share_with: bool
    fetch_from: bool
    added_at: int
    trust: str
    """"unverified", "verified" (compared in person) or "blocked"."""
    marker_color: str
    sharing: str = "on"
    """"on", "until" (see share_until), "expired" or "paused" (PROTOCOL.md §9.3), when read."""
    share_until: Optional[int] = None
    """When sharing ends (ms since the epoch), or None for no end."""
    conflict_keys: list[Any] = field(default_factory=list)
    """While trust is "conflict" (two different rotations of their old key, §9.2): the candidate keys."""
    protection: str = "legacy"
    """"forward-secret" once they announced prekeys (PROTOCOL.md §10.4), else "legacy"."""
    reciprocal: bool = False
    """Whether they added us back: a position or message they sealed for us has opened. False:
    show them your link or QR code (App.friend_link)."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Friend":
        """A Friend from the library's JSON."""
        return cls(obj["id"], obj["name"], obj["server"], obj["share_with"], obj["fetch_from"], obj["added_at"], obj["trust"],
                   obj["marker_color"], obj.get("sharing", "on"), obj.get("share_until"), list(obj.get("conflict_keys", [])),
                   obj.get("protection", "legacy"), bool(obj.get("reciprocal", False)))


@dataclass(frozen=True)
class FriendLocation(_Record):
    """A friend's last known position (None before the first fetch), with its place name."""
    id: str
    name: str
    location: Optional["Location"]
    updated: Optional[int]
    fetched_at: Optional[int]
    authenticity: Optional[str]
    marker_color: str
    place: Optional["Place"]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "FriendLocation":
        """A FriendLocation from the library's JSON."""
        place = obj.get("place")
        return cls(obj["id"], obj["name"], _location(obj["location"]), obj["updated"], obj["fetched_at"], obj["authenticity"],
                   obj["marker_color"], None if place is None else Place.from_json(place))


@dataclass(frozen=True)
class Upload(_Record):
    """A prepared upload: send `request`, then mark_upload_succeeded(fix_timestamp)."""
    request: Request
    fix_timestamp: int
    upload_timestamp: int
    recipient_count: int
    blob_size: int

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Upload":
        """An Upload from the library's JSON."""
        return cls(Request.from_json(obj["request"]), obj["fix_timestamp"], obj["upload_timestamp"], obj["recipient_count"],
                   obj["blob_size"])


@dataclass(frozen=True)
class Rejection(_Record):
    """An entry or message that was refused, and why."""
    id: str
    error: ErrorInfo

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Rejection":
        """A Rejection from the library's JSON."""
        error = ErrorInfo.from_json(obj["error"])
        if error is None:
            raise WireError(ERR_UNEXPECTED_JSON, "a rejection without its error")
        return cls(obj["id"], error)


@dataclass(frozen=True)
class FetchOutcome(_Record):
    """What a processed fetch response changed."""
    updated: list[Any]
    """FriendLocation for every friend whose position changed."""
    unchanged: list[Any]
    rejected: list[Any]
    """Rejection for every entry refused (tampered, rolled back, not for us)."""
    ignored: list[Any]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "FetchOutcome":
        """A FetchOutcome from the library's JSON."""
        return cls([FriendLocation.from_json(x) for x in obj["updated"]], list(obj["unchanged"]),
                   [Rejection.from_json(x) for x in obj["rejected"]], list(obj["ignored"]))


@dataclass(frozen=True)
class OutboxEntry(_Record):
    """A request waiting in the outbox for a relay that could not be reached."""
    id: int
    kind: str
    request: Request
    attempts: int
    next_attempt_at: int
    created_at: int
    last_error: Optional[str]
    reference: Optional[str]
    location: Optional["Location"]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "OutboxEntry":
        """An OutboxEntry from the library's JSON."""
        return cls(obj["id"], obj["kind"], Request.from_json(obj["request"]), obj["attempts"], obj["next_attempt_at"],
                   obj["created_at"], obj["last_error"], obj["reference"], _location(obj["location"]))


@dataclass(frozen=True)
class OutboxReport(_Record):
    """What the core decided about a relay's answer to an outbox request (App.outbox_report)."""
    id: int
    kind: Optional[str]
    """The entry's kind ("upload", "reseal", "delete", "message", "receipt", "rotation",
    "request"); None for "unknown"."""
    decision: str
    """"delivered", "retry", "sign_again", "dropped" or "unknown" (no such entry)."""
    at: Optional[int]
    """For "retry" and "sign_again": the next attempt's time (ms since the epoch)."""
    reason: Optional[str]
    """Why it was not delivered (relay's refusal or the network failure)."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "OutboxReport":
        """An OutboxReport from the library's JSON."""
        return cls(obj["id"], obj.get("kind"), obj["decision"], obj.get("at"), obj.get("reason"))


@dataclass(frozen=True)
class HostRequest(_Record):
    """One request to perform now (App.due): carry `request`, hand the answer to App.report(id, …)."""
    id: int
    """The ticket for App.report."""
    purpose: str
    """"outbox", "fetch", "mailbox", "ack", "prekeys" or "bundle" (for logs)."""
    request: Request
    outbox_id: Optional[int] = None
    """For "outbox": the entry's id."""
    outbox_kind: Optional[str] = None
    """For "outbox": the entry's kind ("upload", "reseal", "message", …)."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "HostRequest":
        """A HostRequest from the library's JSON."""
        return cls(obj["id"], obj["purpose"], Request.from_json(obj["request"]), obj.get("outbox_id"), obj.get("outbox_kind"))


@dataclass(frozen=True)
class HostAnswer(_Record):
    """What the core made of one answer (App.report); everything it implies is recorded and queued."""
    result: str
    """"outbox", "locations", "messages", "prekeys", "bundle", "acknowledged", "failed" or
    "unknown" (no request has this ticket)."""
    detail: dict[str, Any]
    """The result's record, as coords_app_report documents it: for "outbox" {"outbox": …},
    "locations" {"locations": …}, "messages" {"messages": …}, "prekeys" {"stock": …}, "bundle"
    {"friend_id", "bundle"}, "failed" {"retry_at", "reason"}; empty otherwise."""

    @property
    def outbox(self) -> Optional[OutboxReport]:
        """For "outbox": the entry's fate."""
        record = self.detail.get("outbox")
        return None if record is None else OutboxReport.from_json(record)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "HostAnswer":
        """A HostAnswer from the library's JSON."""
        return cls(obj["result"], {k: v for k, v in obj.items() if k != "result"})


@dataclass(frozen=True)
class Attachment(_Record):
    """The file of a file message (PROTOCOL.md §12.3), as the library shows it: never its key."""
    object: str
    """The object's id on the sender's relay (b64u, 22 characters)."""
    size: int
    """The file's length in bytes."""
    type: str
    """The media type the sender gave (a hint)."""
    name: str
    """The file name the sender gave (a hint, no path; may be empty)."""
    expires_at_ms: int
    """When the relay drops the file (Unix ms)."""
    local_name: str = ""
    """The name to save it under in a folder the user picked: `name` with every control,
    bidirectional or invisible character (and a leading dot) replaced by `_`; "coords-file" when
    nothing visible is left (PROTOCOL.md §12.5)."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Attachment":
        """An Attachment from the library's JSON."""
        return cls(obj["object"], obj["size"], obj["type"], obj["name"], obj["expires_at_ms"], obj.get("local_name", ""))


@dataclass(frozen=True)
class Message(_Record):
    """A sealed 1:1 message, sent or received (docs/MESSAGING.md)."""
    id: str
    friend_id: str
    outgoing: bool
    kind: str
    text: str
    sent_at: int
    stored_at: int
    status: str
    """"queued", "sent", "delivered" or "received"."""
    disappears_at: Optional[int]
    group: Optional[str] = None
    """For a group message (PROTOCOL.md §11): the group's id; friend_id is then its sender."""
    notify: Optional[bool] = None
    """For a received message: whether it should notify (a text or file, its conversation not
    muted, outside quiet hours), decided by the library when it arrived. None for our own."""
    file: Optional[Attachment] = None
    """For a file message (kind "file"): the attachment; save it with App.begin_download (or
    coordscore.transport.save_file). None for other messages and for a malformed file message."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Message":
        """A Message from the library's JSON."""
        file = obj.get("file")
        return cls(obj["id"], obj["friend_id"], obj["outgoing"], obj["kind"], obj["text"], obj["sent_at_ms"], obj["stored_at_ms"],
                   obj["status"], obj["disappears_at_ms"], obj.get("group"), obj.get("notify"),
                   Attachment.from_json(file) if file else None)


@dataclass(frozen=True)
class GroupMember(_Record):
    """One member of a Group."""
    id: str
    name: Optional[str]
    """The friend's name; None for the user and for members who are not friends."""
    is_admin: bool
    is_self: bool
    is_friend: bool

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "GroupMember":
        """A GroupMember from the library's JSON."""
        return cls(obj["id"], obj["name"], obj["is_admin"], obj["is_self"], obj["is_friend"])


@dataclass(frozen=True)
class Group(_Record):
    """A group (PROTOCOL.md §11): its effective name and members and the user's standing."""
    id: str
    name: str
    status: str
    """"member", "left" or "removed"."""
    is_admin: bool
    in_conflict: bool
    """Two admins changed it at once: the safe side of both applies until the next change."""
    epoch: int
    sharing: bool
    members: list[GroupMember]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Group":
        """A Group from the library's JSON."""
        return cls(obj["id"], obj["name"], obj["status"], obj["is_admin"], obj["in_conflict"], obj["epoch"], obj["sharing"],
                   [GroupMember.from_json(x) for x in obj["members"]])


@dataclass(frozen=True)
class GroupChange(_Record):
    """A group change: the group after it, the envelopes queued (deliver them with outbox_due /
    outbox_report) and the members who could not be told (not friends)."""
    group: Group
    queued: list[Any]
    unreachable: list[str]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "GroupChange":
        """A GroupChange from the library's JSON."""
        return cls(Group.from_json(obj["group"]), [OutboxEntry.from_json(x) for x in obj["queued"]], list(obj["unreachable"]))


@dataclass(frozen=True)
class GroupSent(_Record):
    """A group message queued: one outbox entry per member reached."""
    message: Message
    queued: list[Any]
    unreachable: list[str]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "GroupSent":
        """A GroupSent from the library's JSON."""
        return cls(Message.from_json(obj["message"]), [OutboxEntry.from_json(x) for x in obj["queued"]], list(obj["unreachable"]))


@dataclass(frozen=True)
class Sent(_Record):
    """A message queued for sending: POST `request`, then mark_message_sent(message.id)."""
    message: Message
    request: Request
    outbox_id: int

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Sent":
        """A Sent from the library's JSON."""
        return cls(Message.from_json(obj["message"]), Request.from_json(obj["request"]), obj["outbox_id"])


@dataclass(frozen=True)
class LiveConnection(_Record):
    """A relay to hold a live WebSocket to (PROTOCOL.md §8)."""
    server: str
    url: str
    """ws:// or wss://…/v1/relay/live"""
    ids: list[Any]
    """Friend ids watched on this relay."""
    mailbox: bool
    """Whether this is the user's own relay (it also carries the mailbox)."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "LiveConnection":
        """A LiveConnection from the library's JSON."""
        return cls(obj["server"], obj["url"], list(obj["ids"]), bool(obj["mailbox"]))


@dataclass(frozen=True)
class LiveOpened(_Record):
    """What to do when a live connection opened: send `frames` (text), then perform `catch_up`
    (fetches) and `mailbox_fetch`, so nothing published while disconnected is missed."""
    frames: list[Any]
    catch_up: list[Any]
    mailbox_fetch: Optional[Request]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "LiveOpened":
        """A LiveOpened from the library's JSON."""
        mailbox = obj["mailbox_fetch"]
        return cls(list(obj["frames"]), [Request.from_json(x) for x in obj["catch_up"]],
                   None if mailbox is None else Request.from_json(mailbox))


@dataclass(frozen=True)
class LiveEvent(_Record):
    """What one live frame meant. `type` is "subscribed" (`ids`, `mailbox`), "locations"
    (`outcome`: processed like a fetch), "deleted" (`id`), "rejected" (`id`, `error`),
    "changed" (`id`, `fetch`: a position too large for a notice; perform the fetch and process it),
    "message_waiting" (`id`, `fetch`: perform it, process_messages the answer, then call
    live_mailbox_fetched) or "ignored" (also a message notice while that fetch is out)."""
    type: str
    id: Optional[str] = None
    ids: Optional[int] = None
    mailbox: Optional[bool] = None
    outcome: Optional["FetchOutcome"] = None
    error: Optional[ErrorInfo] = None
    fetch: Optional[Request] = None

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "LiveEvent":
        """A LiveEvent from the library's JSON."""
        outcome, fetch = obj.get("outcome"), obj.get("fetch")
        return cls(obj["type"], obj.get("id"), obj.get("ids"), obj.get("mailbox"),
                   None if outcome is None else FetchOutcome.from_json(outcome), ErrorInfo.from_json(obj.get("error")),
                   None if fetch is None else Request.from_json(fetch))

    def to_json(self) -> dict[str, Any]:
        """The library's JSON (only the keys this type carries)."""
        full = super().to_json()
        return {key: value for key, value in full.items() if value is not None}


@dataclass(frozen=True)
class MessagesOutcome(_Record):
    """What a mailbox response brought: send `acks` to our relay and `receipts` to each friend's."""
    received: list[Any]
    delivered: list[Any]
    duplicates: list[Any]
    rejected: list[Any]
    acks: list[Any]
    receipts: list[Any]
    rotated: list[Any] = field(default_factory=list)
    """Friends (old ids) whose rotation statement was applied or put them in conflict (PROTOCOL.md §9)."""
    conflicts: list[Any] = field(default_factory=list)
    """Friends (current ids) a rotation put in conflict: compare safety numbers, then resolve_conflict."""
    resets: list[Any] = field(default_factory=list)
    """Friends whose forward-secret session was reset (PROTOCOL.md §10.8): messages may have been lost."""
    broken: list[Any] = field(default_factory=list)
    """Friends whose session message no kept session opened; a reset was queued to them in a new session."""
    waiting: list[Any] = field(default_factory=list)
    """Group messages (ids) waiting for their sender key, held on the device (PROTOCOL.md §11.6)."""
    group_queued: list[Any] = field(default_factory=list)
    """Sender keys and reseals the group rules queued: deliver them like receipts."""
    more: bool = False
    """The answer was full (100 envelopes): more may wait on the relay; send the acks, then fetch again."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "MessagesOutcome":
        """A MessagesOutcome from the library's JSON."""
        return cls([Message.from_json(x) for x in obj["received"]], list(obj["delivered"]), list(obj["duplicates"]),
                   [Rejection.from_json(x) for x in obj["rejected"]], [Request.from_json(x) for x in obj["acks"]],
                   [OutboxEntry.from_json(x) for x in obj["receipts"]], list(obj.get("rotated", [])),
                   list(obj.get("conflicts", [])), list(obj.get("resets", [])), list(obj.get("broken", [])),
                   list(obj.get("waiting", [])), [OutboxEntry.from_json(x) for x in obj.get("group_queued", [])],
                   bool(obj.get("more", False)))


@dataclass(frozen=True)
class Conversation(_Record):
    """One conversation: the friend, the last message and the disappearing setting."""
    friend_id: str
    name: str
    last_message: Optional[Message]
    message_count: int
    disappear_after_seconds: Optional[int]

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Conversation":
        """A Conversation from the library's JSON."""
        last = obj["last_message"]
        return cls(obj["friend_id"], obj["name"], None if last is None else Message.from_json(last), obj["message_count"],
                   obj["disappear_after_seconds"])


@dataclass(frozen=True)
class WalletInfo(_Record):
    """The identity of an app."""
    has_identity: bool
    id: Optional[str]
    name: str
    server: str
    link: Optional[str]
    strict_mode: bool

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "WalletInfo":
        """A WalletInfo from the library's JSON."""
        return cls(obj["has_identity"], obj["id"], obj["name"], obj["server"], obj["link"], obj["strict_mode"])


@dataclass(frozen=True)
class Place(_Record):
    """A named place from the offline GeoNames data (docs/GEOCODING.md)."""
    name: str
    country_code: Optional[str]
    country: Optional[str]
    state: Optional[str]
    population: int
    latitude: float
    longitude: float
    distance_km: float
    display: str
    """"Lisbon, Portugal" / "Austin, Texas": what to show."""
    phrase: str
    """"in Lisbon, Portugal" or "near …", chosen from the fix's accuracy."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Place":
        """Builds a Place from the library's JSON record."""
        return cls(obj["name"], obj["country_code"], obj["country"], obj.get("state"), int(obj["population"]),
                   float(obj["latitude"]), float(obj["longitude"]), float(obj["distance_km"]), obj["display"], obj["phrase"])


@dataclass(frozen=True)
class FriendLink(_Record):
    """A parsed `coord://` friend link: the friend's public key id, relay and name."""
    pubkey: str
    server: str
    name: str


def b64url(data: bytes) -> str:
    """base64url without padding (Coords ids)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def version() -> str:
    """The loaded library's version (equal to `__version__` for a matching wheel)."""
    return str(lib.coords_version().decode("utf-8"))


# ---- Stateless functions -----------------------------------------------------------------

def generate_identity() -> tuple[bytes, bytes]:
    """Returns (seed, public_key), 32 bytes each. Keep the seed secret."""
    seed, public = (c_uint8 * 32)(), (c_uint8 * 32)()
    _call(lib.coords_identity_generate, seed, public)
    return bytes(seed), bytes(public)


def public_from_seed(seed: bytes) -> bytes:
    """The 32-byte Ed25519 public key of a 32-byte seed. Raises ArgumentError for a wrong length."""
    public = (c_uint8 * 32)()
    _call(lib.coords_identity_public_from_seed, _bytes(seed, "seed", 32), public)
    return bytes(public)


def sign(seed: bytes, message: bytes) -> bytes:
    """The 64-byte Ed25519 signature of `message` by `seed`'s identity."""
    signature = (c_uint8 * 64)()
    _call(lib.coords_sign, _bytes(seed, "seed", 32), _bytes(message, "message"), len(message), signature)
    return bytes(signature)


def verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """Whether `signature` is `public_key`'s signature of `message` (False, never an exception, for a bad one)."""
    try:
        _call(lib.coords_verify, _bytes(public_key, "public_key", 32), _bytes(message, "message"), len(message),
              _bytes(signature, "signature", 64))
        return True
    except CoordsError as error:
        if error.code == ERR_AUTHENTICATION_FAILED:
            return False
        raise


def _as_location(value: Any, name: str) -> "Location":
    """`value` when it is a Location; TypeError (not AttributeError) for a tuple, dict, …"""
    if not isinstance(value, Location):
        raise TypeError(f"{name} must be a coordscore.Location, got {type(value).__name__}")
    return value


def _key_list(recipients: Any) -> list[Any]:
    """`recipients` as a list of bytes; TypeError for one bytes value or anything not a list of bytes."""
    if isinstance(recipients, (bytes, bytearray, str)) or not isinstance(recipients, (list, tuple)):
        raise TypeError(f"recipients must be a list of 32-byte public keys, got {type(recipients).__name__}")
    if not all(isinstance(key, (bytes, bytearray)) for key in recipients):
        raise TypeError("every recipient must be bytes (a 32-byte public key)")
    return list(recipients)


def seal(location: Location, recipients: list[bytes]) -> bytes:
    """Seals `location` for 32-byte public keys, the sender's own first.
    Raises TypeError for arguments of the wrong type, ValueError for a key of the wrong length,
    WireError (ERR_INVALID_LOCATION, ERR_TOO_MANY_RECIPIENTS, …) for what the library refuses."""
    recipients = _key_list(recipients)
    keys = b"".join(recipients)
    if any(len(key) != 32 for key in recipients):
        raise ValueError("every recipient must be a 32-byte public key")
    c_location = _as_location(location, "location").to_c()
    return _buffer_call(lib.coords_blob_seal, byref(c_location), _bytes(keys, "recipients"), len(recipients))


def open_blob(seed: bytes, blob: bytes) -> Location:
    """Opens a location blob as `seed`'s identity. Raises WireError (e.g. ERR_NOT_A_RECIPIENT,
    ERR_BLOB_TAMPERED) when it is not for us or was changed."""
    out = CoordsLocation()
    _call(lib.coords_blob_open, _bytes(seed, "seed", 32), _bytes(blob, "blob"), len(blob), byref(out))
    return Location.from_c(out)


def prepare_upload(seed: bytes, location: Location, friend_ids: list[str], server: str) -> Request:
    """A signed upload request for `server`, sealed for the sender and `friend_ids` (send it with any HTTP client)."""
    c_location = _as_location(location, "location").to_c()
    return Request.from_json(_json_call(lib.coords_prepare_upload, _bytes(seed, "seed", 32), byref(c_location),
                      json.dumps(friend_ids).encode(), _utf8(server, "server")))


def prepare_fetch(friends: list[dict[str, Any]]) -> list[Request]:
    """Fetch requests for [{"pubkey", "server"}], grouped by relay, at most 50 ids each."""
    return [Request.from_json(x) for x in _json_call(lib.coords_prepare_fetch, json.dumps(friends).encode())]


def process_fetch_response(seed: bytes, body: bytes) -> list[FetchResult]:
    """Verifies and opens every entry of a fetch response: one FetchResult per id, in order."""
    return [FetchResult.from_json(x) for x in
            _json_call(lib.coords_process_fetch_response, _bytes(seed, "seed", 32), _bytes(body, "body"), len(body))]


def public_key_b64url(public_key: bytes) -> str:
    """The id of a 32-byte Ed25519 public key (base64url, no padding: 43 characters), as friend
    records and links name it. Raises CryptoError (ERR_INVALID_PUBLIC_KEY) for bytes that are not
    a valid key."""
    return _buffer_call(lib.coords_public_key_b64url, _bytes(public_key, "public_key", 32)).decode()


def qr_code(text: str) -> list[list[bool]]:
    """The QR code for `text` (at most 213 UTF-8 bytes, e.g. a friend link): rows of modules from
    the top, True for dark. Draw it with a quiet zone of 4 light modules. Raises WireError
    (ERR_QR_UNENCODABLE) for text too long."""
    size = c_uint32(0)
    buffer = CoordsBuffer()
    try:
        _call(lib.coords_qr_encode, _utf8(text, "text"), byref(buffer), byref(size))
    except CoordsError:
        lib.coords_buffer_free(byref(buffer))
        raise
    modules = _take(buffer)
    n = size.value
    return [[modules[y * n + x] == 1 for x in range(n)] for y in range(n)]


def qr_svg(text: str, module_pixels: int = 8) -> str:
    """The QR code for `text` as an SVG document (its quiet zone included), each module
    `module_pixels` (1..64) wide. Raises WireError (ERR_QR_UNENCODABLE), ArgumentError."""
    return _buffer_call(lib.coords_qr_svg, _utf8(text, "text"), module_pixels).decode()


def friend_link(public_key: bytes, server: str, name: str) -> str:
    """The `coord://` link for a public key, relay and display name."""
    return _buffer_call(lib.coords_friend_link_generate, _bytes(public_key, "public_key", 32), _utf8(server, "server"),
                        _utf8(name, "name")).decode()


def parse_friend_link(link: str) -> FriendLink:
    """Parses a `coord://` link. Raises WireError (ERR_INVALID_FRIEND_LINK) naming what is wrong."""
    record = _json_call(lib.coords_friend_link_parse, _utf8(link, "link"))
    return FriendLink(record["pubkey"], record["server"], record["name"])


def safety_number(a: bytes, b: bytes) -> str:
    """The safety number two people compare in person: 30 digits in six groups of five (the same from both sides)."""
    return _buffer_call(lib.coords_safety_number, _bytes(a, "a", 32), _bytes(b, "b", 32)).decode()


def may_reuse_location(fix: Location, now_ms: int, reason: str) -> bool:
    """Whether the cached `fix` may be uploaded again at `now_ms` for `reason` ("launch",
    "background" or "explicit"): only for launch and background uploads, only when it is younger
    than 5 minutes and its accuracy is at most 100 m. Raises ArgumentError for an unknown reason,
    WireError (ERR_INVALID_LOCATION) for a fix that is not a valid location."""
    out = c_bool()
    c_fix = _as_location(fix, "fix").to_c()
    _call(lib.coords_may_reuse_location, byref(c_fix), now_ms, _utf8(reason, "reason"), byref(out))
    return out.value


def may_reuse_fix(fix_timestamp_ms: int, now_ms: int, reason: str) -> bool:
    """The age rule of may_reuse_location alone (it cannot check the accuracy: prefer
    may_reuse_location): whether a fix taken at `fix_timestamp_ms` may be uploaded again for
    `reason` ("background", "explicit", …). Raises ArgumentError for an unknown reason."""
    out = c_bool()
    _call(lib.coords_may_reuse_fix, fix_timestamp_ms, now_ms, _utf8(reason, "reason"), byref(out))
    return out.value


def seal_envelope(seed: bytes, recipient: bytes, payload: bytes, created_at: int, ttl_seconds: int = 86400) -> dict[str, Any]:
    """Seals a §7.2 payload (UTF-8 JSON bytes) from `seed`'s identity to `recipient` (32-byte
    Ed25519 public key); returns the §7.1 envelope as a dict."""
    envelope: dict[str, Any] = _json_call(lib.coords_envelope_seal, _bytes(seed, "seed", 32), _bytes(recipient, "recipient", 32),
                                          _bytes(payload, "payload"), len(payload), created_at, ttl_seconds)
    return envelope


def open_envelope(seed: bytes, sender: bytes, envelope: dict[str, Any], now: int) -> bytes:
    """Verifies and opens an envelope from `sender` to `seed`'s identity; returns the plaintext.
    Raises CoordsException (ERR_ENVELOPE_SIGNATURE, ERR_ENVELOPE_TAMPERED, ERR_ENVELOPE_EXPIRED, …)."""
    return _buffer_call(lib.coords_envelope_open, _bytes(seed, "seed", 32), _bytes(sender, "sender", 32),
                        json.dumps(envelope).encode(), now)


def nearest_place(latitude: float, longitude: float, accuracy_m: float = 0.0) -> Place:
    """The nearest named place from the bundled data, offline (no coordinate leaves the process).
    Raises GeocodingError (ERR_INVALID_COORDINATE) for positions not on Earth."""
    return Place.from_json(_json_call(lib.coords_geocode_nearest, float(latitude), float(longitude), float(accuracy_m)))


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
