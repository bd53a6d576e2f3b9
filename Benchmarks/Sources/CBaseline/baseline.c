#include "baseline.h"

#include <lmdb.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int cb_init(void) { return sodium_init(); }

void cb_sign(const uint8_t sk[64], const uint8_t *m, size_t len, uint8_t sig[64]) {
    crypto_sign_detached(sig, NULL, m, len, sk);
}

int cb_verify(const uint8_t pk[32], const uint8_t *m, size_t len, const uint8_t sig[64]) {
    return crypto_sign_verify_detached(sig, m, len, pk);
}

int cb_scalarmult(uint8_t out[32], const uint8_t scalar[32], const uint8_t point[32]) {
    return crypto_scalarmult(out, scalar, point);
}

int cb_pk_to_curve(uint8_t out[32], const uint8_t ed_pk[32]) { return crypto_sign_ed25519_pk_to_curve25519(out, ed_pk); }

void cb_aes_seal(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *m, size_t len, uint8_t *c) {
    crypto_aead_aes256gcm_encrypt(c, NULL, m, len, NULL, 0, NULL, nonce, key);
}

int cb_aes_open(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *c, size_t len, uint8_t *m) {
    return crypto_aead_aes256gcm_decrypt(m, NULL, NULL, c, len, NULL, 0, nonce, key);
}

static size_t padded(size_t n) {
    if (n == 0) return 0;
    if (n <= 64) {
        size_t e = 1;
        while (e < n) e <<= 1;
        return e;
    }
    return (n + 49) / 50 * 50;
}

size_t cb_blob_seal(const uint8_t loc[20], const uint8_t *keys, size_t n, int ed25519, uint8_t *out) {
    size_t e = padded(n);
    uint8_t esk[32], keybuf[64];
    uint8_t *dek = keybuf, *wrap = keybuf + 32;
    randombytes_buf(esk, 32);
    out[0] = 3;
    crypto_scalarmult_base(out + 1, esk);
    out[33] = (uint8_t)(e >> 8);
    out[34] = (uint8_t)e;
    randombytes_buf(dek, 32);
    for (size_t i = 0; i < n; i++) {
        uint8_t *entry = out + 35 + 60 * i;
        uint8_t converted[32];
        const uint8_t *recipient = keys + 32 * i;
        if (ed25519) {
            if (crypto_sign_ed25519_pk_to_curve25519(converted, recipient) != 0) return 0;
            recipient = converted;
        }
        randombytes_buf(entry, 12);
        if (crypto_scalarmult(wrap, esk, recipient) != 0) return 0;
        crypto_aead_aes256gcm_encrypt(entry + 12, NULL, dek, 32, NULL, 0, NULL, entry, wrap);
    }
    for (size_t i = n; i < e; i++) randombytes_buf(out + 35 + 60 * i, 60);
    uint8_t *data = out + 35 + 60 * e;
    randombytes_buf(data, 12);
    crypto_aead_aes256gcm_encrypt(data + 12, NULL, loc, 20, NULL, 0, NULL, data, dek);
    sodium_memzero(keybuf, sizeof keybuf);
    sodium_memzero(esk, sizeof esk);
    return 83 + 60 * e;
}

int cb_blob_open(const uint8_t x25519_sk[32], const uint8_t *blob, size_t len, uint8_t loc[20]) {
    if (len < 123 || blob[0] != 3) return -1;
    size_t e = (size_t)blob[33] << 8 | blob[34];
    if (len < 35 + 60 * e + 28) return -1;
    uint8_t shared[32], dek[32];
    crypto_aead_aes256gcm_state state;
    if (crypto_scalarmult(shared, x25519_sk, blob + 1) != 0) return -1;
    crypto_aead_aes256gcm_beforenm(&state, shared);
    int found = 0;
    for (size_t i = 0; i < e && !found; i++) {
        const uint8_t *entry = blob + 35 + 60 * i;
        found = crypto_aead_aes256gcm_decrypt_afternm(dek, NULL, NULL, entry + 12, 48, NULL, 0, entry, &state) == 0;
    }
    if (!found) return -1;
    const uint8_t *data = blob + 35 + 60 * e;
    int rc = crypto_aead_aes256gcm_decrypt(loc, NULL, NULL, data + 12, len - (35 + 60 * e) - 12, NULL, 0, data, dek);
    sodium_memzero(dek, sizeof dek);
    sodium_memzero(shared, sizeof shared);
    return rc;
}

