/* replay_map.c — the dense map's growth, removal and freeing (find and insert are inline in
 * replay_map.h). */
#include "replay_map.h"

#include <stdlib.h>
#include <string.h>

#define MIN_SLOTS 1024
#define MAX_INDEX_BITS 31 /* an entry index + 1 and a tag of at least one bit in 32 */
#define REHASH_AHEAD 16   /* entries whose homes a rehash prefetches ahead of the one it places */

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
    /* the index is rebuilt from the entries, so the old one is not kept beside the new: it
     * grows in place (realloc moves a large one by remapping its pages) and starts empty */
    uint32_t *slots = realloc(m->slots, cap * sizeof *slots);
    if (!slots)
        return -1;
    memset(slots, 0, cap * sizeof *slots);
    struct cmt__map n = {entries,  slots,   cap - 1,
                         m->count, limit,   64 - bits,
                         bits,     m->near, m->near && bits >= m->near};
    for (size_t k = 0; k < m->count; k++) { /* keys are unique: no entry is read but its own */
        if (k + REHASH_AHEAD < m->count)    /* a home past the caches is a miss: start it early */
            __builtin_prefetch(&slots[cmt__map_home(&n, entries[k + REHASH_AHEAD].key)], 1);
        size_t i = cmt__map_home(&n, entries[k].key);
        while (slots[i])
            i = (i + 1) & n.mask;
        slots[i] = cmt__map_tag(&n, entries[k].key) | (uint32_t)(k + 1);
    }
    *m = n;
    return 0;
}

void cmt__map_remove(struct cmt__map *m, struct cmt__entry *e)
{
    size_t idx = (size_t)(e - m->entries);
    cmt__map_remove_at(m, e,
                       cmt__map_slot_of(m, e->key, cmt__map_tag(m, e->key) | (uint32_t)(idx + 1)));
}

void cmt__map_free(struct cmt__map *m)
{
    free(m->entries);
    free(m->slots);
    *m = (struct cmt__map){0};
}
