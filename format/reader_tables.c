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

const char *cmt__reader_strdup(cmt_reader *r, const uint8_t *s, size_t len)
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

int cmt__reader_store_api(cmt_reader *r, const struct cmt_api *a)
{
    if (a->id > CMT__MAX_API_ID)
        return -1;
    struct cmt_api *t = grow(r->apis, &r->api_cap, a->id, sizeof *t);
    if (!t)
        return -1;
    r->apis = t;
    t[a->id] = *a;
    return 0;
}

int cmt__reader_store_string(cmt_reader *r, uint32_t id, const char *s)
{
    if (id == 0 || id > CMT__MAX_TABLE_ID)
        return -1;
    const char **t = grow(r->strings, &r->string_cap, id, sizeof *t);
    if (!t)
        return -1;
    r->strings = t;
    t[id] = s;
    if (id > r->string_max)
        r->string_max = id;
    return 0;
}

int cmt__reader_store_node(cmt_reader *r, const struct cmt_stack_node *n)
{
    if (n->id == 0 || n->id > CMT__MAX_TABLE_ID)
        return -1;
    if (n->id >= r->node_cap) {
        uint32_t cap = r->node_cap;
        uint32_t *p = grow(r->node_parent, &cap, n->id, sizeof *p);
        if (!p)
            return -1;
        r->node_parent = p;
        cap = r->node_cap;
        uint64_t *ip = grow(r->node_ip, &cap, n->id, sizeof *ip);
        if (!ip)
            return -1;
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
        return -1;
    struct cmt_symbol *t = grow(r->symbols, &r->symbol_cap, s->node, sizeof *t);
    if (!t)
        return -1;
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
        return -1;
    r->modules = t;
    t[r->module_count++] = *m;
    return 0;
}

int cmt__reader_store_device(cmt_reader *r, const struct cmt_device *d)
{
    if (d->dev < 0 || d->dev >= CMT_MAX_DEVICES)
        return -1;
    struct cmt_device *t = grow(r->devices, &r->device_cap, (uint32_t)d->dev, sizeof *t);
    if (!t)
        return -1;
    r->devices = t;
    t[d->dev] = *d;
    return 0;
}

int cmt__reader_store_thread(cmt_reader *r, const struct cmt_thread *th)
{
    for (uint32_t i = 0; i < r->thread_count; i++)
        if (r->threads[i].tid == th->tid) {
            r->threads[i].name = th->name;
            return 0;
        }
    struct cmt__thread_entry *t = grow(r->threads, &r->thread_cap, r->thread_count, sizeof *t);
    if (!t)
        return -1;
    r->threads = t;
    t[r->thread_count++] = (struct cmt__thread_entry){th->tid, th->name};
    return 0;
}

int cmt__reader_store_env(cmt_reader *r, const struct cmt_env *e)
{
    if (CMT_GROW(r->envs, r->env_cap, r->env_count + 1, 16) != 0)
        return -1;
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
    free(r->envs);
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
    for (uint32_t i = 0; i < r->thread_count; i++)
        if (r->threads[i].tid == tid)
            return r->threads[i].name;
    return NULL;
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

uint64_t cmt_reader_seq_gaps(const cmt_reader *r)
{
    return r->gaps;
}
