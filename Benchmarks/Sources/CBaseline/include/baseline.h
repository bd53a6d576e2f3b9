/* Raw C baselines for the benchmark suite: the same libsodium and LMDB call sequences the
 * Swift code performs, with nothing around them. Ratios "ours / baseline" measure only the
 * cost of CoordsCore's abstractions. */
#ifndef COORDS_BASELINE_H
#define COORDS_BASELINE_H

#include <stddef.h>
#include <stdint.h>

int cb_init(void);

void cb_sign(const uint8_t sk[64], const uint8_t *m, size_t len, uint8_t sig[64]);
int cb_verify(const uint8_t pk[32], const uint8_t *m, size_t len, const uint8_t sig[64]);
int cb_scalarmult(uint8_t out[32], const uint8_t scalar[32], const uint8_t point[32]);
int cb_pk_to_curve(uint8_t out[32], const uint8_t ed_pk[32]);
void cb_aes_seal(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *m, size_t len, uint8_t *c);
int cb_aes_open(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *c, size_t len, uint8_t *m);

/* Seals a 20-byte location for n recipients exactly like LocationBlob.seal: ephemeral key,
 * DEK, per recipient a nonce, X25519 and AES-GCM of the DEK, padding, data nonce, AES-GCM of
 * the location. `keys` are X25519 keys (cached) or, with `ed25519` set, Ed25519 keys converted
 * on every call (the reference core). Writes 83 + 60*E bytes to `out`; returns the size. */
size_t cb_blob_seal(const uint8_t loc[20], const uint8_t *keys, size_t n, int ed25519, uint8_t *out);

/* Opens a blob like LocationBlob.open: one X25519, then AES-GCM over the entries in order. */
int cb_blob_open(const uint8_t x25519_sk[32], const uint8_t *blob, size_t len, uint8_t loc[20]);

/* Envelope v2 (§7), the libsodium sequence of Envelope.seal: ephemeral key, nonce, peer ids,
 * both X25519 conversions, two agreements, HKDF-SHA256, AES-GCM with the header as associated
 * data, base64, the signed string and its Ed25519 signature (fixed createdAt/expiresAt strings).
 * Writes the payload and signature base64; returns the payload base64 length (0 on failure). */
size_t cb_envelope_seal(const uint8_t sender_sk[64], const uint8_t recipient_pk[32], const char id[37], const uint8_t *payload,
                        size_t len, char *payload_b64, size_t b64_capacity, char signature_b64[89]);
/* Envelope.open's sequence: peer ids, signature check, base64, conversions, agreements, HKDF,
 * AES-GCM open. Returns the plaintext length or -1. */
int cb_envelope_open(const uint8_t recipient_sk[64], const uint8_t sender_pk[32], const char id[37], const char *payload_b64,
                     const char *signature_b64, uint8_t *out, size_t out_capacity);

/* LMDB: an environment in `path` with one unnamed database (0600, MDB_NOTLS). */
typedef struct cb_lmdb cb_lmdb;
cb_lmdb *cb_lmdb_open(const char *path, int nosync);
void cb_lmdb_close(cb_lmdb *db);
/* Puts n 32-byte keys with `vlen`-byte values: all in one transaction, or one each. */
int cb_lmdb_put_one_txn(cb_lmdb *db, const uint8_t *keys, size_t n, const uint8_t *value, size_t vlen);
int cb_lmdb_put_per_txn(cb_lmdb *db, const uint8_t *keys, size_t n, const uint8_t *value, size_t vlen);
/* Reads n keys (copying each value) in one read transaction; returns bytes read. */
size_t cb_lmdb_get(cb_lmdb *db, const uint8_t *keys, size_t n);
/* The sealed store's floor: LMDB plus one XChaCha20-Poly1305 seal/open per value. */
int cb_lmdb_put_sealed_per_txn(cb_lmdb *db, const uint8_t *keys, size_t n, const uint8_t *value, size_t vlen,
                               const uint8_t key[32]);
int cb_lmdb_put_sealed_one_txn(cb_lmdb *db, const uint8_t *keys, size_t n, const uint8_t *value, size_t vlen,
                               const uint8_t key[32]);
