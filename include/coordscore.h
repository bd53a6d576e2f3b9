/*
 * coordscore.h — the C ABI of CoordsCore (libcoordscore.so).
 *
 * End-to-end encrypted location sharing (the Coords v3 wire format) for any host: C programs,
 * Python (ctypes), phone shells. This header is the contract; docs/ABI.md explains it at
 * length (JSON schemas, threading, shipping the library).
 *
 * Calling convention (every function):
 *   - Fallible functions return an int32_t status: 0 (COORDS_OK) or one of the COORDS_ERR_*
 *     codes below. Their last parameter is `CoordsError *out_error`, which may be NULL. When it
 *     is not NULL, it receives the code and a message owned by the library: free it with
 *     coords_error_free() (on success the library sets code 0 and message NULL without freeing
 *     anything, so free a previous message before reusing the struct).
 *   - Inputs are borrowed for the duration of the call only: `(const uint8_t *ptr, size_t len)`
 *     byte ranges, fixed-size keys (`seed[32]` means 32 readable bytes), and NUL-terminated
 *     UTF-8 strings. Lengths are checked against documented maxima *before* anything is read.
 *   - Outputs that vary in size come back in a CoordsBuffer the library allocates; free it
 *     with coords_buffer_free(). Text and JSON buffers are also NUL-terminated (the NUL is not
 *     counted in len). Fixed-size outputs (`public_out[32]`) are written into caller memory.
 *   - Records cross as UTF-8 JSON (schemas in docs/ABI.md).
 *   - Objects are opaque handles (CoordsApp *). A handle is never a real pointer: a closed,
 *     stale or made-up handle yields COORDS_ERR_INVALID_HANDLE, never undefined behaviour.
 *     Closing NULL is a no-op that succeeds.
 *   - No input can make the library abort the process: every export validates its arguments
 *     and catches every error.
 *
 * Threading: every function may be called from any thread, concurrently, including on the
 * same CoordsApp handle (calls to one manager are serialised inside the library). Calls block
 * the calling thread until they finish; do not call them from a thread that must not block.
 */
#ifndef COORDSCORE_H
#define COORDSCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes. Bindings compare it with coords_abi_version() at
 * load time and refuse to run on a mismatch. */
#define COORDS_ABI_VERSION 1u

/* ---------------------------------------------------------------------------------------
 * Status and error codes (stable; never renumbered). Families by hundred, subgroups by decade.
 * ------------------------------------------------------------------------------------- */
#define COORDS_OK 0

/* 100–199 arguments (the C ABI itself) */
#define COORDS_ERR_NULL_ARGUMENT 100      /* a required pointer was NULL */
#define COORDS_ERR_INVALID_LENGTH 101     /* a byte range has the wrong length */
#define COORDS_ERR_INVALID_UTF8 102       /* a string is not valid UTF-8 */
#define COORDS_ERR_INVALID_ARGUMENT 103   /* malformed JSON argument, unknown option or enum value */
#define COORDS_ERR_INVALID_HANDLE 104     /* closed, stale or unknown handle */
#define COORDS_ERR_TOO_LARGE 105          /* an input exceeds its documented maximum */
#define COORDS_ERR_ABI_MISMATCH 106       /* reserved for bindings: header and library versions differ */
#define COORDS_ERR_FILE_IO 107            /* reading or writing the host's file descriptor failed */
#define COORDS_ERR_INTERNAL 199           /* an unexpected failure inside the library (a bug) */

/* 200–299 crypto */
#define COORDS_ERR_CRYPTO_INIT 200        /* libsodium could not initialise */
#define COORDS_ERR_UNSUPPORTED_HARDWARE 201 /* no AES-NI/CLMUL: AES-256-GCM unavailable */
#define COORDS_ERR_INVALID_KEY_LENGTH 202
#define COORDS_ERR_INVALID_PUBLIC_KEY 203 /* not a valid Ed25519 point */
#define COORDS_ERR_INVALID_NONCE_LENGTH 204
#define COORDS_ERR_AUTHENTICATION_FAILED 205
#define COORDS_ERR_CIPHERTEXT_TOO_SHORT 206
#define COORDS_ERR_WEAK_PUBLIC_KEY 207
#define COORDS_ERR_INVALID_CRYPTO_PARAMETER 208
#define COORDS_ERR_RANDOM_SOURCE 209
#define COORDS_ERR_CRYPTO_OUT_OF_MEMORY 210

/* 300–399 wire format */
#define COORDS_ERR_INVALID_LOCATION 300   /* NaN, infinity, |lat| > 90, |lon| > 180 */
#define COORDS_ERR_INVALID_WIRE_LOCATION 301
#define COORDS_ERR_BLOB_TOO_SHORT 310
#define COORDS_ERR_UNSUPPORTED_BLOB_VERSION 311
#define COORDS_ERR_BLOB_TRUNCATED 312
#define COORDS_ERR_NOT_A_RECIPIENT 313
#define COORDS_ERR_INVALID_EPHEMERAL_KEY 314
#define COORDS_ERR_BLOB_TAMPERED 315
#define COORDS_ERR_INVALID_LOCATION_PLAINTEXT 316
#define COORDS_ERR_TOO_MANY_RECIPIENTS 317 /* more than 1050 entries (1049 friends + self) */
#define COORDS_ERR_NO_RECIPIENTS 318
#define COORDS_ERR_INVALID_RECIPIENT_KEY 319
#define COORDS_ERR_INVALID_BASE64 330
#define COORDS_ERR_INVALID_BYTE_LENGTH 331
#define COORDS_ERR_INVALID_JSON 332
#define COORDS_ERR_UNEXPECTED_JSON 333
#define COORDS_ERR_INVALID_SERVER_URL 340
#define COORDS_ERR_INVALID_PUBLIC_KEY_ID 341
#define COORDS_ERR_TAMPERED_ENTRY 342
#define COORDS_ERR_UNVERIFIED_ENTRY 343
#define COORDS_ERR_ROLLBACK 344
#define COORDS_ERR_RELAY_ERROR 345
#define COORDS_ERR_STALE_LOCATION 346
#define COORDS_ERR_INVALID_FRIEND_LINK 350
#define COORDS_ERR_INVALID_PUSH_TOKEN 351 /* a push gateway token (PROTOCOL.md section 8.8) */
#define COORDS_ERR_INVALID_ENVELOPE 360
#define COORDS_ERR_ENVELOPE_SIGNATURE 361  /* forged or altered message envelope */
#define COORDS_ERR_ENVELOPE_NOT_FOR_ME 362
#define COORDS_ERR_ENVELOPE_EXPIRED 363
#define COORDS_ERR_ENVELOPE_TAMPERED 364
#define COORDS_ERR_INVALID_ROTATION 370
#define COORDS_ERR_RETIRED_KEY 371
/* 380–399: prekeys and forward-secret sessions (PROTOCOL.md §10) */
#define COORDS_ERR_INVALID_PREKEY_BUNDLE 380
#define COORDS_ERR_PREKEY_BUNDLE_EXPIRED 381
#define COORDS_ERR_MALFORMED_SESSION_MESSAGE 385
#define COORDS_ERR_UNKNOWN_PREKEY 386
#define COORDS_ERR_REPLAYED_HANDSHAKE 387
#define COORDS_ERR_DUPLICATE_MESSAGE 388
#define COORDS_ERR_TOO_MANY_SKIPPED 389
#define COORDS_ERR_SESSION_BROKEN 390
#define COORDS_ERR_DOWNGRADE_REFUSED 391
#define COORDS_ERR_PREKEYS_UNAVAILABLE 392
#define COORDS_ERR_MALFORMED_GROUP_STATEMENT 393
#define COORDS_ERR_GROUP_SIGNATURE_INVALID 394
#define COORDS_ERR_MALFORMED_GROUP_MESSAGE 395
#define COORDS_ERR_MALFORMED_FILE 396
#define COORDS_ERR_BAD_CHUNK 397
#define COORDS_ERR_OBJECT_MISMATCH 398
#define COORDS_ERR_QR_UNENCODABLE 399 /* text too long for a QR code (at most 213 bytes) */

/* 400–499 storage */
#define COORDS_ERR_STORE_OPEN_FAILED 400
#define COORDS_ERR_STORE_ALREADY_OPEN 401 /* the data directory is already open in this process */
#define COORDS_ERR_STORE_FULL 402
#define COORDS_ERR_STORE_CORRUPTED 403
#define COORDS_ERR_STORE_FAILURE 404
#define COORDS_ERR_STORE_CLOSED 405
#define COORDS_ERR_UNKNOWN_TABLE 410
#define COORDS_ERR_TABLE_TYPE_MISMATCH 411
#define COORDS_ERR_TOO_MANY_TABLES 412
#define COORDS_ERR_TRANSACTION_CLOSED 420
#define COORDS_ERR_NESTED_WRITE 421
#define COORDS_ERR_DECODING_FAILED 430
#define COORDS_ERR_ENCODING_FAILED 431
#define COORDS_ERR_INVALID_KEY_SIZE 432
#define COORDS_ERR_SCHEMA_TOO_NEW 440
#define COORDS_ERR_MIGRATION_FAILED 441
/* 450–459 the store sealed at rest (docs/STORE.md) */
#define COORDS_ERR_SEALED_VALUE_REJECTED 450 /* a stored value does not open: damaged, moved, foreign */
#define COORDS_ERR_WRONG_STORE_KEY 451       /* the keychain's store key does not open this store */
#define COORDS_ERR_STORE_KEY_REQUIRED 452    /* a sealed store opened without its key */
#define COORDS_ERR_STORE_KEY_MISSING 453     /* the store is sealed, the keychain has no store key */
#define COORDS_ERR_UNSEALED_STORE 454        /* a 1.0.0 store in the clear (coords_app_open migrates it) */
#define COORDS_ERR_UNSUPPORTED_SCAN 455      /* a scan that needs the order of hidden key bytes */

/* 500–599 channels and lifetime */
#define COORDS_ERR_EMPTY 500
#define COORDS_ERR_FULL 501
#define COORDS_ERR_CLOSED 502             /* the app was closed: no more updates */
#define COORDS_ERR_TIMED_OUT 503          /* coords_app_next_update: nothing arrived in time */
#define COORDS_ERR_CANCELLED 504

