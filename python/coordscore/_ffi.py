"""The C side: ctypes structures, the loaded library with every signature declared, and the
call helpers that turn a failed status into an exception and free what the library returns.

The function table comes from include/coordscore.h through `_surface.py` (scripts/surface.py)."""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_bool, c_char_p, c_double, c_float, c_int32, c_int64,
                    c_size_t, c_uint8, c_uint32, c_uint64, c_void_p)
from typing import Any, Optional

from . import _surface
from .errors import OK, CoordsError


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

# The ctypes type of each name _surface.SIGNATURES uses.
_TYPES: dict[str, Any] = {
    "None": None, "c_int32": c_int32, "c_uint32": c_uint32, "c_int64": c_int64, "c_uint64": c_uint64, "c_uint8": c_uint8,
    "c_size_t": c_size_t, "c_double": c_double, "c_bool": c_bool, "c_char_p": c_char_p, "c_void_p": c_void_p,
    "U8": _U8, "ERR": _ERR, "BUF": _BUF, "LOC": _LOC, "APP": _APP, "UPDATE_CALLBACK": UPDATE_CALLBACK,
    "POINTER(c_bool)": POINTER(c_bool), "POINTER(c_int32)": POINTER(c_int32), "POINTER(c_int64)": POINTER(c_int64),
    "POINTER(c_uint32)": POINTER(c_uint32), "POINTER(c_uint64)": POINTER(c_uint64), "POINTER(APP)": POINTER(_APP),
    "POINTER(c_void_p)": POINTER(c_void_p), "POINTER(CoordsHostRequest)": POINTER(CoordsHostRequest),
    "POINTER(CoordsKeychainCallbacks)": POINTER(CoordsKeychainCallbacks),
}

# (name, restype, argtypes) for every function of the header.
_SIGNATURES = [(name, _TYPES[returns], [_TYPES[a] for a in args]) for name, returns, args in _surface.SIGNATURES]
ABI_VERSION = _surface.ABI_VERSION


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