size_t cb_lmdb_get_sealed(cb_lmdb *db, const uint8_t *keys, size_t n, const uint8_t key[32]);

/* One session message sealed and opened on an established chain (PROTOCOL.md §10.6): the
 * chain KDF and AES-256-GCM over `len` bytes with `ad_len` bytes of associated data, twice.
 * `sealed` holds len + 16 bytes, `opened` len. Returns 0 when the open authenticated. */
int cb_session_seal_open(const uint8_t chain[32], const uint8_t *plaintext, size_t len, const uint8_t *ad, size_t ad_len,
                         uint8_t *sealed, uint8_t *opened);

/* The work of one side of the handshake (PROTOCOL.md §10.5): the identity conversions (Ed25519 →
 * X25519, private and public), three or four agreements — (secrets[0], publics[0]), the converted
 * identities, (secrets[1], publics[1]) and, with `with_one_time`, (secrets[2], publics[2]) — and
 * the HKDF of SK. Returns 0, or -1 when an agreement fails. */
int cb_x3dh_side(const uint8_t own_ed_sk[64], const uint8_t peer_ed_pk[32], const uint8_t *const secrets[3],
                 const uint8_t *const publics[3], size_t with_one_time, uint8_t out[32]);

/* One DH ratchet step (PROTOCOL.md §10.6 step 2): an agreement and KDF_RK for the receiving
 * chain, a fresh key pair, an agreement and KDF_RK for the sending chain. `out` gets the last
 * KDF_RK's 64 bytes, `new_pk` the fresh public key. Returns 0, or -1 when an agreement fails. */
int cb_ratchet_step(const uint8_t root[32], const uint8_t own_sk[32], const uint8_t peer_pk[32], uint8_t new_pk[32],
                    uint8_t out[64]);

/* The crypto of sending one group message to `members` members (PROTOCOL.md §11.6): KDF_GK, AES-256-GCM
 * over the payload with `core` as associated data, the chain's Ed25519 signature over core ‖
 * ciphertext, and one identity signature per member over an envelope's signed bytes. `sealed` holds
 * len + 16 bytes. Returns the ciphertext length. */
size_t cb_group_send(const uint8_t chain[32], const uint8_t *plaintext, size_t len, const uint8_t *core, size_t core_len,
                     const uint8_t chain_sk[64], const uint8_t sender_sk[64], const uint8_t *envelope, size_t envelope_len,
                     size_t members, uint8_t *sealed, uint8_t signature[64]);

/* The crypto of receiving one group message (PROTOCOL.md §11.6) and acknowledging it: the envelope's
 * identity signature and the chain signature verified, KDF_GK, AES-256-GCM open, and the Ed25519
 * signature of the signed ack request. Returns 0 when everything verified and opened. */
int cb_group_open(const uint8_t chain[32], const uint8_t *sealed, size_t len, const uint8_t *core, size_t core_len,
                  const uint8_t chain_pk[32], const uint8_t chain_sig[64], const uint8_t sender_pk[32], const uint8_t *envelope,
                  size_t envelope_len, const uint8_t envelope_sig[64], const uint8_t ack_sk[64], const uint8_t *ack, size_t ack_len,
                  uint8_t *opened);

/* An attachment (PROTOCOL.md section 12.2) the libsodium way: the file in 64 KiB chunks, each
 * XChaCha20-Poly1305 under `key` with nonce oid || u32(i) || last || 0 0 0 and associated data
 * "CoordsCore/object/v1" || oid || u32(i) || last, SHA-256 over the sealed object. `out` holds
 * size + 16 per chunk; returns the stored length. */
size_t cb_object_seal(const uint8_t key[32], const uint8_t oid[16], const uint8_t *file, size_t size, uint8_t *out, uint8_t digest[32]);

/* Opens what cb_object_seal made (the SHA-256 checked too); 0 when every chunk opened and the
 * digest matched. */
int cb_object_open(const uint8_t key[32], const uint8_t oid[16], const uint8_t *object, size_t stored, const uint8_t digest[32],
                   uint8_t *file);

#endif