/* 600–699 managers and keychains */
#define COORDS_ERR_NO_IDENTITY 600
#define COORDS_ERR_IDENTITY_EXISTS 601
#define COORDS_ERR_INVALID_BACKUP 602
#define COORDS_ERR_WRONG_BACKUP_PASSPHRASE 603
#define COORDS_ERR_UNSUPPORTED_BACKUP_VERSION 604
#define COORDS_ERR_NO_SERVER 605
#define COORDS_ERR_FRIEND_NOT_FOUND 610
#define COORDS_ERR_CANNOT_ADD_SELF 611
#define COORDS_ERR_NOT_IN_CONFLICT 612
#define COORDS_ERR_IN_CONFLICT 613
#define COORDS_ERR_UNKNOWN_UPLOAD 620
#define COORDS_ERR_FIX_IN_FUTURE 621
#define COORDS_ERR_FRIEND_BLOCKED 630     /* no messages to or from a blocked friend */
#define COORDS_ERR_MESSAGE_TOO_LONG 631
#define COORDS_ERR_INVALID_MAILBOX_RESPONSE 632
#define COORDS_ERR_INVALID_PUSH_ENDPOINT 633
#define COORDS_ERR_INVALID_QUIET_HOURS 634
#define COORDS_ERR_UNKNOWN_CONVERSATION 635
#define COORDS_ERR_UNKNOWN_MESSAGE 636        /* no stored message has this id */
#define COORDS_ERR_NO_ATTACHMENT 637          /* the message has no attachment that can be fetched */
#define COORDS_ERR_WRONG_PASSPHRASE 650   /* the keychain passphrase or host key is wrong */
#define COORDS_ERR_KEYCHAIN_CORRUPTED 651
#define COORDS_ERR_KEYCHAIN_IO 652
#define COORDS_ERR_KEYCHAIN_INVALID_NAME 653
#define COORDS_ERR_HOST_KEYCHAIN 654      /* a host keychain callback reported a failure */
#define COORDS_ERR_GROUP_NOT_FOUND 660
#define COORDS_ERR_NOT_A_GROUP_MEMBER 661
#define COORDS_ERR_NOT_A_GROUP_ADMIN 662
#define COORDS_ERR_TOO_MANY_GROUPS 663
#define COORDS_ERR_INVALID_GROUP_MEMBERS 664
#define COORDS_ERR_GROUP_MESSAGE_TOO_LONG 665
#define COORDS_ERR_NOT_INVITED 666  /* a statement that would add us is not from an admin friend */
#define COORDS_ERR_STALE_GROUP_STATEMENT 667
#define COORDS_ERR_GROUP_FORK_LIMIT 668
#define COORDS_ERR_UNKNOWN_GROUP_CHAIN 669  /* a group message waits for its sender key (held on the device) */
#define COORDS_ERR_GROUP_CHAIN_CONFLICT 670
#define COORDS_ERR_STILL_A_GROUP_MEMBER 671
#define COORDS_ERR_GROUP_MESSAGE_DROPPED 672 /* a held group message whose sender key never came (or past the bound) was dropped */
/* 7xx: offline geocoding. */
#define COORDS_ERR_INVALID_COORDINATE 700 /* NaN, infinite, |latitude| > 90 or |longitude| > 180 */
#define COORDS_ERR_DAMAGED_PLACE_DATA 701 /* a CGEO file failed its checks; nothing was loaded */
#define COORDS_ERR_UNSUPPORTED_PLACE_DATA 702 /* a newer CGEO version than this build reads */
#define COORDS_ERR_UNREADABLE_PLACE_FILE 703

/* Input limits (larger inputs fail with COORDS_ERR_TOO_LARGE before being read). */
#define COORDS_MAX_STRING_BYTES 1048576u     /* any NUL-terminated string argument */
#define COORDS_MAX_MESSAGE_BYTES 16777216u   /* coords_sign / coords_verify / coords_wallet_sign */
#define COORDS_MAX_BODY_BYTES 16777216u      /* response bodies, backups */
#define COORDS_MAX_BLOB_BYTES 65536u         /* a location blob (the relay limit) */
#define COORDS_MAX_RECIPIENTS 1050u          /* coords_blob_seal: sender + 1049 friends */

/* ---------------------------------------------------------------------------------------
 * Types
 * ------------------------------------------------------------------------------------- */

/* An error: a COORDS_ERR_* code and a UTF-8 message owned by the library (or NULL). */
typedef struct CoordsError {
    int32_t code;
    char *message;
} CoordsError;

/* Bytes owned by the library. Free with coords_buffer_free(). */
typedef struct CoordsBuffer {
    uint8_t *data;
    size_t len;
} CoordsBuffer;

/* A position fix. latitude/longitude in degrees, altitude and accuracy in metres,
 * timestamp_ms = time of the fix in milliseconds since the Unix epoch. */
typedef struct CoordsLocation {
    double latitude;
    double longitude;
    double altitude;
    float accuracy;
    uint64_t timestamp_ms;
} CoordsLocation;

/* An open data directory (opaque). */
typedef struct CoordsApp CoordsApp;

/* A loaded place data file for offline geocoding (opaque). */
typedef struct CoordsPlaces CoordsPlaces;

/* A file being sent (opaque; coords_upload_begin). */
typedef struct CoordsUpload CoordsUpload;

/* A file being received (opaque; coords_download_begin). */
typedef struct CoordsDownload CoordsDownload;

/* A host keychain (iOS Keychain, Android Keystore, a secrets service...). The library calls
 * these from any thread, possibly concurrently; they must be thread-safe. Return 0 on success.
 *   save:   store `secret` (len bytes) under `name` (UTF-8), replacing any previous value.
 *   load:   copy the secret under `name` into `out` (capacity bytes) and set *out_len; return 1
 *           when there is no such entry, 2 when `capacity` is too small, other non-zero values on
 *           failure.
 *   remove: delete `name` (return 0 when it did not exist).
 * `context` is passed back unchanged; it must stay valid until the app is closed. */
typedef struct CoordsKeychainCallbacks {
    void *context;
    int32_t (*save)(void *context, const char *name, const uint8_t *secret, size_t len);
    int32_t (*load)(void *context, const char *name, uint8_t *out, size_t capacity, size_t *out_len);
    int32_t (*remove)(void *context, const char *name);
} CoordsKeychainCallbacks;

/* Receives each update as UTF-8 JSON (valid during the call only), on a library thread. */
typedef void (*CoordsUpdateCallback)(void *context, const uint8_t *json, size_t len);

/* Layout checks (C99-compatible). */
#define COORDS_STATIC_ASSERT(cond, name) typedef char coords_static_assert_##name[(cond) ? 1 : -1]
COORDS_STATIC_ASSERT(sizeof(CoordsError) == 2 * sizeof(void *), error_layout);
COORDS_STATIC_ASSERT(sizeof(CoordsBuffer) == 2 * sizeof(void *), buffer_layout);
COORDS_STATIC_ASSERT(offsetof(CoordsBuffer, len) == sizeof(void *), buffer_len_offset);
COORDS_STATIC_ASSERT(sizeof(CoordsLocation) == 40, location_size);
COORDS_STATIC_ASSERT(offsetof(CoordsLocation, accuracy) == 24, location_accuracy_offset);
COORDS_STATIC_ASSERT(offsetof(CoordsLocation, timestamp_ms) == 32, location_timestamp_offset);
COORDS_STATIC_ASSERT(sizeof(CoordsKeychainCallbacks) == 4 * sizeof(void *), keychain_layout);

/* ---------------------------------------------------------------------------------------
 * Library
 * ------------------------------------------------------------------------------------- */

/* The ABI version of the loaded library (compare with COORDS_ABI_VERSION). Never fails. */
uint32_t coords_abi_version(void);

/* The library version, e.g. "1.0.0" (the same string as `coords --version`, `coords-relay
 * --version` and `coordscore.__version__`): a static string, do not free. Never fails. */
const char *coords_version(void);

/* Frees the message of `error` and resets it (code 0, message NULL). NULL is a no-op. */
void coords_error_free(CoordsError *error);

/* Frees the bytes of `buffer` and resets it (data NULL, len 0). NULL is a no-op. */
void coords_buffer_free(CoordsBuffer *buffer);

/* ---------------------------------------------------------------------------------------
 * Stateless functions (mirror the reference core's exports)
 * ------------------------------------------------------------------------------------- */

/* Generates an identity: writes the 32-byte secret seed and the 32-byte Ed25519 public key.
 * The seed is the user's private key: keep it in the platform keychain.
 * Errors: NULL_ARGUMENT, CRYPTO_INIT. */
int32_t coords_identity_generate(uint8_t seed_out[32], uint8_t public_out[32], CoordsError *out_error);

/* Derives the public key of a 32-byte seed. Errors: NULL_ARGUMENT, CRYPTO_INIT. */
int32_t coords_identity_public_from_seed(const uint8_t seed[32], uint8_t public_out[32], CoordsError *out_error);

/* Signs msg (msg_len bytes, at most COORDS_MAX_MESSAGE_BYTES; msg may be NULL when msg_len is 0)
 * with the identity of `seed`; writes the 64-byte Ed25519 signature.
 * Errors: NULL_ARGUMENT, TOO_LARGE. */
int32_t coords_sign(const uint8_t seed[32], const uint8_t *msg, size_t msg_len, uint8_t sig_out[64], CoordsError *out_error);

/* Verifies an Ed25519 signature. Returns COORDS_OK when valid, COORDS_ERR_AUTHENTICATION_FAILED
 * when not (also for a malformed key or signature). Errors: NULL_ARGUMENT, TOO_LARGE. */
int32_t coords_verify(const uint8_t public_key[32], const uint8_t *msg, size_t msg_len, const uint8_t sig[64],
                      CoordsError *out_error);

/* Seals `location` into a Coords v3 blob for `recipient_count` Ed25519 public keys stored back
 * to back in `recipients` (32 bytes each, the sender's own key first).
 * Errors: NULL_ARGUMENT, INVALID_LOCATION, NO_RECIPIENTS, TOO_MANY_RECIPIENTS,
 * INVALID_RECIPIENT_KEY, UNSUPPORTED_HARDWARE. */
int32_t coords_blob_seal(const CoordsLocation *location, const uint8_t *recipients, size_t recipient_count,
                         CoordsBuffer *blob_out, CoordsError *out_error);

/* Opens a blob (at most COORDS_MAX_BLOB_BYTES) with the identity of `seed`.
 * Errors: NULL_ARGUMENT, TOO_LARGE, BLOB_TOO_SHORT, UNSUPPORTED_BLOB_VERSION, BLOB_TRUNCATED,
 * NOT_A_RECIPIENT, INVALID_EPHEMERAL_KEY, BLOB_TAMPERED, INVALID_LOCATION_PLAINTEXT. */
int32_t coords_blob_open(const uint8_t seed[32], const uint8_t *blob, size_t blob_len, CoordsLocation *location_out,
                         CoordsError *out_error);

/* Prepares an upload without any stored state: seals `location` for the identity itself and
 * the friends in `recipients_json` (a JSON array of base64url ids), signs it with the current
 * time, and returns the request as JSON {"url","method","headers":{…},"body_base64"}.
 * Errors: NULL_ARGUMENT, INVALID_UTF8, INVALID_JSON, INVALID_ARGUMENT, INVALID_PUBLIC_KEY_ID,
 * INVALID_LOCATION, INVALID_SERVER_URL, TOO_MANY_RECIPIENTS. */
int32_t coords_prepare_upload(const uint8_t seed[32], const CoordsLocation *location, const char *recipients_json,
                              const char *server, CoordsBuffer *request_json_out, CoordsError *out_error);

/* Prepares fetches for `friends_json` = [{"pubkey","server"}, …]: one request per exact server
 * string and at most 50 ids each. Output: a JSON array of requests, each
 * {"url","method","headers","body_base64","server","ids"}.
 * Errors: NULL_ARGUMENT, INVALID_UTF8, INVALID_JSON, INVALID_ARGUMENT, INVALID_SERVER_URL. */
