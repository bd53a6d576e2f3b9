#!/usr/bin/env python3
"""Test vectors for PROTOCOL.md §10 (prekeys, handshake, Double Ratchet, forward-secret blob
entries), computed by a second implementation written from the text of §10 alone.

It shares no code with CoordsCore: HKDF and HMAC come from Python's standard library, X25519,
Ed25519 and AES-256-GCM from libsodium through ctypes. Every secret is derived from a label
(SHA-256 of "coords-fs-vector/<label>"), so the file is reproducible byte for byte.

Writes Tests/CoordsCoreTests/KnownAnswers/forward-secrecy-v1.json (or the path given); with
--check, compares instead and exits 1 when the file differs (tests/python runs this).
Usage: scripts/make-fs-vectors.py [--check] [PATH]
"""
import ctypes
import ctypes.util
import hashlib
import hmac
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = os.path.join(ROOT, "Tests", "CoordsCoreTests", "KnownAnswers", "forward-secrecy-v1.json")

_sodium = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
if _sodium.sodium_init() < 0:
    raise SystemExit("libsodium failed to initialise")
_u8p = ctypes.c_char_p


def _buf(n):
    return ctypes.create_string_buffer(n)


def secret(label):
    return hashlib.sha256(b"coords-fs-vector/" + label.encode()).digest()


# --- primitives (libsodium + stdlib) -------------------------------------------------------

def ed25519_keypair(seed):
    pk, sk = _buf(32), _buf(64)
    assert _sodium.crypto_sign_seed_keypair(pk, sk, _u8p(seed)) == 0
    return pk.raw, sk.raw


def ed25519_sign(sk, message):
    sig = _buf(64)
    assert _sodium.crypto_sign_detached(sig, None, _u8p(message), ctypes.c_ulonglong(len(message)), _u8p(sk)) == 0
    return sig.raw


def ed_to_x_public(pk):
    out = _buf(32)
    assert _sodium.crypto_sign_ed25519_pk_to_curve25519(out, _u8p(pk)) == 0
    return out.raw


def ed_to_x_private(sk):
    out = _buf(32)
    assert _sodium.crypto_sign_ed25519_sk_to_curve25519(out, _u8p(sk)) == 0
    return out.raw


def x_public(private):
    out = _buf(32)
    assert _sodium.crypto_scalarmult_base(out, _u8p(private)) == 0
    return out.raw


def dh(private, public):
    out = _buf(32)
    assert _sodium.crypto_scalarmult(out, _u8p(private), _u8p(public)) == 0, "all-zero agreement"
    return out.raw


def aes_gcm_seal(key, nonce, plaintext, ad):
    assert _sodium.crypto_aead_aes256gcm_is_available() == 1
    out = _buf(len(plaintext) + 16)
    outlen = ctypes.c_ulonglong(0)
    assert _sodium.crypto_aead_aes256gcm_encrypt(
        out, ctypes.byref(outlen), _u8p(plaintext), ctypes.c_ulonglong(len(plaintext)), _u8p(ad),
        ctypes.c_ulonglong(len(ad)), None, _u8p(nonce), _u8p(key)) == 0
    return out.raw[:outlen.value]


def aes_gcm_open(key, nonce, sealed, ad):
    out = _buf(max(len(sealed) - 16, 1))
    outlen = ctypes.c_ulonglong(0)
    ok = _sodium.crypto_aead_aes256gcm_decrypt(
        out, ctypes.byref(outlen), None, _u8p(sealed), ctypes.c_ulonglong(len(sealed)), _u8p(ad),
        ctypes.c_ulonglong(len(ad)), _u8p(nonce), _u8p(key))
    assert ok == 0, "does not authenticate"
    return out.raw[:outlen.value]


def hkdf(ikm, salt, info, length):
    prk = hmac.new(salt if salt else b"\0" * 32, ikm, hashlib.sha256).digest()
    okm, block, i = b"", b"", 1
    while len(okm) < length:
        block = hmac.new(prk, block + info + bytes([i]), hashlib.sha256).digest()
        okm += block
        i += 1
    return okm[:length]


