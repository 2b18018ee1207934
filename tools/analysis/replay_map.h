/* replay_map.h — internal: a hash map from a 64-bit key to a fixed entry, dense.
 *
 * Two arrays. The entries themselves are dense: entries[0 .. count) are the live ones, in no
 * order (iterate them so; a removal moves the last entry into the hole). The index is an
 * open-addressing table of 4-byte slots, linear probing with backward-shift deletion (no
 * tombstones), so a long replay with millions of allocate/free pairs never degrades and never
 * allocates per event. A slot holds the entry's index + 1 in its low index_bits bits (0 =
 * empty), above them its distance from its home (dist_bits, 4 below 2^28 slots; a distance
 * of 15 or more reads as 15 and its entry's key gives the rest), and above that a tag: the
 * hash bits just below those that chose the home slot, so a probe passes other keys without
 * reading their entries. Fibonacci hashing (the product's top bits) spreads addresses that
 * differ only in high or aligned bits. The distance lets a removal shift the slots after it
 * back, and a doubling place each slot anew (its home: its place less its distance, and one
 * bit more from its tag), without reading their entries: at 10M live objects the entries are
 * 480 MB, and the index's rebuild from them at each doubling read 48 B per 4-B slot (14% of
 * `report`'s time).
 *
 * Memory per live object (issue 26): an entry (48 B) plus 4 / load B of index; the load stays
 * under 3/4, so the index is 5.3 to 10.7 B per object, and 10.7 B at the moment it doubles:
 * the index grows in place (2 x 4 B per slot of the old at load 3/4; with the old kept beside
 * the new it was 16 B). Both arrays grow by realloc, which moves large arrays by remapping
 * pages, so the entries' capacity past count costs no RSS. Hence at most 59 B per live
 * object, growth included (48 + 10.7); the 48-B-entry table it replaced (load under 1/2, old
 * + new during a doubling) peaked at 239 B.
 * The hot operations are inline. */
#ifndef CMT__REPLAY_MAP_H
#define CMT__REPLAY_MAP_H

#include <stddef.h>
#include <stdint.h>

/* One tracked object: an allocation, a physical handle, a reservation, a mapping or a pool. */
struct cmt__entry {
    uint64_t key;  /* address, handle or pool */
    uint64_t size; /* bytes */
    uint64_t aux;  /* handle of a mapping, pool of an async allocation, mapped bytes of a VA */
    uint64_t seq;  /* seq of the call that created it */
    uint32_t site; /* index into the call-site table */
    int32_t dev;
    uint32_t object; /* dense id of a device or host allocation (CMT_NO_OBJECT otherwise) */
    uint16_t refs;   /* VMM handles: references (create/retain/import minus releases) */
    uint8_t kind;    /* enum cmt_kind + 1 (the caller sets it; an entry never keeps 0) */
    uint8_t maps;    /* VMM handles: live mappings (saturates at 255) */
};

struct cmt__map {
    struct cmt__entry *entries; /* dense: entries[0 .. count) */
    uint32_t *slots;            /* the index: tag | dist << index_bits | (entry index + 1), 0 =
                                 * empty */
    size_t mask;                /* slot capacity - 1 (capacity is a power of two, or 0) */
    size_t count;
    size_t limit;        /* count past which the index doubles (3/4 of its capacity) */
    size_t ready;        /* count up to which inserts need not grow (limit, or the entries
                          * faulted in so far where they are large) */
    unsigned shift;      /* 64 - spread_bits: Fibonacci hashing takes the product's top bits */
    unsigned index_bits; /* log2(slot capacity) */
    unsigned tag_shift;  /* 32 - the hash bits that choose the home (near: index_bits - 9) */
    unsigned dist_bits;  /* bits of a slot's distance from its home (saturating) */
    uint32_t dist_max;   /* the largest distance the field holds (2^dist_bits - 1) */
    uint32_t dist_unit;  /* a distance of 1 in the field (1 << index_bits) */
    uint32_t tag_mask;   /* a slot's tag bits: those above index_bits + dist_bits */
    unsigned near;       /* keys are addresses: near ones get near homes from 2^near slots on
                           * (0: never; CMT__MAP_NEAR_MIN_BITS in the replay; set before use) */
    int near_on;         /* near homes in use (index_bits >= near) */
};

