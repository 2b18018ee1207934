/* replay_map.c — the dense map's growth, removal and freeing (find and insert are inline in
 * replay_map.h). */
#include "replay_map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIN_SLOTS 1024
#define MAX_INDEX_BITS 31 /* an entry index + 1 and a tag of at least one bit in 32 */
#define REHASH_AHEAD 16   /* entries whose homes a rehash prefetches ahead of the one it places */

/* The layout of an index of 2^bits slots over m's entries (slots not set). */
static struct cmt__map layout(const struct cmt__map *m, unsigned bits)
{
    size_t cap = (size_t)1 << bits;
    int near_on = m->near && bits >= m->near && bits > CMT__MAP_NEAR_WINDOW;
    unsigned spread = near_on ? bits - CMT__MAP_NEAR_WINDOW : bits;
    unsigned dist = 31 - bits < CMT__MAP_DIST_BITS ? 31 - bits : CMT__MAP_DIST_BITS;
    return (struct cmt__map){.entries = m->entries,
                             .mask = cap - 1,
                             .count = m->count,
                             .limit = cap / 4 * 3,
                             .shift = 64 - spread,
                             .index_bits = bits,
                             .tag_shift = 32 - spread,
                             .dist_bits = dist,
                             .dist_max = (1u << dist) - 1,
                             .dist_unit = 1u << bits,
                             .tag_mask = ~0u << (bits + dist),
                             .near = m->near,
                             .near_on = near_on};
}

/* Writes entry index + 1 `value` with tag `tag` at the free slot i, from its home. */
static void put(struct cmt__map *n, size_t i, size_t home, uint32_t tag, uint32_t value)
{
    size_t dist = (i - home) & n->mask, dist_max = n->dist_max;
    n->slots[i] = tag | (uint32_t)(dist < dist_max ? dist : dist_max) << n->index_bits | value;
}

/* Puts entry index + 1 `value` with tag `tag` in the first free slot from home. */
static void place(struct cmt__map *n, size_t home, uint32_t tag, uint32_t value)
{
    size_t i = home;
    while (n->slots[i])
        i = (i + 1) & n->mask;
    put(n, i, home, tag, value);
}

/* Fills n's empty index from the entries (the first index, or one whose homes the old index
 * cannot give: near homes start, or the distance field narrows). */
static void rebuild(struct cmt__map *n)
{
    const struct cmt__entry *entries = n->entries;
    for (size_t k = 0; k < n->count; k++) {
        if (k + REHASH_AHEAD < n->count) /* a home past the caches is a miss: start it early */
            __builtin_prefetch(&n->slots[cmt__map_home(n, entries[k + REHASH_AHEAD].key)], 1);
        place(n, cmt__map_home(n, entries[k].key), cmt__map_tag(n, entries[k].key),
              (uint32_t)(k + 1));
    }
}

#define READY_BYTES (2u << 20) /* entries faulted in at a time, where they take 8 MiB or more */

/* Faults in the entries from count on, READY_BYTES at a time, in one call: issue 26's 10M live
 * objects are 480 MB of entries, a page fault per 4 KiB written, and the kernel makes a
 * range ready for less than the faults cost (MADV_POPULATE_WRITE, Linux 5.14; elsewhere the
 * pages fault in as they are written). Sets ready. */
static void make_ready(struct cmt__map *m)
{
    m->ready = m->limit;
#ifdef MADV_POPULATE_WRITE
    if (m->limit * sizeof *m->entries < 4 * READY_BYTES)
        return;
    uintptr_t lo = (uintptr_t)(m->entries + m->count), page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t hi = ((lo + READY_BYTES) & ~(page - 1)), end = (uintptr_t)(m->entries + m->limit);
    if (hi >= end)
        return;
    lo = (lo + page - 1) & ~(page - 1);
    if (hi > lo && madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) == 0)
        m->ready = (hi - (uintptr_t)m->entries) / sizeof *m->entries;
#endif
}

/* The home in n, twice m's size, of the slot at i whose home in m is `home`, its tag's top
 * bit `next`: twice the home, or for near homes (near) the window split in two, the offset in
 * it kept. */
static inline __attribute__((always_inline)) size_t split_home(size_t home, size_t next, int near)
{
    if (!near)
        return home << 1 | next;
    return (home >> CMT__MAP_NEAR_WINDOW) << (CMT__MAP_NEAR_WINDOW + 1) |
           next << CMT__MAP_NEAR_WINDOW | (home & ((1u << CMT__MAP_NEAR_WINDOW) - 1));
}

#define AHEAD 64 /* slots ahead of the one it reads whose new places a redistribution prefetches */
#define LINE 16  /* slots in a cache line */
#define DEFERRED 1024 /* slots a redistribution may set aside (past them: a rebuild) */

