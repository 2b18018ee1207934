/* reader_tables.c — the reader's interned tables (strings, stack nodes, symbols, modules,
 * APIs, devices, threads, environment) and the queries over them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "reader_internal.h"
#include "cmt_grow.h"

/* Grows a table indexed by id to hold index `need` (ids are bounded by the callers). The
 * new part comes zeroed from calloc, so the pages a sparse hostile id skips over are never
 * touched and cost address space, not memory. */
static void *grow(void *p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need < *cap)
        return p;
    uint32_t n = *cap ? *cap : 64;
    while (n <= need)
        n = n > CMT__MAX_TABLE_ID / 2 ? CMT__MAX_TABLE_ID + 1 : n * 2;
    void *q = calloc(n, elem);
    if (!q)
        return NULL;
    if (p)
        memcpy(q, p, (size_t)*cap * elem);
    free(p);
    *cap = n;
    return q;
}

static char *arena_copy(cmt_reader *r, const uint8_t *s, size_t len)
{
    struct cmt__arena_block *b = r->arena;
    if (!b || b->cap - b->used < len + 1) {
        size_t cap = len + 1 > 65536 ? len + 1 : 65536;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->next = r->arena;
        b->used = 0;
        b->cap = cap;
        r->arena = b;
    }
    char *out = b->data + b->used;
    memcpy(out, s, len);
    out[len] = 0;
    b->used += len + 1;
    return out;
}

/* A hash keyed by the reader's seed (a file cannot aim its strings at one chain without
 * knowing it): 8 bytes at a time, each folded in with a multiply, then murmur3's finaliser. */
uint64_t cmt__reader_hash(const cmt_reader *r, const uint8_t *s, size_t len)
{
    uint64_t h = r->hash_seed ^ (len * UINT64_C(0x9e3779b97f4a7c15));
    for (; len >= 8; s += 8, len -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * UINT64_C(0xff51afd7ed558ccd);
        h ^= h >> 29;
    }
    uint64_t tail = 0;
    memcpy(&tail, s, len);
    h = (h ^ tail) * UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return h;
}

/* Doubles t (or gives it its first 64 slots). @return 0 or CMT_ENOMEM. */
static int intern_grow(struct cmt__intern *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    struct cmt__intern_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return CMT_ENOMEM;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].hash)
            continue;
        size_t j = (size_t)t->slots[i].hash & (cap - 1);
        while (slots[j].hash)
            j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

struct cmt__intern_slot *cmt__reader_intern(cmt_reader *r, struct cmt__intern *t, const uint8_t *s,
                                            size_t len, int *fresh)
{
    if ((t->count + 1) * 2 > t->cap && intern_grow(t) != 0)
        return NULL;
    uint64_t h = cmt__reader_hash(r, s, len) | 1; /* 0 marks an empty slot */
    size_t j = (size_t)h & (t->cap - 1);
    for (; t->slots[j].hash; j = (j + 1) & (t->cap - 1)) {
        struct cmt__intern_slot *e = &t->slots[j];
        if (e->hash == h && e->len == len && memcmp(e->text, s, len) == 0) {
            *fresh = 0;
            return e;
        }
    }
    char *copy = arena_copy(r, s, len);
    if (!copy)
        return NULL;
    t->slots[j] = (struct cmt__intern_slot){h, copy, len, 0};
    t->count++;
    *fresh = 1;
    return &t->slots[j];
}

const char *cmt__reader_strdup(cmt_reader *r, const uint8_t *s, size_t len)
{
    int fresh;
    struct cmt__intern_slot *e = cmt__reader_intern(r, &r->strings_interned, s, len, &fresh);
    return e ? e->text : NULL;
}

int cmt__reader_store_api(cmt_reader *r, const struct cmt_api *a)
{
    if (a->id > CMT__MAX_API_ID)
        return CMT_ECORRUPT;
    struct cmt_api *t = grow(r->apis, &r->api_cap, a->id, sizeof *t);
    if (!t)
        return CMT_ENOMEM;
    r->apis = t;
    t[a->id] = *a;
    return 0;
}

int cmt__reader_store_string(cmt_reader *r, uint32_t id, const char *s)
{
    if (id == 0 || id > CMT__MAX_TABLE_ID)
        return CMT_ECORRUPT;
    const char **t = grow(r->strings, &r->string_cap, id, sizeof *t);
    if (!t)
        return CMT_ENOMEM;
    r->strings = t;
    t[id] = s;
    if (id > r->string_max)
        r->string_max = id;
    return 0;
}