struct cb_lmdb {
    MDB_env *env;
    MDB_dbi dbi;
};

cb_lmdb *cb_lmdb_open(const char *path, int nosync) {
    cb_lmdb *db = calloc(1, sizeof *db);
    if (!db) return NULL;
    mkdir(path, 0700);
    if (mdb_env_create(&db->env) || mdb_env_set_mapsize(db->env, (size_t)1 << 32) ||
        mdb_env_open(db->env, path, MDB_NOTLS | (nosync ? MDB_NOSYNC : 0), 0600)) {
        free(db);
        return NULL;
    }
    MDB_txn *txn;
    if (mdb_txn_begin(db->env, NULL, 0, &txn) || mdb_dbi_open(txn, NULL, 0, &db->dbi) || mdb_txn_commit(txn)) {
        mdb_env_close(db->env);
        free(db);
        return NULL;
    }
    return db;
}

void cb_lmdb_close(cb_lmdb *db) {
    if (!db) return;
    mdb_env_close(db->env);
    free(db);
}

static int put(MDB_txn *txn, MDB_dbi dbi, const uint8_t *key, const uint8_t *value, size_t vlen) {
    MDB_val k = {32, (void *)key}, v = {vlen, (void *)value};
    return mdb_put(txn, dbi, &k, &v, 0);
}

int cb_lmdb_put_one_txn(cb_lmdb *db, const uint8_t *keys, size_t n, const uint8_t *value, size_t vlen) {
    MDB_txn *txn;
    int rc = mdb_txn_begin(db->env, NULL, 0, &txn);
    for (size_t i = 0; rc == 0 && i < n; i++) rc = put(txn, db->dbi, keys + 32 * i, value, vlen);
    if (rc) {
        mdb_txn_abort(txn);
        return rc;
    }
    return mdb_txn_commit(txn);
}

int cb_lmdb_put_per_txn(cb_lmdb *db, const uint8_t *keys, size_t n, const uint8_t *value, size_t vlen) {
    for (size_t i = 0; i < n; i++) {
        MDB_txn *txn;
        int rc = mdb_txn_begin(db->env, NULL, 0, &txn);
        if (rc) return rc;
        if ((rc = put(txn, db->dbi, keys + 32 * i, value, vlen))) {
            mdb_txn_abort(txn);
            return rc;
        }
        if ((rc = mdb_txn_commit(txn))) return rc;
    }
    return 0;
}

size_t cb_lmdb_get(cb_lmdb *db, const uint8_t *keys, size_t n) {
    MDB_txn *txn;
    size_t total = 0;
    uint8_t copy[1024];
    if (mdb_txn_begin(db->env, NULL, MDB_RDONLY, &txn)) return 0;
    for (size_t i = 0; i < n; i++) {
        MDB_val k = {32, (void *)(keys + 32 * i)}, v;
        if (mdb_get(txn, db->dbi, &k, &v) == 0) {
            size_t take = v.mv_size < sizeof copy ? v.mv_size : sizeof copy;
            memcpy(copy, v.mv_data, take); /* Swift decodes into an array: copy here too */
            total += take;
        }
    }
    mdb_txn_abort(txn);
    return total;
}

/* ---- The store sealed at rest (docs/STORE.md): the floor is LMDB plus one XChaCha20-Poly1305
 * seal or open of the same value (format byte, 24-byte nonce, ciphertext, 16-byte tag). ------ */

int cb_lmdb_put_sealed_per_txn(cb_lmdb *db, const uint8_t *keys, size_t n, const uint8_t *value, size_t vlen,
                               const uint8_t key[32]) {
    uint8_t sealed[1 + 24 + 1024 + 16];
    if (vlen > 1024) return -1;
    for (size_t i = 0; i < n; i++) {
        sealed[0] = 1;
        randombytes_buf(sealed + 1, 24);
        crypto_aead_xchacha20poly1305_ietf_encrypt(sealed + 25, NULL, value, vlen, NULL, 0, NULL, sealed + 1, key);
        MDB_txn *txn;
        int rc = mdb_txn_begin(db->env, NULL, 0, &txn);
        if (rc) return rc;
        if ((rc = put(txn, db->dbi, keys + 32 * i, sealed, 1 + 24 + vlen + 16))) {
            mdb_txn_abort(txn);
            return rc;
        }
        if ((rc = mdb_txn_commit(txn))) return rc;
    }
    return 0;
}

