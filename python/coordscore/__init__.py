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

The package is split by concern — `errors` (exceptions and codes), `records` (typed results),
`functions` (stateless calls), `app` (App and the other handles), `transport` (HTTP) and `_ffi`
(ctypes) — and every public name is importable from `coordscore` itself.
"""
from __future__ import annotations

# Incidental names of the single-module package, kept importable from `coordscore` (not in __all__).
import base64, ctypes, json, logging, os, threading, warnings  # noqa: E401,F401
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_bool, c_char_p, c_double, c_float, c_int32, c_int64,  # noqa: F401
                    c_size_t, c_uint8, c_uint32, c_uint64, c_void_p)
from dataclasses import dataclass, field, fields  # noqa: F401
from typing import Any, Callable, Optional, TypeVar  # noqa: F401

__version__ = "1.0.0"
"""The CoordsCore release (the same as `coords_version()`, `coords --version`)."""

from ._ffi import (_APP, _BUF, _ERR, _LOC, _SIGNATURES, _U8, ABI_VERSION, KEYCHAIN_LOAD, KEYCHAIN_REMOVE,  # noqa: E402,F401
                   KEYCHAIN_SAVE, UPDATE_CALLBACK, CoordsBuffer, CoordsErrorStruct, CoordsHostRequest,
                   CoordsKeychainCallbacks, CoordsLocation, lib)
from .errors import *  # noqa: E402,F401,F403 (OK and every ERR_* code)
from .errors import (ArgumentError, ChannelError, CoordsError, CoordsException, CryptoError, GeocodingError,  # noqa: E402
                     ManagerError, StoreError, WireError)
from .records import (  # noqa: E402
    Attachment, Conversation, ErrorInfo, FetchOutcome, FetchResult, Friend, FriendLink, FriendLocation, Group,
    GroupChange, GroupMember, GroupSent, HostAnswer, HostRequest, LiveConnection, LiveEvent, LiveOpened, Location,
    Message, MessagesOutcome, OutboxEntry, OutboxReport, Place, Rejection, Request, Sent, Upload, WalletInfo)
from .functions import (  # noqa: E402
    b64url, friend_link, generate_identity, may_reuse_fix, may_reuse_location, nearest_place, open_blob,
    open_envelope, parse_friend_link, prepare_fetch, push_gateway_endpoint, prepare_upload, process_fetch_response, public_from_seed,
    public_key_b64url, qr_code, qr_svg, safety_number, seal, seal_envelope, sign, verify, version)
from .app import MUTED_FOREVER, App, FileDownload, FileUpload, Keychain, Places, request_body  # noqa: E402

__all__ = [
    "ABI_VERSION", "App", "ArgumentError", "Attachment", "ChannelError", "Conversation", "CoordsBuffer",
    "CoordsError", "CoordsErrorStruct", "CoordsException", "CoordsHostRequest", "CoordsKeychainCallbacks",
    "CoordsLocation", "CryptoError", "ERR_ABI_MISMATCH", "ERR_AUTHENTICATION_FAILED", "ERR_BAD_CHUNK",
    "ERR_BLOB_TAMPERED", "ERR_BLOB_TOO_SHORT", "ERR_BLOB_TRUNCATED", "ERR_CANCELLED", "ERR_CANNOT_ADD_SELF",
    "ERR_CIPHERTEXT_TOO_SHORT", "ERR_CLOSED", "ERR_CRYPTO_INIT", "ERR_CRYPTO_OUT_OF_MEMORY",
    "ERR_DAMAGED_PLACE_DATA", "ERR_DECODING_FAILED", "ERR_DOWNGRADE_REFUSED", "ERR_DUPLICATE_MESSAGE", "ERR_EMPTY",
    "ERR_ENCODING_FAILED", "ERR_ENVELOPE_EXPIRED", "ERR_ENVELOPE_NOT_FOR_ME", "ERR_ENVELOPE_SIGNATURE",
    "ERR_ENVELOPE_TAMPERED", "ERR_FILE_IO", "ERR_FIX_IN_FUTURE", "ERR_FRIEND_BLOCKED", "ERR_FRIEND_NOT_FOUND",
    "ERR_FULL", "ERR_GROUP_CHAIN_CONFLICT", "ERR_GROUP_FORK_LIMIT", "ERR_GROUP_MESSAGE_DROPPED",
    "ERR_GROUP_MESSAGE_TOO_LONG", "ERR_GROUP_NOT_FOUND", "ERR_GROUP_SIGNATURE_INVALID", "ERR_HOST_KEYCHAIN",
    "ERR_IDENTITY_EXISTS", "ERR_INTERNAL", "ERR_INVALID_ARGUMENT", "ERR_INVALID_BACKUP", "ERR_INVALID_BASE64",
    "ERR_INVALID_BYTE_LENGTH", "ERR_INVALID_COORDINATE", "ERR_INVALID_CRYPTO_PARAMETER", "ERR_INVALID_ENVELOPE",
    "ERR_INVALID_EPHEMERAL_KEY", "ERR_INVALID_FRIEND_LINK", "ERR_INVALID_GROUP_MEMBERS", "ERR_INVALID_HANDLE",
    "ERR_INVALID_JSON", "ERR_INVALID_KEY_LENGTH", "ERR_INVALID_KEY_SIZE", "ERR_INVALID_LENGTH",
    "ERR_INVALID_LOCATION", "ERR_INVALID_LOCATION_PLAINTEXT", "ERR_INVALID_MAILBOX_RESPONSE",
    "ERR_INVALID_NONCE_LENGTH", "ERR_INVALID_PREKEY_BUNDLE", "ERR_INVALID_PUBLIC_KEY", "ERR_INVALID_PUBLIC_KEY_ID",
    "ERR_INVALID_PUSH_ENDPOINT", "ERR_INVALID_QUIET_HOURS", "ERR_INVALID_RECIPIENT_KEY", "ERR_INVALID_ROTATION",
    "ERR_INVALID_SERVER_URL", "ERR_INVALID_UTF8", "ERR_INVALID_WIRE_LOCATION", "ERR_IN_CONFLICT",
    "ERR_KEYCHAIN_CORRUPTED", "ERR_KEYCHAIN_INVALID_NAME", "ERR_KEYCHAIN_IO", "ERR_MALFORMED_FILE",
    "ERR_MALFORMED_GROUP_MESSAGE", "ERR_MALFORMED_GROUP_STATEMENT", "ERR_MALFORMED_SESSION_MESSAGE",
    "ERR_MESSAGE_TOO_LONG", "ERR_MIGRATION_FAILED", "ERR_NESTED_WRITE", "ERR_NOT_A_GROUP_ADMIN",
    "ERR_NOT_A_GROUP_MEMBER", "ERR_NOT_A_RECIPIENT", "ERR_NOT_INVITED", "ERR_NOT_IN_CONFLICT", "ERR_NO_ATTACHMENT",
    "ERR_NO_IDENTITY", "ERR_NO_RECIPIENTS", "ERR_NO_SERVER", "ERR_NULL_ARGUMENT", "ERR_OBJECT_MISMATCH",
    "ERR_PREKEYS_UNAVAILABLE", "ERR_PREKEY_BUNDLE_EXPIRED", "ERR_QR_UNENCODABLE", "ERR_RANDOM_SOURCE",
    "ERR_RELAY_ERROR", "ERR_REPLAYED_HANDSHAKE", "ERR_RETIRED_KEY", "ERR_ROLLBACK", "ERR_SCHEMA_TOO_NEW",
    "ERR_SEALED_VALUE_REJECTED", "ERR_SESSION_BROKEN", "ERR_STALE_GROUP_STATEMENT", "ERR_STALE_LOCATION",
    "ERR_STILL_A_GROUP_MEMBER", "ERR_STORE_ALREADY_OPEN", "ERR_STORE_CLOSED", "ERR_STORE_CORRUPTED",
    "ERR_STORE_FAILURE", "ERR_STORE_FULL", "ERR_STORE_KEY_MISSING", "ERR_STORE_KEY_REQUIRED",
    "ERR_STORE_OPEN_FAILED", "ERR_TABLE_TYPE_MISMATCH", "ERR_TAMPERED_ENTRY", "ERR_TIMED_OUT", "ERR_TOO_LARGE",
    "ERR_TOO_MANY_GROUPS", "ERR_TOO_MANY_RECIPIENTS", "ERR_TOO_MANY_SKIPPED", "ERR_TOO_MANY_TABLES",
    "ERR_TRANSACTION_CLOSED", "ERR_UNEXPECTED_JSON", "ERR_UNKNOWN_CONVERSATION", "ERR_UNKNOWN_GROUP_CHAIN",
    "ERR_UNKNOWN_MESSAGE", "ERR_UNKNOWN_PREKEY", "ERR_UNKNOWN_TABLE", "ERR_UNKNOWN_UPLOAD",
    "ERR_UNREADABLE_PLACE_FILE", "ERR_UNSEALED_STORE", "ERR_UNSUPPORTED_BACKUP_VERSION",
    "ERR_UNSUPPORTED_BLOB_VERSION", "ERR_UNSUPPORTED_HARDWARE", "ERR_UNSUPPORTED_PLACE_DATA", "ERR_UNSUPPORTED_SCAN",
    "ERR_UNVERIFIED_ENTRY", "ERR_WEAK_PUBLIC_KEY", "ERR_WRONG_BACKUP_PASSPHRASE", "ERR_WRONG_PASSPHRASE",
    "ERR_WRONG_STORE_KEY", "ErrorInfo", "FetchOutcome", "FetchResult", "FileDownload", "FileUpload", "Friend",
    "FriendLink", "FriendLocation", "GeocodingError", "Group", "GroupChange", "GroupMember", "GroupSent",
    "HostAnswer", "HostRequest", "KEYCHAIN_LOAD", "KEYCHAIN_REMOVE", "KEYCHAIN_SAVE", "Keychain", "LiveConnection",
    "LiveEvent", "LiveOpened", "Location", "MUTED_FOREVER", "ManagerError", "Message", "MessagesOutcome", "OK",
    "OutboxEntry", "OutboxReport", "Place", "Places", "Rejection", "Request", "Sent", "StoreError",
    "UPDATE_CALLBACK", "Upload", "WalletInfo", "WireError", "b64url", "friend_link", "generate_identity", "lib",
    "may_reuse_fix", "may_reuse_location", "nearest_place", "open_blob", "open_envelope", "parse_friend_link",
    "prepare_fetch", "prepare_upload", "process_fetch_response", "public_from_seed", "push_gateway_endpoint", "public_key_b64url", "qr_code",
    "qr_svg", "request_body", "safety_number", "seal", "seal_envelope", "sign", "verify", "version"
]