/* Redistributes m's slots, the first half of n's index (the second empty), in place and from
 * the last down: a slot's home is its place less its distance, and its home in n that home
 * split by its tag's top bit (no entry read, but for a distance past the field), about twice
 * its place, so each goes above the slots still to be read. One that would land at or below
 * them (at the start, or wrapping past the end) waits in a buffer until they are read.
 * Inline for near constant: the loop is most of a doubling's instructions. @return 0, or -1
 * when the buffer filled (n's index is then in no order: the caller rebuilds it). */
static inline __attribute__((always_inline)) int redistribute_as(struct cmt__map *n,
                                                                 const struct cmt__map *m, int near)
{
    uint32_t deferred[DEFERRED], tags[DEFERRED];
    size_t homes[DEFERRED], waiting = 0;
    uint32_t *slots = n->slots, index_mask = (uint32_t)m->mask, tag_mask = m->tag_mask;
    uint32_t dist_max = m->dist_max, new_dist_max = n->dist_max;
    unsigned bits = m->index_bits, new_bits = n->index_bits;
    size_t mask = m->mask, new_mask = n->mask;
    for (size_t line = mask + 1; line > 0; line -= LINE) {
        if (line >= AHEAD + LINE) /* the lines the slots AHEAD below this line go to */
            for (size_t half = 0; half <= (size_t)near; half++)
                __builtin_prefetch(&slots[split_home(line - LINE - AHEAD, half, near)], 1);
        for (size_t j = line; j-- > line - LINE;) {
            uint32_t s = slots[j];
            if (!s)
                continue;
            slots[j] = 0;
            uint32_t tag = (s & tag_mask) << 1, dist = (s >> bits) & dist_max;
            size_t home = split_home((j - dist) & mask, s >> 31, near), i;
            if (__builtin_expect(dist == dist_max, 0)) { /* past the field: the key says */
                uint64_t key = m->entries[(s & index_mask) - 1].key;
                home = cmt__map_home(n, key);
                tag = cmt__map_tag(n, key);
            }
            for (i = home; i > j && slots[i];)
                i = (i + 1) & new_mask;
            if (i > j) {
                size_t d = (i - home) & new_mask;
                slots[i] = tag | (uint32_t)(d < new_dist_max ? d : new_dist_max) << new_bits |
                           (s & index_mask);
            } else if (waiting == DEFERRED)
                return -1;
            else {
                deferred[waiting] = s & index_mask;
                tags[waiting] = tag;
                homes[waiting++] = home;
            }
        }
    }
    for (size_t k = 0; k < waiting; k++)
        place(n, homes[k], tags[k], deferred[k]);
    return 0;
}

static int redistribute(struct cmt__map *n, const struct cmt__map *m)
{
    return n->near_on ? redistribute_as(n, m, 1) : redistribute_as(n, m, 0);
}

int cmt__map_grow(struct cmt__map *m)
{
    if (m->slots && m->count < m->limit) { /* the entries are ready only so far */
        make_ready(m);
        return 0;
    }
    unsigned bits = m->slots ? m->index_bits + 1 : (unsigned)__builtin_ctz(MIN_SLOTS);
    if (bits > MAX_INDEX_BITS)
        return -1;
    struct cmt__map n = layout(m, bits);
    /* entries first: realloc keeps them (and the map) intact when it fails */
    struct cmt__entry *entries = realloc(m->entries, n.limit * sizeof *entries);
    if (!entries)
        return -1;
    m->entries = n.entries = entries;
    /* the index grows in place (realloc moves a large one by remapping its pages) */
    size_t bytes = (n.mask + 1) * sizeof *n.slots,
           old = m->slots ? (m->mask + 1) * sizeof *n.slots : 0;
    if (!(n.slots = realloc(m->slots, bytes)))
        return -1;
    int derivable = old && n.near_on == m->near_on && n.dist_bits == m->dist_bits;
    memset((char *)n.slots + (derivable ? old : 0), 0, bytes - (derivable ? old : 0));
    if (derivable) {
        m->slots = n.slots;
        derivable = redistribute(&n, m) == 0;
        if (!derivable)
            memset(n.slots, 0, bytes);
    }
    if (!derivable)
        rebuild(&n);
    *m = n;
    make_ready(m);
    return 0;
}

void cmt__map_remove(struct cmt__map *m, struct cmt__entry *e)
{
    size_t idx = (size_t)(e - m->entries);
    cmt__map_remove_at(m, e, cmt__map_slot_of(m, e->key, (uint32_t)(idx + 1)));
}

void cmt__map_free(struct cmt__map *m)
{
    free(m->entries);
    free(m->slots);
    *m = (struct cmt__map){0};
}