int32_t coords_prepare_fetch(const char *friends_json, CoordsBuffer *requests_json_out, CoordsError *out_error);

/* Processes a fetch response body with the identity of `seed`: a JSON array with one result per
 * entry, {"pubkey","location"|null,"updated"|null,"upload_timestamp"|null,"authenticity","error"|null}.
 * One bad entry never fails the others. Errors: NULL_ARGUMENT, TOO_LARGE, INVALID_JSON, UNEXPECTED_JSON. */
int32_t coords_process_fetch_response(const uint8_t seed[32], const uint8_t *body, size_t body_len,
                                      CoordsBuffer *results_json_out, CoordsError *out_error);

/* The id of an Ed25519 public key as everything else names it (friend records, fetch entries,
 * links): the 32 bytes in base64url without padding, 43 characters, written to text_out (the
 * caller frees it with coords_buffer_free). Errors: NULL_ARGUMENT, INVALID_PUBLIC_KEY (not a valid
 * Ed25519 point). */
int32_t coords_public_key_b64url(const uint8_t public_key[32], CoordsBuffer *text_out, CoordsError *out_error);

/* A QR code (ISO/IEC 18004: byte mode, error correction M, versions 1..10, the mask chosen by
 * the standard's penalty rules) for UTF-8 `text` of at most 213 bytes, such as a friend link.
 * Writes the side in modules (21..57) to *size_out and size*size bytes to modules_out, row by row
 * from the top left, 1 for a dark module and 0 for a light one (free it with coords_buffer_free).
 * Draw it with a quiet zone of 4 light modules around it. Errors: NULL_ARGUMENT, INVALID_UTF8,
 * QR_UNENCODABLE. */
int32_t coords_qr_encode(const char *text, CoordsBuffer *modules_out, uint32_t *size_out, CoordsError *out_error);

/* The QR code of coords_qr_encode as an SVG document (UTF-8 text, its quiet zone included), each
 * module module_pixels (1..64) pixels wide. Errors: NULL_ARGUMENT, INVALID_UTF8, INVALID_ARGUMENT,
 * QR_UNENCODABLE. */
int32_t coords_qr_svg(const char *text, uint32_t module_pixels, CoordsBuffer *svg_out, CoordsError *out_error);

/* The endpoint that wakes this device through a push gateway (PROTOCOL.md section 8.8), to
 * register with coords_messages_prepare_push_register: gateway_url (https://, at most 273 bytes) +
 * "/up/" + the device token sealed to the gateway's X25519 public key gateway_key_b64u (32 bytes,
 * base64url). platform "apns" (device: the APNs token in lowercase hexadecimal; environment
 * "production", "development" or NULL for production) or "fcm" (device: the registration token;
 * environment NULL). A fresh sealed box each call; the relay never sees the device token. Writes
 * the endpoint (UTF-8 text) to endpoint_out; the caller frees it with coords_buffer_free.
 * Errors: NULL_ARGUMENT, INVALID_UTF8, INVALID_ARGUMENT (an unknown platform or environment, a key
 * that is not 32 bytes of base64url), INVALID_PUSH_TOKEN (a device token or gateway URL section
 * 8.8 does not allow), WEAK_PUBLIC_KEY (a key libsodium refuses). */
int32_t coords_push_gateway_endpoint(const char *gateway_url, const char *gateway_key_b64u, const char *platform,
                                     const char *device, const char *environment, CoordsBuffer *endpoint_out,
                                     CoordsError *out_error);

/* Builds a coord:// friend link (UTF-8 text). Errors: NULL_ARGUMENT, INVALID_UTF8, INVALID_PUBLIC_KEY. */
int32_t coords_friend_link_generate(const uint8_t public_key[32], const char *server, const char *name,
                                    CoordsBuffer *link_out, CoordsError *out_error);

/* Parses a friend link into JSON {"pubkey","server","name"}.
 * Errors: NULL_ARGUMENT, INVALID_UTF8, INVALID_FRIEND_LINK. */
int32_t coords_friend_link_parse(const char *link, CoordsBuffer *json_out, CoordsError *out_error);

/* The 30-digit safety number of two public keys ("12345 67890 …", symmetric).
 * Errors: NULL_ARGUMENT. */
int32_t coords_safety_number(const uint8_t public_a[32], const uint8_t public_b[32], CoordsBuffer *text_out,
                             CoordsError *out_error);

/* Whether the cached `fix` may be reused at now_ms for an upload of `reason` ("explicit",
 * "launch" or "background"): writes true to *out for a launch or background upload when the fix
 * is younger than 5 minutes and its accuracy is at most 100 m (the Coords design's rule), else
 * false. Errors: NULL_ARGUMENT, INVALID_LOCATION, INVALID_UTF8, INVALID_ARGUMENT. */
int32_t coords_may_reuse_location(const CoordsLocation *fix, uint64_t now_ms, const char *reason, bool *out,
                                  CoordsError *out_error);

/* The age rule of coords_may_reuse_location alone (deprecated: it cannot check the accuracy; a
 * host that has the fix calls coords_may_reuse_location): whether a fix taken at
 * fix_timestamp_ms may be reused at now_ms for an upload of `reason`. Writes true or false to
 * *out. Errors: NULL_ARGUMENT, INVALID_UTF8, INVALID_ARGUMENT. */
int32_t coords_may_reuse_fix(uint64_t fix_timestamp_ms, uint64_t now_ms, const char *reason, bool *out,
                             CoordsError *out_error);

/* ---------------------------------------------------------------------------------------
 * Apps (one data directory each)
 * ------------------------------------------------------------------------------------- */

/* Opens (creating if needed) the app in directory `data_dir` with the file keychain.
 * options_json (may be NULL only if it would be "{}", which needs a passphrase or key anyway):
 *   {"passphrase": "…"} or {"key_base64": "<32 bytes, standard base64>"} — how the keychain is
 *   sealed; optional "keychain_cost" and "backup_cost": "minimum" | "interactive" | "moderate"
 *   or {"ops_limit": n, "mem_limit": n}; "update_capacity": n; "durability": "durable" |
 *   "no_meta_sync" | "no_sync".
 * The store is sealed at rest under a key the keychain keeps ("store.dek", made on first open);
 * a 1.0.0 store written in the clear is copied into a new sealed file on the first open (the
 * plaintext file is overwritten and removed), which can take a while for a large store.
 * Errors: NULL_ARGUMENT, INVALID_UTF8, INVALID_JSON, INVALID_ARGUMENT, WRONG_PASSPHRASE,
 * STORE_ALREADY_OPEN, STORE_OPEN_FAILED, STORE_CORRUPTED, STORE_KEY_MISSING (the keychain lost
 * the store key: nothing is changed), WRONG_STORE_KEY, KEYCHAIN_*. */
int32_t coords_app_open(const char *data_dir, const char *options_json, CoordsApp **app_out, CoordsError *out_error);

/* Like coords_app_open, but the identity lives in the host's keychain (`keychain` is copied;
 * its context must stay valid until the app is closed). Passphrase/key options are ignored.
 * The keychain must keep several named entries: the identity seed, the store key "store.dek"
 * (losing it loses the store: STORE_KEY_MISSING), and the short-lived keys of disappearing
 * messages ("store.shred.*"); see docs/ABI.md. */
int32_t coords_app_open_with_keychain(const char *data_dir, const char *options_json,
                                      const CoordsKeychainCallbacks *keychain, CoordsApp **app_out,
                                      CoordsError *out_error);

/* Replaces the store's key: a new random key, every stored value sealed again under it, the
 * old key destroyed in the keychain. Crash-safe (after a kill at any point the app opens with
 * the old key or the new one). Other calls on the app wait while it runs. Thread-safe.
 * Errors: INVALID_HANDLE, SEALED_VALUE_REJECTED (a damaged value: nothing changes),
 * STORE_*, KEYCHAIN_*. */
int32_t coords_app_rekey(CoordsApp *app, CoordsError *out_error);

/* Closes an app: stops its update callback, ends its updates, closes its store. NULL is a
 * no-op that succeeds; a second close returns COORDS_ERR_INVALID_HANDLE. */
int32_t coords_app_close(CoordsApp *app, CoordsError *out_error);

/* Waits up to timeout_ms (negative: without limit) for the next update of any manager and
 * returns it as JSON {"manager": "wallet"|"friends"|"location"|"outbox"|"messages", "type": "…", …}.
 * Returns COORDS_OK with a message, COORDS_ERR_TIMED_OUT when none came, or COORDS_ERR_CLOSED
 * once the app is closed. Competes with the update callback: each update is delivered once. */
int32_t coords_app_next_update(CoordsApp *app, int64_t timeout_ms, CoordsBuffer *message_json_out, CoordsError *out_error);

/* Registers `callback` to receive every update (JSON, as coords_app_next_update returns them)
 * on a library thread; NULL unregisters (waiting until the thread stopped). Registering again
 * replaces the previous callback. Errors: INVALID_HANDLE. */
int32_t coords_app_set_update_callback(CoordsApp *app, CoordsUpdateCallback callback, void *context,
                                       CoordsError *out_error);

/* ---- Wallet (identity, profile, backups) ------------------------------------------------ */

/* Creates an identity (kept in the keychain) with a display name and relay URL; returns the
 * id (base64url public key) as text. Errors: IDENTITY_EXISTS, INVALID_SERVER_URL, keychain and
 * store errors. */
int32_t coords_wallet_create_identity(CoordsApp *app, const char *name, const char *server, CoordsBuffer *id_out,
                                      CoordsError *out_error);

/* Imports an identity from its 32-byte seed; returns the id. Errors: IDENTITY_EXISTS (a
 * different identity is loaded), INVALID_SERVER_URL, keychain and store errors. */
int32_t coords_wallet_import_seed(CoordsApp *app, const uint8_t seed[32], const char *name, const char *server,
                                  CoordsBuffer *id_out, CoordsError *out_error);

/* Changes the display name and/or relay (NULL leaves a field unchanged). */
int32_t coords_wallet_set_profile(CoordsApp *app, const char *name, const char *server, CoordsError *out_error);

/* Strict mode: refuse fetched entries the relay did not signature-stamp (PROTOCOL.md §6). */
int32_t coords_wallet_set_strict_mode(CoordsApp *app, bool strict, CoordsError *out_error);

/* The wallet as JSON {"has_identity","id","name","server","link","strict_mode"} (id and link
 * are null without an identity or server). */
int32_t coords_wallet_info(CoordsApp *app, CoordsBuffer *json_out, CoordsError *out_error);

/* The identity's 32-byte public key. Errors: NO_IDENTITY. */
int32_t coords_wallet_public_key(CoordsApp *app, uint8_t public_out[32], CoordsError *out_error);

/* The user's own coord:// link (text). Errors: NO_IDENTITY, NO_SERVER. */
int32_t coords_wallet_friend_link(CoordsApp *app, CoordsBuffer *link_out, CoordsError *out_error);