#define CMT__MAP_GOLDEN UINT64_C(0x9E3779B97F4A7C15)
#define CMT__MAP_DIST_BITS 4 /* a slot's distance field, where the index leaves room for it */

/* Addresses (near set): the keys of one 256-KiB page share a window of 512 slots, at their
 * 512-B offset in it, the window chosen by the page's hash. An allocator hands out addresses
 * near the ones before, so a run of inserts touches a few cache lines of the index instead of
 * one random line each (issue 26: at 10M live objects the index is 64 MB and a random home is
 * a cache and TLB miss per insert); keys 2 MiB apart, or random, hash as before. Pages packed
 * with 512-B allocations probe further (measured at load 0.72 with windows at any slot: 18
 * slots on average, 64 at most, against 0.5 with hashed homes; 64-KiB pages: 5 and 128 but
 * report over 10M live objects x1.73 heaptrack_print where 256 KiB gives x1.36; 1 MiB x1.26
 * but 48 and 2048). The windows are aligned (the page hash's top index_bits - 9 bits number
 * them), so a doubling splits each in two by the next hash bit, as it does a hashed home.
 * Only an index past the caches uses them (from 2^near slots): a smaller one's misses cost
 * little and hashed homes probe least (churn's 2048 live buffers from pools: timeline 0.23 s
 * with hashed homes, 0.27 s with near ones). */
#define CMT__MAP_NEAR_MIN_BITS 20 /* 2^20 slots: 4 MiB of index, 786,432 objects */
#define CMT__MAP_NEAR_PAGE 18     /* log2 bytes of a page */
#define CMT__MAP_NEAR_GRAIN 9     /* log2 bytes of a slot's share of it */
#define CMT__MAP_NEAR_WINDOW (CMT__MAP_NEAR_PAGE - CMT__MAP_NEAR_GRAIN) /* log2 slots of one */

/* The hash whose top bits choose key's home and whose next bits are its tag. */
static inline __attribute__((always_inline)) uint64_t cmt__map_spread(const struct cmt__map *m,
                                                                      uint64_t key)
{
    return (m->near_on ? key >> CMT__MAP_NEAR_PAGE : key) * CMT__MAP_GOLDEN;
}

static inline __attribute__((always_inline)) size_t cmt__map_home(const struct cmt__map *m,
                                                                  uint64_t key)
{
    size_t top = (size_t)(cmt__map_spread(m, key) >> m->shift);
    if (!m->near_on)
        return top;
    return top << CMT__MAP_NEAR_WINDOW |
           ((size_t)(key >> CMT__MAP_NEAR_GRAIN) & ((1u << CMT__MAP_NEAR_WINDOW) - 1));
}

/* The tag of key, in a slot's tag bits: the hash bits just below those that chose the home,
 * so that a doubling takes the home's next bit from the tag (no entry is read). */
static inline __attribute__((always_inline)) uint32_t cmt__map_tag(const struct cmt__map *m,
                                                                   uint64_t key)
{
    return (uint32_t)(cmt__map_spread(m, key) >> m->tag_shift) & m->tag_mask;
}

/* The probe for key from its home (the index must exist); a slot whose tag is not key's is
 * passed without reading its entry. @return its entry, or NULL with *empty the slot where the
 * probe ended, where key would go, and *upper the bits above the index it would hold there
 * (its tag and distance). */
static inline __attribute__((always_inline)) struct cmt__entry *cmt__map_probe(
    const struct cmt__map *m, uint64_t key, size_t *empty, uint32_t *upper)
{
    size_t home = cmt__map_home(m, key), i = home;
    uint32_t index_mask = (uint32_t)m->mask, tag = cmt__map_tag(m, key);
    for (;; i = (i + 1) & m->mask) {
        uint32_t s = m->slots[i];
        if (!s) {
            size_t dist = (i - home) & m->mask;
            *empty = i;
            *upper = tag | (uint32_t)(dist < m->dist_max ? dist : m->dist_max) << m->index_bits;
            return NULL;
        }
        if ((s & m->tag_mask) == tag && m->entries[(s & index_mask) - 1].key == key) {
            *empty = i;
            return &m->entries[(s & index_mask) - 1];
        }
    }
}

