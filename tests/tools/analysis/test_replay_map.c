/* Tests of the replay's object map (tools/analysis/replay_map.c): a reference model on random
 * insert/find/remove sequences, the dense entries, and the layout's bytes per live object. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "replay_map.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A reference: keys live in a plain array, searched linearly. */
#define KEYS 4096
static uint64_t ref_key[KEYS];
static uint64_t ref_size[KEYS];
static int ref_live[KEYS];

/* Every slot as an insert into an empty index of this size would write it: its entry's
 * index, the tag and distance of the entry's key at that slot (saturated past the field), and
 * no empty slot between its home and it (the probe from the home reaches it). */
static void index_is_sound(const struct cmt__map *m)
{
    size_t held = 0, start = 0;
    uint32_t index_mask = (uint32_t)m->mask, dist_max = m->dist_max;
    while (m->slots[start]) /* the load is under 3/4: there is one */
        start++;
    for (size_t k = 1, empty = start; k <= m->mask; k++) { /* cyclically from that empty one */
        size_t i = (start + k) & m->mask;
        uint32_t s = m->slots[i];
        if (!s) {
            empty = i; /* the last empty slot before the ones that follow */
            continue;
        }
        held++;
        size_t idx = (s & index_mask) - 1;
        cr_assert_lt(idx, m->count, "slot %zu", i);
        uint64_t key = m->entries[idx].key;
        size_t home = cmt__map_home(m, key), dist = (i - home) & m->mask;
        cr_assert_eq(s & m->tag_mask, cmt__map_tag(m, key), "slot %zu: tag", i);
        cr_assert_eq((s >> m->index_bits) & dist_max, dist < dist_max ? dist : dist_max,
                     "slot %zu: distance %zu", i, dist);
        cr_assert_lt(dist, (i - empty) & m->mask, "slot %zu: a hole after its home", i);
    }
    cr_assert_eq(held, m->count);
}

/* Random insert/find/remove steps over ref_key[], checked against the reference. */
static void agrees_with_the_reference(unsigned near)
{
    struct cmt__map m = {.near = near};
    memset(ref_live, 0, sizeof ref_live);
    size_t live = 0, slots = 0;
    for (int step = 0; step < 400000; step++) {
        if (m.mask + 1 != slots) { /* grown (or created): as a rebuild would have it */
            slots = m.mask + 1;
            if (m.slots)
                index_is_sound(&m);
        }
        if (step % 50000 == 0 && m.slots) /* and after removals' backward shifts */
            index_is_sound(&m);
        int k = (int)(next() % KEYS);
        struct cmt__entry *e = cmt__map_find(&m, ref_key[k]);
        cr_assert_eq(e != NULL, ref_live[k], "step %d key %d", step, k);
        if (e) {
            cr_assert_eq(e->key, ref_key[k]);
            cr_assert_eq(e->size, ref_size[k]);
        }
        if (!ref_live[k]) {
            e = cmt__map_insert(&m, ref_key[k]);
            cr_assert_not_null(e);
            cr_assert_eq(e->kind, 0);
            ref_size[k] = next();
            *e = (struct cmt__entry){.key = ref_key[k], .size = ref_size[k], .kind = 1};
            ref_live[k] = 1;
            live++;
        } else if (next() % 3) { /* removes a bit more often than it inserts: the set shrinks
                                    and grows again */
            cmt__map_remove(&m, e);
            ref_live[k] = 0;
            live--;
        }
        cr_assert_eq(m.count, live);
    }
    for (size_t i = 0; i < m.count; i++) /* the entries are dense: every one is live */
        cr_assert_eq(m.entries[i].kind, 1);
    for (int k = 0; k < KEYS; k++)
        cr_assert_eq(cmt__map_find(&m, ref_key[k]) != NULL, ref_live[k]);
    cmt__map_free(&m);
}

Test(replay_map, agrees_with_a_reference_on_random_sequences)
{
    for (int k = 0; k < KEYS; k++) /* clustered, aligned addresses and a few small handles */
        ref_key[k] = k % 7 ? 0x7f0000000000ull + (uint64_t)k * 512 : (uint64_t)k + 1;
    agrees_with_the_reference(0);
    agrees_with_the_reference(1);
    for (int k = 0; k < KEYS; k++) /* worst for near homes: keys a byte apart, 2 MiB apart */
        ref_key[k] = k % 2 ? 0x7f0000000000ull + (uint64_t)k
                           : 0x7e0000000000ull + ((uint64_t)k << 21);
    agrees_with_the_reference(0);
    agrees_with_the_reference(1);
}