/* The safety number shared with a friend (text). Errors: NO_IDENTITY. */
int32_t coords_wallet_safety_number(CoordsApp *app, const uint8_t friend_public[32], CoordsBuffer *text_out,
                                    CoordsError *out_error);

/* Signs msg with the identity (64 bytes written). Errors: NO_IDENTITY, TOO_LARGE. */
int32_t coords_wallet_sign(CoordsApp *app, const uint8_t *msg, size_t msg_len, uint8_t sig_out[64],
                           CoordsError *out_error);

/* Exports an encrypted backup (bytes; docs/BACKUP.md). Errors: NO_IDENTITY. */
int32_t coords_wallet_export_backup(CoordsApp *app, const char *passphrase, CoordsBuffer *backup_out,
                                    CoordsError *out_error);

/* Rotates the identity (PROTOCOL.md §9.1): a new key (and relay: `server`, NULL = the current
 * one) bound to the old by a statement both sign; with `revoke` the old key is declared
 * compromised (§9.2; run it from a restored backup after losing a device). Writes
 * {"id": new id, "statement": {…}, "statements": [OutboxEntry] (one envelope per friend, from the
 * old identity, queued in the outbox: send them or let it retry; delivering the last one wipes
 * the old seed), "upload": Upload|null (the last fix from the new identity), "delete_previous":
 * Request (removes the old blob, signed by the old key)}.
 * Errors: NO_IDENTITY, NO_SERVER, INVALID_SERVER_URL, INVALID_ROTATION. */
int32_t coords_wallet_rotate(CoordsApp *app, const char *server, bool revoke, CoordsBuffer *rotation_json_out,
                             CoordsError *out_error);

/* The identities this one rotated from (JSON array of ids, oldest first). */
int32_t coords_wallet_previous_identities(CoordsApp *app, CoordsBuffer *ids_json_out, CoordsError *out_error);

/* Re-queues the pending rotation statement for every friend still waiting for it (after the
 * envelopes expired, for example): [OutboxEntry]; [] when nothing is pending. */
int32_t coords_messages_queue_rotation_statements(CoordsApp *app, CoordsBuffer *entries_json_out, CoordsError *out_error);

/* Restores a backup; returns the id. A backup of the identity this one rotated to replaces it
 * (the later one wins). Errors: WRONG_BACKUP_PASSPHRASE, INVALID_BACKUP,
 * UNSUPPORTED_BACKUP_VERSION, IDENTITY_EXISTS, TOO_LARGE. */
int32_t coords_wallet_import_backup(CoordsApp *app, const uint8_t *backup, size_t backup_len, const char *passphrase,
                                    CoordsBuffer *id_out, CoordsError *out_error);

/* ---- Friends ----------------------------------------------------------------------------- */

/* Adds (or refreshes) the friend of a coord:// link; returns the friend as JSON
 * {"id","name","server","share_with","fetch_from","added_at","trust","marker_color","sharing","share_until","conflict_keys",
 *  "protection","reciprocal"}
 * (trust: "unverified", "verified", "blocked" or "conflict"; sharing: "on", "until", "expired" or
 * "paused"; share_until: ms or null; conflict_keys: the candidate keys while in conflict;
 * reciprocal: whether something they sealed for us has opened, i.e. they added us back).
 * Adding shares at once: when a fix was sealed before, it is sealed again for the new friend too
 * and queued in the outbox (kind "reseal"); the host's delivery loop sends it.
 * Errors: INVALID_FRIEND_LINK, INVALID_PUBLIC_KEY_ID, CANNOT_ADD_SELF. */
int32_t coords_friends_add_link(CoordsApp *app, const char *link, CoordsBuffer *friend_json_out, CoordsError *out_error);

/* Adds a friend from JSON {"id","server","name","share_with"?,"fetch_from"?}; returns the friend
 * (as coords_friends_add_link, sharing at once when share_with). */
int32_t coords_friends_add(CoordsApp *app, const char *friend_json, CoordsBuffer *friend_json_out, CoordsError *out_error);

/* Updates a friend from JSON {"name"?,"share_with"?,"fetch_from"?,"trust"?}; returns the friend.
 * trust is "unverified", "verified" or "blocked". Errors: FRIEND_NOT_FOUND. */
int32_t coords_friends_update(CoordsApp *app, const char *id, const char *changes_json, CoordsBuffer *friend_json_out,
                              CoordsError *out_error);

/* Removes a friend and their cached location (a paused or limited share is remembered, so adding
 * them again does not widen it; call coords_location_prepare_reseal next). Errors: FRIEND_NOT_FOUND. */
int32_t coords_friends_remove(CoordsApp *app, const char *id, CoordsError *out_error);

/* Shares with a friend until `until_ms` (ms since the epoch; 0 = no end), resuming a paused share
 * (PROTOCOL.md §9.3); returns the friend. A time not after now ends the share at once.
 * Errors: FRIEND_NOT_FOUND, INVALID_PUBLIC_KEY_ID. */
int32_t coords_friends_share(CoordsApp *app, const char *id, uint64_t until_ms, CoordsBuffer *friend_json_out,
                             CoordsError *out_error);

/* Ends a key conflict (trust "conflict": two different rotations of the friend's old key arrived,
 * PROTOCOL.md §9.2) after comparing safety numbers again: `keep` (one of the friend's
 * "conflict_keys") becomes their key, verified; the other candidates are refused from then on.
 * Errors: NOT_IN_CONFLICT, FRIEND_NOT_FOUND, INVALID_PUBLIC_KEY_ID. */
int32_t coords_friends_resolve_conflict(CoordsApp *app, const char *id, const char *keep, CoordsBuffer *friend_json_out,
                                        CoordsError *out_error);

/* Pauses sharing with a friend (fetching goes on); returns the friend. Call
 * coords_location_prepare_reseal next. Errors: FRIEND_NOT_FOUND, INVALID_PUBLIC_KEY_ID. */
int32_t coords_friends_pause(CoordsApp *app, const char *id, CoordsBuffer *friend_json_out, CoordsError *out_error);

/* Every friend, as a JSON array of friend objects. */
int32_t coords_friends_list(CoordsApp *app, CoordsBuffer *json_out, CoordsError *out_error);

/* ---- Location ---------------------------------------------------------------------------- */

/* Prepares an upload of `fix` for the user and every friend shared with; returns JSON
 * {"request":{…},"fix_timestamp","upload_timestamp","recipient_count","blob_size"}. Send the
 * request, then call coords_location_mark_upload_succeeded after a 2xx.
 * Errors: INVALID_LOCATION, STALE_LOCATION, FIX_IN_FUTURE, NO_IDENTITY, NO_SERVER. */
int32_t coords_location_prepare_upload(CoordsApp *app, const CoordsLocation *fix, CoordsBuffer *upload_json_out,
                                       CoordsError *out_error);

/* After a share ended (its time passed, pause, remove): the last sealed fix sealed again for the
 * friends shared with now, with a fresh upload timestamp, as the JSON of
 * coords_location_prepare_upload — or `null` when nobody who could open the last blob lost their
 * share. Send it at once and mark it like any upload; if it cannot be sent, retry later with
 * `force` true (the latest fix, sealed for the friends shared with then). Errors: NO_IDENTITY, NO_SERVER. */
int32_t coords_location_prepare_reseal(CoordsApp *app, bool force, CoordsBuffer *upload_json_out, CoordsError *out_error);

/* When the next share ends (ms since the epoch; 0 = none ahead): set a timer, then call
 * coords_location_prepare_reseal. */
int32_t coords_location_next_share_expiry(CoordsApp *app, uint64_t *until_ms_out, CoordsError *out_error);

/* A signed DELETE request (JSON, as coords_prepare_upload) that removes the user's blob from
 * their relay (a CoordsCore relay extension). Errors: NO_IDENTITY, NO_SERVER. */
int32_t coords_location_prepare_delete(CoordsApp *app, CoordsBuffer *request_json_out, CoordsError *out_error);

/* Records that the relay acknowledged the upload of the fix from fix_timestamp_ms.
 * Errors: UNKNOWN_UPLOAD. */
int32_t coords_location_mark_upload_succeeded(CoordsApp *app, uint64_t fix_timestamp_ms, CoordsError *out_error);

/* Reports a failed upload (nothing is recorded; the fix may be uploaded again). */
int32_t coords_location_mark_upload_failed(CoordsApp *app, uint64_t fix_timestamp_ms, const char *reason,
                                           CoordsError *out_error);

/* The fetch requests for every friend fetched from (JSON array, as coords_prepare_fetch). */
int32_t coords_location_prepare_fetches(CoordsApp *app, CoordsBuffer *requests_json_out, CoordsError *out_error);

/* Processes one fetch response body; returns JSON {"updated":[friend locations],
 * "unchanged":[ids],"rejected":[{"id","error":{"code","message"}}],"ignored":[ids]}.
 * Errors: NO_IDENTITY, INVALID_JSON, UNEXPECTED_JSON, TOO_LARGE. */
int32_t coords_location_process_fetch_response(CoordsApp *app, const uint8_t *body, size_t body_len,
                                               CoordsBuffer *outcome_json_out, CoordsError *out_error);

/* Every friend fetched from, with their cached location: a JSON array of
 * {"id","name","location"|null,"updated","fetched_at","authenticity","marker_color","place"|null},
 * where "place" is the nearest named place (the coords_geocode_nearest object, its "phrase" using
 * the location's accuracy) from the app's place data (option "places"). */
int32_t coords_location_friend_locations(CoordsApp *app, CoordsBuffer *json_out, CoordsError *out_error);

/* ---- Outbox (requests waiting for the network) ----------------------------------------- */

/* The core drives delivery; the host only carries bytes:
 *   loop: coords_outbox_due -> send each request -> coords_outbox_report(status, body)
 *         -> sleep until coords_outbox_next_wake (or until something is queued).
 * The core decides what each answer means (delivered, retry with backoff, sign again, drop),
 * signs stale uploads and deletes again, and records each kind's follow-up (an upload
 * acknowledged, a message sent, a rotation statement delivered) in the same transaction. */

/* Queues a request (request_json as the prepare functions return it); writes its id. `kind`
 * is one of "upload", "reseal", "delete", "message", "receipt", "rotation" or "request" (any
 * other request, delivered as is); `reference` (may be NULL) is the fix timestamp of an
 * upload/reseal, the message id of a message/receipt, the friend id of a rotation. Entries
 * survive restarts until delivered or dropped.
 * Errors: INVALID_ARGUMENT (unknown kind), INVALID_JSON, UNEXPECTED_JSON, INVALID_BASE64. */
int32_t coords_outbox_enqueue(CoordsApp *app, const char *kind, const char *request_json, const char *reference,
                              uint64_t *id_out, CoordsError *out_error);

/* Queued entries as a JSON array of {"id","kind","request","attempts","next_attempt_at",
 * "created_at","last_error","reference","location"}, oldest first; only those due now when
 * `due_only` is true. */
int32_t coords_outbox_pending(CoordsApp *app, bool due_only, CoordsBuffer *json_out, CoordsError *out_error);

