"""The stateless functions: identities, signatures, blobs, links, QR codes, envelopes, places."""
from __future__ import annotations

import base64
import ctypes
import json
from ctypes import POINTER, byref, c_bool, c_uint8, c_uint32
from typing import Any

from ._ffi import CoordsBuffer, CoordsLocation, _bytes, _buffer_call, _call, _json_call, _take, _utf8, lib
from .errors import ERR_AUTHENTICATION_FAILED, ERR_INVALID_ARGUMENT, ArgumentError, CoordsError
from .records import FetchResult, FriendLink, Location, Place, Request


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


def push_gateway_endpoint(gateway_url: str, gateway_key: str, platform: str, device: str,
                          environment: str | None = None) -> str:
    """The endpoint that wakes this device through a push gateway (PROTOCOL.md §8.8), to register
    with App.prepare_push_register: `gateway_url` + "/up/" + the device token sealed to the
    gateway's X25519 key `gateway_key` (base64url). `platform` "apns" (`device` in lowercase hex,
    `environment` "production", "development" or None) or "fcm" (`environment` None). A fresh
    sealed box each call. Raises WireError (ERR_INVALID_PUSH_TOKEN) for a device token or URL
    §8.8 does not allow, ArgumentError (ERR_INVALID_ARGUMENT) for an unknown platform or
    environment or a key that is not 32 bytes of base64url, TypeError for a non-str argument."""
    env = None if environment is None else _utf8(environment, "environment")
    return _buffer_call(lib.coords_push_gateway_endpoint, _utf8(gateway_url, "gateway_url"), _utf8(gateway_key, "gateway_key"),
                        _utf8(platform, "platform"), _utf8(device, "device"), env).decode()


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