int cmt__reader_store_node(cmt_reader *r, const struct cmt_stack_node *n)
{
    if (n->id == 0 || n->id > CMT__MAX_TABLE_ID)
        return CMT_ECORRUPT;
    if (n->id >= r->node_cap) {
        uint32_t cap = r->node_cap;
        uint32_t *p = grow(r->node_parent, &cap, n->id, sizeof *p);
        if (!p)
            return CMT_ENOMEM;
        r->node_parent = p;
        cap = r->node_cap;
        uint64_t *ip = grow(r->node_ip, &cap, n->id, sizeof *ip);
        if (!ip)
            return CMT_ENOMEM;
        r->node_ip = ip;
        r->node_cap = cap;
    }
    r->node_parent[n->id] = n->parent;
    r->node_ip[n->id] = n->ip;
    if (n->id > r->node_max)
        r->node_max = n->id;
    return 0;
}

int cmt__reader_store_symbol(cmt_reader *r, const struct cmt_symbol *s)
{
    if (s->node == 0 || s->node > CMT__MAX_TABLE_ID)
        return CMT_ECORRUPT;
    struct cmt_symbol *t = grow(r->symbols, &r->symbol_cap, s->node, sizeof *t);
    if (!t)
        return CMT_ENOMEM;
    r->symbols = t;
    t[s->node] = *s;
    return 0;
}

int cmt__reader_store_module(cmt_reader *r, const struct cmt_module *m)
{
    for (uint32_t i = 0; i < r->module_count; i++)
        if (r->modules[i].id == m->id) {
            r->modules[i] = *m;
            return 0;
        }
    struct cmt_module *t = grow(r->modules, &r->module_cap, r->module_count, sizeof *t);
    if (!t)
        return CMT_ENOMEM;
    r->modules = t;
    t[r->module_count++] = *m;
    return 0;
}

int cmt__reader_store_device(cmt_reader *r, const struct cmt_device *d)
{
    if (d->dev < 0 || d->dev >= CMT_MAX_DEVICES)
        return CMT_ECORRUPT;
    struct cmt_device *t = grow(r->devices, &r->device_cap, (uint32_t)d->dev, sizeof *t);
    if (!t)
        return CMT_ENOMEM;
    r->devices = t;
    t[d->dev] = *d;
    return 0;
}

/* The index slot of tid: where it is, or the empty slot where it goes. */
static uint32_t *thread_slot(const cmt_reader *r, uint32_t tid)
{
    uint8_t key[4] = {(uint8_t)tid, (uint8_t)(tid >> 8), (uint8_t)(tid >> 16),
                      (uint8_t)(tid >> 24)};
    size_t mask = r->thread_index_cap - 1, j = (size_t)cmt__reader_hash(r, key, 4) & mask;
    while (r->thread_index[j] && r->threads[r->thread_index[j] - 1].tid != tid)
        j = (j + 1) & mask;
    return &r->thread_index[j];
}

/* Doubles the index (at half full), so that a file of many threads costs no n^2 searches.
 * @return 0 or CMT_ENOMEM. */
static int grow_thread_index(cmt_reader *r)
{
    uint32_t cap = r->thread_index_cap ? r->thread_index_cap * 2 : 64;
    uint32_t *index = calloc(cap, sizeof *index);
    if (!index)
        return CMT_ENOMEM;
    free(r->thread_index);
    r->thread_index = index;
    r->thread_index_cap = cap;
    for (uint32_t i = 0; i < r->thread_count; i++)
        *thread_slot(r, r->threads[i].tid) = i + 1;
    return 0;
}

int cmt__reader_store_thread(cmt_reader *r, const struct cmt_thread *th)
{
    if ((r->thread_count + 1) * 2 > r->thread_index_cap && grow_thread_index(r) != 0)
        return CMT_ENOMEM;
    uint32_t *slot = thread_slot(r, th->tid);
    if (*slot) {
        r->threads[*slot - 1].name = th->name;
        return 0;
    }
    struct cmt__thread_entry *t = grow(r->threads, &r->thread_cap, r->thread_count, sizeof *t);
    if (!t)
        return CMT_ENOMEM;
    r->threads = t;
    t[r->thread_count++] = (struct cmt__thread_entry){th->tid, th->name};
    *slot = r->thread_count;
    return 0;
}

int cmt__reader_store_env(cmt_reader *r, const struct cmt_env *e)
{
    if (!r->record_fresh) /* a repeat, or the first one read again after a rewind */
        return 0;
    if (CMT_GROW(r->envs, r->env_cap, r->env_count + 1, 16) != 0)
        return CMT_ENOMEM;
    r->envs[r->env_count++] = *e;
    return 0;
}

void cmt__reader_free_tables(cmt_reader *r)
{
    while (r->arena) {
        struct cmt__arena_block *n = r->arena->next;
        free(r->arena);
        r->arena = n;
    }
    free(r->argv);
    free(r->apis);
    free(r->strings);
    free(r->node_parent);
    free(r->node_ip);
    free(r->symbols);
    free(r->modules);
    free(r->devices);
    free(r->threads);
    free(r->thread_index);
    free(r->envs);
    free(r->strings_interned.slots);
    free(r->folds.slots);
}