/* Seals and signs an upload of `fix` (like coords_location_prepare_upload) and queues it in the
 * outbox with its fix, so the core can sign it again when it grows stale; writes the upload's
 * JSON with "outbox_id" added. Deliver it with coords_outbox_due / coords_outbox_report.
 * Ownership: *upload_json_out is the caller's (coords_buffer_free).
 * Errors: NULL_ARGUMENT, INVALID_HANDLE, INVALID_LOCATION, STALE_LOCATION, FIX_IN_FUTURE,
 * NO_IDENTITY, NO_SERVER, STORE_*. */
int32_t coords_outbox_queue_upload(CoordsApp *app, const CoordsLocation *fix, CoordsBuffer *upload_json_out,
                                   CoordsError *out_error);

/* The requests to send now, oldest first, as a JSON array like coords_outbox_pending: the
 * request in each entry was signed again by the core when its signed time was older than 240 s
 * or the relay refused it (an upload a newer one replaced leaves the outbox instead).
 * ignore_backoff: also the entries still waiting after a failure (a person asked now).
 * Send each entry's "request" and hand the answer to coords_outbox_report.
 * Ownership: *json_out is the caller's; free it with coords_buffer_free.
 * Errors: NULL_ARGUMENT, INVALID_HANDLE, STORE_*. */
int32_t coords_outbox_due(CoordsApp *app, bool ignore_backoff, CoordsBuffer *json_out, CoordsError *out_error);

/* Hands the relay's answer to entry `id` to the core, which decides and records it; writes
 * {"id","kind","decision","at"?,"reason"?} ("reason" for every decision but delivered and unknown) where decision is "delivered" (2xx, or 409 to an
 * envelope: the relay already has it), "retry" (status 0 = no answer, 408, 425, 429, 5xx:
 * next attempt at "at", ms since the epoch, after a 1 s … 60 s backoff), "sign_again" (a 401 about
 * the signed time: signed again at the next coords_outbox_due), "dropped" (any other status;
 * "reason" says why) or "unknown" (no such entry: reported twice). `body` (may be NULL when
 * body_len is 0; borrowed for the call, ≤ COORDS_MAX_BODY_BYTES) is the answer's body, or for
 * status 0 a UTF-8 description of the failure.
 * Errors: NULL_ARGUMENT, INVALID_ARGUMENT (status not 0 or 100…999), INVALID_HANDLE, STORE_*. */
int32_t coords_outbox_report(CoordsApp *app, uint64_t id, int32_t status, const uint8_t *body, size_t body_len,
                             CoordsBuffer *json_out, CoordsError *out_error);

/* When to call coords_outbox_due next (ms since the epoch; at or before now when something is
 * due already; 0 when the outbox is empty). Errors: NULL_ARGUMENT, INVALID_HANDLE, STORE_*. */
int32_t coords_outbox_next_wake(CoordsApp *app, uint64_t *at_ms_out, CoordsError *out_error);

/* Removes a delivered entry (an unknown id is not an error). Prefer coords_outbox_report, which
 * also queues the next rotation statements. After a delivered "rotation" entry,
 * call coords_messages_queue_rotation_statements again: a friend owed several statements (the
 * identity rotated again before they had the first) gets the next one only then. */
int32_t coords_outbox_mark_delivered(CoordsApp *app, uint64_t id, CoordsError *out_error);

/* Records a failed attempt: the next one is due after 1 s, 2 s, 4 s … 60 s (+ up to 20 % jitter). */
int32_t coords_outbox_mark_failed(CoordsApp *app, uint64_t id, const char *reason, CoordsError *out_error);

/* Drops an entry without delivering it. */
int32_t coords_outbox_remove(CoordsApp *app, uint64_t id, CoordsError *out_error);

/* ---- The one wake: a host is a loop of a page (docs/ABI.md, examples/host-loop.c) --------- */

/* A host only carries bytes; the core decides everything else (retries, reseals when a share
 * ends, prekey upkeep, fetch interval, sweeps, acks):
 *   open -> loop { coords_app_due -> perform each request -> coords_app_report(answer)
 *                  -> sleep until coords_app_next_wake, a push or a live notice } -> close.
 * The functions run on the calling thread; the library starts no thread for them. */

/* When to call coords_app_due next (ms since the epoch; at or before now when something is due
 * already; 0 when nothing will be due without a call from the host: no identity yet, or nothing
 * queued and no fetch interval). Errors: NULL_ARGUMENT, INVALID_HANDLE, STORE_*. */
int32_t coords_app_next_wake(CoordsApp *app, uint64_t *at_ms_out, CoordsError *out_error);

/* Everything to perform now, each request signed now, as a JSON array of
 * {"id","purpose","request","outbox_id"?,"outbox_kind"?}: "id" is the ticket for
 * coords_app_report; "purpose" is one of "outbox", "fetch", "mailbox", "ack", "prekeys",
 * "bundle" (for logs; the host treats them all alike); "request" is a prepared request
 * ({"url","method","headers","body_base64","max_response_bytes"}, as every prepare function returns). Local work that is due
 * is done first (disappearing messages deleted, sessions swept, the reseal a share's end owes
 * queued). A request handed out is not handed out again until it is reported, or for 2 minutes.
 * `now_ms` is the time to judge by (ms since the epoch), 0 for the app's clock.
 * Ownership: *json_out is the caller's (coords_buffer_free).
 * Errors: NULL_ARGUMENT, INVALID_HANDLE, STORE_*. */
int32_t coords_app_due(CoordsApp *app, uint64_t now_ms, CoordsBuffer *json_out, CoordsError *out_error);

/* Hands the answer to request `id` to the core, which does everything it implies; writes
 * {"result", …}: "outbox" with "outbox" (the coords_outbox_report record), "locations" with
 * "locations" (the coords_location_process_fetch_response record), "messages" with "messages"
 * (the coords_messages_process_fetch_response record; the acks, receipts and resets it owes come
 * out of the next coords_app_due), "prekeys" with "stock" (the relay's one-time prekey stock, or
 * null), "bundle" with "friend_id" and "bundle" (the coords_prekeys_process_bundle record),
 * "acknowledged", "failed" with "retry_at" (ms since the epoch) and "reason", or "unknown" (no
 * request has this ticket: reported twice, or handed out before the app was reopened).
 * `status` is the HTTP status, or 0 when no answer came; `body` (may be NULL when body_len is 0;
 * borrowed for the call, ≤ COORDS_MAX_BODY_BYTES) is the answer's body, or for status 0 a UTF-8
 * description of the failure.
 * Ownership: *json_out is the caller's (coords_buffer_free).
 * Errors: NULL_ARGUMENT, INVALID_ARGUMENT (status not 0 or 100…999), TOO_LARGE, INVALID_HANDLE, STORE_*. */
int32_t coords_app_report(CoordsApp *app, uint64_t id, int32_t status, const uint8_t *body, size_t body_len,
                          CoordsBuffer *json_out, CoordsError *out_error);

/* One request of the loop for a C host that parses no JSON (coords_app_due_next). The strings
 * are NUL-terminated; "headers" is "Name: value\n" lines. Free with coords_host_request_free. */
typedef struct CoordsHostRequest {
    uint64_t id;                 /* the ticket for coords_app_report; 0: nothing is due */
    CoordsBuffer purpose;        /* "outbox", "fetch", "mailbox", "ack", "prekeys" or "bundle" (for logs) */
    CoordsBuffer method;
    CoordsBuffer url;
    CoordsBuffer headers;
    CoordsBuffer body;
    uint64_t max_response_bytes; /* read no more of the answer than this */
} CoordsHostRequest;

/* Takes the next request to perform now: the requests of coords_app_due, one at a time (a new
 * coords_app_due runs when the last one was taken). Writes *request_out (id 0 when nothing is
 * due now). `now_ms` as for coords_app_due. Report each with coords_app_report.
 * Ownership: the buffers in *request_out are the caller's (coords_host_request_free).
 * Errors: NULL_ARGUMENT, INVALID_HANDLE, STORE_*. */
int32_t coords_app_due_next(CoordsApp *app, uint64_t now_ms, CoordsHostRequest *request_out, CoordsError *out_error);

/* Frees the buffers of a request from coords_app_due_next and zeroes it (NULL is fine). */
void coords_host_request_free(CoordsHostRequest *request);

/* Makes the fetch of friends' positions and of the mailbox due now: call it when a push
 * arrives, a live connection says something changed, or the app comes to the foreground.
 * Errors: INVALID_HANDLE. */
int32_t coords_app_fetch_now(CoordsApp *app, CoordsError *out_error);

/* How often positions and the mailbox are fetched when nothing else asks (ms; at least 1000;
 * default 60000), or 0 to fetch only after coords_app_fetch_now. Errors: INVALID_HANDLE. */
int32_t coords_app_set_fetch_interval(CoordsApp *app, uint64_t interval_ms, CoordsError *out_error);

/* ---- Sealed messages (PROTOCOL.md §7, docs/MESSAGING.md) ------------------------------ */

/* Seals `payload` (the §7.2 plaintext JSON, at most 131,012 bytes) from `seed`'s identity to
 * `recipient_public`, created at `created_at` (Unix s) and expiring `ttl_seconds` (1…2,592,000)
 * later, with a fresh ephemeral key, nonce and UUID; writes the §7.1 envelope JSON.
 * Errors: INVALID_PUBLIC_KEY, TOO_LARGE, INVALID_ARGUMENT, NULL_ARGUMENT. */
int32_t coords_envelope_seal(const uint8_t seed[32], const uint8_t recipient_public[32], const uint8_t *payload,
                             size_t payload_len, uint64_t created_at, uint64_t ttl_seconds, CoordsBuffer *envelope_json_out,
                             CoordsError *out_error);

/* Verifies an envelope from `sender_public` to `seed`'s identity and writes its plaintext.
 * `now` (Unix s) decides expiry. Errors: INVALID_ENVELOPE, ENVELOPE_SIGNATURE, ENVELOPE_NOT_FOR_ME,
 * ENVELOPE_EXPIRED, ENVELOPE_TAMPERED, INVALID_JSON, NULL_ARGUMENT. */
int32_t coords_envelope_open(const uint8_t seed[32], const uint8_t sender_public[32], const char *envelope_json, uint64_t now,
                             CoordsBuffer *payload_out, CoordsError *out_error);

/* Seals `text` (UTF-8, ≤ 64 KiB) for a friend, stores it (status "queued") and queues it in the
 * outbox (kind "message", reference = message id). Writes {"message": Message, "request": Request,
 * "outbox_id": n}: send the request now (POST to the friend's relay) and call
 * coords_messages_mark_sent on 202 or 409, or let the outbox retry it.
 * Errors: FRIEND_NOT_FOUND, FRIEND_BLOCKED, MESSAGE_TOO_LONG, NO_IDENTITY, INVALID_PUBLIC_KEY_ID. */
int32_t coords_messages_send(CoordsApp *app, const char *friend_id, const char *text, CoordsBuffer *sent_json_out,
                             CoordsError *out_error);