/* @return the entry for key, or NULL. */
static inline struct cmt__entry *cmt__map_find(const struct cmt__map *m, uint64_t key)
{
    if (__builtin_expect(!m->slots, 0))
        return NULL;
    size_t at;
    uint32_t upper;
    return cmt__map_probe(m, key, &at, &upper);
}

/* @return the entry for key with *at its slot (for cmt__map_remove_at), or NULL. */
static inline __attribute__((always_inline)) struct cmt__entry *cmt__map_find_at(
    const struct cmt__map *m, uint64_t key, size_t *at)
{
    if (__builtin_expect(!m->slots, 0))
        return NULL;
    uint32_t upper;
    return cmt__map_probe(m, key, at, &upper);
}

/* Doubles the index (or creates it) and makes room for its entries, or (count under limit)
 * faults in the next entries. @return 0, or -1 when out of memory (the map is unchanged). */
int cmt__map_grow(struct cmt__map *m);

/* Inserts (or finds) key. @return the entry (kind 0 when new: the caller fills it, kind
 * included, or removes it), or NULL when the map cannot grow. Pointers into the map become
 * stale. */
static inline struct cmt__entry *cmt__map_insert(struct cmt__map *m, uint64_t key)
{
    if (__builtin_expect(m->count >= m->ready, 0))
        if (cmt__map_grow(m) != 0)
            return NULL;
    size_t i;
    uint32_t upper;
    struct cmt__entry *e = cmt__map_probe(m, key, &i, &upper);
    if (e)
        return e;
    m->slots[i] = upper | (uint32_t)(m->count + 1);
    e = &m->entries[m->count++];
    *e = (struct cmt__entry){.key = key};
    return e;
}

/* The slot that holds entry index + 1 `value`, probing from key's home. */
static inline __attribute__((always_inline)) size_t cmt__map_slot_of(const struct cmt__map *m,
                                                                     uint64_t key, uint32_t value)
{
    size_t i = cmt__map_home(m, key);
    while ((m->slots[i] & (uint32_t)m->mask) != value)
        i = (i + 1) & m->mask;
    return i;
}

/* Removes an entry found by cmt__map_find_at at slot `at`, with no second probe: the slots
 * after it shift back (backward-shift deletion, each slot's distance says whether it may, an
 * entry read only for a distance past the field), and the last entry moves into its place, so
 * pointers into the map become stale (an iteration over entries[] that removes stays at the
 * index). Inline: the replay frees through it once per free. */
static inline __attribute__((always_inline)) void cmt__map_remove_at(struct cmt__map *m,
                                                                     struct cmt__entry *e, size_t i)
{
    uint32_t index_mask = (uint32_t)m->mask, dist_max = m->dist_max;
    unsigned bits = m->index_bits;
    size_t idx = (size_t)(e - m->entries), mask = m->mask;
    uint32_t *slots = m->slots;
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        uint32_t s = slots[j];
        if (!s)
            break;
        size_t dist = (s >> bits) & dist_max, gap = (j - i) & mask;
        if (dist == dist_max)
            dist = (j - cmt__map_home(m, m->entries[(s & index_mask) - 1].key)) & mask;
        if (dist >= gap) { /* its home is not in (i, j]: it moves back into the hole at i */
            dist -= gap;
            uint32_t field = (uint32_t)(dist < dist_max ? dist : dist_max) << bits;
            slots[i] = (s & ~(dist_max << bits)) | field;
            i = j;
        }
    }
    slots[i] = 0;
    size_t last = --m->count;
    if (idx != last) { /* the last entry fills the hole; its slot follows it */
        const struct cmt__entry *l = &m->entries[last];
        size_t at = cmt__map_slot_of(m, l->key, (uint32_t)(last + 1));
        slots[at] = (slots[at] & ~index_mask) | (uint32_t)(idx + 1);
        *e = *l;
    }
}

/* Removes an entry returned by find/insert, as cmt__map_remove_at does. */
void cmt__map_remove(struct cmt__map *m, struct cmt__entry *e);

void cmt__map_free(struct cmt__map *m);

#endif
