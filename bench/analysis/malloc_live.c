/* malloc_live.c — gen_live's workload on malloc, for heaptrack: N mallocs from 16 call sites
 * 8 frames deep, never freed, so heaptrack_print holds N live allocations at the end. The
 * sizes are 16 to 128 B, not gen_live's 512 B to 8.5 KiB: malloc writes a header beside every
 * block (10M of gen_live's sizes would touch 40 GB) and serves large ones with one mmap each
 * (past vm.max_map_count); heaptrack_print's work depends on the count, not the sizes.
 *
 * usage: bench_malloc_live N */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_rng.h"

#define SITES 16
#define DEPTH 8

static __attribute__((noinline)) void *alloc_at(int depth, size_t size)
{
    void *p = depth > 0 ? alloc_at(depth - 1, size) : malloc(size);
    __asm__ volatile("" ::: "memory"); /* keeps the frames (no tail call) */
    return p;
}

typedef void *(*site_fn)(size_t);
#define SITE(i)                                                  \
    static __attribute__((noinline)) void *site_##i(size_t size) \
    {                                                            \
        void *p = alloc_at(DEPTH - 2, size);                     \
        __asm__ volatile("" ::: "memory");                       \
        return p;                                                \
    }
SITE(0)
SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7) SITE(8) SITE(9) SITE(10) SITE(11) SITE(12)
    SITE(13) SITE(14) SITE(15)

        int main(int argc, char **argv)
{
    static const site_fn sites[SITES] = {site_0,  site_1,  site_2,  site_3, site_4,  site_5,
                                         site_6,  site_7,  site_8,  site_9, site_10, site_11,
                                         site_12, site_13, site_14, site_15};
    char *end = NULL;
    unsigned long long n = argc == 2 ? strtoull(argv[1], &end, 10) : 0;
    if (argc != 2 || *end || n == 0) {
        fprintf(stderr, "usage: bench_malloc_live N\n");
        return 2;
    }
    for (unsigned long long i = 0; i < n; i++) {
        uint64_t r = next_rand();
        size_t size = 16 + r % 113;
        if (!sites[(r >> 32) % SITES](size)) {
            fprintf(stderr, "bench_malloc_live: out of memory after %llu blocks\n", i);
            return 1;
        }
    }
    printf("%llu\n", n);
    return 0;
}