/* Marks a message accepted by the relay and removes its outbox entry (unknown ids are fine). */
int32_t coords_messages_mark_sent(CoordsApp *app, const char *message_id, CoordsError *out_error);

/* A recipient-signed GET of our own mailbox (Request JSON). Sign a fresh one per attempt: the
 * relay accepts each signature once. Errors: NO_IDENTITY, NO_SERVER. */
int32_t coords_messages_prepare_fetch(CoordsApp *app, CoordsBuffer *request_json_out, CoordsError *out_error);

/* A recipient-signed PUT of our relay's /v1/relay/push (PROTOCOL.md §8.7), Request JSON with a
 * JSON body: registers `endpoint` (UTF-8; an https:// URL from the phone's UnifiedPush distributor;
 * http:// only for a loopback host, for tests) so the relay wakes the app when an envelope
 * arrives. `ttl_seconds` 0 = the relay's default (7 days). The library keeps the endpoint and
 * renews the registration itself: coords_outbox_next_wake includes the renewal time (a day later,
 * or half of ttl_seconds when shorter) and coords_outbox_due then hands out a fresh registration
 * like any queued request; a 400 or 404 to it ends the renewals. The relay answers 200,
 * 400 endpoint_refused, or 404 (no push: keep polling).
 * Errors: INVALID_PUSH_ENDPOINT, NO_IDENTITY, NO_SERVER, NULL_ARGUMENT. */
int32_t coords_messages_prepare_push_register(CoordsApp *app, const char *endpoint, uint64_t ttl_seconds,
                                              CoordsBuffer *request_json_out, CoordsError *out_error);

/* A recipient-signed DELETE of our relay's /v1/relay/push: no more wakes (Request JSON); the
 * library stops renewing the registration.
 * Errors: NO_IDENTITY, NO_SERVER. */
int32_t coords_messages_prepare_push_unregister(CoordsApp *app, CoordsBuffer *request_json_out, CoordsError *out_error);

/* ---- Forward secrecy (PROTOCOL.md §10): prekeys, bundles; messages use sessions by themselves ----
 *
 * A host keeps its prekeys published and its friends' bundles fresh:
 *   coords_prekeys_prepare_upload  -> send -> coords_prekeys_process_upload   (at least daily)
 *   coords_prekeys_bundles_due     -> for each id: coords_prekeys_prepare_bundle -> send
 *                                     -> coords_prekeys_process_bundle
 *   coords_sessions_sweep          (daily: erases replaced prekeys, idle sessions, old skipped keys)
 * Every function is safe to call from any thread; outputs are freed with coords_buffer_free. */

/* The owner-signed PUT of our relay's /v1/relay/prekeys when something is due (a new signed
 * prekey every 7 days, a batch of 100 one-time prekeys when the relay's stock is low or unknown),
 * Request JSON, or the JSON `null` when nothing is due. `force` != 0 republishes the current
 * signed prekey anyway. The private halves are stored before the request is returned.
 * Errors: NO_IDENTITY, NO_SERVER. */
int32_t coords_prekeys_prepare_upload(CoordsApp *app, int32_t force, CoordsBuffer *request_json_out, CoordsError *out_error);

/* Records the relay's answer (status 100…999, body borrowed for the call) to the upload.
 * *stock_out = the one-time prekeys the relay now holds, or -1 when it refused the upload.
 * Errors: INVALID_ARGUMENT (status), TOO_LARGE, NULL_ARGUMENT. */
int32_t coords_prekeys_process_upload(CoordsApp *app, int32_t status, const uint8_t *body, size_t body_len, int64_t *stock_out,
                                      CoordsError *out_error);

/* The owner-signed GET of our relay's /v1/relay/prekeys (Request JSON): the stock.
 * Errors: NO_IDENTITY, NO_SERVER. */
int32_t coords_prekeys_prepare_stock(CoordsApp *app, CoordsBuffer *request_json_out, CoordsError *out_error);

/* Records the stock answer; *stock_out = the stock, or -1 for any other answer.
 * Errors: INVALID_ARGUMENT (status), TOO_LARGE, NULL_ARGUMENT. */
int32_t coords_prekeys_process_stock(CoordsApp *app, int32_t status, const uint8_t *body, size_t body_len, int64_t *stock_out,
                                     CoordsError *out_error);

/* Friends whose bundle should be fetched now, JSON [id, …] (none accepted yet, or the signed
 * prekey expires within 2 days; each asked at most once an hour). Errors: store errors. */
int32_t coords_prekeys_bundles_due(CoordsApp *app, CoordsBuffer *ids_json_out, CoordsError *out_error);

/* The signed GET of a friend's bundle from their relay (Request JSON; signed, so the answer may
 * carry a one-time prekey). Errors: FRIEND_NOT_FOUND, INVALID_PUBLIC_KEY_ID, NO_IDENTITY, NULL_ARGUMENT. */
int32_t coords_prekeys_prepare_bundle(CoordsApp *app, const char *friend_id, CoordsBuffer *request_json_out, CoordsError *out_error);

/* Checks the relay's answer against the friend's key as we know it and stores it. Writes
 * {"result": "accepted", "one_time": b} (the friend now has forward secrecy: "protection" in
 * Friend), {"result": "not_offered"} (404: no prekeys) or {"result": "refused", "error": Error}
 * (a wrong, unsigned, stale or someone else's bundle, or an error status: nothing stored).
 * Errors: FRIEND_NOT_FOUND, INVALID_PUBLIC_KEY_ID, INVALID_ARGUMENT (status), TOO_LARGE, NULL_ARGUMENT. */
int32_t coords_prekeys_process_bundle(CoordsApp *app, const char *friend_id, int32_t status, const uint8_t *body, size_t body_len,
                                      CoordsBuffer *outcome_json_out, CoordsError *out_error);

/* Erases replaced signed prekeys past their keep time, idle sessions and old skipped message keys
 * and handshake base keys (PROTOCOL.md §10.1). *erased_out = prekeys and sessions erased. */
int32_t coords_sessions_sweep(CoordsApp *app, uint64_t *erased_out, CoordsError *out_error);

/* Processes the relay's {"packets": [...]}: verifies, opens, de-duplicates and stores every
 * envelope, then writes {"received": [Message], "delivered": [id], "duplicates": [id],
 * "rejected": [{"id", "error"}], "acks": [Request], "receipts": [OutboxEntry], "waiting": [id],
 * "group_queued": [OutboxEntry], "more": bool, …}. Send the acks (everything was stored first),
 * the receipts and group_queued (sender keys and reseals the group rules queued, PROTOCOL.md §11);
 * "waiting" group messages are held on the device (bounded) until their sender key arrives, and
 * acknowledged like the rest. "more": the answer was full, so fetch again after the acks.
 * Errors: INVALID_MAILBOX_RESPONSE, NO_IDENTITY, TOO_LARGE. */
int32_t coords_messages_process_fetch_response(CoordsApp *app, const uint8_t *body, size_t body_len,
                                               CoordsBuffer *outcome_json_out, CoordsError *out_error);

/* Conversations, most recent first: [{"friend_id", "name", "last_message": Message|null,
 * "message_count", "disappear_after_seconds": n|null}]. */
int32_t coords_messages_conversations(CoordsApp *app, CoordsBuffer *json_out, CoordsError *out_error);

/* A conversation's messages, oldest first ([Message]); the last `limit` when limit > 0. */
int32_t coords_messages_history(CoordsApp *app, const char *friend_id, uint32_t limit, CoordsBuffer *json_out,
                                CoordsError *out_error);

/* Disappearing messages: local copies of messages stored from now on are deleted `seconds`
 * after they were stored (0 turns it off). Errors: FRIEND_NOT_FOUND. */
int32_t coords_messages_set_disappearing(CoordsApp *app, const char *friend_id, uint64_t seconds, CoordsError *out_error);

/* Notification policy (docs/MESSAGING.md). Every received Message carries "notify": true when it
 * should notify the user (a text or file, its conversation not muted, outside quiet hours), false
 * when not; null for the user's own messages. */

/* Mutes the conversation with a friend (friend id) or a group (group id) until until_ms (Unix ms;
 * UINT64_MAX: until unmuted); 0 unmutes. Messages still arrive and are stored.
 * Errors: UNKNOWN_CONVERSATION, NULL_ARGUMENT. */
int32_t coords_messages_mute(CoordsApp *app, const char *conversation, uint64_t until_ms, CoordsError *out_error);

/* *until_ms_out = until when the conversation is muted (UINT64_MAX: until unmuted), 0 when it is
 * not muted now. Errors: UNKNOWN_CONVERSATION, NULL_ARGUMENT. */
int32_t coords_messages_muted_until(CoordsApp *app, const char *conversation, uint64_t *until_ms_out, CoordsError *out_error);

/* Quiet hours: no message notifies from start_minute to end_minute (minutes after local midnight,
 * 0-1439; a window over midnight has end < start) in local time utc_offset_minutes from UTC
 * (-840..840). Set it again when the offset changes. start_minute < 0 turns quiet hours off.
 * Errors: INVALID_QUIET_HOURS (a minute out of range, start = end, the offset out of range). */
int32_t coords_messages_set_quiet_hours(CoordsApp *app, int32_t start_minute, int32_t end_minute, int32_t utc_offset_minutes,
                                        CoordsError *out_error);

/* Delivery receipts for received texts: on (non-zero, the default) or off (0). Off, no receipt
 * tells a friend, or the relay, when this app fetched. */
int32_t coords_messages_set_receipts(CoordsApp *app, int32_t on, CoordsError *out_error);

/* The policy in force: {"quiet_hours": {"start_minute", "end_minute", "utc_offset_minutes",
 * "text": "22:00-07:00"}|null, "delivery_receipts": b}. */
int32_t coords_messages_notification_policy(CoordsApp *app, CoordsBuffer *json_out, CoordsError *out_error);

/* Parses a quiet-hours window "HH:MM-HH:MM" (24-hour clock, e.g. "22:00-07:00") into minutes after
 * midnight, for coords_messages_set_quiet_hours. Stateless. Errors: INVALID_QUIET_HOURS,
 * NULL_ARGUMENT, INVALID_UTF8. */
int32_t coords_quiet_hours_parse(const char *window, int32_t *start_minute_out, int32_t *end_minute_out, CoordsError *out_error);

/* When coords_messages_sweep_expired should run next (ms since the epoch; 0 = no message
 * disappears): the end of the minute in which the earliest disappearing message expires, when
 * its key is destroyed. Schedule one wake-up for it. History hides a message from its own
 * expiry on. Errors: NULL_ARGUMENT, INVALID_HANDLE, STORE_*. */
int32_t coords_messages_next_expiry(CoordsApp *app, uint64_t *at_ms_out, CoordsError *out_error);

/* Deletes local messages whose timer ran out, then destroys the keys of expired messages once
 * their minute has passed (no copy of the store taken later opens them); writes their ids as a
 * JSON array. Errors: INVALID_HANDLE, STORE_*, KEYCHAIN_*. */
int32_t coords_messages_sweep_expired(CoordsApp *app, CoordsBuffer *ids_json_out, CoordsError *out_error);