def u32(v):
    return struct.pack(">I", v)


def u64(v):
    return struct.pack(">Q", v)


# --- §10.2 prekeys ---------------------------------------------------------------------------

def spk_signed(pid, key, created, expires):
    return b"coords-prekey-v1" + u32(pid) + key + u64(created) + u64(expires)


def opk_signed(pid, key):
    return b"coords-onetime-prekey-v1" + u32(pid) + key


# --- §10.5 handshake -------------------------------------------------------------------------

def x3dh(dhs, ik_a, ik_b):
    return hkdf(b"\xff" * 32 + b"".join(dhs), b"\0" * 32, b"CoordsCore/x3dh/v1" + ik_a + ik_b, 32)


# --- §10.6 ratchet ---------------------------------------------------------------------------

def kdf_rk(rk, dh_out):
    okm = hkdf(rk + dh_out, b"CoordsCore/ratchet/root/v1", b"", 64)
    return okm[:32], okm[32:]


def kdf_ck(ck):
    okm = hkdf(ck, b"CoordsCore/ratchet/chain/v1", b"", 76)
    return okm[:32], okm[32:]


class Party:
    """One side of a session, following §10.6 step by step (no shortcuts shared with Swift)."""

    def __init__(self, name, seed, draws):
        self.name = name
        self.pk, self.sk = ed25519_keypair(seed)
        self.xpriv = ed_to_x_private(self.sk)
        self.draws = list(draws)
        self.skipped = {}

    def draw(self):
        return self.draws.pop(0)

    def ad(self, sender, recipient, prefix, envelope_ad):
        return b"CoordsCore/ratchet/v1" + sender + recipient + prefix + envelope_ad

    def seal(self, plaintext, peer_pk, envelope_ad):
        self.cks, mk = kdf_ck(self.cks)
        header = x_public(self.dhs) + u32(self.pn) + u32(self.ns)
        self.ns += 1
        if self.initiator and not self.confirmed:
            prefix = (b"\x01" + u32(self.spk_id) + bytes([1 if self.opk_id is not None else 0])
                      + u32(self.opk_id or 0) + self.base_pub + header)
        else:
            prefix = b"\x02" + header
        return prefix + aes_gcm_seal(mk[:32], mk[32:44], plaintext, self.ad(self.pk, peer_pk, prefix, envelope_ad))

    def open(self, payload, peer_pk, envelope_ad):
        plen = 82 if payload[0] == 1 else 41
        prefix, ct = payload[:plen], payload[plen:]
        header = prefix[-40:]
        dh_pub, pn, n = header[:32], struct.unpack(">I", header[32:36])[0], struct.unpack(">I", header[36:40])[0]
        ad = self.ad(peer_pk, self.pk, prefix, envelope_ad)
        if (dh_pub, n) in self.skipped:
            mk = self.skipped.pop((dh_pub, n))
            self.confirmed = True
            return aes_gcm_open(mk[:32], mk[32:44], ct, ad)
        if dh_pub != self.dhr:
            if self.ckr is not None:
                while self.nr < pn:
                    self.ckr, mk = kdf_ck(self.ckr)
                    self.skipped[(self.dhr, self.nr)] = mk
                    self.nr += 1
            self.pn, self.ns, self.nr, self.dhr = self.ns, 0, 0, dh_pub
            self.rk, self.ckr = kdf_rk(self.rk, dh(self.dhs, self.dhr))
            self.dhs = self.draw()
            self.rk, self.cks = kdf_rk(self.rk, dh(self.dhs, self.dhr))
        assert n >= self.nr
        while self.nr < n:
            self.ckr, mk = kdf_ck(self.ckr)
            self.skipped[(self.dhr, self.nr)] = mk
            self.nr += 1
        self.ckr, mk = kdf_ck(self.ckr)
        self.nr += 1
        self.confirmed = True
        return aes_gcm_open(mk[:32], mk[32:44], ct, ad)


def peer_id(pk):
    return hashlib.sha256(pk).hexdigest()


