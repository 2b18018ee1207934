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

/* The home in n (twice m's size) of the key in m's slot s at i, and *tag its tag there: the
 * slot's home is its place less its distance, and the home's next bit is its tag's top bit,
 * so the entry is not read (but for a distance past the field). */
static size_t next_home(const struct cmt__map *n, const struct cmt__map *m, size_t i, uint32_t s,
                        uint32_t *tag)
{
    uint32_t dist = (s >> m->index_bits) & m->dist_max;
    if (dist == m->dist_max) {
        uint64_t key = m->entries[(s & (uint32_t)m->mask) - 1].key;
        *tag = cmt__map_tag(n, key);
        return cmt__map_home(n, key);
    }
    *tag = (s & m->tag_mask) << 1 & n->tag_mask;
    size_t home = (i - dist) & m->mask, next = s >> 31;
    if (!n->near_on)
        return home << 1 | next;
    return (home >> CMT__MAP_NEAR_WINDOW) << (CMT__MAP_NEAR_WINDOW + 1) |
           next << CMT__MAP_NEAR_WINDOW | (home & ((1u << CMT__MAP_NEAR_WINDOW) - 1));
}

#define AHEAD 64 /* slots ahead of the one it reads whose new places a redistribution prefetches */

/* Prefetches where the slots at old place j go in n: about 2j, or for near homes the two
 * halves of j's window split in two. Inline: a call of it, having no effect, is dropped. */
static inline __attribute__((always_inline)) void prefetch_homes(const struct cmt__map *n, size_t j)
{
    if (!n->near_on) {
        __builtin_prefetch(&n->slots[2 * j], 1);
        return;
    }
    size_t lo = (j >> CMT__MAP_NEAR_WINDOW) << (CMT__MAP_NEAR_WINDOW + 1) |
                (j & ((1u << CMT__MAP_NEAR_WINDOW) - 1));
    __builtin_prefetch(&n->slots[lo], 1);
    __builtin_prefetch(&n->slots[lo + (1u << CMT__MAP_NEAR_WINDOW)], 1);
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

#define DEFERRED 1024 /* slots a redistribution may set aside (past them: a rebuild) */

/* Redistributes m's slots, the first half of n's index (the second empty), in place and from
 * the last down: a home in n is about twice the one in m, so each goes above the slots still
 * to be read. One that would land at or below them (at the start, or wrapping past the end)
 * waits in a buffer until they are read. @return 0, or -1 when the buffer filled (n's index is
 * then in no order: the caller rebuilds it). */
static int redistribute(struct cmt__map *n, const struct cmt__map *m)
{
    uint32_t deferred[DEFERRED], tags[DEFERRED];
    size_t homes[DEFERRED], waiting = 0;
    uint32_t *slots = n->slots, index_mask = (uint32_t)m->mask;
    for (size_t j = m->mask + 1; j-- > 0;) {
        if ((j & 15) == 0 && j >= AHEAD) /* the lines the slots a line ahead will go to */
            prefetch_homes(n, j - AHEAD);
        uint32_t s = slots[j], tag;
        if (!s)
            continue;
        slots[j] = 0;
        size_t home = next_home(n, m, j, s, &tag), i = home;
        while (i > j && slots[i])
            i = (i + 1) & n->mask;
        if (i > j)
            put(n, i, home, tag, s & index_mask);
        else if (waiting == DEFERRED)
            return -1;
        else {
            deferred[waiting] = s & index_mask;
            tags[waiting] = tag;
            homes[waiting++] = home;
        }
    }
    for (size_t k = 0; k < waiting; k++)
        place(n, homes[k], tags[k], deferred[k]);
    return 0;
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
