/* reader_records.c — decoding a record's payload, every type but the fast path's events
 * (docs/trace-format.md gives each record's fields): the checked varint reads, strings, the
 * v1/v2 event layout, the process, the tables. */
#include <stdlib.h>

#include "cmt_error.h"

#include "reader_internal.h"
#include "varint.h"

/* Multi-byte varints, and the end of a payload: absent trailing fields read as 0
 * (forward compatibility). */
static __attribute__((noinline)) uint64_t u64_slow(struct cmt__dec *d)
{
    uint64_t v = 0;
    if (d->p >= d->end)
        return 0;
    if (d->end - d->p >= CMT__VARINT_MAX) { /* no bounds check per byte */
        const uint8_t *p = d->p;
        for (unsigned shift = 0; shift < 64; shift += 7) {
            uint8_t b = *p++;
            v |= (uint64_t)(b & 0x7f) << shift;
            if (b < 0x80) {
                if (shift == 63 && b > 1)
                    break;
                d->p = p;
                return v;
            }
        }
        d->bad = 1;
        return 0;
    }
    if (cmt__get_varint(&d->p, d->end, &v))
        d->bad = 1;
    return v;
}

static inline __attribute__((always_inline)) uint64_t u64(struct cmt__dec *d)
{
    const uint8_t *p = d->p;
    if (__builtin_expect(p < d->end && *p < 0x80, 1)) {
        d->p = p + 1;
        return *p;
    }
    return u64_slow(d);
}

static inline uint32_t u32(struct cmt__dec *d)
{
    uint64_t v = u64(d);
    if (v > UINT32_MAX)
        d->bad = 1;
    return (uint32_t)v;
}

static inline int32_t s32(struct cmt__dec *d)
{
    int64_t v = cmt__unzigzag(u64(d));
    if (v < INT32_MIN || v > INT32_MAX)
        d->bad = 1;
    return (int32_t)v;
}

static const char *str(cmt_reader *r, struct cmt__dec *d, size_t *len_out)
{
    uint64_t len = u64(d);
    if (d->bad || len > (uint64_t)(d->end - d->p)) {
        d->bad = 1;
        return "";
    }
    const char *s = cmt__reader_strdup(r, d->p, (size_t)len);
    d->p += len;
    if (!s) {
        d->bad = d->nomem = 1; /* bad stops the decoding; nomem says why */
        return "";
    }
    if (len_out)
        *len_out = (size_t)len;
    return s;
}

static inline uint64_t time_delta(cmt_reader *r, struct cmt__dec *d)
{
    r->prev_t += (uint64_t)cmt__unzigzag(u64(d));
    return r->prev_t;
}

/* The checked decoder (both versions): absent trailing fields read as 0. */
static int decode_event(cmt_reader *r, struct cmt__dec *d, struct cmt_event *e)
{
    if (r->major >= 2) {
        uint64_t flags = u64(d);
        if (flags & ~(uint64_t)CMT_EV_ALL)
            d->bad = 1;
        e->t_ns = time_delta(r, d);
        e->api = u32(d);
        r->prev_seq += flags & CMT_EV_SEQ ? u64(d) : 1;
        if (flags & CMT_EV_TID)
            r->prev_tid += (uint32_t)cmt__unzigzag(u64(d));
        e->result = flags & CMT_EV_RESULT ? (int32_t)u32(d) : 0;
        if (flags & CMT_EV_DEV)
            r->prev_dev = s32(d);
        if (flags & CMT_EV_STACK)
            r->prev_stack += (uint32_t)cmt__unzigzag(u64(d));
    } else {
        r->prev_seq += u64(d);
        e->t_ns = time_delta(r, d);
        r->prev_tid += (uint32_t)cmt__unzigzag(u64(d));
        e->api = u32(d);
        e->result = (int32_t)u32(d);
        r->prev_dev = s32(d);
        r->prev_stack += (uint32_t)cmt__unzigzag(u64(d));
    }
    e->seq = r->prev_seq;
    e->tid = r->prev_tid;
    e->dev = r->prev_dev;
    e->stack = r->prev_stack;
    uint32_t fields = u32(d);
    for (uint32_t m = fields; m; m &= m - 1) {
        int f = __builtin_ctz(m);
        uint64_t v = u64(d);
        if (f >= CMT_NFIELDS)
            continue; /* a newer writer's: skipped */
        if (r->delta_fields & (UINT32_C(1) << f))
            v = r->prev_v[f] += (uint64_t)cmt__unzigzag(v);
        e->v[f] = v;
    }
    e->fields = fields & ((UINT32_C(1) << CMT_NFIELDS) - 1);
    cmt__reader_count_event(r, e->seq);
    return 0;
}

