/* simcuda_free_ranges.c: the treap's first fit against a simple reference (the linear scan
 * over the sorted array's gaps that simcuda used before) on random alloc/free sequences, with
 * alignments, hints and the SIMCUDA_REUSE_ADDRESSES=0 rule; the sorted array is kept by the
 * test, as simcuda_space.c keeps it. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda_internal.h"

static uint64_t rng;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t align_up(uint64_t value, uint64_t alignment)
{
    return (value + alignment - 1) / alignment * alignment;
}

/* The reference: the first gap, in address order, where the block fits. 0 when none. */
static uint64_t reference_fit(const struct simcuda__va_space *s, uint64_t size, uint64_t align,
                              uint64_t hint)
{
    for (int pass = hint && hint % align == 0 ? 0 : 1; pass < 2; pass++) {
        for (size_t i = 0; i <= s->count; i++) {
            uint64_t begin = i ? s->entries[i - 1].base + s->entries[i - 1].size : s->start;
            uint64_t end = i == s->count ? s->start + s->size : s->entries[i].base;
            if (pass == 0) {
                if (hint >= begin && hint < end && end - hint >= size)
                    return hint;
                continue;
            }
            if (s->never_reuse && begin < s->high_water)
                begin = s->high_water;
            uint64_t candidate = align_up(begin, align);
            if (candidate < end && end - candidate >= size)
                return candidate;
        }
    }
    return 0;
}

static uint64_t treap_fit(struct simcuda__va_space *s, uint64_t size, uint64_t align, uint64_t hint)
{
    cr_assert(simcuda__free_ranges_ready(s));
    CUdeviceptr at = 0;
    if (hint && hint % align == 0 && simcuda__free_ranges_holds(s, hint, size))
        return hint;
    return simcuda__free_ranges_fit(s, size, align, s->never_reuse ? s->high_water : 0, &at) ? at
                                                                                             : 0;
}

static void insert_sorted(struct simcuda__va_space *s, uint64_t base, uint64_t size)
{
    size_t i = 0;
    while (i < s->count && s->entries[i].base < base)
        i++;
    memmove(&s->entries[i + 1], &s->entries[i], (s->count - i) * sizeof(*s->entries));
    s->entries[i] = (struct simcuda__va_entry){.base = base, .size = size};
    s->count++;
}

static void run_sequence(uint64_t seed, bool never_reuse, int steps)
{
    rng = seed;
    static struct simcuda__va_entry entries[4096];
    struct simcuda__va_space s = {.start = 0x200000000ull,
                                  .size = 64ull << 20, /* small: the space fills and fails */
                                  .entries = entries,
                                  .never_reuse = never_reuse};
    static const uint64_t aligns[] = {4096, 4096, 65536, 2 << 20};
    for (int step = 0; step < steps; step++) {
        if (s.count && (next() % 100 < 45 || s.count == 4096)) { /* free a random live range */
            size_t i = next() % s.count;
            uint64_t base = entries[i].base, size = entries[i].size;
            memmove(&entries[i], &entries[i + 1], (s.count - i - 1) * sizeof(*entries));
            s.count--;
            cr_assert(simcuda__free_ranges_give_back(&s, base, size));
            continue;
        }
        if (next() % 500 == 0) /* the out-of-memory path: dropped, rebuilt from the array */
            simcuda__free_ranges_clear(&s);
        uint64_t size = (1 + next() % 64) * 4096, align = aligns[next() % 4];
        uint64_t hint = next() % 8 ? 0 : s.start + (next() % 16384) * 4096;
        uint64_t want = reference_fit(&s, size, align, hint);
        uint64_t got = treap_fit(&s, size, align, hint);
        cr_assert_eq(got, want, "seed %llu step %d: size %llu align %llu hint %llx",
                     (unsigned long long)seed, step, (unsigned long long)size,
                     (unsigned long long)align, (unsigned long long)hint);
        if (!got)
            continue;
        insert_sorted(&s, got, size);
        cr_assert(simcuda__free_ranges_use(&s, got, size));
        if (got + size > s.high_water)
            s.high_water = got + size;
        if (never_reuse && s.high_water > s.start + s.size - (8 << 20))
            s.high_water = s.start; /* begin again, so the rule is tested past the first fill */
    }
    simcuda__free_ranges_clear(&s);
}

Test(free_ranges, first_fit_agrees_with_the_linear_scan)
{
    for (uint64_t seed = 1; seed <= 8; seed++)
        run_sequence(seed * 0x9E3779B97F4A7C15ull, false, 20000);
}

Test(free_ranges, first_fit_agrees_when_addresses_are_never_reused)
{
    for (uint64_t seed = 1; seed <= 8; seed++)
        run_sequence(seed * 0xBF58476D1CE4E5B9ull, true, 20000);
}
