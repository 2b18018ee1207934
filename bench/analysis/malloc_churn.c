/* malloc_churn.c — bench_churn's workload on malloc/free, for heaptrack: the anchor of the
 * same shape as the churn trace (the random sizes and addresses that make a trace hard to
 * compress and to replay), so that heaptrack_print reads a trace as hard as ours.
 * Same random sequence, sizes (512 B to 8 MiB), 16 call sites and 2048 live buffers replaced
 * at random, and a 64 MiB block every 5000 rounds; the cuStreamSynchronize and cuMemGetInfo
 * calls have no malloc counterpart and are left out. Buffers are never touched.
 *
 * usage: bench_malloc_churn [EVENTS]   (malloc and free calls to make, default 4,000,000)
 * Prints the number of calls it made (the events of its heaptrack trace, less heaptrack's
 * own start-up). */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_malloc_at.h" /* one call site per depth, as in churn.c */
#include "bench_rng.h"

#define LIVE 2048
#define SITES 16

int main(int argc, char **argv)
{
    long target = argc > 1 ? atol(argv[1]) : 4000000, calls = 0;
    static void *live[LIVE];
    mallopt(M_MMAP_THRESHOLD, 32 << 20); /* the heap, not one mmap per large block */
    for (long round = 0; calls < target; round++) {
        uint32_t i = (uint32_t)(next_rand() % LIVE);
        if (live[i]) {
            free(live[i]);
            calls++;
        }
        size_t size = (size_t)512 << (next_rand() % 15);
        if (!(live[i] = alloc_at(4 + (int)(next_rand() % SITES), size))) {
            fprintf(stderr, "bench_malloc_churn: malloc failed\n");
            return 1;
        }
        calls++;
        if (round % 5000 == 4999) {
            void *seg = malloc(64u << 20);
            __asm__ volatile("" : : "r"(seg) : "memory");
            free(seg);
            calls += 2;
        }
    }
    for (uint32_t i = 0; i < LIVE; i++)
        if (live[i]) {
            free(live[i]);
            calls++;
        }
    printf("%ld\n", calls);
    return 0;
}