/* A 3.1 PROCESS field written as value + 1: 0 (or absent) is unknown, -1. */
static int32_t known_minus_one(uint64_t v)
{
    return v == 0 || v - 1 > INT32_MAX ? -1 : (int32_t)(v - 1);
}

static int decode_process(cmt_reader *r, struct cmt__dec *d, struct cmt_process *p)
{
    p->pid = u64(d);
    p->ppid = u64(d);
    p->start_wall_ns = u64(d);
    p->start_mono_ns = u64(d);
    p->driver_version = u64(d);
    p->hostname = str(r, d, NULL);
    p->exe = str(r, d, NULL);
    p->argc = u32(d);
    if (d->bad || p->argc > (uint64_t)(d->end - d->p))
        return CMT_ECORRUPT;
    const char **argv = calloc(p->argc + 1, sizeof *argv);
    if (!argv)
        return CMT_ENOMEM;
    for (uint32_t i = 0; i < p->argc; i++)
        argv[i] = str(r, d, NULL);
    p->rank = known_minus_one(u64(d)); /* 3.1; absent: unknown */
    p->local_rank = known_minus_one(u64(d));
    p->world_size = known_minus_one(u64(d));
    p->job_id = str(r, d, NULL);
    if (!*p->job_id)
        p->job_id = NULL;
    free(r->argv);
    r->argv = argv;
    p->argv = argv;
    r->process = *p;
    r->have_process = 1;
    return 0;
}

static int decode_module(cmt_reader *r, struct cmt__dec *d, struct cmt_module *m)
{
    size_t len = 0;
    m->id = u32(d);
    m->path = str(r, d, NULL);
    m->base = u64(d);
    m->size = u64(d);
    m->build_id = (const uint8_t *)str(r, d, &len);
    m->build_id_len = (uint32_t)len;
    return d->bad ? CMT_ECORRUPT : cmt__reader_store_module(r, m);
}

static int decode_device(cmt_reader *r, struct cmt__dec *d, struct cmt_device *dv)
{
    dv->dev = s32(d);
    dv->name = str(r, d, NULL);
    dv->total_bytes = u64(d);
    dv->free_bytes = u64(d);
    dv->t_ns = u64(d);
    return d->bad ? CMT_ECORRUPT : cmt__reader_store_device(r, dv);
}

static int decode_meminfo(cmt_reader *r, struct cmt__dec *d, struct cmt_meminfo *m)
{
    m->t_ns = time_delta(r, d);
    m->dev = s32(d);
    m->reason = u32(d);
    m->free_bytes = u64(d);
    m->total_bytes = u64(d);
    m->seq = u64(d);
    return 0;
}

static int decode_symbol(cmt_reader *r, struct cmt__dec *d, struct cmt_symbol *s)
{
    s->node = u32(d);
    s->function = u32(d);
    s->file = u32(d);
    s->line = u32(d);
    s->module = u32(d);
    return d->bad ? CMT_ECORRUPT : cmt__reader_store_symbol(r, s);
}

static int decode_alloc_event(struct cmt__dec *d, struct cmt_alloc_event *e)
{
    e->allocator = u32(d);
    e->action = u32(d);
    e->t_ns = u64(d);
    e->tid = u32(d);
    e->dev = s32(d);
    e->stack = u32(d);
    e->fields = u32(d) & ((UINT32_C(1) << CMT_NAFIELDS) - 1); /* a newer writer's: skipped */
    for (unsigned f = 0; f < CMT_NAFIELDS; f++)
        e->v[f] = e->fields & (UINT32_C(1) << f) ? u64(d) : 0;
    return d->bad ? CMT_ECORRUPT : 0;
}

