/*
 * C smoke test of libcoordscore.so: calls every function of include/coordscore.h, on success
 * and error paths. Built with -std=c99 -Wall -Wextra -Werror -pedantic by `make test-c`.
 * Exit status 0 when every check passed.
 */
#define _XOPEN_SOURCE 700
#include "coordscore.h"

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int checks = 0, failures = 0;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        checks++;                                                                            \
        if (!(cond)) {                                                                       \
            failures++;                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);       \
        }                                                                                    \
    } while (0)

/* Runs a call that must return `expected`; prints the library's message otherwise. */
#define EXPECT(expected, call)                                                               \
    do {                                                                                     \
        CoordsError e_ = {0, NULL};                                                          \
        int32_t rc_ = (call_with_error(call));                                               \
        checks++;                                                                            \
        if (rc_ != (expected) || e_.code != rc_ || (rc_ != 0 && e_.message == NULL)) {       \
            failures++;                                                                      \
            fprintf(stderr, "%s:%d: %s returned %d (expected %d): %s\n", __FILE__, __LINE__, \
                    #call, (int)rc_, (int)(expected), e_.message ? e_.message : "(no message)"); \
        }                                                                                    \
        coords_error_free(&e_);                                                              \
    } while (0)
#define call_with_error(call) call

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static void remove_tree(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

static int contains(const CoordsBuffer *b, const char *needle) {
    return b->data != NULL && strstr((const char *)b->data, needle) != NULL;
}

/* base64url without padding, for building a relay response by hand. */
static void base64url(const uint8_t *in, size_t len, char *out) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t i = 0, o = 0;
    while (i + 2 < len) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = alphabet[v >> 18 & 63]; out[o++] = alphabet[v >> 12 & 63];
        out[o++] = alphabet[v >> 6 & 63]; out[o++] = alphabet[v & 63];
        i += 3;
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = alphabet[v >> 18 & 63]; out[o++] = alphabet[v >> 12 & 63];
    } else if (len - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = alphabet[v >> 18 & 63]; out[o++] = alphabet[v >> 12 & 63]; out[o++] = alphabet[v >> 6 & 63];
    }
    out[o] = '\0';
}

/* A host keychain in memory, guarded by a mutex (the library may call from any thread). It
 * keeps several named entries: the identity seed and the store's key at least. */
#define KC_SLOTS 16
typedef struct {
    char name[64];
    uint8_t secret[64];
    size_t len;
    int has;
} KeychainSlot;

typedef struct {
    pthread_mutex_t lock;
    KeychainSlot slots[KC_SLOTS];
    int saves;
} MemoryKeychain;

/* The slot holding `name`, or NULL; with `create`, a free slot for it. */
static KeychainSlot *kc_slot(MemoryKeychain *k, const char *name, int create) {
    KeychainSlot *free_slot = NULL;
    for (int i = 0; i < KC_SLOTS; i++) {
        if (k->slots[i].has && strcmp(k->slots[i].name, name) == 0) return &k->slots[i];
        if (!k->slots[i].has && free_slot == NULL) free_slot = &k->slots[i];
    }
    return create ? free_slot : NULL;
}

static int32_t kc_save(void *ctx, const char *name, const uint8_t *secret, size_t len) {
    MemoryKeychain *k = ctx;
    if (len > sizeof k->slots[0].secret || strlen(name) >= sizeof k->slots[0].name) return 5;
    pthread_mutex_lock(&k->lock);
    KeychainSlot *slot = kc_slot(k, name, 1);
    if (slot != NULL) {
        strcpy(slot->name, name);
        memcpy(slot->secret, secret, len);
        slot->len = len;
        slot->has = 1;
        k->saves++;
    }
    pthread_mutex_unlock(&k->lock);
    return slot != NULL ? 0 : 6;
}

