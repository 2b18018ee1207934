/* replay_map.c — open addressing with linear probing and backward-shift deletion. */
#include "replay_map.h"

#include <stdlib.h>

static inline size_t home(const struct cmt__map *m, uint64_t key)
{
    return (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> m->shift);
}

static int grow(struct cmt__map *m)
{
    size_t cap = m->slots ? (m->mask + 1) * 2 : 1024;
    struct cmt__entry *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    struct cmt__map n = {slots, cap - 1, 0, (unsigned)__builtin_clzll(cap) + 1};
    if (m->slots) {
        for (size_t i = 0; i <= m->mask; i++) {
            if (!m->slots[i].kind)
                continue;
            size_t j = home(&n, m->slots[i].key);
            while (slots[j].kind)
                j = (j + 1) & n.mask;
            slots[j] = m->slots[i];
        }
    }
    n.count = m->count;
    free(m->slots);
    *m = n;
    return 0;
}

struct cmt__entry *cmt__map_insert(struct cmt__map *m, uint64_t key)
{
    /* keep the load under 1/2: probes stay short even for clustered addresses */
    if (!m->slots || (m->count + 1) * 2 > m->mask + 1)
        if (grow(m) != 0)
            return NULL;
    size_t i = home(m, key);
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

void cmt__map_remove(struct cmt__map *m, struct cmt__entry *e)
{
    size_t i = (size_t)(e - m->slots);
    size_t j = i;
    for (;;) {
        j = (j + 1) & m->mask;
        if (!m->slots[j].kind)
            break;
        size_t h = home(m, m->slots[j].key);
        /* move j back into the hole at i unless its home lies cyclically in (i, j] */
        if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].kind = 0;
    m->count--;
}

void cmt__map_free(struct cmt__map *m)
{
    free(m->slots);
    *m = (struct cmt__map){0};
}
