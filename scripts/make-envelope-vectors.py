#!/usr/bin/env python3
"""A second implementation of PROTOCOL.md §7 (1:1 envelopes, the sealed payload and its kinds,
mailbox signatures), written from that text alone: libsodium through ctypes (as in
scripts/make-fs-vectors.py), HMAC-SHA256 HKDF, JSON and base64 from Python's standard library.
It reads no CoordsCore code.

Writes Tests/CoordsCoreTests/KnownAnswers/envelope-v2-payloads.json (or the path given): for
fixed keys, ids, times, ephemeral scalars and nonces, one version-2 envelope per payload kind of
§7.2 (its plaintext bytes, the HKDF key, the sealed payload in standard padded base64, the
signature), a recipient-signed mailbox request (§7.3), and envelopes and payloads a reader must
refuse, each with the rule it breaks. With --check, compares instead and exits 1 when the file
differs (tests/e2e runs this).
Usage: scripts/make-envelope-vectors.py [--check] [PATH]
"""
import base64
import hashlib
import importlib.util
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = os.path.join(ROOT, "Tests", "CoordsCoreTests", "KnownAnswers", "envelope-v2-payloads.json")

_spec = importlib.util.spec_from_file_location("fsvectors", os.path.join(ROOT, "scripts", "make-fs-vectors.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)


def secret(label):
    return hashlib.sha256(b"coords-envelope-vector/" + label.encode()).digest()


def b64(data):
    """Standard base64 with padding (§7: sealedPayloadBase64, signatureBase64)."""
    return base64.b64encode(data).decode()


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def peer_id(pk):
    return hashlib.sha256(pk).hexdigest()


def uuid_from(label):
    b = bytearray(secret("uuid/" + label)[:16])
    b[6] = b[6] & 0x0F | 0x40
    b[8] = b[8] & 0x3F | 0x80
    h = b.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def compact(value):
    """The plaintext JSON: UTF-8, no spaces, members in the order given."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


ALICE_PK, ALICE_SK = fs.ed25519_keypair(secret("alice"))
BOB_PK, BOB_SK = fs.ed25519_keypair(secret("bob"))
CREATED, EXPIRES = "2026-11-29T06:00:00Z", "2026-11-30T06:00:00Z"
SENT_AT = 1_795_932_000_000


def seal(label, plaintext, envelope_id=None, sender=(ALICE_PK, ALICE_SK), recipient=BOB_PK):
    """One version-2 envelope of §7.1 and §7.2, with its intermediate values."""
    spk, ssk = sender
    envelope_id = envelope_id or uuid_from(label)
    sender_id, recipient_id = peer_id(spk), peer_id(recipient)
    e = secret("ephemeral/" + label)
    e_pub = fs.x_public(e)
    nonce = secret("nonce/" + label)[:12]
    s_priv, s_pub, r_pub = fs.ed_to_x_private(ssk), fs.ed_to_x_public(spk), fs.ed_to_x_public(recipient)
    ikm = fs.dh(e, r_pub) + fs.dh(s_priv, r_pub)
    key = fs.hkdf(ikm, b"CoordsCore/envelope/v2", e_pub + s_pub + r_pub, 32)
    ad = f"{envelope_id}|{sender_id}|{recipient_id}|{CREATED}|{EXPIRES}".encode()
    sealed = e_pub + nonce + fs.aes_gcm_seal(key, nonce, plaintext, ad)
    sealed_text = b64(sealed)
    signed = f"CoordsCore/envelope/v2|2|{envelope_id}|{sender_id}|{recipient_id}|{CREATED}|{EXPIRES}|{sealed_text}".encode()
    envelope = {"protocolVersion": 2, "id": envelope_id, "senderID": sender_id, "recipientID": recipient_id,
                "sealedPayloadBase64": sealed_text, "signatureBase64": b64(fs.ed25519_sign(ssk, signed)),
                "createdAt": CREATED, "expiresAt": EXPIRES, "senderKey": b64u(spk)}
    return {"ephemeralScalar": e.hex(), "nonce": nonce.hex(), "key": key.hex(), "associatedData": ad.decode(),
            "plaintext": plaintext.decode(), "envelope": envelope}


def rotation():
    """A §9.1 statement: Alice moves to a new key, signed by both."""
    new_pk, new_sk = fs.ed25519_keypair(secret("alice-next"))
    server, at = b"https://relay.example", SENT_AT + 2
    signed = b"coords-rotate-v1" + ALICE_PK + new_pk + fs.u64(at) + bytes([0]) + len(server).to_bytes(2, "big") + server
    return {"old": b64u(ALICE_PK), "new": b64u(new_pk), "server": server.decode(), "at": at, "revokes": False,
            "oldSignature": b64u(fs.ed25519_sign(ALICE_SK, signed)), "newSignature": b64u(fs.ed25519_sign(new_sk, signed))}


def payloads():
    """One payload of each §7.2 kind, and the message id a reader keeps it under."""
    text_id, file_id = uuid_from("text-message"), uuid_from("file-message")
    kinds = [
        ("text", {"kind": "text", "id": text_id, "text": "on my way ☕", "sentAt": SENT_AT}),
        ("receipt", {"kind": "receipt", "id": uuid_from("receipt"), "text": "", "sentAt": SENT_AT + 1, "ack": text_id}),
        ("rotation", {"kind": "rotation", "id": uuid_from("rotation"), "text": "", "sentAt": SENT_AT + 2, "rotation": rotation()}),
        ("session-reset", {"kind": "session-reset", "id": uuid_from("reset"), "text": "", "sentAt": SENT_AT + 3}),
        ("group-statement", {"kind": "group-statement", "id": uuid_from("statement"), "text": "", "sentAt": SENT_AT + 4,
                             "group": b64u(secret("group")[:16]), "statements": [b64u(secret("statement-bytes"))]}),
        ("group-sender-key", {"kind": "group-sender-key", "id": uuid_from("sender-key"), "text": "", "sentAt": SENT_AT + 5,
                              "group": b64u(secret("group")[:16]), "chain": 7, "iteration": 0,
                              "chainKey": b64u(secret("chain-key")), "signingKey": b64u(BOB_PK)}),
        ("file", {"kind": "file", "id": file_id, "text": "the view", "sentAt": SENT_AT + 6,
                  "file": {"object": b64u(secret("object")[:16]), "size": 300000, "type": "image/jpeg", "name": "harbour.jpg",
                           "sha256": b64u(secret("digest")), "key": b64u(secret("file-key")), "expiresAt": 1796536800}}),
        ("a kind nobody knows yet", {"kind": "postcard", "id": uuid_from("postcard"), "text": "kept, reported", "sentAt": SENT_AT + 7,
                                     "stamp": {"country": "CH"}}),
    ]
    out = []
    for name, payload in kinds:
        vector = seal("payload/" + name, compact(payload))
        vector["name"] = name
        vector["messageID"] = payload["id"]
        out.append(vector)
    # One message id (§7.2): an envelope whose id is not the payload's is known by the payload's.
    other = seal("payload/own-envelope-id", compact({"kind": "text", "id": text_id, "text": "on my way ☕", "sentAt": SENT_AT}),
                 envelope_id=uuid_from("delivery"))
    other["name"] = "an envelope id of its own"
    other["messageID"] = text_id
    out.append(other)
    return out


def refusals():
    """What a reader (R) or a relay (relay) must refuse, and why."""
    good = seal("refusal/good", compact({"kind": "text", "id": uuid_from("refused"), "text": "x", "sentAt": SENT_AT}))["envelope"]
    out = []

    def case(rule, who, envelope):
        out.append({"rule": rule, "refusedBy": who, "envelope": envelope})

    urlsafe = dict(good)
    urlsafe["sealedPayloadBase64"] = good["sealedPayloadBase64"].replace("+", "-").replace("/", "_").rstrip("=")
    case("sealedPayloadBase64 is standard base64 with padding, not base64url (§7)", "relay and reader", urlsafe)
    moved = dict(good)
    moved["expiresAt"] = "2026-11-30T07:00:00Z"
    case("the header is the AEAD's associated data and is signed: a later expiry does not verify (§7.1, §7.2)", "relay and reader", moved)
    forged = dict(good)
    forged["signatureBase64"] = b64(bytes(64))
    case("the signature verifies with the sender's key (§7.1)", "relay and reader", forged)
    self_addressed = dict(good)
    self_addressed["recipientID"] = self_addressed["senderID"]
    case("sender and recipient differ (§7.1)", "relay and reader", self_addressed)
    not_uuid = dict(good)
    not_uuid["id"] = "message-1"
    case("id is a UUID (§7.1)", "relay and reader", not_uuid)
    version3 = dict(good)
    version3["protocolVersion"] = 3
    del version3["senderKey"]
    case("versions 3 and 4 carry senderKey (§7.1)", "relay and reader", version3)
    no_id = seal("refusal/no-id", compact({"kind": "text", "text": "x", "sentAt": SENT_AT}))
    case("the payload has kind, id and sentAt (§7.2)", "reader", no_id["envelope"])
    no_sent_at = seal("refusal/no-sentat", compact({"kind": "text", "id": uuid_from("no-sentat"), "text": "x"}))
    case("the payload has kind, id and sentAt (§7.2)", "reader", no_sent_at["envelope"])
    for_alice = seal("refusal/not-for-bob", compact({"kind": "text", "id": uuid_from("x"), "text": "x", "sentAt": SENT_AT}),
                     sender=(BOB_PK, BOB_SK), recipient=ALICE_PK)
    case("the envelope is addressed to the reader (§7.1)", "reader", for_alice["envelope"])
    return out


def mailbox():
    """A recipient-signed list request (§7.3): the string signed and the headers."""
    path = f"/v1/relay/messages?recipientID={peer_id(BOB_PK)}&limit=100"
    timestamp = 1_795_932_000
    signed = f"coords-mailbox-v1|GET|{path}|{timestamp}".encode()
    return {"method": "GET", "pathWithQuery": path, "timestamp": timestamp, "signed": signed.decode(),
            "headers": {"X-Coords-Key": b64u(BOB_PK), "X-Coords-Timestamp": str(timestamp),
                        "X-Coords-Signature": b64u(fs.ed25519_sign(BOB_SK, signed))}}


def make():
    return {
        "description": "PROTOCOL.md §7 known answers from scripts/make-envelope-vectors.py (an independent implementation): "
                       "version-2 envelopes of every payload kind, a mailbox signature, and refusals. Seeds are "
                       "SHA-256(\"coords-envelope-vector/\" + label).",
        "alice": {"seed": secret("alice").hex(), "publicKey": b64u(ALICE_PK), "peerID": peer_id(ALICE_PK)},
        "bob": {"seed": secret("bob").hex(), "publicKey": b64u(BOB_PK), "peerID": peer_id(BOB_PK)},
        "createdAt": CREATED, "expiresAt": EXPIRES,
        "openAt": 1_795_932_100,
        "envelopes": payloads(),
        "mailbox": mailbox(),
        "refusals": refusals(),
    }


def main(argv):
    return fs.write_or_check(make(), DEFAULT, argv, "scripts/make-envelope-vectors.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
