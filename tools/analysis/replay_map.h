/* replay_map.h — internal: an open-addressing hash map from a 64-bit key to a fixed entry.
 *
 * Linear probing with backward-shift deletion (no tombstones), so a long replay with millions
 * of allocate/free pairs never degrades and never allocates per event: the table only grows
 * (doubling) when the live set grows. Fibonacci hashing (the product's top bits) spreads
 * addresses that differ only in high or aligned bits; the load stays under 1/2, so a probe
 * touches one or two cache lines. The hot operations are inline. An entry with kind 0 is
 * empty. */
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
    uint8_t kind;    /* enum cmt_kind + 1; 0 = empty slot */
    uint8_t maps;    /* VMM handles: live mappings (saturates at 255) */
};

struct cmt__map {
    struct cmt__entry *slots;
    size_t mask; /* capacity - 1 (capacity is a power of two, or 0) */
    size_t count;
    unsigned shift; /* 64 - log2(capacity): Fibonacci hashing takes the product's top bits */
};

static inline size_t cmt__map_home(const struct cmt__map *m, uint64_t key)
{
    return (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> m->shift);
}

/* @return the entry for key, or NULL. */
static inline struct cmt__entry *cmt__map_find(const struct cmt__map *m, uint64_t key)
{
    if (__builtin_expect(!m->slots, 0))
        return NULL;
    size_t i = cmt__map_home(m, key);
    for (;;) {
        struct cmt__entry *e = &m->slots[i];
        if (e->key == key && e->kind)
            return e;
        if (!e->kind)
            return NULL;
        i = (i + 1) & m->mask;
    }
}

/* Doubles the table (or creates it). @return 0 or -1 when out of memory. */
int cmt__map_grow(struct cmt__map *m);

/* Inserts (or finds) key. @return the entry (kind 0 when new: the caller fills it), or NULL
 * when the table cannot grow. */
static inline struct cmt__entry *cmt__map_insert(struct cmt__map *m, uint64_t key)
{
    /* keep the load under 1/2: probes stay short even for clustered addresses */
    if (__builtin_expect(!m->slots || (m->count + 1) * 2 > m->mask + 1, 0))
        if (cmt__map_grow(m) != 0)
            return NULL;
    size_t i = cmt__map_home(m, key);
    for (;;) {
        struct cmt__entry *e = &m->slots[i];
        if (!e->kind) {
            *e = (struct cmt__entry){.key = key};
            m->count++;
            return e;
        }
        if (e->key == key)
            return e;
        i = (i + 1) & m->mask;
    }
}

/* Removes an entry returned by find/insert (pointers into the table become stale). */
static inline void cmt__map_remove(struct cmt__map *m, struct cmt__entry *e)
{
    struct cmt__entry *slots = m->slots;
    size_t mask = m->mask;
    size_t i = (size_t)(e - slots);
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!slots[j].kind)
            break;
        size_t h = cmt__map_home(m, slots[j].key);
        /* move j back into the hole at i unless its home lies cyclically in (i, j] */
        if (((j - h) & mask) >= ((j - i) & mask)) {
            slots[i] = slots[j];
            i = j;
        }
    }
    slots[i].kind = 0;
    m->count--;
}

void cmt__map_free(struct cmt__map *m);

#endif