def envelope_ad(env):
    return "|".join([env["id"], env["senderID"], env["recipientID"], env["createdAt"], env["expiresAt"]]).encode()


def make():
    created = 1767225600000
    expires = created + 9 * 86_400_000
    alice_seed, bob_seed, carol_seed = secret("alice"), secret("bob"), secret("carol")
    a_pk, a_sk = ed25519_keypair(alice_seed)
    b_pk, b_sk = ed25519_keypair(bob_seed)
    c_pk, _ = ed25519_keypair(carol_seed)
    spk_priv, opk_priv = secret("bob-signed-prekey"), secret("bob-one-time-prekey")
    spk_pub, opk_pub = x_public(spk_priv), x_public(opk_priv)
    spk_id, opk_id = 7, 1001
    spk_msg, opk_msg = spk_signed(spk_id, spk_pub, created, expires), opk_signed(opk_id, opk_pub)
    out = {
        "description": "PROTOCOL.md §10 known answers, made by scripts/make-fs-vectors.py (an independent "
                       "implementation: Python stdlib HKDF + libsodium). Hex unless noted; times in Unix ms.",
        "identities": {n: {"seed": s.hex(), "public": ed25519_keypair(s)[0].hex()}
                       for n, s in (("alice", alice_seed), ("bob", bob_seed), ("carol", carol_seed))},
        "prekeys": {
            "owner": "bob",
            "signedPrekey": {"id": spk_id, "private": spk_priv.hex(), "public": spk_pub.hex(), "created": created,
                             "expires": expires, "signedBytes": spk_msg.hex(), "signature": ed25519_sign(b_sk, spk_msg).hex()},
            "oneTimePrekey": {"id": opk_id, "private": opk_priv.hex(), "public": opk_pub.hex(),
                              "signedBytes": opk_msg.hex(), "signature": ed25519_sign(b_sk, opk_msg).hex()},
        },
    }
    # §10.5 handshake, with and without the one-time prekey.
    base = secret("alice-base-key")
    a_x, b_x = ed_to_x_private(a_sk), ed_to_x_private(b_sk)
    cases = []
    for with_opk in (True, False):
        dhs = [dh(a_x, spk_pub), dh(base, ed_to_x_public(b_pk)), dh(base, spk_pub)]
        if with_opk:
            dhs.append(dh(base, opk_pub))
        sk = x3dh(dhs, a_pk, b_pk)
        responder = [dh(spk_priv, ed_to_x_public(a_pk)), dh(b_x, x_public(base)), dh(spk_priv, x_public(base))]
        if with_opk:
            responder.append(dh(opk_priv, x_public(base)))
        assert x3dh(responder, a_pk, b_pk) == sk
        cases.append({"initiator": "alice", "responder": "bob", "baseKeyPrivate": base.hex(), "baseKeyPublic": x_public(base).hex(),
                      "oneTimePrekey": with_opk, "sk": sk.hex()})
    out["handshakes"] = cases

    # §10.6/§10.7 a session: A1, A2 (initial), Bob opens A2 then A1, B1, Alice opens B1, A3, B2.
    sk = bytes.fromhex(cases[0]["sk"])
    alice_draws = [secret("alice-ratchet-0"), secret("alice-ratchet-1")]
    bob_draws = [secret("bob-ratchet-0"), secret("bob-ratchet-1")]
    alice = Party("alice", alice_seed, alice_draws)
    alice.initiator, alice.confirmed, alice.spk_id, alice.opk_id = True, False, spk_id, opk_id
    alice.base_pub = x_public(base)
    alice.dhs, alice.dhr = alice.draw(), spk_pub
    alice.rk, alice.cks = kdf_rk(sk, dh(alice.dhs, alice.dhr))
    alice.ckr, alice.ns, alice.nr, alice.pn = None, 0, 0, 0
    bob = Party("bob", bob_seed, bob_draws)
    bob.initiator, bob.confirmed = False, False
    bob.dhs, bob.dhr, bob.rk, bob.cks, bob.ckr, bob.ns, bob.nr, bob.pn = spk_priv, None, sk, None, None, 0, 0, 0
    parties = {"alice": (alice, a_pk), "bob": (bob, b_pk)}

    def envelope(n, sender, recipient):
        return {"id": "00000000-0000-4000-8000-%012d" % n, "senderID": peer_id(parties[sender][1]),
                "recipientID": peer_id(parties[recipient][1]), "createdAt": "2026-01-01T00:00:%02dZ" % n,
                "expiresAt": "2026-01-02T00:00:%02dZ" % n}

    script = [("seal", "alice", "A1", "hello, this is Alice"), ("seal", "alice", "A2", "second, before any answer"),
              ("open", "bob", "A2", None), ("open", "bob", "A1", None), ("seal", "bob", "B1", "hi Alice"),
              ("open", "alice", "B1", None), ("seal", "alice", "A3", "third: a new ratchet key"),
              ("open", "bob", "A3", None), ("seal", "bob", "B2", "fourth")]
    messages, sent, steps = {}, 0, []
    for action, who, name, text in script:
        me, my_pk = parties[who]
        other = "bob" if who == "alice" else "alice"
        other_pk = parties[other][1]
        if action == "seal":
            sent += 1
            env = envelope(sent, who, other)
            payload = me.seal(text.encode(), other_pk, envelope_ad(env))
            messages[name] = (env, payload, text)
            steps.append({"step": "seal", "party": who, "message": name, "envelope": env, "plaintext": text,
                          "payload": payload.hex()})
        else:
            env, payload, text = messages[name]
            assert me.open(payload, other_pk, envelope_ad(env)).decode() == text
            steps.append({"step": "open", "party": who, "message": name})
    out["session"] = {
        "handshake": 0, "signedPrekeyID": spk_id, "oneTimePrekeyID": opk_id,
        "draws": {"alice": [d.hex() for d in alice_draws], "bob": [d.hex() for d in bob_draws]},
        "note": "alice's first draw is her first ratchet key; every DH ratchet step on receiving draws the next one",
        "steps": steps,
    }

    # §10.9 a blob from Alice: her own entry to her signed prekey, Bob's to his, Carol's to her identity.
    a_spk = secret("alice-signed-prekey")
    readers = [x_public(a_spk), spk_pub, ed_to_x_public(c_pk)]
    eph, dek = secret("blob-ephemeral"), secret("blob-dek")
    nonces = [secret("blob-nonce-%d" % i)[:12] for i in range(3)]
    filler = hashlib.sha512(b"coords-fs-vector/blob-filler").digest()[:60]
    data_nonce = secret("blob-data-nonce")[:12]
    location = struct.pack(">iihHQ", 52520008, 13404954, 34, 12, 1767225600000)
    blob = b"\x03" + x_public(eph) + struct.pack(">H", 4)
    for reader, nonce in zip(readers, nonces):
        blob += nonce + aes_gcm_seal(dh(eph, reader), nonce, dek, b"")
    blob += filler + data_nonce + aes_gcm_seal(dek, data_nonce, location, b"")
    out["blob"] = {
        "sender": "alice", "aliceSignedPrekeyPrivate": a_spk.hex(),
        "draws": [eph.hex(), dek.hex()] + [n.hex() for n in nonces] + [filler.hex(), data_nonce.hex()],
        "readers": ["alice signed prekey", "bob signed prekey", "carol identity"],
        "location": location.hex(), "blob": blob.hex(),
    }
    return out


def write_or_check(vectors, default, argv, script):
    """Writes the vectors as JSON to the path in `argv` (or `default`); with --check, compares
    instead and returns 1 when the file differs."""
    check = "--check" in argv
    paths = [a for a in argv if not a.startswith("--")]
    path = paths[0] if paths else default
    text = json.dumps(vectors, indent=1, ensure_ascii=False) + "\n"
    if check:
        with open(path, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{path} differs from what {script} computes", file=sys.stderr)
                return 1
        print(f"{path}: matches the independent implementation")
        return 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {path}")
    return 0


def main(argv):
    return write_or_check(make(), DEFAULT, argv, "scripts/make-fs-vectors.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
