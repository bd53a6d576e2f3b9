"""The exceptions of CoordsCore and the stable error codes (include/coordscore.h, docs/ABI.md).

Every failure raises a subclass of `CoordsError` carrying the library's `.code` and `.message`;
the codes are generated from the header into `_surface.py` (scripts/surface.py)."""
from __future__ import annotations

from ._surface import *  # noqa: F401,F403 (OK and every ERR_* code, generated from the header)


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