int cb_lmdb_put_sealed_one_txn(cb_lmdb *db, const uint8_t *keys, size_t n, const uint8_t *value, size_t vlen,
                               const uint8_t key[32]) {
    uint8_t sealed[1 + 24 + 1024 + 16];
    if (vlen > 1024) return -1;
    MDB_txn *txn;
    int rc = mdb_txn_begin(db->env, NULL, 0, &txn);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        sealed[0] = 1;
        randombytes_buf(sealed + 1, 24);
        crypto_aead_xchacha20poly1305_ietf_encrypt(sealed + 25, NULL, value, vlen, NULL, 0, NULL, sealed + 1, key);
        rc = put(txn, db->dbi, keys + 32 * i, sealed, 1 + 24 + vlen + 16);
    }
    if (rc) {
        mdb_txn_abort(txn);
        return rc;
    }
    return mdb_txn_commit(txn);
}

size_t cb_lmdb_get_sealed(cb_lmdb *db, const uint8_t *keys, size_t n, const uint8_t key[32]) {
    MDB_txn *txn;
    size_t total = 0;
    uint8_t plain[1024];
    if (mdb_txn_begin(db->env, NULL, MDB_RDONLY, &txn)) return 0;
    for (size_t i = 0; i < n; i++) {
        MDB_val k = {32, (void *)(keys + 32 * i)}, v;
        if (mdb_get(txn, db->dbi, &k, &v) == 0 && v.mv_size >= 41 && v.mv_size - 41 <= sizeof plain) {
            const uint8_t *stored = v.mv_data;
            if (crypto_aead_xchacha20poly1305_ietf_decrypt(plain, NULL, NULL, stored + 25, v.mv_size - 25, NULL, 0, stored + 1, key) == 0)
                total += v.mv_size - 41;
        }
    }
    mdb_txn_abort(txn);
    return total;
}

/* ---- Envelope v2 (PROTOCOL.md §7): the libsodium sequence of Envelope.seal / open ---------- */

static void hex(const uint8_t *in, size_t len, char *out) { sodium_bin2hex(out, len * 2 + 1, in, len); }

static void peer_id(const uint8_t ed_pk[32], char out[65]) {
    uint8_t digest[32];
    crypto_hash_sha256(digest, ed_pk, 32);
    hex(digest, 32, out);
}

/* HKDF-SHA256 (RFC 5869) for one 32-byte block: extract, then expand with counter 1. */
static void hkdf(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt, size_t salt_len, const uint8_t *info, size_t info_len,
                 uint8_t out[32]) {
    uint8_t prk[32];
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, salt, salt_len);
    crypto_auth_hmacsha256_update(&st, ikm, ikm_len);
    crypto_auth_hmacsha256_final(&st, prk);
    const uint8_t one = 1;
    crypto_auth_hmacsha256_init(&st, prk, 32);
    crypto_auth_hmacsha256_update(&st, info, info_len);
    crypto_auth_hmacsha256_update(&st, &one, 1);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(prk, sizeof prk);
}

static const char SALT[] = "CoordsCore/envelope/v2";
static const char CREATED[] = "2026-11-22T10:00:00Z", EXPIRES[] = "2026-11-23T10:00:00Z";

