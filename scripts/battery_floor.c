/* The crypto floor of one share to `recipients` - 1 friends (scripts/bench-battery.py): seal a
 * Coords v3 blob for the sender and every friend (X25519 keys, as the core caches them) and sign
 * the upload with Ed25519, through the same C baseline the benchmark suite uses
 * (Benchmarks/Sources/CBaseline). Prints the CPU time of this thread per share in microseconds.
 *
 *   battery-floor ITERATIONS RECIPIENTS [GAP_MS]
 *
 * With GAP_MS, the thread sleeps that long between shares (as the core's shares are paced):
 * each share then starts with cold caches, like a share once a minute; sleeping costs no CPU
 * time. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "baseline.h"

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: battery-floor ITERATIONS RECIPIENTS [GAP_MS]\n");
        return 2;
    }
    long iterations = strtol(argv[1], NULL, 10), recipients = strtol(argv[2], NULL, 10);
    long gap_ms = argc == 4 ? strtol(argv[3], NULL, 10) : 0;
    if (gap_ms < 0 || gap_ms > 10000) return 2;
    if (iterations < 1 || recipients < 1 || recipients > 1050 || cb_init() < 0) return 2;
    unsigned char *keys = malloc((size_t)recipients * 32), *blob = malloc(83 + 60 * 1100);
    unsigned char secret[32], public_key[32], sk[64], pk[32], sig[64], loc[20];
    if (keys == NULL || blob == NULL) return 1;
    for (long i = 0; i < recipients; i++) {
        crypto_box_keypair(public_key, secret);
        for (int b = 0; b < 32; b++) keys[i * 32 + b] = public_key[b];
    }
    crypto_sign_keypair(pk, sk);
    randombytes_buf(loc, sizeof loc);
    double micros = 0;
    for (long i = 0; i < iterations; i++) {
        if (gap_ms > 0) {
            struct timespec pause = {gap_ms / 1000, (gap_ms % 1000) * 1000000L};
            nanosleep(&pause, NULL);
        }
        struct timespec start, end;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
        size_t size = cb_blob_seal(loc, keys, (size_t)recipients, 0, blob);
        if (size == 0) return 1;
        cb_sign(sk, blob, size, sig);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end);
        micros += (double)(end.tv_sec - start.tv_sec) * 1e6 + (double)(end.tv_nsec - start.tv_nsec) / 1e3;
    }
    printf("%.1f\n", micros / (double)iterations);
    free(keys);
    free(blob);
    return 0;
}
