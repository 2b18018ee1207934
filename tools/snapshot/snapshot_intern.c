/* snapshot_intern.c — the parser's interning tables (snapshot_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_grow.h"
#include "snapshot.h"
#include "snapshot_internal.h"

static size_t hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static size_t hash_ptr(const void *p)
{
    return hash64((uint64_t)(uintptr_t)p);
}

static uint64_t hash_bytes(const char *s, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

/* ---- the map of uint64_t ---- */

uint64_t *cmt__u64_map_find(const struct cmt__u64_map *m, uint64_t key)
{
    if (!m->cap || !key)
        return NULL;
    for (size_t i = hash64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key)
            return &m->values[i];
        if (!m->keys[i])
            return NULL;
    }
}

int cmt__u64_map_put(struct cmt__u64_map *m, uint64_t key, uint64_t value)
{
    if (!key)
        return 0;
    if ((m->count + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        struct cmt__u64_map g = {calloc(cap, sizeof(uint64_t)), malloc(cap * sizeof(uint64_t)), cap,
                                 0};
        if (!g.keys || !g.values) {
            cmt__u64_map_free(&g);
            return CMT_ENOMEM;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i])
                cmt__u64_map_put(&g, m->keys[i], m->values[i]);
        cmt__u64_map_free(m);
        *m = g;
    }
    size_t i = hash64(key) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->keys[i])
        m->count++;
    m->keys[i] = key;
    m->values[i] = value;
    return 0;
}

/* Deletion with backward shift, so that probing stays correct without tombstones. */
void cmt__u64_map_remove(struct cmt__u64_map *m, uint64_t key)
{
    if (!m->cap || !key)
        return;
    size_t mask = m->cap - 1, i = hash64(key) & mask;
    while (m->keys[i] != key) {
        if (!m->keys[i])
            return;
        i = (i + 1) & mask;
    }
    m->count--;
    for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
        size_t home = hash64(m->keys[j]) & mask;
        /* move j back into the hole at i when its home does not lie in (i, j] */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            m->keys[i] = m->keys[j];
            m->values[i] = m->values[j];
            i = j;
        }
    }
    m->keys[i] = 0;
}

void cmt__u64_map_free(struct cmt__u64_map *m)
{
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

/* ---- string pool ---- */

struct pool_block {
    struct pool_block *next;
    size_t used, cap;
    char data[];
};

struct cmt__snapshot_strings {
    struct pool_block *blocks;
    const char **slots; /* open addressing by content */
    uint32_t *lens;
    size_t cap, count;
};

struct cmt__snapshot_strings *cmt__strings_create(void)
{
    return calloc(1, sizeof(struct cmt__snapshot_strings));
}

void cmt__strings_destroy(struct cmt__snapshot_strings *s)
{
    if (!s)
        return;
    for (struct pool_block *b = s->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(s->slots);
    free(s->lens);
    free(s);
}

static char *pool_copy(struct cmt__snapshot_strings *s, const char *text, size_t n)
{
    struct pool_block *b = s->blocks;
    if (!b || b->cap - b->used < n + 1) {
        size_t cap = n + 1 > 65536 ? n + 1 : 65536;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = s->blocks;
        s->blocks = b;
    }
    char *p = b->data + b->used;
    memcpy(p, text, n);
    p[n] = 0;
    b->used += n + 1;
    return p;
}

static int strings_grow(struct cmt__snapshot_strings *s)
{
    size_t cap = s->cap ? s->cap * 2 : 1024;
    const char **slots = calloc(cap, sizeof *slots);
    uint32_t *lens = malloc(cap * sizeof *lens);
    if (!slots || !lens) {
        free(slots);
        free(lens);
        return CMT_ENOMEM;
    }
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slots[i])
            continue;
        size_t j = hash_bytes(s->slots[i], s->lens[i], 0xcbf29ce484222325ull) & (cap - 1);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = s->slots[i];
        lens[j] = s->lens[i];
    }
    free(s->slots);
    free(s->lens);
    s->slots = slots;
    s->lens = lens;
    s->cap = cap;
    return 0;
}

const char *cmt__strings_intern(struct cmt__snapshot_strings *s, const char *text, size_t n)
{
    if (n > UINT32_MAX)
        n = UINT32_MAX;
    if ((s->count + 1) * 2 > s->cap && strings_grow(s))
        return NULL;
    size_t i = hash_bytes(text, n, 0xcbf29ce484222325ull) & (s->cap - 1);
    for (; s->slots[i]; i = (i + 1) & (s->cap - 1))
        if (s->lens[i] == n && memcmp(s->slots[i], text, n) == 0)
            return s->slots[i];
    char *copy = pool_copy(s, text, n);
    if (!copy)
        return NULL;
    s->slots[i] = copy;
    s->lens[i] = (uint32_t)n;
    s->count++;
    return copy;
}

/* ---- frames ---- */

static size_t frame_hash(const char *name, const char *file, uint32_t line)
{
    return hash_ptr(name) ^ (hash_ptr(file) * 31) ^ ((size_t)line * 0x9e3779b97f4a7c15ull);
}

int cmt__frame_intern(struct cmt__frame_table *t, const char *name, const char *file, uint32_t line,
                      uint32_t *id)
{
    if ((*t->nframes + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        uint32_t *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return CMT_ENOMEM;
        for (size_t k = 0; k < *t->nframes; k++) {
            const struct cmt_snapshot_frame *f = &(*t->frames)[k];
            size_t j = frame_hash(f->name, f->file, f->line) & (cap - 1);
            while (slots[j])
                j = (j + 1) & (cap - 1);
            slots[j] = (uint32_t)k + 1;
        }
        free(t->slots);
        t->slots = slots;
        t->cap = cap;
    }
    size_t i = frame_hash(name, file, line) & (t->cap - 1);
    for (; t->slots[i]; i = (i + 1) & (t->cap - 1)) {
        const struct cmt_snapshot_frame *f = &(*t->frames)[t->slots[i] - 1];
        if (f->name == name && f->file == file && f->line == line) {
            *id = t->slots[i] - 1;
            return 0;
        }
    }
    if (CMT_GROW(*t->frames, t->frames_cap, *t->nframes + 1, 256))
        return CMT_ENOMEM;
    *id = (uint32_t)*t->nframes;
    (*t->frames)[(*t->nframes)++] = (struct cmt_snapshot_frame){name, file, line};
    t->slots[i] = *id + 1;
    return 0;
}

void cmt__frame_table_free(struct cmt__frame_table *t)
{
    free(t->slots);
    t->slots = NULL;
    t->cap = 0;
}
