/* bench_rng.h — the analysis benchmarks' random numbers: xorshift64 from a fixed seed, so a
 * workload or a generated trace is the same from run to run. */
#ifndef CMT_BENCH_RNG_H
#define CMT_BENCH_RNG_H

#include <stdint.h>

static uint64_t bench_rng_state = 88172645463325252ull;

static inline uint64_t next_rand(void)
{
    bench_rng_state ^= bench_rng_state << 13;
    bench_rng_state ^= bench_rng_state >> 7;
    bench_rng_state ^= bench_rng_state << 17;
    return bench_rng_state;
}

#endif