/* ---- queries ---- */

uint64_t cmt_reader_damage_offset(const cmt_reader *r)
{
    return r->damage_offset;
}

const char *cmt_reader_damage(const cmt_reader *r)
{
    return r->damage;
}

const struct cmt_process *cmt_reader_process(const cmt_reader *r)
{
    return r->have_process ? &r->process : NULL;
}

const struct cmt_api *cmt_reader_api(const cmt_reader *r, uint32_t id)
{
    return id < r->api_cap && r->apis[id].name ? &r->apis[id] : NULL;
}

const char *cmt_reader_string(const cmt_reader *r, uint32_t id)
{
    return id < r->string_cap ? r->strings[id] : NULL;
}

const struct cmt_module *cmt_reader_module(const cmt_reader *r, uint32_t id)
{
    for (uint32_t i = 0; i < r->module_count; i++)
        if (r->modules[i].id == id)
            return &r->modules[i];
    return NULL;
}

const struct cmt_module *cmt_reader_module_at(const cmt_reader *r, uint64_t ip)
{
    for (uint32_t i = 0; i < r->module_count; i++)
        if (ip >= r->modules[i].base && ip - r->modules[i].base < r->modules[i].size)
            return &r->modules[i];
    return NULL;
}

uint32_t cmt_reader_module_count(const cmt_reader *r)
{
    return r->module_count;
}

const struct cmt_device *cmt_reader_device(const cmt_reader *r, int32_t dev)
{
    if (dev < 0 || (uint32_t)dev >= r->device_cap || !r->devices[dev].name)
        return NULL;
    return &r->devices[dev];
}

const char *cmt_reader_thread_name(const cmt_reader *r, uint32_t tid)
{
    if (!r->thread_count)
        return NULL;
    uint32_t *slot = thread_slot(r, tid);
    return *slot ? r->threads[*slot - 1].name : NULL;
}

const struct cmt_symbol *cmt_reader_symbol(const cmt_reader *r, uint32_t node)
{
    return node < r->symbol_cap && r->symbols[node].node ? &r->symbols[node] : NULL;
}

size_t cmt_reader_env_count(const cmt_reader *r)
{
    return r->env_count;
}

const struct cmt_env *cmt_reader_env(const cmt_reader *r, size_t i)
{
    return i < r->env_count ? &r->envs[i] : NULL;
}

uint32_t cmt_reader_string_count(const cmt_reader *r)
{
    return r->string_max;
}

uint32_t cmt_reader_stack_node_count(const cmt_reader *r)
{
    return r->node_max;
}

int cmt_reader_stack_node(const cmt_reader *r, uint32_t id, struct cmt_stack_node *out)
{
    if (id == 0 || id > r->node_max || (r->node_ip[id] == 0 && r->node_parent[id] == 0))
        return CMT_ENOT_FOUND;
    out->id = id;
    out->parent = r->node_parent[id];
    out->ip = r->node_ip[id];
    return 0;
}

size_t cmt_reader_format_frame(const cmt_reader *r, uint32_t node, char *buf, size_t size)
{
    struct cmt_stack_node n = {0};
    if (cmt_reader_stack_node(r, node, &n) != 0)
        return (size_t)snprintf(buf, size, "?");
    const struct cmt_symbol *s = cmt_reader_symbol(r, node);
    const char *fn = s ? cmt_reader_string(r, s->function) : NULL;
    const char *file = s ? cmt_reader_string(r, s->file) : NULL;
    if (fn && file && s->line) {
        const char *base = strrchr(file, '/');
        return (size_t)snprintf(buf, size, "%s %s:%u", fn, base ? base + 1 : file, s->line);
    }
    if (fn)
        return (size_t)snprintf(buf, size, "%s", fn);
    const struct cmt_module *m = cmt_reader_module_at(r, n.ip);
    if (m) {
        const char *base = strrchr(m->path, '/');
        return (size_t)snprintf(buf, size, "%s+0x%" PRIx64, base ? base + 1 : m->path,
                                n.ip - m->base);
    }
    return (size_t)snprintf(buf, size, "0x%" PRIx64, n.ip);
}

int cmt_reader_clean_exit(const cmt_reader *r)
{
    return r->clean_exit;
}

uint64_t cmt_reader_event_count(const cmt_reader *r)
{
    return r->events;
}

uint64_t cmt_reader_folded(const cmt_reader *r)
{
    return r->folded;
}

uint64_t cmt_reader_seq_gaps(const cmt_reader *r)
{
    return r->gaps;
}
