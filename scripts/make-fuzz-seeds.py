#!/usr/bin/env python3
"""Writes the small committed seed corpora under Fuzz/corpus/<target>/ (run once; the files are
committed). Valid inputs come from the shared vectors and from libcoordscore.so (the C ABI) with
the fuzz fixture's reader seed (32 × 0x07), so the fuzzer starts from inputs that pass the
parsers and reach the crypto.

    COORDSCORE_LIB=.build/debug/libcoordscore.so python3 scripts/make-fuzz-seeds.py
"""
import base64
import json
import os
import pathlib
import struct
import sys

root = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "python"))
import coordscore as cc  # noqa: E402

corpus = root / "Fuzz" / "corpus"
vectors = json.loads((root / "Tests/CoordsCoreTests/Vectors/coords-v3.json").read_text())
envelopes = json.loads((root / "Tests/CoordsCoreTests/Vectors/envelope-v2.json").read_text())
reader_seed = bytes([7]) * 32
reader = cc.public_from_seed(reader_seed)
sender_seed, sender = cc.generate_identity()


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def put(target: str, name: str, data) -> None:
    folder = corpus / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


location = cc.Location(47.3769, 8.5417, timestamp_ms=1_800_000_000_000)
blob = cc.seal(location, [sender, reader])
put("blob-open", "mine", blob)
for i, case in enumerate(vectors["blobs"][:3]):
    put("blob-open", f"vector-{i}", bytes.fromhex(case["blob_hex"]))
for i, case in enumerate(vectors["blob_rejects"][:4]):
    put("blob-open", f"reject-{i}", bytes.fromhex(case["blob_hex"]))

for i, case in enumerate(vectors["links"][:3] + vectors["link_parse"][:6]):
    put("friend-link", f"link-{i}", case["link"])

signature = cc.sign(sender_seed, blob + struct.pack(">Q", 1_800_000_000))
fetch = {b64u(sender): {"blob": b64u(blob), "updated": 1_800_000_000, "signature": b64u(signature),
                        "timestamp": 1_800_000_000}, b64u(reader): None}
put("fetch-response", "signed", json.dumps(fetch))
put("fetch-response", "vector", vectors["fetch_response"]["body"])

put("json", "object", '{"a": [1, -2.5e3, true, null, "\\u00e9\\ud83d\\ude00"], "b": {"c": ""}}')
put("json", "deep", "[" * 40 + "]" * 40)
put("json", "numbers", "[18446744073709551615, -9223372036854775808, 1e308, 0.0000001]")

for i, case in enumerate(vectors["uploads"][:2]):
    put("relay-upload", f"vector-{i}", json.dumps(case["body"]) if not isinstance(case["body"], str) else case["body"])
put("relay-upload", "max-timestamp", json.dumps({"pubkey": b64u(sender), "timestamp": 18446744073709551615,
                                                 "blob": b64u(blob), "signature": b64u(signature)}))
put("relay-fetch", "ids", json.dumps({"ids": [b64u(sender), b64u(reader), "x"]}))
put("relay-delete", "delete", json.dumps({"pubkey": b64u(sender), "timestamp": 1_800_000_000, "signature": b64u(signature)}))

envelope = cc.seal_envelope(sender_seed, reader, b'{"kind":"text","id":"1","text":"hi","sentAt":1}', 1_800_000_000)
put("envelope", "mine", json.dumps(envelope))
put("relay-message-post", "mine", json.dumps(envelope))
unsigned = dict(envelope)
unsigned.pop("senderKey", None)
put("relay-message-post", "unsigned", json.dumps(unsigned))
for i, case in enumerate(envelopes.get("envelopes", [])[:2]):
    put("envelope", f"vector-{i}", json.dumps(case.get("envelope", case)))
put("envelope", "rfc3339", "2026-11-23T13:24:21.123+01:00")

recipient = cc.public_from_seed(reader_seed)
peer = __import__("hashlib").sha256(recipient).hexdigest()
target = f"/v1/relay/messages?recipientID={peer}&limit=10"
put("mailbox-auth", "list", f"{target}\n{b64u(recipient)}\n1800000000\n{b64u(bytes(64))}\n")
put("mailbox-auth", "edge", f"{target}\n{b64u(recipient)}\n\x02\n{b64u(bytes(64))}\n")

put("relay-router", "upload", "PUT /api/location\nContent-Type: application/json\n\n"
    + json.dumps({"pubkey": b64u(sender), "timestamp": 1_800_000_000, "blob": b64u(blob), "signature": b64u(signature)}))
put("relay-router", "fetch", "POST /api/location\nContent-Type: application/json\nContent-Length: 20\n\n"
    + json.dumps({"ids": [b64u(sender)]}))
put("relay-router", "list", f"GET {target}\nX-Coords-Key: {b64u(recipient)}\nX-Coords-Timestamp: 18446744073709551615\n"
    f"X-Coords-Signature: {b64u(bytes(64))}\n\n")
put("relay-router", "ack", f"POST /v1/relay/messages/00000000-0000-4000-8000-000000000000/ack\nX-Coords-Key: {b64u(recipient)}\n"
    "X-Coords-Timestamp: 1800000000\nX-Coords-Signature: AAAA\n\n")
put("relay-router", "message", "POST /v1/relay/messages\nContent-Type: application/json\n\n" + json.dumps(envelope))
put("relay-router", "misc", "PATCH /api/version\nX-Forwarded-For: 1.2.3.4\n\n")
put("relay-router", "metrics", "GET /metrics\n\n")

# A small valid CGEO file: the bundled one is 1.1 MB, so take its header and a few records'
# worth by asking the builder's format (docs/GEOCODING.md) — here simply the first 4 KiB plus a
# truncated copy, which exercises the header and checksum paths.
bundled = (root / "Sources/CGeoData/places15000.cgeo").read_bytes()
put("cgeo", "head", bundled[:4096])
put("cgeo", "header", bundled[:64])

with cc.App(str(root / "Fuzz/.build/seed-app"), passphrase="seed", keychain_cost="minimum", backup_cost="minimum") as app:
    if not app.info().get("public_key"):
        app.create_identity("Seed", "https://relay.example")
    put("backup", "minimum-cost", app.export_backup("fuzz"))
keychain = (root / "Fuzz/.build/seed-app/keychain.bin")
if keychain.exists():
    put("keychain", "passphrase", keychain.read_bytes())
put("keychain", "header-only", b"CKC1\x01\x00" + bytes(16) + bytes(16) + bytes(12))

record = b"\x00" + b"\x01" + struct.pack(">QQ", 1_800_000_000, 1_800_000_001) + bytes(64) + blob[:40]
put("store-codecs", "relay-record", record)
put("store-codecs", "tombstone", b"\x01" + struct.pack(">QQ", 5, 6))
put("store-codecs", "mailbox-v2", b"\x02" + b"\x02\x01" + struct.pack(">Q", 99) + b"\x04abcd" + b"0" * 64 + b"{}")
put("store-codecs", "mailbox-v1", b"\x02" + b"\x01" + struct.pack(">Q", 99) + b"\x04abcd" + b"0" * 64 + b"{}")
put("store-codecs", "friend-json", b"\x03" + json.dumps({"name": "Bob", "server": "https://a"}).encode())
put("store-codecs", "u64", b"\x0a" + struct.pack(">Q", 2**64 - 1))
print(f"seeds written to {corpus}: " + ", ".join(f"{p.name} {len(list(p.iterdir()))}" for p in sorted(corpus.iterdir())))