static int decode_range(cmt_reader *r, struct cmt__dec *d, struct cmt_range *g)
{
    g->action = u32(d);
    g->t_ns = u64(d);
    g->tid = u32(d);
    g->domain = u32(d);
    g->category = u32(d);
    g->id = u64(d);
    g->message = str(r, d, NULL);
    uint64_t seq = u64(d); /* seq + 1; 0 (or absent): before any driver event */
    g->have_seq = seq != 0;
    g->seq = seq ? seq - 1 : 0;
    return d->bad ? CMT_ECORRUPT : 0;
}

/* ---- ALLOC_EVENTS blocks (3.3) ---- */

/* A column's next varint: a column read past its end is damage (unlike a record's absent
 * trailing fields). */
static inline uint64_t col_u64(struct cmt__dec *d)
{
    if (d->p >= d->end)
        d->bad = 1;
    return d->bad ? 0 : u64(d);
}

static inline uint32_t col_u32(struct cmt__dec *d)
{
    uint64_t v = col_u64(d);
    if (v > UINT32_MAX)
        d->bad = 1;
    return (uint32_t)v;
}

int cmt__reader_block_columns(const uint8_t *p, const uint8_t *end, uint32_t *count,
                              const uint8_t **col, const uint8_t **col_end, int ncols,
                              const uint8_t *absent)
{
    uint64_t n, mask, len[64];
    if (cmt__get_varint(&p, end, &n) || cmt__get_varint(&p, end, &mask) || n == 0 ||
        n > UINT32_MAX || (mask & 3) != 3)
        return -1;
    uint64_t total = 0;
    for (uint64_t m = mask; m; m &= m - 1) {
        int k = __builtin_ctzll(m);
        if (cmt__get_varint(&p, end, &len[k]) || len[k] > (uint64_t)(end - p))
            return -1;
        total += len[k];
    }
    if (total != (uint64_t)(end - p))
        return -1;
    for (int k = 0; k < ncols; k++)
        col[k] = col_end[k] = absent;
    for (uint64_t m = mask; m; m &= m - 1) {
        int k = __builtin_ctzll(m);
        if (k < ncols) { /* a column of a field this reader does not know is skipped */
            col[k] = p;
            col_end[k] = p + len[k];
        }
        p += len[k];
    }
    *count = (uint32_t)n;
    return 0;
}

int cmt__reader_alloc_block(cmt_reader *r, struct cmt__dec *d)
{
    const uint8_t *col[CMT_NACOLS], *col_end[CMT_NACOLS];
    if (cmt__reader_block_columns(d->p, d->end, &r->ablock_left, col, col_end, CMT_NACOLS,
                                  d->end) != 0)
        return -1;
    for (int k = 0; k < CMT_NACOLS; k++)
        r->acol[k] = (struct cmt__dec){col[k], col_end[k], 0, 0};
    return 0;
}

int cmt__reader_alloc_block_next(cmt_reader *r, struct cmt_alloc_event *e)
{
    struct cmt__dec *h = &r->acol[CMT_ACOL_HEAD], *t = &r->acol[CMT_ACOL_TIME];
    e->allocator = col_u32(h);
    e->action = col_u32(h);
    e->tid = col_u32(h);
    int64_t dev = cmt__unzigzag(col_u64(h));
    e->dev = (int32_t)dev;
    e->stack = col_u32(h);
    uint64_t fields = col_u64(h);
    e->fields = (uint32_t)(fields & ((UINT32_C(1) << CMT_NAFIELDS) - 1)); /* newer: skipped */
    e->t_ns = r->prev_at += (uint64_t)cmt__unzigzag(col_u64(t));
    int bad = h->bad | t->bad | (dev < INT32_MIN || dev > INT32_MAX);
    for (unsigned f = 0; f < CMT_NAFIELDS; f++) {
        if (!(e->fields >> f & 1)) {
            e->v[f] = 0;
            continue;
        }
        struct cmt__dec *c = &r->acol[CMT_ACOL_VALUES + f];
        e->v[f] = r->prev_av[f] += (uint64_t)cmt__unzigzag(col_u64(c));
        bad |= c->bad;
    }
    if (bad)
        return -1;
    if (--r->ablock_left == 0)
        for (int k = 0; k < CMT_NACOLS; k++)
            if (r->acol[k].p != r->acol[k].end)
                return -1; /* a column longer than its reports */
    return 0;
}