/* ---- Files as messages (PROTOCOL.md section 12, docs/MESSAGING.md "Attachments") ---------
 * The host passes file descriptors; the library reads one upload part (at most 4 MiB) at a time
 * with pread and writes plaintext as chunks open, so no whole file is in memory. The host sends
 * each Request as usual and hands the answers back.
 *
 *   coords_upload_begin(app, fd, &up)
 *   while (coords_upload_next(up, &more, &req) == 0 && more) {
 *       send req (timeout: coords_transfer_seconds_left); on no answer: coords_upload_failed(up, 0,
 *       &wait, &why) — wait == 0: give up, say `why` — sleep(wait), then coords_upload_probe(up, &req)
 *       and send that instead;
 *       coords_upload_process(up, status, body, len, retry_after_header, &ra);
 *       if (ra) { coords_upload_failed(up, ra, &wait, &why); ...as above }
 *   }
 *   coords_upload_send(up, friend_id, "image/jpeg", "harbour.jpg", "caption", &sent); coords_upload_free(up);
 *
 *   coords_download_begin(app, message_id, tmp_fd, &down)
 *   do { coords_download_request(down, &req, &max); send req (timeout: coords_transfer_seconds_left);
 *        coords_download_check(down, status, retry_after_header, &ra);
 *        if (ra) { coords_download_failed(down, ra, &wait, &why); wait == 0: give up; sleep(wait); continue; }
 *        coords_download_check_length(down, content_length_header);
 *        for each piece read: coords_download_pace(down, n, &keep) — keep == 0: cut the answer off —
 *        then coords_download_take(down, piece, n) (at most max bytes in all);
 *        on a cut or lost answer: coords_download_failed(down, 0, &wait, &why) as above;
 *        coords_download_finish(down, &complete); } while (!complete);   then rename tmp into place
 *   on any error: remove the temporary file; coords_download_free(down). */

/* Starts sending the regular file open for reading at `fd` (its size is taken now; at most
 * 100 MiB) to our own relay under a fresh key and object id. The library borrows `fd` until
 * coords_upload_free; the host closes it. Writes the handle to *upload_out (NULL on failure).
 * Errors: FILE_IO (not an open descriptor), INVALID_ARGUMENT (not a regular file), OBJECT_MISMATCH
 * (over 100 MiB), NO_IDENTITY, NO_SERVER, INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_upload_begin(CoordsApp *app, int32_t fd, CoordsUpload **upload_out, CoordsError *out_error);

/* The next part: reads it from the file and writes 1 to *more_out and its Request JSON (a signed
 * PUT) to request_json_out; writes 0 and an empty buffer once the relay holds the whole file.
 * Errors: FILE_IO (a read failed, or the file became shorter), INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_upload_next(CoordsUpload *upload, int32_t *more_out, CoordsBuffer *request_json_out, CoordsError *out_error);

/* The empty signed PUT that asks the relay how much of the object it holds: send it instead of
 * retrying a part whose answer was lost, and process its answer; the upload continues there.
 * Errors: INVALID_HANDLE, NULL_ARGUMENT, STORE_*. */
int32_t coords_upload_probe(CoordsUpload *upload, CoordsBuffer *request_json_out, CoordsError *out_error);

/* Takes the relay's answer to the last part or probe (`body` at most 64 KiB; `retry_after` its
 * Retry-After header or NULL). Writes 0 to *retry_after_seconds_out when the relay took it, else
 * the seconds to wait before coords_upload_next asks for the same part again (429, 5xx).
 * Errors: RELAY_ERROR (refused for good: quota, not_owner, …), OBJECT_MISMATCH (an answer no
 * honest relay gives), TOO_LARGE, INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_upload_process(CoordsUpload *upload, int32_t status, const uint8_t *body, size_t body_len,
                              const char *retry_after, uint64_t *retry_after_seconds_out, CoordsError *out_error);

/* After a failed try of an upload — no answer (retry_after_seconds 0), or an answer asking to wait
 * (retry_after_seconds: what coords_upload_process wrote) — the transfer rule of the core
 * (PROTOCOL.md §12.5): *wait_seconds_out is the seconds to wait before the next try (1..60), or 0
 * when the upload gives up (14 failed tries in a row, or its deadline: 10 min plus the size at 8
 * KiB/s); then *reason_out says why (UTF-8, owned by the caller, freed with coords_buffer_free;
 * empty otherwise). Reads the system clock. Errors: INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_upload_failed(CoordsUpload *upload, uint64_t retry_after_seconds, uint64_t *wait_seconds_out, CoordsBuffer *reason_out,
                             CoordsError *out_error);

/* Progress: bytes of the file the relay holds (*sent_out) of *size_out. Errors: INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_upload_progress(CoordsUpload *upload, uint64_t *sent_out, uint64_t *size_out, CoordsError *out_error);

/* Announces the finished upload to a friend: seals a file message (`type` a media type such as
 * "image/jpeg"; `name` the file name without a path, NULL or ""; `caption` NULL or text), stores
 * and queues it like coords_messages_send and writes the same {"message", "request",
 * "outbox_id"}. Errors: OBJECT_MISMATCH (not finished), MALFORMED_FILE (type or name),
 * MESSAGE_TOO_LONG, FRIEND_NOT_FOUND, FRIEND_BLOCKED, INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_upload_send(CoordsUpload *upload, const char *friend_id, const char *type, const char *name, const char *caption,
                           CoordsBuffer *sent_json_out, CoordsError *out_error);

/* Announces the finished upload to a group (every member fetches the one object): writes what
 * coords_groups_send writes. Errors: as coords_upload_send, and GROUP_NOT_FOUND,
 * NOT_A_GROUP_MEMBER, GROUP_MESSAGE_TOO_LONG. */
int32_t coords_upload_send_group(CoordsUpload *upload, const char *group, const char *type, const char *name, const char *caption,
                                 CoordsBuffer *sent_json_out, CoordsError *out_error);

/* Frees an upload (NULL and stale handles are ignored). Does not close the fd. */
void coords_upload_free(CoordsUpload *upload);

/* Starts receiving the attachment of message `message_id` (from the sender's relay), writing the
 * plaintext to `fd` (open for writing: a temporary file the host renames only once
 * coords_download_finish reports it complete, and removes on any error). The library borrows
 * `fd` until coords_download_free. Errors: UNKNOWN_MESSAGE, NO_ATTACHMENT (not a file message,
 * malformed, or expired), FRIEND_NOT_FOUND, FILE_IO, INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_download_begin(CoordsApp *app, const char *message_id, int32_t fd, CoordsDownload **download_out,
                              CoordsError *out_error);

/* The GET to send (with Range after a break) and the most body bytes to read from its answer:
 * more is refused. Errors: INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_download_request(CoordsDownload *download, CoordsBuffer *request_json_out, uint64_t *max_bytes_out,
                                CoordsError *out_error);

/* Checks the answer's status before reading its body (`retry_after` its Retry-After header or
 * NULL). Writes 0 to *retry_after_seconds_out when the host reads the body next; else (429, 5xx)
 * the seconds (1..60) to wait before sending coords_download_request's GET again, without
 * reading this body. The host decides how many such answers in a row it accepts. Errors:
 * OBJECT_MISMATCH (404: no longer on the relay; a 200 to a range request; any other status),
 * INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_download_check(CoordsDownload *download, int32_t status, const char *retry_after,
                              uint64_t *retry_after_seconds_out, CoordsError *out_error);

/* After coords_download_check said to read the body: checks the answer's Content-Length header
 * (NULL when it has none, e.g. chunked) against what coords_download_request asked for (the
 * stored bytes from what was received to the end; PROTOCOL.md §12.5). Any other length is refused
 * at once: do not read the body and do not resume. Errors: OBJECT_MISMATCH, NULL_ARGUMENT (download),
 * INVALID_HANDLE. */
int32_t coords_download_check_length(CoordsDownload *download, const char *content_length, CoordsError *out_error);

/* `arrived` more bytes of the current answer's body came (call it per read, before handing them to
 * coords_download_take): *keep_out 1 to read on, 0 to cut the answer off — under 16 KiB in 30 s
 * (a dripping relay) or past the transfer's deadline — and call coords_download_failed. Reads the
 * system clock. Errors: INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_download_pace(CoordsDownload *download, uint64_t arrived, int32_t *keep_out, CoordsError *out_error);

/* After a failed try of a download — an answer lost, cut off or too slow (retry_after_seconds 0), or
 * a busy one (retry_after_seconds: what coords_download_check wrote) — the core's transfer rule:
 * *wait_seconds_out the seconds to wait before the next request (1..60), or 0 when the download
 * gives up (14 failed tries in a row without a byte of progress, or its deadline); then
 * *reason_out says why (owned by the caller, freed with coords_buffer_free; empty otherwise).
 * Reads the system clock. Errors: INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_download_failed(CoordsDownload *download, uint64_t retry_after_seconds, uint64_t *wait_seconds_out,
                               CoordsBuffer *reason_out, CoordsError *out_error);

/* Seconds left until the deadline of the transfer (at least 1): a host's timeout for its next
 * request. Pass the upload or the download, the other NULL. Errors: INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_transfer_seconds_left(CoordsUpload *upload, CoordsDownload *download, uint64_t *seconds_out, CoordsError *out_error);

/* The next bytes of the answer's body (any length): the chunks they complete are opened and
 * written to fd. Pieces of 256 KiB or more are hashed on a second thread while their chunks open:
 * a host that reads the network in small pieces is faster handing them on in pieces of ~1 MiB.
 * Errors: BAD_CHUNK (changed, moved or someone else's bytes), OBJECT_MISMATCH
 * (longer than the object), FILE_IO, INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_download_take(CoordsDownload *download, const uint8_t *bytes, size_t len, CoordsError *out_error);

/* Progress: plaintext bytes written (*received_out) of *size_out. Errors: INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_download_progress(CoordsDownload *download, uint64_t *received_out, uint64_t *size_out, CoordsError *out_error);

/* After an answer's body ended: writes 1 to *complete_out when the whole object arrived and its
 * digest matched (fd is then fsynced: rename the file into place); 0 when the answer was cut off
 * (send coords_download_request again: it resumes). Errors: OBJECT_MISMATCH (the digest does not
 * match: remove the file), FILE_IO, INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_download_finish(CoordsDownload *download, int32_t *complete_out, CoordsError *out_error);

/* Frees a download (NULL and stale handles are ignored). Does not close the fd. */
void coords_download_free(CoordsDownload *download);

/* ---- Groups (PROTOCOL.md section 11) ----------------------------------------------------
 * A group is a circle of friends sharing positions and messages. Changes are membership
 * statements signed by an admin; the library seals them 1:1 for every member and queues them in
 * the outbox, with the sender keys members need (send coords_outbox_due entries as usual).
 * Incoming statements, sender keys and group messages arrive through
 * coords_messages_process_fetch_response. `group` arguments are a group's id (b64u) or its exact
 * name; `members_json` is a JSON array of friends' ids. A GroupChange is
 * {"group": Group, "queued": [OutboxEntry], "unreachable": [id]} (members who are not friends
 * cannot be told); a Group is {"id", "name", "status": "member"|"left"|"removed", "is_admin",
 * "in_conflict", "epoch", "sharing", "members": [{"id", "name"|null, "is_admin", "is_self",
 * "is_friend"}]}. Every output is freed with coords_buffer_free. */