/* Keys by address (near): the allocations of a 256-KiB page, as an allocator hands them out,
 * land in one window of the index (a few cache lines), where hashed homes scatter them; the
 * replay's setting uses them only once the index is past the caches. */
Test(replay_map, near_addresses_get_near_homes)
{
    const struct {
        unsigned near;
        uint64_t keys;
        int windowed;
    } runs[] = {{0, 100000, 0},
                {1, 100000, 1},
                {CMT__MAP_NEAR_MIN_BITS, 100000, 0},  /* 2^18 slots: hashed */
                {CMT__MAP_NEAR_MIN_BITS, 800000, 1}}; /* 2^20 slots: near */
    for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
        struct cmt__map m = {.near = runs[r].near};
        for (uint64_t k = 0; k < runs[r].keys; k++) /* homes could fall anywhere */
            cr_assert_not_null(cmt__map_insert(&m, 0x100000000000ull + (k << 21)));
        size_t first = cmt__map_home(&m, 0x7f0000040000ull), spread = 0; /* cyclic, from first */
        for (uint64_t a = 0x7f0000040000ull; a < 0x7f0000080000ull; a += 4608) {
            size_t d = (cmt__map_home(&m, a) - first) & m.mask;
            spread = d > spread ? d : spread;
        }
        if (runs[r].windowed) /* one window of 512 slots: 2 KiB of index */
            cr_assert_lt(spread, 512, "run %zu: %zu slots apart", r, spread);
        else
            cr_assert_gt(spread, 512, "run %zu: hashed homes %zu slots apart", r, spread);
        for (uint64_t k = 0; k < runs[r].keys; k += 997) /* and every key is found */
            cr_assert_not_null(cmt__map_find(&m, 0x100000000000ull + (k << 21)));
        index_is_sound(&m);
        cmt__map_free(&m);
    }
}

Test(replay_map, removal_while_iterating_stays_at_the_index)
{
    struct cmt__map m = {0};
    for (uint64_t k = 1; k <= 3000; k++)
        *cmt__map_insert(&m, k * 4096) = (struct cmt__entry){
            .key = k * 4096, .kind = 1, .dev = (int32_t)(k % 2)};
    for (size_t i = 0; i < m.count;)
        if (m.entries[i].dev == 1)
            cmt__map_remove(&m, &m.entries[i]);
        else
            i++;
    cr_assert_eq(m.count, 1500);
    for (uint64_t k = 1; k <= 3000; k++)
        cr_assert_eq(cmt__map_find(&m, k * 4096) != NULL, k % 2 == 0);
    cmt__map_free(&m);
}

/* Keys whose homes are the index's last slots (found by trying keys): their cluster wraps
 * past the end to slot 0. Each one removed, from the head, the middle and the wrapped tail of
 * the chain, leaves every other one found (backward shift across the end), and an index that
 * doubles with the chain in it keeps it. */
Test(replay_map, removal_from_a_chain_that_wraps_past_the_end)
{
    struct cmt__map m = {0};
    cr_assert_not_null(cmt__map_insert(&m, 1)); /* creates the index */
    size_t cap = m.mask + 1;
    uint64_t keys[40];
    size_t n = 0;
    for (uint64_t k = 2; n < 40; k++)
        if (cmt__map_home(&m, k) >= cap - 4)
            keys[n++] = k;
    for (size_t r = 0; r < n; r++) { /* removes keys[r], then puts it back */
        for (size_t i = 0; i < n; i++)
            cmt__map_insert(&m, keys[i])->kind = 1;
        cr_assert_eq(m.mask + 1, cap);
        size_t at;
        struct cmt__entry *e = cmt__map_find_at(&m, keys[r], &at);
        cr_assert_not_null(e);
        cr_assert_eq(m.slots[at] & (uint32_t)m.mask, (uint32_t)(e - m.entries) + 1);
        cmt__map_remove_at(&m, e, at);
        cr_assert_eq(m.count, n);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(cmt__map_find(&m, keys[i]) != NULL, i != r, "removed %zu, key %zu", r, i);
        cr_assert_not_null(cmt__map_find(&m, 1));
        for (size_t i = 0; i < n; i++)
            if (i != r)
                cmt__map_remove(&m, cmt__map_find(&m, keys[i]));
        cr_assert_eq(m.count, 1);
        for (size_t i = 0; i < cap; i++) /* the index holds only key 1's slot */
            cr_assert(!m.slots[i] || (m.slots[i] & (uint32_t)m.mask) == 1, "slot %zu", i);
    }
    for (size_t i = 0; i < n; i++)
        cmt__map_insert(&m, keys[i])->kind = 1;
    for (uint64_t k = 1u << 20; m.mask + 1 == cap; k++) /* doubles the index with the chain in it */
        cmt__map_insert(&m, k << 12)->kind = 1;
    for (size_t i = 0; i < n; i++)
        cr_assert_not_null(cmt__map_find(&m, keys[i]));
    index_is_sound(&m);
    cmt__map_free(&m);
}

