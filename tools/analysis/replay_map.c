/* replay_map.c — the dense map's growth, removal and freeing (find and insert are inline in
 * replay_map.h). */
#include "replay_map.h"

#include <stdlib.h>

#define MIN_SLOTS 1024
#define MAX_INDEX_BITS 31 /* an entry index + 1 and a tag of at least one bit in 32 */

/* The slot holding exactly value, probing from key's home. */
static size_t slot_of(const struct cmt__map *m, uint64_t key, uint32_t value)
{
    size_t i = cmt__map_home(m, key);
    while (m->slots[i] != value)
        i = (i + 1) & m->mask;
    return i;
}

int cmt__map_grow(struct cmt__map *m)
{
    size_t cap = m->slots ? (m->mask + 1) * 2 : MIN_SLOTS;
    unsigned bits = (unsigned)__builtin_ctzll(cap);
    if (bits > MAX_INDEX_BITS)
        return -1;
    size_t limit = cap / 4 * 3;
    /* entries first: realloc keeps them (and the map) intact when it fails */
    struct cmt__entry *entries = realloc(m->entries, limit * sizeof *entries);
    if (!entries)
        return -1;
    m->entries = entries;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    struct cmt__map n = {entries,  slots,   cap - 1,
                         m->count, limit,   64 - bits,
                         bits,     m->near, m->near && bits >= m->near};
    for (size_t k = 0; k < m->count; k++) { /* keys are unique: no entry is read but its own */
        size_t i = cmt__map_home(&n, entries[k].key);
        while (slots[i])
            i = (i + 1) & n.mask;
        slots[i] = cmt__map_tag(&n, entries[k].key) | (uint32_t)(k + 1);
    }
    free(m->slots);
    *m = n;
    return 0;
}

void cmt__map_remove(struct cmt__map *m, struct cmt__entry *e)
{
    size_t idx = (size_t)(e - m->entries);
    cmt__map_remove_at(m, e, slot_of(m, e->key, cmt__map_tag(m, e->key) | (uint32_t)(idx + 1)));
}

void cmt__map_remove_at(struct cmt__map *m, struct cmt__entry *e, size_t i)
{
    uint32_t index_mask = (uint32_t)m->mask;
    size_t idx = (size_t)(e - m->entries), mask = m->mask;
    uint32_t *slots = m->slots;
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        uint32_t s = slots[j];
        if (!s)
            break;
        size_t h = cmt__map_home(m, m->entries[(s & index_mask) - 1].key);
        /* move j back into the hole at i unless its home lies cyclically in (i, j] */
        if (((j - h) & mask) >= ((j - i) & mask)) {
            slots[i] = s;
            i = j;
        }
    }
    slots[i] = 0;
    size_t last = m->count - 1;
    if (idx != last) { /* the last entry fills the hole; its slot follows it */
        const struct cmt__entry *l = &m->entries[last];
        uint32_t tag = cmt__map_tag(m, l->key);
        slots[slot_of(m, l->key, tag | (uint32_t)(last + 1))] = tag | (uint32_t)(idx + 1);
        m->entries[idx] = *l;
    }
    m->count--;
}

void cmt__map_free(struct cmt__map *m)
{
    free(m->entries);
    free(m->slots);
    *m = (struct cmt__map){0};
}
