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