size_t cb_envelope_seal(const uint8_t sender_sk[64], const uint8_t recipient_pk[32], const char id[37], const uint8_t *payload,
                        size_t len, char *payload_b64, size_t b64_capacity, char signature_b64[89]) {
    uint8_t esk[32], epk[32], nonce[12], ssk[32], spk[32], rpk[32], ikm[64], info[96], key[32];
    char sender_id[65], recipient_id[65];
    randombytes_buf(esk, 32);
    crypto_scalarmult_base(epk, esk);
    randombytes_buf(nonce, 12);
    peer_id(sender_sk + 32, sender_id);
    peer_id(recipient_pk, recipient_id);
    crypto_sign_ed25519_sk_to_curve25519(ssk, sender_sk);
    crypto_scalarmult_base(spk, ssk);
    if (crypto_sign_ed25519_pk_to_curve25519(rpk, recipient_pk) != 0) return 0;
    if (crypto_scalarmult(ikm, esk, rpk) != 0 || crypto_scalarmult(ikm + 32, ssk, rpk) != 0) return 0;
    memcpy(info, epk, 32); memcpy(info + 32, spk, 32); memcpy(info + 64, rpk, 32);
    hkdf(ikm, 64, (const uint8_t *)SALT, sizeof SALT - 1, info, 96, key);
    char ad[256];
    int ad_len = snprintf(ad, sizeof ad, "%s|%s|%s|%s|%s", id, sender_id, recipient_id, CREATED, EXPIRES);
    size_t sealed_len = 44 + len + 16;
    uint8_t *sealed = malloc(sealed_len);
    if (!sealed) return 0;
    memcpy(sealed, epk, 32); memcpy(sealed + 32, nonce, 12);
    crypto_aead_aes256gcm_encrypt(sealed + 44, NULL, payload, len, (const uint8_t *)ad, (size_t)ad_len, NULL, nonce, key);
    sodium_bin2base64(payload_b64, b64_capacity, sealed, sealed_len, sodium_base64_VARIANT_ORIGINAL);
    free(sealed);
    size_t b64_len = strlen(payload_b64);
    size_t signed_cap = b64_len + 256;
    char *to_sign = malloc(signed_cap);
    if (!to_sign) return 0;
    int signed_len = snprintf(to_sign, signed_cap, "CoordsCore/envelope/v2|2|%s|%s|%s|%s|%s|%s", id, sender_id, recipient_id, CREATED, EXPIRES,
                              payload_b64);
    uint8_t sig[64];
    crypto_sign_detached(sig, NULL, (const uint8_t *)to_sign, (size_t)signed_len, sender_sk);
    free(to_sign);
    sodium_bin2base64(signature_b64, 89, sig, 64, sodium_base64_VARIANT_ORIGINAL);
    sodium_memzero(esk, sizeof esk); sodium_memzero(ssk, sizeof ssk); sodium_memzero(ikm, sizeof ikm); sodium_memzero(key, sizeof key);
    return b64_len;
}

int cb_envelope_open(const uint8_t recipient_sk[64], const uint8_t sender_pk[32], const char id[37], const char *payload_b64,
                     const char *signature_b64, uint8_t *out, size_t out_capacity) {
    char sender_id[65], recipient_id[65];
    peer_id(sender_pk, sender_id);
    peer_id(recipient_sk + 32, recipient_id);
    size_t b64_len = strlen(payload_b64);
    size_t signed_cap = b64_len + 256;
    char *to_sign = malloc(signed_cap);
    if (!to_sign) return -1;
    int signed_len = snprintf(to_sign, signed_cap, "CoordsCore/envelope/v2|2|%s|%s|%s|%s|%s|%s", id, sender_id, recipient_id, CREATED, EXPIRES,
                              payload_b64);
    uint8_t sig[64];
    size_t sig_len = 0;
    int bad = sodium_base642bin(sig, 64, signature_b64, strlen(signature_b64), NULL, &sig_len, NULL, sodium_base64_VARIANT_ORIGINAL) != 0
        || sig_len != 64 || crypto_sign_verify_detached(sig, (const uint8_t *)to_sign, (size_t)signed_len, sender_pk) != 0;
    free(to_sign);
    if (bad) return -1;
    size_t sealed_len = 0;
    uint8_t *sealed = malloc(b64_len);
    if (!sealed) return -1;
    if (sodium_base642bin(sealed, b64_len, payload_b64, b64_len, NULL, &sealed_len, NULL, sodium_base64_VARIANT_ORIGINAL) != 0
        || sealed_len < 60 || sealed_len - 60 > out_capacity) { free(sealed); return -1; }
    uint8_t rsk[32], rpk[32], spk[32], ikm[64], info[96], key[32];
    crypto_sign_ed25519_sk_to_curve25519(rsk, recipient_sk);
    crypto_scalarmult_base(rpk, rsk);
    int rc = crypto_sign_ed25519_pk_to_curve25519(spk, sender_pk) != 0 || crypto_scalarmult(ikm, rsk, sealed) != 0
        || crypto_scalarmult(ikm + 32, rsk, spk) != 0;
    if (!rc) {
        memcpy(info, sealed, 32); memcpy(info + 32, spk, 32); memcpy(info + 64, rpk, 32);
        hkdf(ikm, 64, (const uint8_t *)SALT, sizeof SALT - 1, info, 96, key);
        char ad[256];
        int ad_len = snprintf(ad, sizeof ad, "%s|%s|%s|%s|%s", id, sender_id, recipient_id, CREATED, EXPIRES);
        rc = crypto_aead_aes256gcm_decrypt(out, NULL, NULL, sealed + 44, sealed_len - 44, (const uint8_t *)ad, (size_t)ad_len,
                                           sealed + 32, key);
    }
    free(sealed);
    sodium_memzero(rsk, sizeof rsk); sodium_memzero(ikm, sizeof ikm); sodium_memzero(key, sizeof key);
    return rc == 0 ? (int)(sealed_len - 60) : -1;
}