/* A doubling moves each slot to about twice its place, from the last down; a cluster at the
 * index's start goes to homes below the slots still to be read, so it waits in a buffer (1024
 * slots; a longer one has the index rebuilt from the entries). Either way the doubled index is
 * as a rebuild would have it and every key is found. */
Test(replay_map, doubling_with_a_cluster_at_the_start)
{
    const size_t clusters[] = {500, 2000};
    for (size_t r = 0; r < 2; r++) {
        struct cmt__map m = {0};
        uint64_t filler = 1;
        while (m.mask + 1 < 8192) /* 2^13 slots */
            cmt__map_insert(&m, (filler++) << 40)->kind = 1;
        size_t cap = m.mask + 1, n = 0;
        static uint64_t keys[2000];
        for (uint64_t k = 1; n < clusters[r]; k++) /* keys whose homes are the first 4 slots */
            if (cmt__map_home(&m, k) < 4 && !cmt__map_find(&m, k)) {
                cmt__map_insert(&m, k)->kind = 1;
                keys[n++] = k;
            }
        cr_assert_eq(m.mask + 1, cap);
        cr_assert_neq(m.slots[clusters[r] / 2], 0); /* the cluster runs from slot 0 */
        while (m.mask + 1 == cap)
            cmt__map_insert(&m, (filler++) << 40)->kind = 1;
        index_is_sound(&m);
        for (size_t i = 0; i < n; i++)
            cr_assert_not_null(cmt__map_find(&m, keys[i]), "cluster key %zu", i);
        for (uint64_t f = 1; f < filler; f++)
            cr_assert_not_null(cmt__map_find(&m, f << 40));
        cmt__map_free(&m);
    }
}

/* Issue 26: at most 64 B per live object, growth included. The index doubles when count
 * reaches limit, in place: at that moment the entries and the new index (twice the old one)
 * are held, and no old index beside it; entries past count are faulted in only a little
 * ahead. */
Test(replay_map, at_most_64_bytes_per_live_object_at_every_doubling)
{
    cr_assert_eq(sizeof(struct cmt__entry), 48);
    struct cmt__map m = {0};
    int populated = 0;
    for (uint64_t k = 1; k <= 200000; k++) {
        if (m.count == m.limit && m.slots) {
            size_t old_slots = m.mask + 1;
            double peak = (double)m.count * sizeof *m.entries + 2.0 * old_slots * sizeof *m.slots;
            cr_assert_leq(peak / (double)m.count, 59.0, "count %zu", m.count);
        }
        struct cmt__entry *e = cmt__map_insert(&m, k * 512);
        cr_assert_not_null(e);
        e->kind = 1;
        /* large entries are faulted in ahead of count, 2 MiB (and a page) at most */
        cr_assert_leq(m.ready, m.limit);
        if (m.ready < m.limit) {
            populated = 1;
            cr_assert_leq((m.ready - m.count) * sizeof *m.entries, (2u << 20) + 4096, "count %zu",
                          m.count);
        }
        if (k % 1000 == 0) /* and every key is still found across the doublings */
            for (uint64_t j = k - 999; j <= k; j += 111)
                cr_assert_not_null(cmt__map_find(&m, j * 512), "key %llu", (unsigned long long)j);
    }
    cr_assert_leq((double)(m.mask + 1) * sizeof *m.slots / (double)m.count, 16.0);
#ifdef MADV_POPULATE_WRITE
    void *probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(probe, MAP_FAILED);
    if (madvise(probe, 4096, MADV_POPULATE_WRITE) == 0) /* the kernel has it (Linux 5.14) */
        cr_assert(populated, "9.4 MB of entries, faulted in a range at a time");
    munmap(probe, 4096);
#endif
    (void)populated;
    cmt__map_free(&m);
}