static int32_t kc_load(void *ctx, const char *name, uint8_t *out, size_t capacity, size_t *out_len) {
    MemoryKeychain *k = ctx;
    int32_t rc = 1;
    pthread_mutex_lock(&k->lock);
    KeychainSlot *slot = kc_slot(k, name, 0);
    if (slot != NULL) {
        if (slot->len > capacity) {
            rc = 2;
        } else {
            memcpy(out, slot->secret, slot->len);
            *out_len = slot->len;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&k->lock);
    return rc;
}

static int32_t kc_remove(void *ctx, const char *name) {
    MemoryKeychain *k = ctx;
    pthread_mutex_lock(&k->lock);
    KeychainSlot *slot = kc_slot(k, name, 0);
    if (slot != NULL) slot->has = 0;
    pthread_mutex_unlock(&k->lock);
    return 0;
}

/* Whether the keychain holds `name` with a secret of `len` bytes. */
static int kc_holds(MemoryKeychain *k, const char *name, size_t len) {
    pthread_mutex_lock(&k->lock);
    KeychainSlot *slot = kc_slot(k, name, 0);
    int holds = slot != NULL && slot->len == len;
    pthread_mutex_unlock(&k->lock);
    return holds;
}

static pthread_mutex_t updates_lock = PTHREAD_MUTEX_INITIALIZER;
static int updates_seen = 0;
static void on_update(void *context, const uint8_t *json, size_t len) {
    (void)context;
    pthread_mutex_lock(&updates_lock);
    if (len > 0 && json[0] == '{') updates_seen++;
    pthread_mutex_unlock(&updates_lock);
}

/* A callback that unregisters itself on its first update, from the library's thread (which is
 * then detached, not joined: joining itself would deadlock). */
static int self_stopping_calls = 0;
static int32_t self_stopping_status = -1;
static void stop_on_first(void *context, const uint8_t *json, size_t len) {
    (void)json;
    (void)len;
    CoordsError error = {0, NULL};
    int32_t status = coords_app_set_update_callback((CoordsApp *)context, NULL, NULL, &error);
    coords_error_free(&error);
    pthread_mutex_lock(&updates_lock);
    self_stopping_calls++;
    self_stopping_status = status;
    pthread_mutex_unlock(&updates_lock);
}

static void test_library(void) {
    CHECK(coords_abi_version() == COORDS_ABI_VERSION);
    CHECK(coords_version() != NULL && strlen(coords_version()) > 0);
    coords_error_free(NULL);
    coords_buffer_free(NULL);
    CoordsBuffer empty = {NULL, 0};
    coords_buffer_free(&empty);
    CHECK(empty.data == NULL && empty.len == 0);
}

static void test_stateless(void) {
    uint8_t seed[32], pub[32], pub2[32], sig[64];
    EXPECT(COORDS_OK, coords_identity_generate(seed, pub, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_identity_generate(NULL, pub, &e_));
    EXPECT(COORDS_OK, coords_identity_public_from_seed(seed, pub2, &e_));
    CHECK(memcmp(pub, pub2, 32) == 0);
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_identity_public_from_seed(NULL, pub2, &e_));
    CHECK(coords_identity_public_from_seed(seed, pub2, NULL) == COORDS_OK); /* NULL error is allowed */

    const uint8_t msg[] = "on my way";
    EXPECT(COORDS_OK, coords_sign(seed, msg, sizeof msg, sig, &e_));
    EXPECT(COORDS_OK, coords_verify(pub, msg, sizeof msg, sig, &e_));
    sig[0] ^= 1;
    EXPECT(COORDS_ERR_AUTHENTICATION_FAILED, coords_verify(pub, msg, sizeof msg, sig, &e_));
    EXPECT(COORDS_OK, coords_sign(seed, NULL, 0, sig, &e_));
    EXPECT(COORDS_OK, coords_verify(pub, NULL, 0, sig, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_sign(seed, NULL, 5, sig, &e_));
    EXPECT(COORDS_ERR_TOO_LARGE, coords_sign(seed, msg, (size_t)-1, sig, &e_));
    EXPECT(COORDS_ERR_TOO_LARGE, coords_verify(pub, msg, COORDS_MAX_MESSAGE_BYTES + 1u, sig, &e_));

    /* Seal for self and a friend, open as each, refuse an outsider. */
    uint8_t friend_seed[32], keys[64], outsider_seed[32], outsider_pub[32];
    EXPECT(COORDS_OK, coords_identity_generate(friend_seed, keys + 32, &e_));
    memcpy(keys, pub, 32);
    EXPECT(COORDS_OK, coords_identity_generate(outsider_seed, outsider_pub, &e_));
    CoordsLocation here = {47.3769, 8.5417, 408.0, 12.5f, 1763805600000ull}, out;
    CoordsBuffer blob = {NULL, 0};
    EXPECT(COORDS_OK, coords_blob_seal(&here, keys, 2, &blob, &e_));
    CHECK(blob.len == 83 + 60 * 2);
    EXPECT(COORDS_OK, coords_blob_open(friend_seed, blob.data, blob.len, &out, &e_));
    CHECK(out.latitude == 47.3769 && out.longitude == 8.5417 && out.altitude == 408.0 && out.accuracy == 12.0f);
    CHECK(out.timestamp_ms == 1763805600000ull);
    EXPECT(COORDS_OK, coords_blob_open(seed, blob.data, blob.len, &out, &e_));
    EXPECT(COORDS_ERR_NOT_A_RECIPIENT, coords_blob_open(outsider_seed, blob.data, blob.len, &out, &e_));
    blob.data[blob.len - 1] ^= 1;
    EXPECT(COORDS_ERR_BLOB_TAMPERED, coords_blob_open(friend_seed, blob.data, blob.len, &out, &e_));
    EXPECT(COORDS_ERR_BLOB_TOO_SHORT, coords_blob_open(friend_seed, blob.data, 10, &out, &e_));
    EXPECT(COORDS_ERR_TOO_LARGE, coords_blob_open(friend_seed, blob.data, COORDS_MAX_BLOB_BYTES + 1u, &out, &e_));
    coords_buffer_free(&blob);
    CHECK(blob.data == NULL);

    CoordsLocation bad = {91.0, 0.0, 0.0, 0.0f, 1};
    EXPECT(COORDS_ERR_INVALID_LOCATION, coords_blob_seal(&bad, keys, 2, &blob, &e_));
    EXPECT(COORDS_ERR_NO_RECIPIENTS, coords_blob_seal(&here, keys, 0, &blob, &e_));
    EXPECT(COORDS_ERR_TOO_MANY_RECIPIENTS, coords_blob_seal(&here, keys, 5000, &blob, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_blob_seal(&here, NULL, 2, &blob, &e_));
    uint8_t bad_keys[64];
    memset(bad_keys, 0xff, sizeof bad_keys);
    EXPECT(COORDS_ERR_INVALID_RECIPIENT_KEY, coords_blob_seal(&here, bad_keys, 2, &blob, &e_));

    /* Stateless upload and fetch preparation. */
    CoordsBuffer request = {NULL, 0};
    char friend_id[64];
    base64url(keys + 32, 32, friend_id);
    char recipients[128];
    snprintf(recipients, sizeof recipients, "[\"%s\"]", friend_id);
    EXPECT(COORDS_OK, coords_prepare_upload(seed, &here, recipients, "https://coord.is/", &request, &e_));
    CHECK(contains(&request, "\"url\":\"https://coord.is/api/location\"") && contains(&request, "\"method\":\"PUT\""));
    coords_buffer_free(&request);
    EXPECT(COORDS_ERR_INVALID_JSON, coords_prepare_upload(seed, &here, "[", "https://coord.is", &request, &e_));
    EXPECT(COORDS_ERR_INVALID_ARGUMENT, coords_prepare_upload(seed, &here, "{}", "https://coord.is", &request, &e_));
    EXPECT(COORDS_ERR_INVALID_PUBLIC_KEY_ID, coords_prepare_upload(seed, &here, "[\"nope\"]", "https://coord.is", &request, &e_));
    EXPECT(COORDS_ERR_INVALID_SERVER_URL, coords_prepare_upload(seed, &here, "[]", "coord.is", &request, &e_));
    EXPECT(COORDS_ERR_INVALID_UTF8, coords_prepare_upload(seed, &here, "[]", "https://\xff\xfe", &request, &e_));

    char friends[256];
    snprintf(friends, sizeof friends, "[{\"pubkey\":\"%s\",\"server\":\"https://a.example\"}]", friend_id);
    EXPECT(COORDS_OK, coords_prepare_fetch(friends, &request, &e_));
    CHECK(contains(&request, "\"method\":\"POST\"") && contains(&request, friend_id));
    coords_buffer_free(&request);
    EXPECT(COORDS_ERR_INVALID_ARGUMENT, coords_prepare_fetch("[{\"pubkey\":1}]", &request, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_prepare_fetch(NULL, &request, &e_));

    const char *body = "{\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\": null}";
    EXPECT(COORDS_OK, coords_process_fetch_response(seed, (const uint8_t *)body, strlen(body), &request, &e_));
    CHECK(contains(&request, "\"authenticity\":\"absent\""));
    coords_buffer_free(&request);
    EXPECT(COORDS_ERR_UNEXPECTED_JSON, coords_process_fetch_response(seed, (const uint8_t *)"[]", 2, &request, &e_));
    EXPECT(COORDS_ERR_INVALID_JSON, coords_process_fetch_response(seed, (const uint8_t *)"timestamp too old", 17, &request, &e_));

    CoordsBuffer link = {NULL, 0};
    EXPECT(COORDS_OK, coords_friend_link_generate(pub, "https://coord.is", "Zoë & co", &link, &e_));
    CHECK(contains(&link, "coord://coord.is/add/") && contains(&link, "#Zo%C3%AB%20%26%20co"));
    CoordsBuffer parsed = {NULL, 0};
    EXPECT(COORDS_OK, coords_friend_link_parse((const char *)link.data, &parsed, &e_));
    CHECK(contains(&parsed, "\"name\":\"Zoë & co\"") && contains(&parsed, "\"server\":\"https://coord.is\""));
    coords_buffer_free(&parsed);
    coords_buffer_free(&link);
    EXPECT(COORDS_ERR_INVALID_FRIEND_LINK, coords_friend_link_parse("https://coord.is/add/x#y", &parsed, &e_));
    uint8_t not_a_point[32];
    memset(not_a_point, 0xff, sizeof not_a_point);
    EXPECT(COORDS_ERR_INVALID_PUBLIC_KEY, coords_friend_link_generate(not_a_point, "https://x", "n", &link, &e_));
    /* A public key's id: RFC 8032's first test key, its base64url written out by hand. */
    static const uint8_t rfc8032_key[32] = {0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a, 0xb7, 0xd5, 0x4b, 0xfe, 0xd3, 0xc9, 0x64, 0x07, 0x3a,
                                            0x0e, 0xe1, 0x72, 0xf3, 0xda, 0xa6, 0x23, 0x25, 0xaf, 0x02, 0x1a, 0x68, 0xf7, 0x07, 0x51, 0x1a};
    CoordsBuffer id = {NULL, 0};
    EXPECT(COORDS_OK, coords_public_key_b64url(rfc8032_key, &id, &e_));
    CHECK(id.len == 43 && strcmp((const char *)id.data, "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo") == 0);
    coords_buffer_free(&id);
    EXPECT(COORDS_ERR_INVALID_PUBLIC_KEY, coords_public_key_b64url(not_a_point, &id, &e_));
    /* A friend link's QR code: 71 bytes need version 5 (37 modules); its three finder patterns. */
    CoordsBuffer modules = {NULL, 0}, svg = {NULL, 0};
    uint32_t side = 0;
    const char *qr_link = "coord://coord.is/add/wrZlO17X0knD6RWU6jrrS_ZGltdaftqAJs7yA4RsQdE#Bob";
    EXPECT(COORDS_OK, coords_qr_encode(qr_link, &modules, &side, &e_));
    CHECK(side == 37 && modules.len == 37u * 37u);
    if (modules.len == 37u * 37u) {
        int finders = 1;
        for (uint32_t i = 0; i < 7; i++) {
            /* Each finder's outer ring: dark on its first row and first column. */
            finders &= modules.data[i] == 1 && modules.data[i * 37] == 1 && modules.data[30 + i] == 1 && modules.data[30 * 37 + i * 37] == 1;
        }
        CHECK(finders && modules.data[7] == 0 && modules.data[1 * 37 + 1] == 0);
    }
    coords_buffer_free(&modules);
    EXPECT(COORDS_OK, coords_qr_svg(qr_link, 4, &svg, &e_));
    CHECK(contains(&svg, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"180\""));
    coords_buffer_free(&svg);
    char too_long[300];
    memset(too_long, 'z', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = 0;
    EXPECT(COORDS_ERR_QR_UNENCODABLE, coords_qr_encode(too_long, &modules, &side, &e_));
    EXPECT(COORDS_ERR_INVALID_ARGUMENT, coords_qr_svg(qr_link, 0, &svg, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_qr_encode(NULL, &modules, &side, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_qr_encode(qr_link, &modules, NULL, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_public_key_b64url(NULL, &id, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_public_key_b64url(rfc8032_key, NULL, &e_));

    CoordsBuffer number1 = {NULL, 0}, number2 = {NULL, 0};
    EXPECT(COORDS_OK, coords_safety_number(pub, keys + 32, &number1, &e_));
    EXPECT(COORDS_OK, coords_safety_number(keys + 32, pub, &number2, &e_));
    CHECK(number1.len == 35 && strcmp((const char *)number1.data, (const char *)number2.data) == 0);
    coords_buffer_free(&number1);
    coords_buffer_free(&number2);

    bool reuse = true;
    EXPECT(COORDS_OK, coords_may_reuse_fix(1000, 61000, "launch", &reuse, &e_));
    CHECK(reuse);
    EXPECT(COORDS_OK, coords_may_reuse_fix(1000, 61000, "explicit", &reuse, &e_));
    CHECK(!reuse);
    EXPECT(COORDS_ERR_INVALID_ARGUMENT, coords_may_reuse_fix(1, 2, "whenever", &reuse, &e_));
    /* The accuracy rule: a fix is reused only when it is better than 100 m. */
    CoordsLocation fine = {47.37, 8.54, 0, 35, 1000}, coarse = {47.37, 8.54, 0, 1500, 1000}, nowhere = {91, 8.54, 0, 5, 1000};
    EXPECT(COORDS_OK, coords_may_reuse_location(&fine, 61000, "background", &reuse, &e_));
    CHECK(reuse);
    EXPECT(COORDS_OK, coords_may_reuse_location(&coarse, 61000, "background", &reuse, &e_));
    CHECK(!reuse);
    reuse = true;
    EXPECT(COORDS_OK, coords_may_reuse_location(&fine, 400000, "launch", &reuse, &e_));
    CHECK(!reuse);
    EXPECT(COORDS_ERR_INVALID_LOCATION, coords_may_reuse_location(&nowhere, 61000, "launch", &reuse, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_may_reuse_location(NULL, 61000, "launch", &reuse, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_may_reuse_location(&fine, 61000, "launch", NULL, &e_));
    EXPECT(COORDS_ERR_INVALID_ARGUMENT, coords_may_reuse_location(&fine, 61000, "soon", &reuse, &e_));
}

static void test_apps(void) {
    char dir[] = "/tmp/coords-c-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char alice_dir[128], bob_dir[128], host_dir[128];
    snprintf(alice_dir, sizeof alice_dir, "%s/alice", dir);
    snprintf(bob_dir, sizeof bob_dir, "%s/bob", dir);
    snprintf(host_dir, sizeof host_dir, "%s/host", dir);
    const char *options = "{\"passphrase\":\"pw\",\"keychain_cost\":\"minimum\",\"backup_cost\":\"minimum\",\"durability\":\"no_sync\"}";

    CoordsApp *alice = NULL, *bob = NULL, *again = NULL;
    EXPECT(COORDS_OK, coords_app_open(alice_dir, options, &alice, &e_));
    EXPECT(COORDS_OK, coords_app_open(bob_dir, options, &bob, &e_));
    EXPECT(COORDS_ERR_STORE_ALREADY_OPEN, coords_app_open(alice_dir, options, &again, &e_));
    CHECK(again == NULL);
    EXPECT(COORDS_ERR_INVALID_ARGUMENT, coords_app_open(alice_dir, "{}", &again, &e_));
    EXPECT(COORDS_ERR_INVALID_ARGUMENT, coords_app_open(alice_dir, "{\"passphrase\":\"x\",\"colour\":1}", &again, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_app_open(NULL, options, &again, &e_));

    CoordsBuffer id = {NULL, 0}, json = {NULL, 0};
    EXPECT(COORDS_ERR_NO_IDENTITY, coords_wallet_friend_link(alice, &json, &e_));
    EXPECT(COORDS_OK, coords_wallet_create_identity(alice, "Alice", "https://relay.test", &id, &e_));
    CHECK(id.len == 43);
    coords_buffer_free(&id);
    EXPECT(COORDS_ERR_IDENTITY_EXISTS, coords_wallet_create_identity(alice, "Alice", "https://relay.test", &id, &e_));
    uint8_t bob_seed[32], bob_pub[32], alice_pub[32];
    EXPECT(COORDS_OK, coords_identity_generate(bob_seed, bob_pub, &e_));
    EXPECT(COORDS_OK, coords_wallet_import_seed(bob, bob_seed, "Bob", "https://relay.test", &id, &e_));
    coords_buffer_free(&id);
    EXPECT(COORDS_OK, coords_wallet_set_profile(bob, "Bobby", NULL, &e_));
    EXPECT(COORDS_ERR_INVALID_SERVER_URL, coords_wallet_set_profile(bob, NULL, "nope", &e_));
    EXPECT(COORDS_OK, coords_wallet_set_strict_mode(bob, true, &e_));
    EXPECT(COORDS_OK, coords_wallet_info(bob, &json, &e_));
    CHECK(contains(&json, "\"name\":\"Bobby\"") && contains(&json, "\"strict_mode\":true") && contains(&json, "\"has_identity\":true"));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_wallet_set_strict_mode(bob, false, &e_));
    EXPECT(COORDS_OK, coords_wallet_public_key(alice, alice_pub, &e_));

    /* Exchange links. */
    CoordsBuffer alice_link = {NULL, 0}, bob_link = {NULL, 0};
    EXPECT(COORDS_OK, coords_wallet_friend_link(alice, &alice_link, &e_));
    EXPECT(COORDS_OK, coords_wallet_friend_link(bob, &bob_link, &e_));
    EXPECT(COORDS_OK, coords_friends_add_link(alice, (const char *)bob_link.data, &json, &e_));
    CHECK(contains(&json, "\"name\":\"Bobby\"") && contains(&json, "\"trust\":\"unverified\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_friends_add_link(bob, (const char *)alice_link.data, &json, &e_));
    coords_buffer_free(&json);
    EXPECT(COORDS_ERR_CANNOT_ADD_SELF, coords_friends_add_link(alice, (const char *)alice_link.data, &json, &e_));
    coords_buffer_free(&alice_link);
    coords_buffer_free(&bob_link);

    char bob_id[64], alice_id[64], changes[128];
    base64url(bob_pub, 32, bob_id);
    base64url(alice_pub, 32, alice_id);
    EXPECT(COORDS_OK, coords_friends_update(alice, bob_id, "{\"name\":\"Bob\",\"trust\":\"verified\"}", &json, &e_));
    CHECK(contains(&json, "\"trust\":\"verified\"") && contains(&json, "\"name\":\"Bob\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_ERR_INVALID_ARGUMENT, coords_friends_update(alice, bob_id, "{\"trust\":\"maybe\"}", &json, &e_));
    EXPECT(COORDS_OK, coords_wallet_safety_number(alice, bob_pub, &json, &e_));
    CoordsBuffer other = {NULL, 0};
    EXPECT(COORDS_OK, coords_wallet_safety_number(bob, alice_pub, &other, &e_));
    CHECK(json.len == 35 && strcmp((const char *)json.data, (const char *)other.data) == 0);
    coords_buffer_free(&json);
    coords_buffer_free(&other);

    /* A third friend added from fields, then removed. */
    uint8_t carol_seed[32], carol_pub[32];
    char carol_id[64], carol_json[256];
    EXPECT(COORDS_OK, coords_identity_generate(carol_seed, carol_pub, &e_));
    base64url(carol_pub, 32, carol_id);
    snprintf(carol_json, sizeof carol_json, "{\"id\":\"%s\",\"server\":\"https://other.test\",\"name\":\"Carol\",\"share_with\":false}", carol_id);
    EXPECT(COORDS_OK, coords_friends_add(alice, carol_json, &json, &e_));
    CHECK(contains(&json, "\"share_with\":false"));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_friends_list(alice, &json, &e_));
    CHECK(contains(&json, "Carol") && contains(&json, "Bob"));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_friends_remove(alice, carol_id, &e_));
    EXPECT(COORDS_ERR_FRIEND_NOT_FOUND, coords_friends_remove(alice, carol_id, &e_));
    snprintf(changes, sizeof changes, "{\"name\":\"x\"}");
    EXPECT(COORDS_ERR_FRIEND_NOT_FOUND, coords_friends_update(alice, carol_id, changes, &json, &e_));

    /* Updates: drain with next_update, then a callback. */
    int drained = 0;
    for (;;) {
        CoordsError e = {0, NULL};
        int32_t rc = coords_app_next_update(alice, 0, &json, &e);
        coords_error_free(&e);
        if (rc != COORDS_OK) { CHECK(rc == COORDS_ERR_TIMED_OUT); break; }
        CHECK(contains(&json, "\"manager\":"));
        coords_buffer_free(&json);
        drained++;
    }
    CHECK(drained >= 6);
    EXPECT(COORDS_ERR_TIMED_OUT, coords_app_next_update(alice, 10, &json, &e_));
    EXPECT(COORDS_OK, coords_app_set_update_callback(alice, on_update, NULL, &e_));

    /* Alice shares; Bob reads a relay response built from Alice's blob. */
    CoordsLocation here = {52.52, 13.405, 34.0, 8.0f, 0};
    here.timestamp_ms = (uint64_t)time(NULL) * 1000u;
    CoordsBuffer upload = {NULL, 0};
    EXPECT(COORDS_OK, coords_location_prepare_upload(alice, &here, &upload, &e_));
    CHECK(contains(&upload, "\"recipient_count\":2") && contains(&upload, "\"method\":\"PUT\""));
    coords_buffer_free(&upload);
    EXPECT(COORDS_OK, coords_location_mark_upload_succeeded(alice, here.timestamp_ms, &e_));
    EXPECT(COORDS_ERR_STALE_LOCATION, coords_location_prepare_upload(alice, &here, &upload, &e_));
    EXPECT(COORDS_ERR_UNKNOWN_UPLOAD, coords_location_mark_upload_succeeded(alice, here.timestamp_ms + 5, &e_));
    EXPECT(COORDS_OK, coords_location_mark_upload_failed(alice, here.timestamp_ms + 5, "offline", &e_));
    EXPECT(COORDS_OK, coords_location_prepare_delete(alice, &upload, &e_));
    CHECK(contains(&upload, "\"method\":\"DELETE\""));
    coords_buffer_free(&upload);

    /* Expiring and paused shares (PROTOCOL.md §9.3): a share that ends is resealed without Bob. */
    uint64_t expiry = 1;
    EXPECT(COORDS_OK, coords_location_next_share_expiry(alice, &expiry, &e_));
    CHECK(expiry == 0);
    EXPECT(COORDS_OK, coords_location_prepare_reseal(alice, false, &upload, &e_));
    CHECK(upload.len == 4 && memcmp(upload.data, "null", 4) == 0);
    coords_buffer_free(&upload);
    uint64_t until = here.timestamp_ms + 3600u * 1000u;
    EXPECT(COORDS_OK, coords_friends_share(alice, bob_id, until, &json, &e_));
    CHECK(contains(&json, "\"sharing\":\"until\"") && contains(&json, "\"share_until\":"));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_location_next_share_expiry(alice, &expiry, &e_));
    CHECK(expiry == until);
    EXPECT(COORDS_OK, coords_friends_pause(alice, bob_id, &json, &e_));
    CHECK(contains(&json, "\"sharing\":\"paused\"") && contains(&json, "\"share_with\":false"));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_location_prepare_reseal(alice, false, &upload, &e_));
    CHECK(contains(&upload, "\"recipient_count\":1") && contains(&upload, "\"method\":\"PUT\""));
    coords_buffer_free(&upload);
    EXPECT(COORDS_OK, coords_friends_share(alice, bob_id, 0, &json, &e_));
    CHECK(contains(&json, "\"sharing\":\"on\"") && contains(&json, "\"share_until\":null"));
    coords_buffer_free(&json);
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_location_next_share_expiry(alice, NULL, &e_));

    /* The core queued the reseal the pause owed, in the pause's transaction; it is sealed when a
     * host takes it (the one wake, one request at a time: no JSON needed). */
    EXPECT(COORDS_OK, coords_outbox_pending(alice, false, &json, &e_));
    CHECK(contains(&json, "\"kind\":\"reseal\"") && contains(&json, "\"reference\":\"share-changed\""));
    coords_buffer_free(&json);
    int reseals = 0;
    for (int taken = 0; taken < 32; taken++) {
        CoordsHostRequest request = {0};
        EXPECT(COORDS_OK, coords_app_due_next(alice, 0, &request, &e_));
        if (request.id == 0) break;
        int is_reseal = strcmp((const char *)request.purpose.data, "outbox") == 0 && strcmp((const char *)request.method.data, "PUT") == 0 &&
                        strstr((const char *)request.url.data, "/api/location") != NULL && request.body.len > 0 &&
                        strstr((const char *)request.headers.data, "Content-Type: application/json\n") != NULL;
        reseals += is_reseal;
        /* No relay here: the reseal "goes" (204); the rest (fetches, prekeys, bundles the tests
         * below use) stays unanswered, handed out to nobody else until it is reported. */
        if (is_reseal) {
            EXPECT(COORDS_OK, coords_app_report(alice, request.id, 204, NULL, 0, &json, &e_));
            CHECK(contains(&json, "\"decision\":\"delivered\""));
            coords_buffer_free(&json);
        }
        coords_host_request_free(&request);
        CHECK(request.id == 0 && request.url.data == NULL);
    }
    CHECK(reseals == 1);
    coords_host_request_free(NULL);
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_app_due_next(alice, 0, NULL, &e_));
    EXPECT(COORDS_OK, coords_app_report(alice, 999999, 200, NULL, 0, &json, &e_));
    CHECK(contains(&json, "\"result\":\"unknown\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_ERR_INVALID_ARGUMENT, coords_app_report(alice, 1, 1000, NULL, 0, &json, &e_));
    uint64_t next_wake = 0;
    EXPECT(COORDS_OK, coords_app_next_wake(alice, &next_wake, &e_));
    CHECK(next_wake > 0); /* the next fetch, or the unanswered requests' two minutes */
    EXPECT(COORDS_OK, coords_app_set_fetch_interval(alice, 0, &e_));
    EXPECT(COORDS_OK, coords_app_fetch_now(alice, &e_));

    /* The store sealed at rest (docs/STORE.md): no message disappears yet; a rekey keeps everything. */
    uint64_t due = 1;
    EXPECT(COORDS_OK, coords_messages_next_expiry(alice, &due, &e_));
    CHECK(due == 0);
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_messages_next_expiry(alice, NULL, &e_));
    EXPECT(COORDS_OK, coords_app_rekey(alice, &e_));
    EXPECT(COORDS_OK, coords_friends_list(alice, &json, &e_));
    CHECK(contains(&json, bob_id));
    coords_buffer_free(&json);
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_app_rekey(NULL, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_friends_pause(alice, NULL, &json, &e_));

    uint8_t keys[64];
    memcpy(keys + 32, bob_pub, 32);
    CoordsBuffer fetches = {NULL, 0};
    EXPECT(COORDS_OK, coords_location_prepare_fetches(bob, &fetches, &e_));
    CHECK(contains(&fetches, alice_id) && contains(&fetches, "https://relay.test/api/location"));
    coords_buffer_free(&fetches);

    /* A response in which Alice's entry holds a blob Mallory sealed for Bob. Without the relay's
     * signature stamp (a reference relay) Bob can only mark it "unverified" — the reason strict
     * mode exists; with a stamp that does not verify for Alice's id it is refused as tampered. */
    uint8_t mallory_seed[32], mallory_pub[32];
    EXPECT(COORDS_OK, coords_identity_generate(mallory_seed, mallory_pub, &e_));
    memcpy(keys, mallory_pub, 32);
    CoordsBuffer blob = {NULL, 0};
    EXPECT(COORDS_OK, coords_blob_seal(&here, keys, 2, &blob, &e_));
    char *blob_text = malloc(blob.len * 2 + 1), *response = malloc(blob.len * 2 + 256);
    CHECK(blob_text != NULL && response != NULL);
    if (blob_text && response) {
        base64url(blob.data, blob.len, blob_text);
        snprintf(response, blob.len * 2 + 256, "{\"%s\":{\"blob\":\"%s\",\"updated\":1800000000}}", alice_id, blob_text);
        EXPECT(COORDS_OK, coords_location_process_fetch_response(bob, (const uint8_t *)response, strlen(response), &json, &e_));
        /* Unsigned (reference relay) and readable: accepted as unverified. */
        CHECK(contains(&json, "\"authenticity\":\"unverified\"") && contains(&json, "\"latitude\":52.52"));
        coords_buffer_free(&json);
        EXPECT(COORDS_OK, coords_location_friend_locations(bob, &json, &e_));
        CHECK(contains(&json, "\"latitude\":52.52"));
        CHECK(contains(&json, "\"display\":\"Berlin, Germany\""));
        coords_buffer_free(&json);
        snprintf(response, blob.len * 2 + 256, "{\"%s\":{\"blob\":\"%s\",\"updated\":1,\"signature\":\"AAAA\",\"timestamp\":1}}", alice_id, blob_text);
        EXPECT(COORDS_OK, coords_location_process_fetch_response(bob, (const uint8_t *)response, strlen(response), &json, &e_));
        CHECK(contains(&json, "\"rejected\":[{\"id\"") && contains(&json, "\"code\":342"));
        coords_buffer_free(&json);
    }
    free(blob_text);
    free(response);
    coords_buffer_free(&blob);
    EXPECT(COORDS_ERR_INVALID_JSON, coords_location_process_fetch_response(bob, (const uint8_t *)"{", 1, &json, &e_));

    /* The outbox keeps a request until it is delivered. */
    uint64_t queued = 0;
    const char *request_json = "{\"url\":\"https://relay.test/api/location\",\"method\":\"PUT\",\"headers\":{},\"body_base64\":\"e30=\"}";
    EXPECT(COORDS_OK, coords_outbox_enqueue(alice, "upload", request_json, "7", &queued, &e_));
    CHECK(queued >= 1);
    EXPECT(COORDS_ERR_UNEXPECTED_JSON, coords_outbox_enqueue(alice, "upload", "{}", NULL, &queued, &e_));
    EXPECT(COORDS_OK, coords_outbox_pending(alice, true, &json, &e_));
    CHECK(contains(&json, "\"kind\":\"upload\"") && contains(&json, "\"reference\":\"7\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_outbox_mark_failed(alice, queued, "offline", &e_));
    EXPECT(COORDS_OK, coords_outbox_pending(alice, true, &json, &e_));
    CHECK(strcmp((const char *)json.data, "[]") == 0); /* backing off: not due */
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_outbox_pending(alice, false, &json, &e_));
    CHECK(contains(&json, "\"attempts\":1") && contains(&json, "\"last_error\":\"offline\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_outbox_mark_delivered(alice, queued, &e_));
    uint64_t dropped = 0;
    EXPECT(COORDS_OK, coords_outbox_enqueue(alice, "delete", request_json, NULL, &dropped, &e_));
    EXPECT(COORDS_OK, coords_outbox_remove(alice, dropped, &e_));
    EXPECT(COORDS_OK, coords_outbox_pending(alice, false, &json, &e_));
    CHECK(strcmp((const char *)json.data, "[]") == 0);
    coords_buffer_free(&json);

    /* The delivery driver: the core decides what each answer means. */
    uint64_t wake = 1;
    EXPECT(COORDS_OK, coords_outbox_next_wake(alice, &wake, &e_));
    CHECK(wake == 0); /* empty */
    EXPECT(COORDS_ERR_INVALID_ARGUMENT, coords_outbox_enqueue(alice, "uplaod", request_json, NULL, &queued, &e_));
    EXPECT(COORDS_OK, coords_outbox_enqueue(alice, "request", request_json, NULL, &queued, &e_));
    EXPECT(COORDS_OK, coords_outbox_due(alice, false, &json, &e_));
    CHECK(contains(&json, "\"kind\":\"request\""));
    coords_buffer_free(&json);
    const char *refused = "relay is down";
    EXPECT(COORDS_OK, coords_outbox_report(alice, queued, 0, (const uint8_t *)refused, strlen(refused), &json, &e_));
    CHECK(contains(&json, "\"decision\":\"retry\"") && contains(&json, "\"reason\":\"relay is down\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_outbox_next_wake(alice, &wake, &e_));
    CHECK(wake > 0);
    EXPECT(COORDS_OK, coords_outbox_due(alice, false, &json, &e_));
    CHECK(strcmp((const char *)json.data, "[]") == 0); /* backing off */
    coords_buffer_free(&json);
    EXPECT(COORDS_ERR_INVALID_ARGUMENT, coords_outbox_report(alice, queued, -1, NULL, 0, &json, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_outbox_report(alice, queued, 204, NULL, 0, NULL, &e_));
    EXPECT(COORDS_OK, coords_outbox_report(alice, queued, 204, NULL, 0, &json, &e_));
    CHECK(contains(&json, "\"decision\":\"delivered\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_outbox_report(alice, queued, 204, NULL, 0, &json, &e_));
    CHECK(contains(&json, "\"decision\":\"unknown\"")); /* reported twice */
    coords_buffer_free(&json);

    /* Forward secrecy (PROTOCOL.md §10): Bob's prekey upload, Alice's bundle requests. */
    EXPECT(COORDS_OK, coords_prekeys_prepare_upload(bob, 0, &json, &e_));
    CHECK(contains(&json, "/v1/relay/prekeys") && contains(&json, "\"method\":\"PUT\""));
    coords_buffer_free(&json);
    const char *stock_answer = "{\"signedPrekeyID\":1,\"oneTimePrekeys\":100}";
    int64_t stock = 0;
    EXPECT(COORDS_OK, coords_prekeys_process_upload(bob, 200, (const uint8_t *)stock_answer, strlen(stock_answer), &stock, &e_));
    CHECK(stock == 100);
    EXPECT(COORDS_ERR_INVALID_ARGUMENT, coords_prekeys_process_upload(bob, 1000, NULL, 0, &stock, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_prekeys_process_upload(bob, 200, NULL, 0, NULL, &e_));
    EXPECT(COORDS_OK, coords_prekeys_prepare_stock(bob, &json, &e_));
    CHECK(contains(&json, "X-Coords-Signature"));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_prekeys_process_stock(bob, 500, NULL, 0, &stock, &e_));
    CHECK(stock == -1);
    EXPECT(COORDS_OK, coords_prekeys_bundles_due(alice, &json, &e_));
    CHECK(contains(&json, bob_id));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_prekeys_prepare_bundle(alice, bob_id, &json, &e_));
    CHECK(contains(&json, "/v1/relay/prekeys/"));
    coords_buffer_free(&json);
    EXPECT(COORDS_ERR_INVALID_PUBLIC_KEY_ID, coords_prekeys_prepare_bundle(alice, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &json, &e_));
    const char *garbage = "{\"key\": 1}";
    EXPECT(COORDS_OK, coords_prekeys_process_bundle(alice, bob_id, 200, (const uint8_t *)garbage, strlen(garbage), &json, &e_));
    CHECK(contains(&json, "\"result\":\"refused\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_prekeys_process_bundle(alice, bob_id, 404, NULL, 0, &json, &e_));
    CHECK(contains(&json, "\"result\":\"not_offered\""));
    coords_buffer_free(&json);
    uint64_t erased = 1;
    EXPECT(COORDS_OK, coords_sessions_sweep(alice, &erased, &e_));
    CHECK(erased == 0);
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_sessions_sweep(alice, NULL, &e_));

    /* Sealed messages: Alice writes to Bob; a stranger's envelope is refused by Bob. */
    EXPECT(COORDS_OK, coords_messages_send(alice, bob_id, "on my way", &json, &e_));
    CHECK(contains(&json, "\"status\":\"queued\"") && contains(&json, "/v1/relay/messages"));
    char message_id[37] = {0};
    const char *id_at = json.data ? strstr((const char *)json.data, "\"id\":\"") : NULL;
    if (id_at) memcpy(message_id, id_at + 6, 36);
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_messages_mark_sent(alice, message_id, &e_));
    EXPECT(COORDS_OK, coords_messages_history(alice, bob_id, 0, &json, &e_));
    CHECK(contains(&json, "\"status\":\"sent\"") && contains(&json, "\"text\":\"on my way\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_messages_conversations(alice, &json, &e_));
    CHECK(contains(&json, "\"name\":\"Bob\"") && contains(&json, "\"message_count\":1"));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_messages_prepare_fetch(bob, &json, &e_));
    CHECK(contains(&json, "\"method\":\"GET\"") && contains(&json, "X-Coords-Signature"));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_messages_prepare_push_register(bob, "https://push.example.net/up/AbC", 86400, &json, &e_));
    CHECK(contains(&json, "\"method\":\"PUT\"") && contains(&json, "/v1/relay/push") && contains(&json, "X-Coords-Signature"));
    coords_buffer_free(&json);
    EXPECT(COORDS_ERR_INVALID_PUSH_ENDPOINT, coords_messages_prepare_push_register(bob, "http://push.example.net/up", 0, &json, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_messages_prepare_push_register(bob, NULL, 0, &json, &e_));
    EXPECT(COORDS_OK, coords_messages_prepare_push_unregister(bob, &json, &e_));
    CHECK(contains(&json, "\"method\":\"DELETE\"") && contains(&json, "/v1/relay/push"));
    coords_buffer_free(&json);
    uint8_t stranger_seed[32], stranger_pub[32];
    EXPECT(COORDS_OK, coords_identity_generate(stranger_seed, stranger_pub, &e_));
    const char *payload = "{\"kind\":\"text\",\"id\":\"00000000-0000-4000-8000-000000000001\",\"text\":\"hi\",\"sentAt\":1}";
    CoordsBuffer envelope = {NULL, 0};
    uint64_t now_s = (uint64_t)time(NULL);
    EXPECT(COORDS_OK, coords_envelope_seal(stranger_seed, bob_pub, (const uint8_t *)payload, strlen(payload), now_s, 3600, &envelope, &e_));
    CoordsBuffer opened = {NULL, 0};
    EXPECT(COORDS_OK, coords_envelope_open(bob_seed, stranger_pub, (const char *)envelope.data, now_s, &opened, &e_));
    CHECK(opened.len == strlen(payload) && memcmp(opened.data, payload, opened.len) == 0);
    coords_buffer_free(&opened);
    EXPECT(COORDS_ERR_ENVELOPE_NOT_FOR_ME, coords_envelope_open(stranger_seed, stranger_pub, (const char *)envelope.data, now_s, &opened, &e_));
    EXPECT(COORDS_ERR_ENVELOPE_EXPIRED, coords_envelope_open(bob_seed, stranger_pub, (const char *)envelope.data, now_s + 7200, &opened, &e_));
    EXPECT(COORDS_ERR_INVALID_ENVELOPE, coords_envelope_open(bob_seed, alice_pub, (const char *)envelope.data, now_s, &opened, &e_));
    size_t packets_len = envelope.len + 32;
    char *packets = malloc(packets_len);
    CHECK(packets != NULL);
    if (packets) {
        snprintf(packets, packets_len, "{\"packets\":[%s]}", (const char *)envelope.data);
        EXPECT(COORDS_OK, coords_messages_process_fetch_response(bob, (const uint8_t *)packets, strlen(packets), &json, &e_));
        CHECK(contains(&json, "\"received\":[]") && contains(&json, "\"code\":610") && contains(&json, "/ack"));
        coords_buffer_free(&json);
    }
    free(packets);
    coords_buffer_free(&envelope);
    EXPECT(COORDS_ERR_INVALID_MAILBOX_RESPONSE, coords_messages_process_fetch_response(bob, (const uint8_t *)"[]", 2, &json, &e_));
    EXPECT(COORDS_OK, coords_messages_set_disappearing(bob, alice_id, 60, &e_));

    /* Notification policy: mute, quiet hours, receipts. */
    uint64_t muted = 1;
    EXPECT(COORDS_OK, coords_messages_muted_until(bob, alice_id, &muted, &e_));
    CHECK(muted == 0);
    EXPECT(COORDS_OK, coords_messages_mute(bob, alice_id, UINT64_MAX, &e_));
    EXPECT(COORDS_OK, coords_messages_muted_until(bob, alice_id, &muted, &e_));
    CHECK(muted == UINT64_MAX);
    EXPECT(COORDS_OK, coords_messages_mute(bob, alice_id, 1, &e_)); /* ended in 1970 */
    EXPECT(COORDS_OK, coords_messages_muted_until(bob, alice_id, &muted, &e_));
    CHECK(muted == 0);
    EXPECT(COORDS_ERR_UNKNOWN_CONVERSATION, coords_messages_mute(bob, "nobody", 0, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_messages_mute(bob, NULL, 0, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_messages_muted_until(bob, alice_id, NULL, &e_));
    int32_t quiet_start = -1, quiet_end = -1;
    EXPECT(COORDS_OK, coords_quiet_hours_parse("22:00-07:30", &quiet_start, &quiet_end, &e_));
    CHECK(quiet_start == 1320 && quiet_end == 450);
    EXPECT(COORDS_ERR_INVALID_QUIET_HOURS, coords_quiet_hours_parse("22:00-22:00", &quiet_start, &quiet_end, &e_));
    EXPECT(COORDS_ERR_INVALID_QUIET_HOURS, coords_quiet_hours_parse("7 pm", &quiet_start, &quiet_end, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_quiet_hours_parse(NULL, &quiet_start, &quiet_end, &e_));
    EXPECT(COORDS_OK, coords_messages_set_quiet_hours(bob, 1320, 450, 60, &e_));
    EXPECT(COORDS_ERR_INVALID_QUIET_HOURS, coords_messages_set_quiet_hours(bob, 1440, 450, 60, &e_));
    EXPECT(COORDS_ERR_INVALID_QUIET_HOURS, coords_messages_set_quiet_hours(bob, 0, 60, -841, &e_));
    EXPECT(COORDS_OK, coords_messages_set_receipts(bob, 0, &e_));
    EXPECT(COORDS_OK, coords_messages_notification_policy(bob, &json, &e_));
    CHECK(contains(&json, "\"text\":\"22:00-07:30\"") && contains(&json, "\"utc_offset_minutes\":60") &&
          contains(&json, "\"delivery_receipts\":false"));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_messages_set_quiet_hours(bob, -1, 0, 0, &e_));
    EXPECT(COORDS_OK, coords_messages_set_receipts(bob, 1, &e_));
    EXPECT(COORDS_OK, coords_messages_notification_policy(bob, &json, &e_));
    CHECK(contains(&json, "\"quiet_hours\":null") && contains(&json, "\"delivery_receipts\":true"));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_messages_sweep_expired(bob, &json, &e_));
    CHECK(json.data != NULL && strcmp((const char *)json.data, "[]") == 0);
    coords_buffer_free(&json);
    char stranger_id[64];
    base64url(stranger_pub, 32, stranger_id);
    EXPECT(COORDS_ERR_FRIEND_NOT_FOUND, coords_messages_send(bob, stranger_id, "x", &json, &e_));

    /* The live channel (PROTOCOL.md section 8): Bob's relays, the frames to send, a notice, the backoff. */
    EXPECT(COORDS_OK, coords_live_connections(bob, &json, &e_));
    CHECK(contains(&json, "\"url\":\"wss://relay.test/v1/relay/live\"") && contains(&json, alice_id) && contains(&json, "\"mailbox\":true"));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_live_opened(bob, "https://relay.test", &json, &e_));
    CHECK(contains(&json, "\"frames\":[") && contains(&json, "subscribe") && contains(&json, "\"catch_up\":[") && contains(&json, "X-Coords-Signature"));
    coords_buffer_free(&json);
    const char *notice = "{\"type\":\"message\",\"id\":\"m1\"}";
    EXPECT(COORDS_OK, coords_live_process(bob, "https://relay.test", (const uint8_t *)notice, strlen(notice), &json, &e_));
    CHECK(contains(&json, "\"type\":\"message_waiting\"") && contains(&json, "\"method\":\"GET\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_ERR_INVALID_JSON, coords_live_process(bob, "https://relay.test", (const uint8_t *)"{", 1, &json, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_live_process(bob, NULL, (const uint8_t *)notice, strlen(notice), &json, &e_));
    EXPECT(COORDS_OK, coords_live_closed(bob, "https://relay.test", 1006, 0, &json, &e_));
    CHECK(contains(&json, "\"action\":\"reconnect\"") && contains(&json, "\"after_ms\":"));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_live_closed(bob, "https://relay.test", 0, 404, &json, &e_));
    CHECK(contains(&json, "\"action\":\"poll\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_ERR_INVALID_HANDLE, coords_live_connections((CoordsApp *)(uintptr_t)0x10, &json, &e_));

    /* Signing and backups. */
    uint8_t sig[64];
    EXPECT(COORDS_OK, coords_wallet_sign(alice, (const uint8_t *)"x", 1, sig, &e_));
    EXPECT(COORDS_OK, coords_verify(alice_pub, (const uint8_t *)"x", 1, sig, &e_));
    CoordsBuffer backup = {NULL, 0};
    EXPECT(COORDS_OK, coords_wallet_export_backup(alice, "backup pw", &backup, &e_));
    CHECK(backup.len > 53 && memcmp(backup.data, "CRDSBKUP", 8) == 0);

    /* The callback saw the location updates. */
    for (int i = 0; i < 100; i++) {
        pthread_mutex_lock(&updates_lock);
        int seen = updates_seen;
        pthread_mutex_unlock(&updates_lock);
        if (seen >= 3) break;
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    pthread_mutex_lock(&updates_lock);
    CHECK(updates_seen >= 3);
    pthread_mutex_unlock(&updates_lock);
    EXPECT(COORDS_OK, coords_app_set_update_callback(alice, NULL, NULL, &e_));

    /* A callback that unregisters itself runs once; later updates reach the queue instead. */
    EXPECT(COORDS_OK, coords_app_set_update_callback(alice, stop_on_first, alice, &e_));
    EXPECT(COORDS_OK, coords_location_mark_upload_failed(alice, here.timestamp_ms + 6, "offline", &e_));
    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(&updates_lock);
        int calls = self_stopping_calls;
        pthread_mutex_unlock(&updates_lock);
        if (calls > 0) break;
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    EXPECT(COORDS_OK, coords_location_mark_upload_failed(alice, here.timestamp_ms + 7, "offline", &e_));
    struct timespec settle = {0, 200 * 1000 * 1000};
    nanosleep(&settle, NULL);
    pthread_mutex_lock(&updates_lock);
    CHECK(self_stopping_calls == 1 && self_stopping_status == COORDS_OK);
    pthread_mutex_unlock(&updates_lock);
    EXPECT(COORDS_OK, coords_app_next_update(alice, 1000, &json, &e_));
    CHECK(contains(&json, "upload_failed"));
    coords_buffer_free(&json);

    /* A host keychain holds the restored identity. */
    MemoryKeychain memory;
    memset(&memory, 0, sizeof memory);
    pthread_mutex_init(&memory.lock, NULL);
    CoordsKeychainCallbacks callbacks = {&memory, kc_save, kc_load, kc_remove};
    CoordsApp *host = NULL;
    EXPECT(COORDS_OK, coords_app_open_with_keychain(host_dir, "{\"durability\":\"no_sync\"}", &callbacks, &host, &e_));
    EXPECT(COORDS_ERR_WRONG_BACKUP_PASSPHRASE, coords_wallet_import_backup(host, backup.data, backup.len, "wrong", &id, &e_));
    EXPECT(COORDS_ERR_INVALID_BACKUP, coords_wallet_import_backup(host, backup.data, 20, "backup pw", &id, &e_));
    EXPECT(COORDS_ERR_TOO_LARGE, coords_wallet_import_backup(host, backup.data, (size_t)-1, "backup pw", &id, &e_));
    EXPECT(COORDS_OK, coords_wallet_import_backup(host, backup.data, backup.len, "backup pw", &id, &e_));
    CHECK(strcmp((const char *)id.data, alice_id) == 0);
    /* The store's key (saved at open) and the restored identity, nothing else. */
    CHECK(kc_holds(&memory, "identity.ed25519.seed", 32) && kc_holds(&memory, "store.dek", 32) && memory.saves == 2);
    coords_buffer_free(&id);
    coords_buffer_free(&backup);
    EXPECT(COORDS_OK, coords_friends_list(host, &json, &e_));
    CHECK(contains(&json, "Bob"));
    coords_buffer_free(&json);
    CoordsKeychainCallbacks incomplete = {&memory, kc_save, NULL, kc_remove};
    CoordsApp *broken = NULL;
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_app_open_with_keychain(host_dir, "{}", &incomplete, &broken, &e_));

    /* Identity rotation (PROTOCOL.md §9): Alice moves to a new key; a statement per friend is queued. */
    EXPECT(COORDS_ERR_INVALID_SERVER_URL, coords_wallet_rotate(alice, "not a url", false, &json, &e_));
    EXPECT(COORDS_OK, coords_wallet_rotate(alice, "https://relay2.test", false, &json, &e_));
    CHECK(contains(&json, "\"statements\":[{") && contains(&json, "\"kind\":\"rotation\"") && contains(&json, "\"delete_previous\":{"));
    CHECK(contains(&json, "\"server\":\"https://relay2.test\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_wallet_previous_identities(alice, &json, &e_));
    CHECK(contains(&json, alice_id));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_messages_queue_rotation_statements(alice, &json, &e_));
    CHECK(contains(&json, "\"kind\":\"rotation\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_ERR_NOT_IN_CONFLICT, coords_friends_resolve_conflict(bob, alice_id, bob_id, &json, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_friends_resolve_conflict(bob, alice_id, NULL, &json, &e_));

    /* Handles: close, double close, stale and forged handles, NULL. */
    EXPECT(COORDS_OK, coords_app_close(host, &e_));
    EXPECT(COORDS_OK, coords_app_close(bob, &e_));
    EXPECT(COORDS_ERR_INVALID_HANDLE, coords_app_close(bob, &e_));
    EXPECT(COORDS_ERR_INVALID_HANDLE, coords_friends_list(bob, &json, &e_));
    EXPECT(COORDS_ERR_INVALID_HANDLE, coords_wallet_info((CoordsApp *)(uintptr_t)0x1234560, &json, &e_));
    EXPECT(COORDS_ERR_INVALID_HANDLE, coords_wallet_info((CoordsApp *)&memory, &json, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_wallet_info(NULL, &json, &e_));
    EXPECT(COORDS_OK, coords_app_close(NULL, &e_));
    EXPECT(COORDS_OK, coords_app_close(alice, &e_));

    /* Reopening with the wrong passphrase is refused; the right one finds everything. */
    EXPECT(COORDS_ERR_WRONG_PASSPHRASE, coords_app_open(alice_dir, "{\"passphrase\":\"PW\"}", &alice, &e_));
    EXPECT(COORDS_OK, coords_app_open(alice_dir, options, &alice, &e_));
    EXPECT(COORDS_OK, coords_friends_list(alice, &json, &e_));
    CHECK(contains(&json, "\"trust\":\"verified\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_app_close(alice, &e_));
    remove_tree(dir);
}

/* Standard base64 (with padding) into `out`; the decoded length, or -1. */
static long base64_decode(const char *in, size_t len, uint8_t *out, size_t capacity) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint32_t bits = 0;
    int count = 0;
    size_t n = 0;
    for (size_t i = 0; i < len && in[i] != '='; i++) {
        const char *at = strchr(alphabet, in[i]);
        if (at == NULL || in[i] == '\0') return -1;
        bits = bits << 6 | (uint32_t)(at - alphabet);
        count += 6;
        if (count >= 8) {
            count -= 8;
            if (n >= capacity) return -1;
            out[n++] = (uint8_t)(bits >> count);
        }
    }
    return (long)n;
}

/* {"packets":[…]} made of every request body ("body_base64") in `json`, as a relay would hand
 * them to their recipient; malloc'ed, NULL when a body does not decode. */
static char *packets_of(const CoordsBuffer *json) {
    size_t capacity = json->len + 64;
    char *out = malloc(capacity);
    if (out == NULL) return NULL;
    size_t n = (size_t)snprintf(out, capacity, "{\"packets\":[");
    const char *p = (const char *)json->data;
    int first = 1;
    while (p != NULL && (p = strstr(p, "\"body_base64\":\"")) != NULL) {
        p += strlen("\"body_base64\":\"");
        const char *end = strchr(p, '"');
        if (end == NULL) break;
        if (!first) out[n++] = ',';
        first = 0;
        long decoded = base64_decode(p, (size_t)(end - p), (uint8_t *)out + n, capacity - n - 3);
        if (decoded < 0) { free(out); return NULL; }
        n += (size_t)decoded;
        p = end;
    }
    out[n++] = ']';
    out[n++] = '}';
    out[n] = '\0';
    return out;
}

/* Bob reads what Alice queued (a GroupChange or a sent message): `json` is its process outcome. */
static void deliver(CoordsApp *to, const CoordsBuffer *queued, CoordsBuffer *json) {
    char *packets = packets_of(queued);
    CHECK(packets != NULL);
    if (packets == NULL) return;
    EXPECT(COORDS_OK, coords_messages_process_fetch_response(to, (const uint8_t *)packets, strlen(packets), json, &e_));
    free(packets);
}
/* Alice and Bob in `dir` (apps opened, identities on https://relay.test, friends both ways);
 * their ids in alice_id and bob_id (64 bytes each). */
static void open_friends(const char *dir, CoordsApp **alice, CoordsApp **bob, char *alice_id, char *bob_id) {
    char alice_dir[128], bob_dir[128];
    snprintf(alice_dir, sizeof alice_dir, "%s/alice", dir);
    snprintf(bob_dir, sizeof bob_dir, "%s/bob", dir);
    const char *options = "{\"passphrase\":\"pw\",\"keychain_cost\":\"minimum\",\"durability\":\"no_sync\"}";
    EXPECT(COORDS_OK, coords_app_open(alice_dir, options, alice, &e_));
    EXPECT(COORDS_OK, coords_app_open(bob_dir, options, bob, &e_));
    CoordsBuffer id = {NULL, 0}, json = {NULL, 0}, link = {NULL, 0};
    EXPECT(COORDS_OK, coords_wallet_create_identity(*alice, "Alice", "https://relay.test", &id, &e_));
    if (id.data) snprintf(alice_id, 64, "%s", (const char *)id.data);
    coords_buffer_free(&id);
    EXPECT(COORDS_OK, coords_wallet_create_identity(*bob, "Bob", "https://relay.test", &id, &e_));
    if (id.data) snprintf(bob_id, 64, "%s", (const char *)id.data);
    coords_buffer_free(&id);
    EXPECT(COORDS_OK, coords_wallet_friend_link(*bob, &link, &e_));
    EXPECT(COORDS_OK, coords_friends_add_link(*alice, (const char *)link.data, &json, &e_));
    coords_buffer_free(&json);
    coords_buffer_free(&link);
    EXPECT(COORDS_OK, coords_wallet_friend_link(*alice, &link, &e_));
    EXPECT(COORDS_OK, coords_friends_add_link(*bob, (const char *)link.data, &json, &e_));
    coords_buffer_free(&json);
    coords_buffer_free(&link);
}

/* The answer an honest relay gives to an object PUT (`request` its Request JSON), after keeping
 * its body in `stored` (capacity bytes). */
static void object_answer(const CoordsBuffer *request, uint8_t *stored, size_t capacity, size_t *held, char *answer, size_t answer_len) {
    const char *url = request->data ? strstr((const char *)request->data, "/v1/relay/objects/") : NULL;
    char oid[23] = {0};
    unsigned long long offset = 0, size = 0, expires = 0;
    if (url) {
        memcpy(oid, url + strlen("/v1/relay/objects/"), 22);
        sscanf(url + strlen("/v1/relay/objects/") + 22, "?offset=%llu&stored=%llu&expires=%llu", &offset, &size, &expires);
    }
    const char *body = request->data ? strstr((const char *)request->data, "\"body_base64\":\"") : NULL;
    if (body && offset == *held) {
        body += strlen("\"body_base64\":\"");
        const char *end = strchr(body, '"');
        long n = end ? base64_decode(body, (size_t)(end - body), stored + *held, capacity - *held) : -1;
        if (n > 0) *held += (size_t)n;
    }
    snprintf(answer, answer_len, "{\"object\":\"%s\",\"stored\":%zu,\"size\":%llu,\"complete\":%s,\"expiresAt\":%llu}", oid, *held, size,
             *held == size ? "true" : "false", expires);
}

/* Files as messages (PROTOCOL.md section 12) through the C ABI: Alice uploads a file from a file
 * descriptor part by part and announces it; Bob streams it back into another descriptor; every
 * refusal on the way. */
static void test_files(void) {
    char dir[] = "/tmp/coords-c-files-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char source[128], target[128], alice_id[64] = {0}, bob_id[64] = {0};
    snprintf(source, sizeof source, "%s/map.png", dir);
    snprintf(target, sizeof target, "%s/copy.png", dir);
    CoordsApp *alice = NULL, *bob = NULL;
    open_friends(dir, &alice, &bob, alice_id, bob_id);
    CoordsBuffer json = {NULL, 0}, request = {NULL, 0}, sent = {NULL, 0};

    enum { SIZE = 150000, STORED = SIZE + 3 * 16 };
    static uint8_t file[SIZE], stored[STORED + 16];
    for (size_t i = 0; i < SIZE; i++) file[i] = (uint8_t)(i * 7 + i / 251);
    int fd = open(source, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    CHECK(fd >= 0 && write(fd, file, SIZE) == SIZE);
    close(fd);

    /* Refusals before anything is sent. */
    CoordsUpload *upload = NULL;
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY);
    EXPECT(COORDS_ERR_INVALID_ARGUMENT, coords_upload_begin(alice, dir_fd, &upload, &e_));
    close(dir_fd);
    EXPECT(COORDS_ERR_FILE_IO, coords_upload_begin(alice, -1, &upload, &e_));
    CHECK(upload == NULL);
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_upload_begin(alice, 0, NULL, &e_));

    /* The upload, one part at a time, against a relay played here. */
    fd = open(source, O_RDONLY);
    EXPECT(COORDS_OK, coords_upload_begin(alice, fd, &upload, &e_));
    EXPECT(COORDS_ERR_OBJECT_MISMATCH, coords_upload_send(upload, bob_id, "image/png", "map.png", "", &sent, &e_));
    size_t held = 0;
    int32_t more = 0;
    int parts = 0;
    uint64_t wait = 1, done = 0, total = 0;
    char answer[256];
    EXPECT(COORDS_OK, coords_upload_process(upload, 503, NULL, 0, "7", &wait, &e_));
    CHECK(wait == 7);
    /* The core's transfer rule: the relay's wait (at most 60 s), then pauses of 1, 2, 4 … 30 s;
     * the 14th failed try gives up and says why. */
    CoordsBuffer why = {0};
    uint64_t pause = 0, left = 0;
    EXPECT(COORDS_OK, coords_upload_failed(upload, 7, &pause, &why, &e_));
    CHECK(pause == 7 && why.len == 0);
    EXPECT(COORDS_OK, coords_upload_failed(upload, 3600, &pause, &why, &e_));
    CHECK(pause == 60);
    for (int i = 0; i < 11; i++) EXPECT(COORDS_OK, coords_upload_failed(upload, 0, &pause, &why, &e_));
    CHECK(pause == 30);
    EXPECT(COORDS_OK, coords_upload_failed(upload, 0, &pause, &why, &e_));
    char why_text[256];
    snprintf(why_text, sizeof why_text, "%.*s", (int)why.len, (const char *)why.data);
    CHECK(pause == 0 && strstr(why_text, "14 tries") != NULL);
    coords_buffer_free(&why);
    EXPECT(COORDS_OK, coords_transfer_seconds_left(upload, NULL, &left, &e_));
    CHECK(left >= 590 && left <= 600 + 104883200 / 8192); /* 10 min plus the size at 8 KiB/s */
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_upload_failed(upload, 0, NULL, &why, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_transfer_seconds_left(NULL, NULL, &left, &e_));
    while (parts < 10) {
        EXPECT(COORDS_OK, coords_upload_next(upload, &more, &request, &e_));
        if (!more) break;
        parts++;
        CHECK(contains(&request, "\"method\":\"PUT\"") && contains(&request, "X-Coords-Signature"));
        object_answer(&request, stored, sizeof stored, &held, answer, sizeof answer);
        coords_buffer_free(&request);
        EXPECT(COORDS_OK, coords_upload_process(upload, 200, (const uint8_t *)answer, strlen(answer), NULL, &wait, &e_));
        CHECK(wait == 0);
    }
    CHECK(parts == 1 && held == STORED && request.data == NULL);
    EXPECT(COORDS_OK, coords_upload_progress(upload, &done, &total, &e_));
    CHECK(done == SIZE && total == SIZE);
    EXPECT(COORDS_OK, coords_upload_probe(upload, &request, &e_));
    CHECK(contains(&request, "?offset=") && contains(&request, "\"body_base64\":\"\""));
    coords_buffer_free(&request);
    const char *quota = "{\"error\":\"quota\",\"message\":\"full\"}";
    EXPECT(COORDS_ERR_RELAY_ERROR, coords_upload_process(upload, 429, (const uint8_t *)quota, strlen(quota), "60", &wait, &e_));
    EXPECT(COORDS_ERR_MALFORMED_FILE, coords_upload_send(upload, bob_id, "image/png", "../map.png", "", &sent, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_upload_send(upload, bob_id, NULL, "map.png", "", &sent, &e_));
    EXPECT(COORDS_ERR_GROUP_NOT_FOUND, coords_upload_send_group(upload, "AAAAAAAAAAAAAAAAAAAAAA", "image/png", "map.png", "", &sent, &e_));
    EXPECT(COORDS_OK, coords_upload_send(upload, bob_id, "image/png", "map.png", "the way", &sent, &e_));
    CHECK(contains(&sent, "\"kind\":\"file\"") && contains(&sent, "\"name\":\"map.png\"") && !contains(&sent, "\"key\""));
    coords_upload_free(upload);
    coords_upload_free(NULL);
    EXPECT(COORDS_ERR_INVALID_HANDLE, coords_upload_next(upload, &more, &request, &e_));
    close(fd);

    /* Bob receives the message and streams the file into a descriptor. */
    deliver(bob, &sent, &json);
    CHECK(contains(&json, "\"size\":150000") && contains(&json, "\"type\":\"image/png\"") && !contains(&json, "\"key\""));
    char message_id[37] = {0};
    const char *id_at = json.data ? strstr((const char *)json.data, "\"id\":\"") : NULL;
    if (id_at) memcpy(message_id, id_at + 6, 36);
    coords_buffer_free(&json);
    coords_buffer_free(&sent);
    CoordsDownload *download = NULL;
    EXPECT(COORDS_ERR_UNKNOWN_MESSAGE, coords_download_begin(bob, "00000000-0000-4000-8000-000000000000", 1, &download, &e_));
    EXPECT(COORDS_ERR_FILE_IO, coords_download_begin(bob, message_id, -1, &download, &e_));
    CHECK(download == NULL);
    for (int attempt = 0; attempt < 2; attempt++) {
        /* The first time a relay flips a byte: the chunk is refused; then the honest object. */
        fd = open(target, O_CREAT | O_WRONLY | O_TRUNC, 0600);
        EXPECT(COORDS_OK, coords_download_begin(bob, message_id, fd, &download, &e_));
        uint64_t max = 0;
        EXPECT(COORDS_OK, coords_download_request(download, &request, &max, &e_));
        CHECK(contains(&request, "\"method\":\"GET\"") && max == STORED);
        coords_buffer_free(&request);
        wait = 99;
        EXPECT(COORDS_ERR_OBJECT_MISMATCH, coords_download_check(download, 404, NULL, &wait, &e_));
        EXPECT(COORDS_ERR_OBJECT_MISMATCH, coords_download_check(download, 206, NULL, &wait, &e_)); /* a range nobody asked for */
        EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_download_check(download, 200, NULL, NULL, &e_));
        EXPECT(COORDS_OK, coords_download_check(download, 503, "17", &wait, &e_));
        CHECK(wait == 17);
        EXPECT(COORDS_OK, coords_download_check(download, 429, "a week", &wait, &e_));
        CHECK(wait == 5);
        EXPECT(COORDS_OK, coords_download_check(download, 500, "86400", &wait, &e_));
        CHECK(wait == 60); /* a Retry-After beyond the transfer rule's 60 s is cut */
        EXPECT(COORDS_OK, coords_download_check(download, 200, NULL, &wait, &e_));
        CHECK(wait == 0);
        int32_t keep = 0;
        EXPECT(COORDS_OK, coords_download_pace(download, 65536, &keep, &e_));
        CHECK(keep == 1);
        EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_download_pace(download, 1, NULL, &e_));
        CoordsBuffer giving_up = {0};
        uint64_t pause = 0, left = 0;
        EXPECT(COORDS_OK, coords_download_failed(download, 9, &pause, &giving_up, &e_));
        CHECK(pause == 9 && giving_up.len == 0);
        EXPECT(COORDS_OK, coords_transfer_seconds_left(NULL, download, &left, &e_));
        CHECK(left > 0);
        /* The Content-Length must be what was asked for: shorter, longer or not a number is refused. */
        char length[32];
        snprintf(length, sizeof length, "%lu", (unsigned long)STORED);
        EXPECT(COORDS_OK, coords_download_check_length(download, length, &e_));
        EXPECT(COORDS_OK, coords_download_check_length(download, NULL, &e_)); /* chunked: the body's end tells */
        snprintf(length, sizeof length, "%lu", (unsigned long)STORED - 1);
        EXPECT(COORDS_ERR_OBJECT_MISMATCH, coords_download_check_length(download, length, &e_));
        EXPECT(COORDS_ERR_OBJECT_MISMATCH, coords_download_check_length(download, "-1", &e_));
        EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_download_check_length(NULL, length, &e_));
        if (attempt == 0) stored[70000] ^= 1;
        int32_t rc = COORDS_OK;
        for (size_t at = 0; at < STORED && rc == COORDS_OK; at += 10000) {
            CoordsError error = {0, NULL};
            rc = coords_download_take(download, stored + at, at + 10000 > STORED ? STORED - at : 10000, &error);
            coords_error_free(&error);
        }
        int32_t complete = 0;
        if (attempt == 0) {
            CHECK(rc == COORDS_ERR_BAD_CHUNK);
            stored[70000] ^= 1;
        } else {
            CHECK(rc == COORDS_OK);
            EXPECT(COORDS_OK, coords_download_progress(download, &done, &total, &e_));
            CHECK(done == SIZE && total == SIZE);
            EXPECT(COORDS_OK, coords_download_finish(download, &complete, &e_));
            CHECK(complete == 1);
            EXPECT(COORDS_ERR_OBJECT_MISMATCH, coords_download_take(download, stored, 1, &e_));
        }
        coords_download_free(download);
        close(fd);
    }
    static uint8_t copy[SIZE + 1];
    fd = open(target, O_RDONLY);
    CHECK(fd >= 0 && read(fd, copy, sizeof copy) == SIZE && memcmp(copy, file, SIZE) == 0);
    close(fd);
    EXPECT(COORDS_ERR_INVALID_HANDLE, coords_download_check(download, 200, NULL, &wait, &e_));
    coords_download_free(NULL);
    coords_app_close(alice, NULL);
    coords_app_close(bob, NULL);
    remove_tree(dir);
}

/* Groups (PROTOCOL.md section 11) through the C ABI: Alice makes a group with Bob, who reads its
 * statement, her sender key and a message from the bodies she queued; every function's error path. */
static void test_groups(void) {
    char dir[] = "/tmp/coords-c-groups-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CoordsApp *alice = NULL, *bob = NULL;
    char alice_id[64] = {0}, bob_id[64] = {0}, stranger_id[64];
    open_friends(dir, &alice, &bob, alice_id, bob_id);
    CoordsBuffer json = {NULL, 0}, change = {NULL, 0};
    uint8_t stranger_seed[32], stranger_pub[32];
    EXPECT(COORDS_OK, coords_identity_generate(stranger_seed, stranger_pub, &e_));
    base64url(stranger_pub, 32, stranger_id);
    char members[96], strangers[96];
    snprintf(members, sizeof members, "[\"%s\"]", bob_id);
    snprintf(strangers, sizeof strangers, "[\"%s\"]", stranger_id);

    /* Refusals before anything is stored. */
    EXPECT(COORDS_ERR_INVALID_JSON, coords_groups_create(alice, "Trip", "[", &change, &e_));
    EXPECT(COORDS_ERR_INVALID_GROUP_MEMBERS, coords_groups_create(alice, "Trip", strangers, &change, &e_));
    EXPECT(COORDS_ERR_MALFORMED_GROUP_STATEMENT, coords_groups_create(alice, "", members, &change, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_groups_create(alice, NULL, members, &change, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_groups_list(alice, NULL, &e_));
    EXPECT(COORDS_ERR_INVALID_HANDLE, coords_groups_list((CoordsApp *)(uintptr_t)0x10, &json, &e_));
    EXPECT(COORDS_OK, coords_groups_list(alice, &json, &e_));
    CHECK(json.data != NULL && strcmp((const char *)json.data, "[]") == 0);
    coords_buffer_free(&json);

    /* Alice creates the group; Bob reads the statement and her sender key. */
    EXPECT(COORDS_OK, coords_groups_create(alice, "Trip", members, &change, &e_));
    CHECK(contains(&change, "\"name\":\"Trip\"") && contains(&change, "\"is_admin\":true") && contains(&change, "\"unreachable\":[]"));
    CHECK(contains(&change, "\"body_base64\":\"") && contains(&change, "/v1/relay/messages"));
    deliver(bob, &change, &json);
    CHECK(contains(&json, "\"rejected\":[]"));
    coords_buffer_free(&json);
    coords_buffer_free(&change);
    EXPECT(COORDS_OK, coords_groups_list(bob, &json, &e_));
    CHECK(contains(&json, "\"name\":\"Trip\"") && contains(&json, "\"is_admin\":false") && contains(&json, alice_id));
    coords_buffer_free(&json);
    EXPECT(COORDS_ERR_NOT_A_GROUP_ADMIN, coords_groups_rename(bob, "Trip", "Ours", &change, &e_));
    EXPECT(COORDS_ERR_NOT_A_GROUP_ADMIN, coords_groups_add(bob, "Trip", strangers, &change, &e_));

    /* A message: sealed once, read by Bob once (a replay of the same packets adds nothing). */
    CoordsBuffer sent = {NULL, 0};
    EXPECT(COORDS_OK, coords_groups_send(alice, "Trip", "platform 4", &sent, &e_));
    CHECK(contains(&sent, "\"text\":\"platform 4\"") && contains(&sent, "\"group\":\"") && contains(&sent, "\"queued\":[{"));
    deliver(bob, &sent, &json);
    CHECK(contains(&json, "\"text\":\"platform 4\""));
    coords_buffer_free(&json);
    deliver(bob, &sent, &json);
    CHECK(contains(&json, "\"received\":[]"));
    coords_buffer_free(&json);
    coords_buffer_free(&sent);
    EXPECT(COORDS_OK, coords_groups_history(bob, "Trip", 0, &json, &e_));
    CHECK(contains(&json, "\"text\":\"platform 4\"") && contains(&json, alice_id) && contains(&json, "\"group\":\""));
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_groups_history(alice, "Trip", 1, &json, &e_));
    CHECK(contains(&json, "platform 4"));
    coords_buffer_free(&json);
    EXPECT(COORDS_ERR_GROUP_NOT_FOUND, coords_groups_send(alice, "Nope", "x", &sent, &e_));
    EXPECT(COORDS_ERR_GROUP_NOT_FOUND, coords_groups_history(alice, "Nope", 0, &json, &e_));
    char *long_text = malloc(65538);
    CHECK(long_text != NULL);
    if (long_text) {
        memset(long_text, 'a', 65537);
        long_text[65537] = '\0';
        EXPECT(COORDS_ERR_GROUP_MESSAGE_TOO_LONG, coords_groups_send(alice, "Trip", long_text, &sent, &e_));
        free(long_text);
    }

    /* Bob leaves and forgets the group; Alice's changes. */
    EXPECT(COORDS_OK, coords_groups_leave(bob, "Trip", &change, &e_));
    CHECK(contains(&change, "\"status\":\"left\""));
    coords_buffer_free(&change);
    EXPECT(COORDS_ERR_NOT_A_GROUP_MEMBER, coords_groups_send(bob, "Trip", "x", &sent, &e_));
    EXPECT(COORDS_OK, coords_groups_delete(bob, "Trip", &e_));
    EXPECT(COORDS_OK, coords_groups_list(bob, &json, &e_));
    CHECK(json.data != NULL && strcmp((const char *)json.data, "[]") == 0);
    coords_buffer_free(&json);
    EXPECT(COORDS_OK, coords_groups_rename(alice, "Trip", "Porto", &change, &e_));
    CHECK(contains(&change, "\"name\":\"Porto\""));
    coords_buffer_free(&change);
    EXPECT(COORDS_OK, coords_groups_set_admin(alice, "Porto", bob_id, 1, &change, &e_));
    coords_buffer_free(&change);
    EXPECT(COORDS_ERR_INVALID_GROUP_MEMBERS, coords_groups_set_admin(alice, "Porto", stranger_id, 1, &change, &e_));
    EXPECT(COORDS_OK, coords_groups_set_sharing(alice, "Porto", 1, &json, &e_));
    coords_buffer_free(&json);
    EXPECT(COORDS_ERR_STILL_A_GROUP_MEMBER, coords_groups_delete(alice, "Porto", &e_));
    EXPECT(COORDS_ERR_INVALID_GROUP_MEMBERS, coords_groups_add(alice, "Porto", strangers, &change, &e_));
    EXPECT(COORDS_OK, coords_groups_remove(alice, "Porto", members, &change, &e_));
    CHECK(!contains(&change, bob_id) && contains(&change, "\"is_self\":true"));
    coords_buffer_free(&change);
    /* The last member cannot leave (nobody would hold the group) but may forget it. */
    EXPECT(COORDS_ERR_INVALID_GROUP_MEMBERS, coords_groups_leave(alice, "Porto", &change, &e_));
    EXPECT(COORDS_OK, coords_groups_delete(alice, "Porto", &e_));
    EXPECT(COORDS_ERR_GROUP_NOT_FOUND, coords_groups_delete(alice, "Porto", &e_));
    EXPECT(COORDS_OK, coords_app_close(alice, &e_));
    EXPECT(COORDS_OK, coords_app_close(bob, &e_));
    remove_tree(dir);
}

static void test_geocoding(void) {
    CoordsBuffer place = {NULL, 0};
    EXPECT(COORDS_OK, coords_geocode_nearest(30.2672, -97.7431, 10.0, &place, &e_));
    CHECK(contains(&place, "\"display\":\"Austin, Texas\"") && contains(&place, "\"phrase\":\"in Austin, Texas\""));
    CHECK(contains(&place, "\"country_code\":\"US\"") && contains(&place, "\"state\":\"Texas\""));
    coords_buffer_free(&place);
    EXPECT(COORDS_ERR_INVALID_COORDINATE, coords_geocode_nearest(91.0, 0.0, 0.0, &place, &e_));
    EXPECT(COORDS_ERR_INVALID_COORDINATE, coords_geocode_nearest(0.0 / 0.0, 0.0, 0.0, &place, &e_));
    CHECK(place.data == NULL);
    EXPECT(COORDS_ERR_INVALID_ARGUMENT, coords_geocode_nearest(0.0, 0.0, -1.0, &place, &e_));
    EXPECT(COORDS_ERR_NULL_ARGUMENT, coords_geocode_nearest(0.0, 0.0, 0.0, NULL, &e_));

    /* A place file: missing, damaged, and a valid one (COORDS_PLACES_FILE; `make test-c` passes
     * the repository's Sources/CGeoData/places15000.cgeo). */
    CoordsPlaces *places = (CoordsPlaces *)1;
    EXPECT(COORDS_ERR_UNREADABLE_PLACE_FILE, coords_places_open("/nonexistent/places.cgeo", &places, &e_));
    CHECK(places == NULL);
    char path[] = "/tmp/coords-c-places-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK(write(fd, "CGEO not really", 15) == 15);
        close(fd);
        EXPECT(COORDS_ERR_DAMAGED_PLACE_DATA, coords_places_open(path, &places, &e_));
        unlink(path);
    }
    const char *file = getenv("COORDS_PLACES_FILE");
    CHECK(file != NULL);
    if (file != NULL) {
        EXPECT(COORDS_OK, coords_places_open(file, &places, &e_));
        uint64_t count = 0;
        EXPECT(COORDS_OK, coords_places_count(places, &count, &e_));
        CHECK(count > 30000);
        EXPECT(COORDS_OK, coords_places_nearest(places, 38.7223, -9.1393, 0.0, &place, &e_));
        CHECK(contains(&place, "\"country\":\"Portugal\""));
        coords_buffer_free(&place);
        EXPECT(COORDS_OK, coords_places_close(places, &e_));
        EXPECT(COORDS_ERR_INVALID_HANDLE, coords_places_close(places, &e_));
    }
    EXPECT(COORDS_ERR_INVALID_HANDLE, coords_places_nearest((CoordsPlaces *)(uintptr_t)0x1B0, 0.0, 0.0, 0.0, &place, &e_));
    EXPECT(COORDS_OK, coords_places_close(NULL, &e_));
}

int main(void) {
    test_library();
    test_stateless();
    test_geocoding();
    test_apps();
    test_groups();
    test_files();
    printf("coordscore C smoke test: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