/* ---- Forward-secret session messages (PROTOCOL.md §10.6–§10.7) ----
 * The floor of one message on an established session: KDF_CK (HKDF-SHA-256 of the chain key,
 * 76 bytes: one extract and three expand blocks), then AES-256-GCM with the derived key and
 * nonce over the plaintext and the associated data — once to seal, once to open. */
/* KDF_CK / KDF_GK: HKDF-SHA-256 of the chain key under `salt`, 76 bytes. */
static void kdf_chain_salted(const char *salt, const uint8_t ck[32], uint8_t next[32], uint8_t mk[44]) {
    uint8_t prk[32], okm[96], block[32];
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, (const uint8_t *)salt, strlen(salt));
    crypto_auth_hmacsha256_update(&st, ck, 32);
    crypto_auth_hmacsha256_final(&st, prk);
    size_t written = 0;
    for (uint8_t i = 1; written < 76; i++) {
        crypto_auth_hmacsha256_init(&st, prk, 32);
        if (i > 1) crypto_auth_hmacsha256_update(&st, block, 32);
        crypto_auth_hmacsha256_update(&st, &i, 1);
        crypto_auth_hmacsha256_final(&st, block);
        memcpy(okm + written, block, 32);
        written += 32;
    }
    memcpy(next, okm, 32);
    memcpy(mk, okm + 32, 44);
    sodium_memzero(prk, sizeof prk); sodium_memzero(okm, sizeof okm); sodium_memzero(block, sizeof block);
}

static void kdf_chain(const uint8_t ck[32], uint8_t next[32], uint8_t mk[44]) {
    kdf_chain_salted("CoordsCore/ratchet/chain/v1", ck, next, mk);
}

int cb_session_seal_open(const uint8_t chain[32], const uint8_t *plaintext, size_t len, const uint8_t *ad, size_t ad_len,
                         uint8_t *sealed, uint8_t *opened) {
    uint8_t next[32], mk[44];
    kdf_chain(chain, next, mk);
    crypto_aead_aes256gcm_encrypt(sealed, NULL, plaintext, len, ad, ad_len, NULL, mk + 32, mk);
    uint8_t next2[32], mk2[44];
    kdf_chain(chain, next2, mk2);
    int rc = crypto_aead_aes256gcm_decrypt(opened, NULL, NULL, sealed, len + 16, ad, ad_len, mk2 + 32, mk2);
    sodium_memzero(mk, sizeof mk); sodium_memzero(mk2, sizeof mk2);
    return rc;
}

/* ---- The handshake and the DH ratchet step (PROTOCOL.md §10.5–§10.6) ---- */

/* HKDF-SHA-256 giving 64 bytes (two expand blocks), for KDF_RK. */
static void hkdf64(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt, size_t salt_len, uint8_t out[64]) {
    uint8_t prk[32];
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, salt, salt_len);
    crypto_auth_hmacsha256_update(&st, ikm, ikm_len);
    crypto_auth_hmacsha256_final(&st, prk);
    uint8_t one = 1, two = 2;
    crypto_auth_hmacsha256_init(&st, prk, 32);
    crypto_auth_hmacsha256_update(&st, &one, 1);
    crypto_auth_hmacsha256_final(&st, out);
    crypto_auth_hmacsha256_init(&st, prk, 32);
    crypto_auth_hmacsha256_update(&st, out, 32);
    crypto_auth_hmacsha256_update(&st, &two, 1);
    crypto_auth_hmacsha256_final(&st, out + 32);
    sodium_memzero(prk, sizeof prk);
}