/* every record type but EVENTS: reader_internal.h */
int cmt__reader_decode(cmt_reader *r, uint32_t type, struct cmt__dec *d, struct cmt_record *rec)
{
    switch (type) {
    case CMT_REC_EVENT: decode_event(r, d, &rec->u.event); return 0;
    case CMT_REC_PROCESS: return decode_process(r, d, &rec->u.process);
    case CMT_REC_ENV:
        rec->u.env.name = str(r, d, NULL);
        rec->u.env.value = str(r, d, NULL);
        return d->bad ? CMT_ECORRUPT : cmt__reader_store_env(r, &rec->u.env);
    case CMT_REC_API:
        rec->u.api.id = u32(d);
        rec->u.api.op = u32(d);
        rec->u.api.name = str(r, d, NULL);
        return d->bad ? CMT_ECORRUPT : cmt__reader_store_api(r, &rec->u.api);
    case CMT_REC_STRING:
        rec->u.string.id = u32(d);
        rec->u.string.text = str(r, d, NULL);
        return d->bad ? CMT_ECORRUPT
                      : cmt__reader_store_string(r, rec->u.string.id, rec->u.string.text);
    case CMT_REC_MODULE: return decode_module(r, d, &rec->u.module);
    case CMT_REC_STACK_NODE:
        rec->u.stack_node.id = u32(d);
        rec->u.stack_node.parent = u32(d);
        rec->u.stack_node.ip = u64(d);
        return d->bad ? CMT_ECORRUPT : cmt__reader_store_node(r, &rec->u.stack_node);
    case CMT_REC_THREAD:
        rec->u.thread.tid = u32(d);
        rec->u.thread.name = str(r, d, NULL);
        return d->bad ? CMT_ECORRUPT : cmt__reader_store_thread(r, &rec->u.thread);
    case CMT_REC_DEVICE: return decode_device(r, d, &rec->u.device);
    case CMT_REC_MEMINFO: return decode_meminfo(r, d, &rec->u.meminfo);
    case CMT_REC_NOTE:
        rec->u.note.level = u32(d);
        rec->u.note.text = str(r, d, NULL);
        return 0;
    case CMT_REC_SIGNAL:
        rec->u.signal.t_ns = u64(d);
        rec->u.signal.signo = u32(d);
        rec->u.signal.tid = u32(d);
        return 0;
    case CMT_REC_END:
        rec->u.end.t_ns = u64(d);
        rec->u.end.events = u64(d);
        rec->u.end.dropped = u64(d);
        r->clean_exit = 1;
        return 0;
    case CMT_REC_SYMBOL: return decode_symbol(r, d, &rec->u.symbol);
    case CMT_REC_ALLOCATOR:
        rec->u.alloc_info.id = u32(d);
        rec->u.alloc_info.t_ns = u64(d);
        rec->u.alloc_info.dev = s32(d);
        rec->u.alloc_info.name = str(r, d, NULL);
        rec->u.alloc_info.version = str(r, d, NULL);
        rec->u.alloc_info.conf = str(r, d, NULL);
        return d->bad ? CMT_ECORRUPT : 0;
    case CMT_REC_ALLOC_EVENT: return decode_alloc_event(d, &rec->u.alloc_event);
    case CMT_REC_RANGE: return decode_range(r, d, &rec->u.range);
    }
    return 0;
}
