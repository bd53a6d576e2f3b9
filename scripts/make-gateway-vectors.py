#!/usr/bin/env python3
"""Test vectors for PROTOCOL.md §8.8 (push gateway tokens), computed by a second implementation
written from the text of §8.8 alone.

It shares no code with CoordsCore: X25519, BLAKE2b and XSalsa20-Poly1305 come from libsodium
through ctypes (as in scripts/make-fs-vectors.py); the sealed box is built from its parts as
§8.8 states them (crypto_box_seed_keypair, crypto_generichash, crypto_box_easy) with ephemeral
keys derived from labels, so the file is reproducible byte for byte; JSON and base64 come from
Python's standard library.

Writes Tests/CoordsCoreTests/KnownAnswers/gateway-v1.json (or the path given); with --check,
compares instead and exits 1 when the file differs (tests/e2e runs this).
Usage: scripts/make-gateway-vectors.py [--check] [PATH]
"""
import base64
import ctypes
import hashlib
import importlib.util
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = os.path.join(ROOT, "Tests", "CoordsCoreTests", "KnownAnswers", "gateway-v1.json")

_spec = importlib.util.spec_from_file_location("fsvectors", os.path.join(ROOT, "scripts", "make-fs-vectors.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)
_sodium = fs._sodium

PLAINTEXT = 512
BASE = "https://push.example.com"


def secret(label):
    return hashlib.sha256(b"coords-gateway-vector/" + label.encode()).digest()


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def box_keypair(seed):
    pk, sk = ctypes.create_string_buffer(32), ctypes.create_string_buffer(32)
    assert _sodium.crypto_box_seed_keypair(pk, sk, seed) == 0
    return pk.raw, sk.raw


def seal(plaintext, recipient, ephemeral_seed):
    """§8.8: E ‖ XSalsa20-Poly1305(crypto_box_beforenm(G, e), BLAKE2b-192(E ‖ G), plaintext)."""
    epk, esk = box_keypair(ephemeral_seed)
    nonce = ctypes.create_string_buffer(24)
    assert _sodium.crypto_generichash(nonce, ctypes.c_size_t(24), epk + recipient, ctypes.c_ulonglong(64), None, ctypes.c_size_t(0)) == 0
    out = ctypes.create_string_buffer(16 + len(plaintext))
    assert _sodium.crypto_box_easy(out, plaintext, ctypes.c_ulonglong(len(plaintext)), nonce, recipient, esk) == 0
    return epk + out.raw


def padded(text):
    data = text.encode()
    assert len(data) <= PLAINTEXT
    return data + b" " * (PLAINTEXT - len(data))


def make():
    gateway_pk, gateway_sk = box_keypair(secret("gateway"))
    other_pk, _ = box_keypair(secret("other gateway"))
    apns_device = hashlib.sha256(b"apns device").hexdigest()  # 64 lowercase hex digits
    fcm_device = "fcm:" + b64u(hashlib.sha512(b"fcm device").digest())[:150]
    valid = [
        ("an APNs production token", {"v": 1, "platform": "apns", "device": apns_device, "env": "production"}),
        ("an APNs development token (members in another order)", {"env": "development", "device": apns_device, "v": 1, "platform": "apns"}),
        ("an APNs token without env (production)", {"v": 1, "platform": "apns", "device": apns_device}),
        ("an FCM token", {"v": 1, "platform": "fcm", "device": fcm_device}),
    ]
    tokens = []
    for index, (description, member) in enumerate(valid):
        text = json.dumps(member, separators=(",", ":"))
        sealed = seal(padded(text), gateway_pk, secret(f"ephemeral {index}"))
        token = b64u(sealed)
        assert len(token) == 747
        tokens.append({
            "description": description, "json": text, "token": token, "endpoint": f"{BASE}/up/{token}",
            "platform": member["platform"], "device": member["device"],
            "env": member.get("env", "production") if member["platform"] == "apns" else None,
        })
    good = padded(json.dumps(valid[0][1], separators=(",", ":")))
    rejected = [
        ("sealed to another gateway", b64u(seal(good, other_pk, secret("reject 0")))),
        ("one bit of the box flipped", (lambda b: b64u(b[:100] + bytes([b[100] ^ 1]) + b[101:]))(seal(good, gateway_pk, secret("reject 1")))),
        ("cut short by one byte", b64u(seal(good, gateway_pk, secret("reject 2"))[:-1])),
        ("a plaintext of 511 bytes", b64u(seal(good[:-1], gateway_pk, secret("reject 3")))),
        ("a plaintext of 513 bytes", b64u(seal(good + b" ", gateway_pk, secret("reject 4")))),
        ("padded with a byte other than a space", b64u(seal(good[:-1] + b"\x00", gateway_pk, secret("reject 5")))),
        ("a member not in §8.8", b64u(seal(padded('{"v":1,"platform":"fcm","device":"abc","extra":1}'), gateway_pk, secret("reject 6")))),
        ("version 2", b64u(seal(padded(f'{{"v":2,"platform":"apns","device":"{apns_device}"}}'), gateway_pk, secret("reject 7")))),
        ("an unknown platform", b64u(seal(padded('{"v":1,"platform":"wns","device":"abc"}'), gateway_pk, secret("reject 8")))),
        ("APNs hex in upper case", b64u(seal(padded(f'{{"v":1,"platform":"apns","device":"{apns_device.upper()}"}}'), gateway_pk, secret("reject 9")))),
        ("APNs hex of odd length", b64u(seal(padded(f'{{"v":1,"platform":"apns","device":"{apns_device[:-1]}"}}'), gateway_pk, secret("reject 10")))),
        ("APNs hex of 62 digits", b64u(seal(padded(f'{{"v":1,"platform":"apns","device":"{apns_device[:62]}"}}'), gateway_pk, secret("reject 11")))),
        ("an APNs env not in §8.8", b64u(seal(padded(f'{{"v":1,"platform":"apns","device":"{apns_device}","env":"staging"}}'), gateway_pk, secret("reject 12")))),
        ("an env on an FCM token", b64u(seal(padded('{"v":1,"platform":"fcm","device":"abc","env":"production"}'), gateway_pk, secret("reject 13")))),
        ("an FCM token with a character outside A-Z a-z 0-9 - _ :", b64u(seal(padded('{"v":1,"platform":"fcm","device":"a/b"}'), gateway_pk, secret("reject 14")))),
        ("an empty FCM token", b64u(seal(padded('{"v":1,"platform":"fcm","device":""}'), gateway_pk, secret("reject 15")))),
        ("a member twice", b64u(seal(padded('{"v":1,"platform":"fcm","device":"abc","device":"abd"}'), gateway_pk, secret("reject 16")))),
        ("not JSON", b64u(seal(padded("v=1;platform=fcm"), gateway_pk, secret("reject 17")))),
        ("not base64url", "!" * 747),
    ]
    return {
        "description": "PROTOCOL.md §8.8 push gateway tokens, made by scripts/make-gateway-vectors.py",
        "gateway": {"secret_key": b64u(gateway_sk), "public_key": b64u(gateway_pk)},
        "base_url": BASE,
        "tokens": tokens,
        "rejected": [{"description": d, "token": t} for d, t in rejected],
    }


def main(argv):
    return fs.write_or_check(make(), DEFAULT, argv, "scripts/make-gateway-vectors.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