int cb_x3dh_side(const uint8_t own_ed_sk[64], const uint8_t peer_ed_pk[32], const uint8_t *const secrets[3],
                 const uint8_t *const publics[3], size_t with_one_time, uint8_t out[32]) {
    static const char info_label[] = "CoordsCore/x3dh/v1";
    uint8_t own_x[32], peer_x[32], ikm[32 + 4 * 32], info[sizeof info_label - 1 + 64];
    if (crypto_sign_ed25519_sk_to_curve25519(own_x, own_ed_sk) != 0) return -1;
    if (crypto_sign_ed25519_pk_to_curve25519(peer_x, peer_ed_pk) != 0) return -1;
    memset(ikm, 0xFF, 32);
    size_t parts = with_one_time ? 4 : 3;
    /* As many agreements as §10.5 makes, one of them with the converted identities. */
    if (crypto_scalarmult(ikm + 32, secrets[0], publics[0]) != 0) return -1;
    if (crypto_scalarmult(ikm + 64, own_x, peer_x) != 0) return -1;
    if (crypto_scalarmult(ikm + 96, secrets[1], publics[1]) != 0) return -1;
    if (with_one_time && crypto_scalarmult(ikm + 128, secrets[2], publics[2]) != 0) return -1;
    memcpy(info, info_label, sizeof info_label - 1);
    memcpy(info + sizeof info_label - 1, own_ed_sk + 32, 32);
    memcpy(info + sizeof info_label - 1 + 32, peer_ed_pk, 32);
    static const uint8_t zero_salt[32] = {0};
    hkdf(ikm, 32 + 32 * parts, zero_salt, 32, info, sizeof info, out);
    sodium_memzero(own_x, sizeof own_x); sodium_memzero(ikm, sizeof ikm);
    return 0;
}

int cb_ratchet_step(const uint8_t root[32], const uint8_t own_sk[32], const uint8_t peer_pk[32], uint8_t new_pk[32],
                    uint8_t out[64]) {
    static const char salt[] = "CoordsCore/ratchet/root/v1";
    uint8_t ikm[64], fresh[32], next_root[64];
    memcpy(ikm, root, 32);
    if (crypto_scalarmult(ikm + 32, own_sk, peer_pk) != 0) return -1;
    hkdf64(ikm, 64, (const uint8_t *)salt, sizeof salt - 1, next_root);
    randombytes_buf(fresh, 32);
    crypto_scalarmult_base(new_pk, fresh);
    memcpy(ikm, next_root, 32);
    if (crypto_scalarmult(ikm + 32, fresh, peer_pk) != 0) return -1;
    hkdf64(ikm, 64, (const uint8_t *)salt, sizeof salt - 1, out);
    sodium_memzero(ikm, sizeof ikm); sodium_memzero(fresh, sizeof fresh); sodium_memzero(next_root, sizeof next_root);
    return 0;
}

/* ---- Groups (PROTOCOL.md §11.5–§11.6) ---- */

/* KDF_GK: the ratchet's chain KDF under the group salt (the same HMAC work). */
static void kdf_group(const uint8_t ck[32], uint8_t next[32], uint8_t mk[44]) {
    kdf_chain_salted("CoordsCore/group/chain/v1", ck, next, mk);
}

size_t cb_group_send(const uint8_t chain[32], const uint8_t *plaintext, size_t len, const uint8_t *core, size_t core_len,
                     const uint8_t chain_sk[64], const uint8_t sender_sk[64], const uint8_t *envelope, size_t envelope_len,
                     size_t members, uint8_t *sealed, uint8_t signature[64]) {
    uint8_t next[32], mk[44];
    kdf_group(chain, next, mk);
    crypto_aead_aes256gcm_encrypt(sealed, NULL, plaintext, len, core, core_len, NULL, mk + 32, mk);
    /* The chain signature covers core ‖ ciphertext. */
    crypto_sign_state st;
    crypto_sign_init(&st);
    crypto_sign_update(&st, core, core_len);
    crypto_sign_update(&st, sealed, len + 16);
    crypto_sign_final_create(&st, signature, NULL, chain_sk);
    for (size_t i = 0; i < members; i++) crypto_sign_detached(signature, NULL, envelope, envelope_len, sender_sk);
    sodium_memzero(mk, sizeof mk); sodium_memzero(next, sizeof next);
    return len + 16;
}

