#!/usr/bin/env python3
"""Test vectors for PROTOCOL.md §11 (groups), computed by a second implementation written from
the text of §11 alone.

It shares no code with CoordsCore: the primitives are those of scripts/make-fs-vectors.py (HKDF
and HMAC from Python's standard library, Ed25519 and AES-256-GCM from libsodium through ctypes).
Every secret is derived from a label, so the file is reproducible byte for byte.

Writes Tests/CoordsCoreTests/KnownAnswers/groups-v1.json (or the path given); with --check,
compares instead and exits 1 when the file differs (tests/e2e runs this).
Usage: scripts/make-group-vectors.py [--check] [PATH]
"""
import base64
import hashlib
import importlib.util
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = os.path.join(ROOT, "Tests", "CoordsCoreTests", "KnownAnswers", "groups-v1.json")

_spec = importlib.util.spec_from_file_location("fsvectors", os.path.join(ROOT, "scripts", "make-fs-vectors.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)

PREFIX = b"coords-group-v1"
GROUP_LABEL = b"CoordsCore/group/v1"


def secret(label):
    return hashlib.sha256(b"coords-group-vector/" + label.encode()).digest()


def u16(v):
    return struct.pack(">H", v)


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# --- §11.3 statements --------------------------------------------------------------------------

def body(group, epoch, previous, author, at, name, members):
    """members: [(key, admin)], written sorted by key as §11.2 requires of a valid state."""
    name_bytes = name if isinstance(name, bytes) else name.encode()
    out = PREFIX + group + fs.u32(epoch) + previous + author + fs.u64(at) + bytes([len(name_bytes)]) + name_bytes
    out += u16(len(members))
    for key, admin in members:
        out += key + bytes([1 if admin else 0])
    return out


def statement(author_sk, group, epoch, previous, at, name, members, sort=True):
    ordered = sorted(members) if sort else members
    b = body(group, epoch, previous, author_sk[32:], at, name, ordered)
    full = b + fs.ed25519_sign(author_sk, b)
    return full, hashlib.sha256(full).digest()


def describe(full, digest, epoch, name, members, names):
    return {
        "statement": full.hex(), "hash": digest.hex(), "epoch": epoch, "name": name,
        "members": [{"name": names[key], "admin": admin} for key, admin in sorted(members)],
    }


# --- §11.5 sender chains, §11.6 group messages ------------------------------------------------

def kdf_gk(ck):
    okm = fs.hkdf(ck, b"CoordsCore/group/chain/v1", b"", 76)
    return okm[:32], okm[32:]


def group_message(sender_pk, signing_sk, group, chain, n, epoch, mk, plaintext):
    core = GROUP_LABEL + sender_pk + group + fs.u32(chain) + fs.u32(n) + fs.u32(epoch)
    ciphertext = fs.aes_gcm_seal(mk[:32], mk[32:44], plaintext, core)
    signature = fs.ed25519_sign(signing_sk, core + ciphertext)
    return b"\x47\x01" + group + fs.u32(chain) + fs.u32(n) + fs.u32(epoch) + ciphertext + signature


def make():
    names = {}
    keys = {}
    for who in ["alice", "bob", "carol", "dave"]:
        pk, sk = fs.ed25519_keypair(secret(who))
        keys[who] = (pk, sk)
        names[pk] = who
    a_pk, a_sk = keys["alice"]
    b_pk, b_sk = keys["bob"]
    c_pk, _ = keys["carol"]
    d_pk, _ = keys["dave"]
    group = secret("group-id")[:16]
    at = 1767225600000
    zero = b"\0" * 32
    out = {
        "description": "PROTOCOL.md §11 known answers, made by scripts/make-group-vectors.py from the text of §11.",
        "identities": {who: {"seed": secret(who).hex(), "public": pk.hex()} for who, (pk, _) in keys.items()},
        "group": group.hex(), "groupB64u": b64u(group),
    }
    # A history: create (alice admin, bob), add carol, bob leaves, rename + carol admin.
    s0_members = [(a_pk, True), (b_pk, False)]
    s0, h0 = statement(a_sk, group, 0, zero, at, "Trip to Porto", s0_members)
    s1_members = s0_members + [(c_pk, False)]
    s1, h1 = statement(a_sk, group, 1, h0, at + 1000, "Trip to Porto", s1_members)
    s2_members = [(a_pk, True), (c_pk, False)]
    s2, h2 = statement(b_sk, group, 2, h1, at + 2000, "Trip to Porto", s2_members)
    s3_members = [(a_pk, True), (c_pk, True)]
    s3, h3 = statement(a_sk, group, 3, h2, at + 3000, "Porto 2026 🚆", s3_members)
    out["statements"] = [
        dict(describe(s0, h0, 0, "Trip to Porto", s0_members, names), author="alice", change="create"),
        dict(describe(s1, h1, 1, "Trip to Porto", s1_members, names), author="alice", change="add carol"),
        dict(describe(s2, h2, 2, "Trip to Porto", s2_members, names), author="bob", change="bob leaves"),
        dict(describe(s3, h3, 3, "Porto 2026 🚆", s3_members, names), author="alice", change="rename, carol admin"),
    ]
    # Statements a parser refuses (malformedGroupStatement or badGroupSignature).
    rejects = []

    def reject(rule, data, error="malformed"):
        rejects.append({"rule": rule, "statement": data.hex(), "error": error})

    reject("a trailing byte", s1 + b"\0")
    reject("one byte short", s1[:-1])
    flipped = bytearray(s1)
    flipped[-1] ^= 1
    reject("the signature does not verify", bytes(flipped), "signature")
    wrong_prefix = bytearray(s0)
    wrong_prefix[0] ^= 0x20
    reject("another prefix", bytes(wrong_prefix))
    reject("epoch 0 with a non-zero previous", statement(a_sk, group, 0, h0, at, "x", s0_members)[0])
    reject("epoch above 0 with a zero previous", statement(a_sk, group, 1, zero, at, "x", s0_members)[0])
    reject("epoch 2^32-1", statement(a_sk, group, 0xFFFFFFFF, h0, at, "x", s0_members)[0])
    reject("members not sorted", statement(a_sk, group, 1, h0, at, "x", sorted(s0_members, reverse=True), sort=False)[0])
    reject("a member twice", statement(a_sk, group, 1, h0, at, "x", [(a_pk, True), (a_pk, True)])[0])
    reject("no admin", statement(a_sk, group, 1, h0, at, "x", [(a_pk, False), (b_pk, False)])[0])
    reject("no member", statement(a_sk, group, 1, h0, at, "x", [])[0])
    reject("an empty name", statement(a_sk, group, 1, h0, at, "", s0_members)[0])
    reject("a control character in the name", statement(a_sk, group, 1, h0, at, "a\nb", s0_members)[0])
    reject("a name of 65 bytes", statement(a_sk, group, 1, h0, at, "n" * 65, s0_members)[0])
    reject("a name that is not UTF-8", statement(a_sk, group, 1, h0, at, b"\xff", s0_members)[0])
    flags = bytearray(s1)
    # The first member's flags byte: after prefix, id, epoch, previous, author, at, name, count, key.
    offset = len(PREFIX) + 16 + 4 + 32 + 32 + 8 + 1 + len("Trip to Porto") + 2 + 32
    flags[offset] = 2
    reject("flags other than 0 or 1", bytes(flags))
    out["rejects"] = rejects
    # Transitions §11.4 rule 4 refuses: (predecessor index, statement, error).
    transitions = []
    by_bob = statement(b_sk, group, 1, h0, at, "Trip to Porto", s0_members + [(d_pk, False)])[0]
    transitions.append({"rule": "a non-admin adds someone", "predecessor": 0, "statement": by_bob.hex(), "error": "notAnAdmin"})
    rename_by_bob = statement(b_sk, group, 1, h0, at, "Bob's trip", s0_members)[0]
    transitions.append({"rule": "a non-admin renames", "predecessor": 0, "statement": rename_by_bob.hex(), "error": "notAnAdmin"})
    after_leave = statement(b_sk, group, 3, h2, at, "Trip to Porto", s2_members + [(b_pk, False)])[0]
    transitions.append({"rule": "a member who left re-adds itself", "predecessor": 2, "statement": after_leave.hex(), "error": "notAMember"})
    out["transitions"] = transitions
    # A sender chain (§11.5).
    ck = secret("chain-key")
    chain_steps = []
    c = ck
    for n in range(3):
        nxt, mk = kdf_gk(c)
        chain_steps.append({"n": n, "chainKey": c.hex(), "messageKey": mk.hex(), "next": nxt.hex()})
        c = nxt
    out["chain"] = {"chainKey": ck.hex(), "steps": chain_steps}
    # A group message (§11.6) from alice, chain 0x01020304, n = 2, epoch 3, and its envelope to carol.
    signing_pk, signing_sk = fs.ed25519_keypair(secret("alice-chain-signing"))
    envelope_id = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
    plaintext = json.dumps({"kind": "text", "id": envelope_id, "text": "at the station", "sentAt": at + 5000},
                           separators=(",", ":"), ensure_ascii=False).encode()
    gm = group_message(a_pk, signing_sk, group, 0x01020304, 2, 3, bytes.fromhex(chain_steps[2]["messageKey"]), plaintext)
    envelope = {
        "protocolVersion": 4, "id": envelope_id, "senderID": hashlib.sha256(a_pk).hexdigest(),
        "recipientID": hashlib.sha256(c_pk).hexdigest(), "createdAt": "2026-01-01T00:00:05Z", "expiresAt": "2026-01-02T00:00:05Z",
        "sealedPayloadBase64": base64.b64encode(gm).decode(), "senderKey": b64u(a_pk),
    }
    signed = "CoordsCore/envelope/v4|4|%s|%s|%s|%s|%s|%s" % (
        envelope["id"], envelope["senderID"], envelope["recipientID"], envelope["createdAt"], envelope["expiresAt"],
        envelope["sealedPayloadBase64"])
    envelope["signatureBase64"] = base64.b64encode(fs.ed25519_sign(a_sk, signed.encode())).decode()
    out["message"] = {
        "sender": "alice", "signingSeed": secret("alice-chain-signing").hex(), "signingKey": signing_pk.hex(),
        "chain": 0x01020304, "n": 2, "epoch": 3, "messageKey": chain_steps[2]["messageKey"],
        "plaintext": plaintext.decode(), "groupMessage": gm.hex(), "envelopeToCarol": envelope,
        "envelopeSignedBytes": signed,
    }
    return out


def main(argv):
    return fs.write_or_check(make(), DEFAULT, argv, "scripts/make-group-vectors.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
