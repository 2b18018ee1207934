/* replay_map.c — open addressing with linear probing: growing and freeing (the hot
 * operations are inline in replay_map.h). */
#include "replay_map.h"

#include <stdlib.h>

int cmt__map_grow(struct cmt__map *m)
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
            size_t j = cmt__map_home(&n, m->slots[i].key);
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

void cmt__map_free(struct cmt__map *m)
{
    free(m->slots);
    *m = (struct cmt__map){0};
}