int cb_group_open(const uint8_t chain[32], const uint8_t *sealed, size_t len, const uint8_t *core, size_t core_len,
                  const uint8_t chain_pk[32], const uint8_t chain_sig[64], const uint8_t sender_pk[32], const uint8_t *envelope,
                  size_t envelope_len, const uint8_t envelope_sig[64], const uint8_t ack_sk[64], const uint8_t *ack, size_t ack_len,
                  uint8_t *opened) {
    int rc = crypto_sign_verify_detached(envelope_sig, envelope, envelope_len, sender_pk);
    crypto_sign_state st;
    crypto_sign_init(&st);
    crypto_sign_update(&st, core, core_len);
    crypto_sign_update(&st, sealed, len);
    rc |= crypto_sign_final_verify(&st, chain_sig, chain_pk);
    uint8_t next[32], mk[44], ack_sig[64];
    kdf_group(chain, next, mk);
    rc |= crypto_aead_aes256gcm_decrypt(opened, NULL, NULL, sealed, len, core, core_len, mk + 32, mk);
    crypto_sign_detached(ack_sig, NULL, ack, ack_len, ack_sk);
    sodium_memzero(mk, sizeof mk); sodium_memzero(next, sizeof next);
    return rc;
}

#define OBJECT_CHUNK 65536u

static void object_nonce_ad(const uint8_t oid[16], uint32_t index, int last, uint8_t nonce[24], uint8_t ad[41]) {
    uint8_t tail[5] = {(uint8_t)(index >> 24), (uint8_t)(index >> 16), (uint8_t)(index >> 8), (uint8_t)index, (uint8_t)(last ? 1 : 0)};
    memcpy(nonce, oid, 16);
    memcpy(nonce + 16, tail, 5);
    memset(nonce + 21, 0, 3);
    memcpy(ad, "CoordsCore/object/v1", 20);
    memcpy(ad + 20, oid, 16);
    memcpy(ad + 36, tail, 5);
}

size_t cb_object_seal(const uint8_t key[32], const uint8_t oid[16], const uint8_t *file, size_t size, uint8_t *out, uint8_t digest[32]) {
    size_t chunks = size == 0 ? 1 : (size + OBJECT_CHUNK - 1) / OBJECT_CHUNK;
    crypto_hash_sha256_state state;
    crypto_hash_sha256_init(&state);
    size_t written = 0;
    for (size_t i = 0; i < chunks; i++) {
        size_t from = i * OBJECT_CHUNK, length = size - from < OBJECT_CHUNK ? size - from : OBJECT_CHUNK;
        uint8_t nonce[24], ad[41];
        object_nonce_ad(oid, (uint32_t)i, i == chunks - 1, nonce, ad);
        crypto_aead_xchacha20poly1305_ietf_encrypt(out + written, NULL, file + from, length, ad, sizeof ad, NULL, nonce, key);
        crypto_hash_sha256_update(&state, out + written, length + 16);
        written += length + 16;
    }
    crypto_hash_sha256_final(&state, digest);
    return written;
}

int cb_object_open(const uint8_t key[32], const uint8_t oid[16], const uint8_t *object, size_t stored, const uint8_t digest[32],
                   uint8_t *file) {
    crypto_hash_sha256_state state;
    crypto_hash_sha256_init(&state);
    size_t at = 0, i = 0, opened = 0;
    while (at < stored) {
        size_t length = stored - at < OBJECT_CHUNK + 16 ? stored - at : OBJECT_CHUNK + 16;
        uint8_t nonce[24], ad[41];
        object_nonce_ad(oid, (uint32_t)i, at + length == stored, nonce, ad);
        crypto_hash_sha256_update(&state, object + at, length);
        if (length < 16 || crypto_aead_xchacha20poly1305_ietf_decrypt(file + opened, NULL, NULL, object + at, length, ad, sizeof ad, nonce, key) != 0)
            return -1;
        opened += length - 16;
        at += length;
        i++;
    }
    uint8_t computed[32];
    crypto_hash_sha256_final(&state, computed);
    return sodium_memcmp(computed, digest, 32);
}
