#!/usr/bin/env python3
"""Test vectors for PROTOCOL.md §12 (attachments), computed by a second implementation written
from the text of §12 alone.

It shares no code with CoordsCore: XChaCha20-Poly1305-IETF comes from libsodium through ctypes
(as in scripts/make-fs-vectors.py), SHA-256 and base64 from Python's standard library. Every
secret is derived from a label, so the file is reproducible byte for byte.

Writes Tests/CoordsCoreTests/KnownAnswers/objects-v1.json (or the path given); with --check,
compares instead and exits 1 when the file differs (tests/e2e runs this).
Usage: scripts/make-object-vectors.py [--check] [PATH]
"""
import base64
import ctypes
import hashlib
import importlib.util
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = os.path.join(ROOT, "Tests", "CoordsCoreTests", "KnownAnswers", "objects-v1.json")

_spec = importlib.util.spec_from_file_location("fsvectors", os.path.join(ROOT, "scripts", "make-fs-vectors.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)
_sodium = fs._sodium

CHUNK = 65536
TAG = 16
MAX_SIZE = 104857600
LABEL = b"CoordsCore/object/v1"


def secret(label):
    return hashlib.sha256(b"coords-object-vector/" + label.encode()).digest()


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def xaead(key, nonce, plaintext, ad):
    out = ctypes.create_string_buffer(len(plaintext) + TAG)
    out_len = ctypes.c_ulonglong(0)
    assert len(key) == 32 and len(nonce) == 24
    rc = _sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(
        out, ctypes.byref(out_len), ctypes.c_char_p(plaintext), ctypes.c_ulonglong(len(plaintext)),
        ctypes.c_char_p(ad), ctypes.c_ulonglong(len(ad)), None, ctypes.c_char_p(nonce), ctypes.c_char_p(key))
    assert rc == 0 and out_len.value == len(plaintext) + TAG
    return out.raw


def file_bytes(size):
    """Byte j of a vector file is j mod 251."""
    pattern = bytes(range(251))
    return (pattern * (size // 251 + 1))[:size]


def seal(key, oid, data):
    """§12.2: the object's chunks, front to back."""
    n = max(1, -(-len(data) // CHUNK))
    chunks = []
    for i in range(n):
        last = b"\x01" if i == n - 1 else b"\x00"
        nonce = oid + struct.pack(">I", i) + last + b"\x00\x00\x00"
        ad = LABEL + oid + struct.pack(">I", i) + last
        chunks.append(xaead(key, nonce, data[i * CHUNK:(i + 1) * CHUNK], ad))
    return chunks


def file_payload(**change):
    file = {
        "object": b64u(secret("oid")[:16]), "size": 100, "type": "image/jpeg", "name": "station.jpg",
        "sha256": b64u(secret("digest")), "key": b64u(secret("key")), "expiresAt": 1800000000,
    }
    for name, value in change.items():
        if value is None:
            file.pop(name)
        else:
            file[name] = value
    return {"kind": "file", "id": "5b0e8f3c-6c59-4d7a-9a53-2f4d1e0c7a11", "text": "where we are", "sentAt": 1763805600000,
            "file": file}


def make():
    key = secret("key")
    oid = secret("oid")[:16]
    files = []
    for size in [0, 1, 100, 65535, 65536, 65537, 200000]:
        chunks = seal(key, oid, file_bytes(size))
        obj = b"".join(chunks)
        entry = {
            "size": size, "chunks": len(chunks), "stored": len(obj),
            "tags": [b64u(c[-TAG:]) for c in chunks], "sha256": b64u(hashlib.sha256(obj).digest()),
        }
        if size <= 100:
            entry["objectHex"] = obj.hex()
        files.append(entry)
    # Other object ids and keys give other bytes: a chunk of one object never opens in another.
    other = seal(key, secret("other")[:16], file_bytes(1))[0]
    valid = [
        file_payload(),
        file_payload(name="", size=0, type="application/vnd.example+json"),
        file_payload(size=MAX_SIZE, type="Audio/MP4", name="voice note 12.m4a"),
    ]
    refused = [
        ("size over OBJECT_MAX_SIZE", file_payload(size=MAX_SIZE + 1)),
        ("negative size", file_payload(size=-1)),
        ("size not an integer", file_payload(size=1.5)),
        ("size a string", file_payload(size="100")),
        ("object of 15 bytes", file_payload(object=b64u(secret("oid")[:15]))),
        ("key of 31 bytes", file_payload(key=b64u(secret("key")[:31]))),
        ("sha256 padded", file_payload(sha256=b64u(secret("digest")) + "=")),
        ("key in standard base64", file_payload(key=base64.b64encode(secret("key")).decode())),
        ("type without a slash", file_payload(type="jpeg")),
        ("type with a parameter", file_payload(type="text/plain; charset=utf-8")),
        ("type with an empty subtype", file_payload(type="image/")),
        ("type of 128 bytes", file_payload(type="image/" + "x" * 122)),
        ("name ..", file_payload(name="..")),
        ("name with a slash", file_payload(name="a/b.jpg")),
        ("name with a backslash", file_payload(name="a\\b.jpg")),
        ("name with a control character", file_payload(name="a\u0007.jpg")),
        ("name of 256 bytes", file_payload(name="x" * 256)),
        ("sha256 missing", file_payload(sha256=None)),
        ("expiresAt missing", file_payload(expiresAt=None)),
        ("expiresAt negative", file_payload(expiresAt=-5)),
    ]
    return {
        "description": "PROTOCOL.md §12 known answers, made by scripts/make-object-vectors.py from the text of §12.",
        "key": b64u(key),
        "object": b64u(oid),
        "fileBytes": "byte j of a file is j mod 251",
        "files": files,
        "otherObject": {"object": b64u(secret("other")[:16]), "size": 1, "chunkHex": other.hex()},
        "validMessages": valid,
        "refusedMessages": [{"rule": rule, "payload": payload} for rule, payload in refused],
    }


def main(argv):
    return fs.write_or_check(make(), DEFAULT, argv, "scripts/make-object-vectors.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
