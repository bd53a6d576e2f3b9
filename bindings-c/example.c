/*
 * A two-minute tour of libcoordscore from C: two people, one sealed position.
 *
 *   make example-c && .build/c/example
 */
#include "coordscore.h"

#include <stdio.h>
#include <string.h>

/* Prints the library's message for a failed call and returns 1. */
static int failed(const char *what, CoordsError *error) {
    fprintf(stderr, "%s failed (%d): %s\n", what, (int)error->code, error->message ? error->message : "");
    coords_error_free(error);
    return 1;
}

int main(void) {
    CoordsError error = {0, NULL};
    if (coords_abi_version() != COORDS_ABI_VERSION) {
        fprintf(stderr, "libcoordscore ABI %u, header %u\n", coords_abi_version(), COORDS_ABI_VERSION);
        return 1;
    }

    /* Two identities: a 32-byte secret seed and a 32-byte public key each. */
    uint8_t alice_seed[32], recipients[2 * 32], bob_seed[32];
    if (coords_identity_generate(alice_seed, recipients, &error)) return failed("alice", &error);
    if (coords_identity_generate(bob_seed, recipients + 32, &error)) return failed("bob", &error);

    /* Alice seals where she is for herself (first) and Bob. */
    CoordsLocation here = {.latitude = 47.3769, .longitude = 8.5417, .altitude = 408, .accuracy = 10,
                           .timestamp_ms = 1763805600000ull};
    CoordsBuffer blob = {NULL, 0};
    if (coords_blob_seal(&here, recipients, 2, &blob, &error)) return failed("seal", &error);
    printf("sealed a %zu-byte blob for 2 recipients\n", blob.len);

    /* Bob opens it with his seed. */
    CoordsLocation seen;
    if (coords_blob_open(bob_seed, blob.data, blob.len, &seen, &error)) return failed("open", &error);
    printf("Bob sees Alice at %.4f, %.4f (±%.0f m)\n", seen.latitude, seen.longitude, seen.accuracy);

    /* Anyone else gets a clear error, never a crash. */
    uint8_t eve_seed[32], eve_public[32];
    coords_identity_generate(eve_seed, eve_public, NULL);
    if (coords_blob_open(eve_seed, blob.data, blob.len, &seen, &error) == COORDS_ERR_NOT_A_RECIPIENT) {
        printf("Eve: %s\n", error.message);
        coords_error_free(&error);
    }
    coords_buffer_free(&blob);

    /* Alice's friend link, to share with Bob. */
    CoordsBuffer link = {NULL, 0};
    if (coords_friend_link_generate(recipients, "https://coord.is", "Alice", &link, &error)) return failed("link", &error);
    printf("Alice's link: %s\n", (const char *)link.data);
    coords_buffer_free(&link);
    return 0;
}
