/* bench_malloc_at.h — the malloc benchmarks' call sites: malloc at the bottom of depth nested
 * frames, so that each depth is a call stack of its own for heaptrack. */
#ifndef CMT_BENCH_MALLOC_AT_H
#define CMT_BENCH_MALLOC_AT_H

#include <stdlib.h>

static __attribute__((noinline)) void *alloc_at(int depth, size_t size)
{
    void *p = depth > 0 ? alloc_at(depth - 1, size) : malloc(size);
    __asm__ volatile("" ::: "memory"); /* keeps the frames (no tail call) */
    return p;
}

#endif