/* Creates a group with us as its admin and `members_json`, writing a GroupChange.
 * Errors: INVALID_GROUP_MEMBERS (not friends, blocked, twice, more than 255), TOO_MANY_GROUPS (64),
 * MALFORMED_GROUP_STATEMENT (the name: 1–64 bytes, no control characters), INVALID_JSON, NO_IDENTITY. */
int32_t coords_groups_create(CoordsApp *app, const char *name, const char *members_json, CoordsBuffer *change_json_out,
                             CoordsError *out_error);

/* Adds friends to a group (admins only); they read only what is sent after they joined.
 * Errors: GROUP_NOT_FOUND, NOT_A_GROUP_MEMBER, NOT_A_GROUP_ADMIN, INVALID_GROUP_MEMBERS, INVALID_JSON. */
int32_t coords_groups_add(CoordsApp *app, const char *group, const char *members_json, CoordsBuffer *change_json_out,
                          CoordsError *out_error);

/* Removes members (admins only); every remaining member replaces its sender key.
 * Errors: GROUP_NOT_FOUND, NOT_A_GROUP_ADMIN, INVALID_GROUP_MEMBERS (not members, ourselves, no admin
 * left), INVALID_JSON. */
int32_t coords_groups_remove(CoordsApp *app, const char *group, const char *members_json, CoordsBuffer *change_json_out,
                             CoordsError *out_error);

/* Renames a group (admins only). Errors: GROUP_NOT_FOUND, NOT_A_GROUP_ADMIN, MALFORMED_GROUP_STATEMENT. */
int32_t coords_groups_rename(CoordsApp *app, const char *group, const char *name, CoordsBuffer *change_json_out,
                             CoordsError *out_error);

/* Makes a member an admin (is_admin != 0) or not (admins only; one admin always remains).
 * Errors: GROUP_NOT_FOUND, NOT_A_GROUP_ADMIN, INVALID_GROUP_MEMBERS. */
int32_t coords_groups_set_admin(CoordsApp *app, const char *group, const char *member, int32_t is_admin,
                                CoordsBuffer *change_json_out, CoordsError *out_error);

/* Leaves a group: the remaining members are told (the last admin hands the role on), then sending
 * and sharing stop and the group's sender keys are erased. Errors: GROUP_NOT_FOUND, NOT_A_GROUP_MEMBER. */
int32_t coords_groups_leave(CoordsApp *app, const char *group, CoordsBuffer *change_json_out, CoordsError *out_error);

/* Forgets a group we left, were removed from or are the last member of, with its messages.
 * Errors: GROUP_NOT_FOUND, STILL_A_GROUP_MEMBER. */
int32_t coords_groups_delete(CoordsApp *app, const char *group, CoordsError *out_error);

/* Shares positions with the group's members (sharing != 0) or stops; writes the reseal of the last
 * fix queued in the outbox for the new readers (OutboxEntry), or the JSON `null` when nothing was
 * shared yet or nothing changed. Errors: GROUP_NOT_FOUND, NOT_A_GROUP_MEMBER, NO_SERVER. */
int32_t coords_groups_set_sharing(CoordsApp *app, const char *group, int32_t sharing, CoordsBuffer *reseal_json_out,
                                  CoordsError *out_error);

/* Seals `text` once with our sender key and queues one envelope per member who is a friend:
 * {"message": Message (with "group"), "queued": [OutboxEntry], "unreachable": [id]}.
 * Errors: GROUP_NOT_FOUND, NOT_A_GROUP_MEMBER, GROUP_MESSAGE_TOO_LONG (65,536 bytes). */
int32_t coords_groups_send(CoordsApp *app, const char *group, const char *text, CoordsBuffer *sent_json_out,
                           CoordsError *out_error);

/* Every group kept ([Group]), by name. */
int32_t coords_groups_list(CoordsApp *app, CoordsBuffer *json_out, CoordsError *out_error);

/* A group's messages, oldest first ([Message], each with "group"; "friend_id" is the sender);
 * the last `limit` when limit > 0. Errors: GROUP_NOT_FOUND. */
int32_t coords_groups_history(CoordsApp *app, const char *group, uint32_t limit, CoordsBuffer *json_out, CoordsError *out_error);

/* ---- Live channel (PROTOCOL.md section 8; the host owns the WebSockets) ----------------- */

/* The relays to hold a live WebSocket to: [{"server", "url" (ws:// or wss://.../v1/relay/live),
 * "ids": [friend ids watched there], "mailbox": bool (the user's own relay)}]. Relays that
 * answered 404 (see coords_live_closed) are left out: poll them. Errors: NO_IDENTITY,
 * INVALID_SERVER_URL. */
int32_t coords_live_connections(CoordsApp *app, CoordsBuffer *json_out, CoordsError *out_error);

/* A connection to `server` opened: writes {"frames": [text], "catch_up": [Fetch],
 * "mailbox_fetch": Request|null}. Send every frame as a WebSocket text frame, in order (the
 * first carries a fresh mailbox proof on the own relay), then perform the catch-up fetches
 * (coords_location_process_fetch_response) and the mailbox fetch (coords_messages_...), so
 * nothing published while disconnected is missed. Errors: NO_IDENTITY, NO_SERVER. */
int32_t coords_live_opened(CoordsApp *app, const char *server, CoordsBuffer *json_out, CoordsError *out_error);

/* One text frame received from `server` (at most 16,384 bytes). Writes the event:
 * {"type":"subscribed","ids":n,"mailbox":bool} (resets the reconnect backoff),
 * {"type":"locations","outcome":Outcome} (processed like a fetch entry: verified, rollback
 * refused, cached, reconcile messages sent), {"type":"deleted","id"},
 * {"type":"rejected","id","error"} (a forged delete notice),
 * {"type":"changed","id","fetch":Fetch} (a position too large for a notice: perform the fetch and
 * hand the answer to coords_location_process_fetch_response),
 * {"type":"message_waiting","id","fetch":Request} (perform the signed mailbox fetch, process
 * the answer, then call coords_live_mailbox_fetched) or {"type":"ignored","id"} (not subscribed
 * on this connection, or a message notice while that fetch is still out: one fetch per burst).
 * Errors: INVALID_JSON, UNEXPECTED_JSON, INVALID_PUBLIC_KEY_ID, TOO_MANY_RECIPIENTS (a malformed
 * frame: close with 4400 and reconnect), TOO_LARGE, NO_IDENTITY. */
int32_t coords_live_process(CoordsApp *app, const char *server, const uint8_t *frame, size_t frame_len,
                            CoordsBuffer *event_json_out, CoordsError *out_error);

/* The host performed (or gave up on) the mailbox fetch of a "message_waiting" event from
 * `server`. Writes a fresh signed mailbox fetch (Request) when message notices arrived while it
 * ran (perform it no sooner than 1 s after the previous fetch began, then call this again), or
 * null when the burst is done: however many notices a relay sends, each burst costs one signed
 * request, and a flood at most one a second. Errors: NO_IDENTITY, NO_SERVER. */
int32_t coords_live_mailbox_fetched(CoordsApp *app, const char *server, CoordsBuffer *json_out, CoordsError *out_error);

/* The connection to `server` closed without the host asking for it (close_code: what the relay
 * sent, 0 when there was no close frame) or could not be opened (upgrade_status: the HTTP status
 * of the upgrade request, 0 when none; a plain GET of the URL tells it when the WebSocket
 * library does not). Writes {"action":"reconnect","after_ms":n} (backoff 1 s doubling to 60 s,
 * with jitter) or {"action":"poll"} (404: the relay has no live channel; poll it as before). */
int32_t coords_live_closed(CoordsApp *app, const char *server, int32_t close_code, int32_t upgrade_status,
                           CoordsBuffer *next_json_out, CoordsError *out_error);

/* The host closed its connection to `server` itself (the app went to the background, the user
 * stopped watching; for closes it did not ask for, call coords_live_closed). While a relay's
 * connection is confirmed ("subscribed"), coords_app_due leaves the friends watched there and
 * the mailbox out of its periodic fetches; after this they are fetched again, so call
 * coords_app_next_wake again. The reconnect backoff is unchanged; a relay without a connection
 * is ignored. Errors: INVALID_HANDLE, INVALID_ARGUMENT (server NULL or not UTF-8). */
int32_t coords_live_stopped(CoordsApp *app, const char *server, CoordsError *out_error);

/* ---- Offline geocoding (never touches the network) ------------------------------------ */

/* The nearest named place to (latitude, longitude) in the bundled GeoNames cities15000 set
 * (about 34,000 places; loaded on first use, a few ms), by the reference rule: lowest haversine
 * distance (km, R = 6371) minus 0.5 × ln(max(population, 1)). Writes a JSON object
 * {"name","country_code","country","state","population","latitude","longitude","distance_km",
 *  "display","phrase"}: "display" is "Lisbon, Portugal" / "Austin, Texas"; "phrase" is "in …",
 * "near …" or "N km from …", taking `accuracy_m` (the fix's accuracy radius, ≥ 0) into account.
 * `country_code`, `country` and `state` may be null. Free the buffer with coords_buffer_free().
 * Errors: INVALID_COORDINATE, INVALID_ARGUMENT (accuracy_m negative or not finite), NULL_ARGUMENT. */
int32_t coords_geocode_nearest(double latitude, double longitude, double accuracy_m, CoordsBuffer *place_json_out,
                               CoordsError *out_error);

/* Loads a CGEO place file (e.g. the cities1000 set, about 170,000 places, built by
 * `scripts/build-geodata.py --large DIR`), checks it, and writes a handle to *places_out
 * (NULL on failure). The file is read once and not kept open. Close with coords_places_close().
 * Errors: UNREADABLE_PLACE_FILE, DAMAGED_PLACE_DATA, UNSUPPORTED_PLACE_DATA, NULL_ARGUMENT. */
int32_t coords_places_open(const char *path, CoordsPlaces **places_out, CoordsError *out_error);

/* coords_geocode_nearest on a loaded place file. The handle may be shared across threads.
 * Errors: those of coords_geocode_nearest, INVALID_HANDLE. */
int32_t coords_places_nearest(CoordsPlaces *places, double latitude, double longitude, double accuracy_m,
                              CoordsBuffer *place_json_out, CoordsError *out_error);

/* The number of places in a loaded place file. Errors: INVALID_HANDLE, NULL_ARGUMENT. */
int32_t coords_places_count(CoordsPlaces *places, uint64_t *count_out, CoordsError *out_error);

/* Frees a loaded place file. Closing NULL is a no-op that succeeds; a second close returns
 * INVALID_HANDLE. */
int32_t coords_places_close(CoordsPlaces *places, CoordsError *out_error);

#ifdef __cplusplus
}
#endif

#endif /* COORDSCORE_H */
