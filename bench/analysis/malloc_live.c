/* malloc_live.c — gen_live's workload on malloc, for heaptrack: N mallocs from 16 call sites
 * (stacks 8 to 23 frames deep), never freed, so heaptrack_print holds N live allocations at
 * the end. The
 * sizes are 16 to 128 B, not gen_live's 512 B to 8.5 KiB: malloc writes a header beside every
 * block (10M of gen_live's sizes would touch 40 GB) and serves large ones with one mmap each
 * (past vm.max_map_count); heaptrack_print's work depends on the count, not the sizes.
 *
 * usage: bench_malloc_live N */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_malloc_at.h"
#include "bench_rng.h"

#define SITES 16
#define DEPTH 8

int main(int argc, char **argv)
{
    char *end = NULL;
    unsigned long long n = argc == 2 ? strtoull(argv[1], &end, 10) : 0;
    if (argc != 2 || *end || n == 0) {
        fprintf(stderr, "usage: bench_malloc_live N\n");
        return 2;
    }
    for (unsigned long long i = 0; i < n; i++) {
        uint64_t r = next_rand();
        size_t size = 16 + r % 113;
        if (!alloc_at(DEPTH + (int)((r >> 32) % SITES), size)) { /* a stack per site */
            fprintf(stderr, "bench_malloc_live: out of memory after %llu blocks\n", i);
            return 1;
        }
    }
    printf("%llu\n", n);
    return 0;
}
