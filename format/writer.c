/* writer.c — record encoding and chunk compression (docs/trace-format.md). */
#include "writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_literalCompressionMode (a value, not a symbol) */
#include <zstd.h>

#include "reader.h"
#include "cmt_debug.h"
#include "cmt_error.h"
#include "varint.h"

struct cmt_writer {
    struct cmt_allocator mem;
    cmt_sink_fn sink;
    void *sink_ctx;
    ZSTD_CCtx *cctx;
    uint8_t *raw; /* records of the chunk being built */
    size_t raw_len, raw_cap, chunk_bytes;
    uint8_t *out; /* chunk header + compressed frame */
    size_t out_cap;
    uint8_t *scratch; /* one record's payload while it is encoded */
    size_t scratch_cap;
    uint32_t records; /* in the current chunk */
    /* the block being built, EVENTS or ALLOC_EVENTS (block_type): its columns (CMT_COL_* or
     * CMT_ACOL_*), events and bytes */
    struct {
        uint8_t *buf;
        size_t len, cap;
    } col[CMT_NCOLS];
    uint32_t block_type, block_events;
    size_t block_bytes;
    /* events (of either kind) that fit in every column without a check: each takes at most
     * HEAD_MAX bytes of the head column and CMT__VARINT_MAX of each other (col_refill) */
    uint32_t col_events;
    /* the chunk's groups of events: raw offsets where a zstd block ends, and the events since
     * the last one (CMT_GROUP_EVENTS_MAX) */
    size_t *group_ends, groups, groups_cap;
    uint32_t group_events;
    /* delta bases, reset per chunk */
    uint64_t prev_t, prev_seq, prev_v[CMT_NFIELDS];
    uint32_t prev_tid, prev_stack;
    int32_t prev_dev;
    uint64_t prev_at, prev_av[CMT_NAFIELDS]; /* ALLOC_EVENTS' */
    uint64_t events;
    int failed;
};

_Static_assert(CMT_NACOLS <= CMT_NCOLS, "an ALLOC_EVENTS block uses the EVENTS block's columns");

static void *default_alloc(void *ctx, size_t size)
{
    (void)ctx;
    return malloc(size);
}

static void default_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static const struct cmt_allocator malloc_allocator = {default_alloc, default_free, NULL};

/* Grows *buf (holding *cap bytes) to at least `need` bytes, doubling, through `mem`. */
static int grow(const struct cmt_allocator *mem, void **buf, size_t *cap, size_t need, size_t unit)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : (256 + unit - 1) / unit;
    while (n < need)
        n *= 2;
    void *p = mem->alloc(mem->ctx, n * unit);
    if (!p)
        return CMT_ENOMEM;
    if (*cap)
        memcpy(p, *buf, *cap * unit);
    mem->free(mem->ctx, *buf);
    *buf = p;
    *cap = n;
    return 0;
}

static int reserve_with(const struct cmt_allocator *mem, uint8_t **buf, size_t *cap, size_t need)
{
    void *p = *buf;
    int rc = grow(mem, &p, cap, need, 1);
    *buf = p;
    return rc;
}

#define reserve(buf, cap, need) reserve_with(&w->mem, buf, cap, need)

int cmt_writer_create(cmt_writer **out, cmt_sink_fn sink, void *ctx,
                      const struct cmt_writer_options *options)
{
    *out = NULL;
    const struct cmt_allocator *mem = options && options->allocator ? options->allocator
                                                                    : &malloc_allocator;
    cmt_writer *w = mem->alloc(mem->ctx, sizeof *w);
    if (!w)
        return CMT_ENOMEM;
    memset(w, 0, sizeof *w);
    w->mem = *mem;
    w->sink = sink;
    w->sink_ctx = ctx;
    w->chunk_bytes = options && options->chunk_bytes ? options->chunk_bytes : (1u << 20);
    if (w->chunk_bytes > CMT_CHUNK_RAW_MAX / 2)
        w->chunk_bytes = CMT_CHUNK_RAW_MAX / 2;
    int level = options && options->level ? options->level : 3;
    w->cctx = ZSTD_createCCtx_advanced((ZSTD_customMem){mem->alloc, mem->free, mem->ctx});
    if (!w->cctx || reserve(&w->raw, &w->raw_cap, w->chunk_bytes + 4096)) {
        cmt_writer_destroy(w);
        return CMT_ENOMEM;
    }
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1);
    if (options && options->raw_literals) /* ignored by a libzstd without the parameter */
        ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_literalCompressionMode, ZSTD_ps_disable);

    uint8_t header[CMT_FILE_HEADER_SIZE] = {0};
    memcpy(header, CMT_MAGIC, CMT_MAGIC_SIZE);
    header[8] = CMT_VERSION_MAJOR & 0xff;
    header[9] = CMT_VERSION_MAJOR >> 8;
    header[10] = CMT_VERSION_MINOR & 0xff;
    header[11] = CMT_VERSION_MINOR >> 8;
    if (!(options && options->append) && sink(ctx, header, sizeof header) != 0) {
        cmt_writer_destroy(w);
        return CMT_ESINK;
    }
    *out = w;
    return 0;
}

void cmt_writer_destroy(cmt_writer *w)
{
    if (!w)
        return;
    ZSTD_freeCCtx(w->cctx);
    struct cmt_allocator mem = w->mem;
    mem.free(mem.ctx, w->raw);
    mem.free(mem.ctx, w->out);
    mem.free(mem.ctx, w->scratch);
    mem.free(mem.ctx, w->group_ends);
    for (int k = 0; k < CMT_NCOLS; k++)
        mem.free(mem.ctx, w->col[k].buf);
    mem.free(mem.ctx, w);
}

uint64_t cmt_writer_event_count(const cmt_writer *w)
{
    return w->events;
}

/* Appends the block being built as one EVENTS or ALLOC_EVENTS record: varint count, varint mask
 * of the columns present, a varint length per column, then the columns, in column order. */
static int close_block(cmt_writer *w)
{
    if (!w->block_events)
        return 0;
    uint8_t head[(2 + CMT_NCOLS) * CMT__VARINT_MAX], *p = head;
    uint64_t mask = 0;
    for (int k = 0; k < CMT_NCOLS; k++)
        mask |= (uint64_t)(w->col[k].len != 0) << k;
    p = cmt__put_varint(p, w->block_events);
    p = cmt__put_varint(p, mask);
    for (int k = 0; k < CMT_NCOLS; k++)
        if (w->col[k].len)
            p = cmt__put_varint(p, w->col[k].len);
    size_t len = (size_t)(p - head) + w->block_bytes;
    if (reserve(&w->raw, &w->raw_cap, w->raw_len + len + 2 * CMT__VARINT_MAX))
        return CMT_ENOMEM;
    uint8_t *q = cmt__put_varint(w->raw + w->raw_len, w->block_type);
    q = cmt__put_varint(q, len);
    memcpy(q, head, (size_t)(p - head));
    q += p - head;
    for (int k = 0; k < CMT_NCOLS; k++) {
        if (w->col[k].len) /* a column no event used has no buffer: memcpy from NULL is UB */
            memcpy(q, w->col[k].buf, w->col[k].len);
        q += w->col[k].len;
        w->col[k].len = 0;
    }
    w->raw_len = (size_t)(q - w->raw);
    w->records++;
    w->block_events = 0;
    w->block_bytes = 0;
    return 0;
}

/* Compresses raw[0, raw_len) into out as one frame, ending a zstd block at each group end
 * (a ZSTD_e_flush), so a frame cut short still decodes up to the last group before the cut.
 * @return the frame's size, or a zstd error code. */
static size_t compress_groups(cmt_writer *w, uint8_t *out, size_t cap)
{
    ZSTD_CCtx_reset(w->cctx, ZSTD_reset_session_only);
    ZSTD_CCtx_setPledgedSrcSize(w->cctx, w->raw_len);
    ZSTD_outBuffer o = {out, cap, 0};
    ZSTD_inBuffer in = {w->raw, 0, 0};
    for (size_t g = 0; g <= w->groups; g++) {
        int last = g == w->groups;
        in.size = last ? w->raw_len : w->group_ends[g];
        size_t left;
        do {
            left = ZSTD_compressStream2(w->cctx, &o, &in, last ? ZSTD_e_end : ZSTD_e_flush);
            if (ZSTD_isError(left))
                return left;
            if (left && o.pos == o.size)
                return (size_t)-1; /* a zstd error code: output full */
        } while (left);
    }
    return o.pos;
}

int cmt_writer_flush(cmt_writer *w)
{
    if (w->failed)
        return CMT_ESINK;
    int rc = close_block(w);
    if (rc)
        return rc;
    if (w->raw_len == 0)
        return 0;
    /* each group end may add a block header of 3 bytes to zstd's bound */
    size_t bound = ZSTD_compressBound(w->raw_len) + 8 * (w->groups + 1) + CMT_CHUNK_HEADER_SIZE;
    if (reserve(&w->out, &w->out_cap, bound))
        return CMT_ENOMEM;
    size_t n = compress_groups(w, w->out + CMT_CHUNK_HEADER_SIZE,
                               w->out_cap - CMT_CHUNK_HEADER_SIZE);
    if (ZSTD_isError(n)) {
        w->failed = 1;
        return CMT_ECOMPRESS;
    }
    cmt__put_le32(w->out, CMT_CHUNK_MAGIC);
    cmt__put_le32(w->out + 4, (uint32_t)n);
    cmt__put_le32(w->out + 8, (uint32_t)w->raw_len);
    cmt__put_le32(w->out + 12, w->records);
    if (w->sink(w->sink_ctx, w->out, n + CMT_CHUNK_HEADER_SIZE) != 0) {
        w->failed = 1;
        return CMT_ESINK;
    }
    w->raw_len = 0;
    w->records = 0;
    w->groups = 0;
    w->group_events = 0;
    w->prev_t = w->prev_seq = 0;
    memset(w->prev_v, 0, sizeof w->prev_v);
    w->prev_tid = w->prev_stack = 0;
    w->prev_dev = 0;
    w->prev_at = 0;
    memset(w->prev_av, 0, sizeof w->prev_av);
    return 0;
}

/* After the event that completes a group: the block closes and a zstd block ends. */
static int end_group(cmt_writer *w)
{
    int rc = close_block(w);
    if (rc)
        return rc;
    void *ends = w->group_ends;
    rc = grow(&w->mem, &ends, &w->groups_cap, w->groups + 1, sizeof *w->group_ends);
    w->group_ends = ends;
    if (rc)
        return rc;
    w->group_ends[w->groups++] = w->raw_len;
    w->group_events = 0;
    return 0;
}

static uint8_t *put_str(uint8_t *p, const char *s, size_t len)
{
    p = cmt__put_varint(p, len);
    if (len) /* s may be NULL (an absent string) */
        memcpy(p, s, len);
    return p + len;
}

static size_t slen(const char *s)
{
    return s ? strlen(s) : 0;
}

static int scratch(cmt_writer *w, size_t need)
{
    if (w->failed)
        return CMT_ESINK;
    return reserve(&w->scratch, &w->scratch_cap, need + 16 * CMT__VARINT_MAX);
}

/* Appends record `type` whose payload is scratch[0, end), after the events before it. */
static int emit(cmt_writer *w, uint32_t type, const uint8_t *end)
{
    int rc = close_block(w);
    if (rc)
        return rc;
    size_t len = (size_t)(end - w->scratch);
    if (reserve(&w->raw, &w->raw_cap, w->raw_len + len + 2 * CMT__VARINT_MAX))
        return CMT_ENOMEM;
    uint8_t *p = cmt__put_varint(w->raw + w->raw_len, type);
    p = cmt__put_varint(p, len);
    memcpy(p, w->scratch, len);
    w->raw_len = (size_t)(p + len - w->raw);
    w->records++;
    return w->raw_len >= w->chunk_bytes ? cmt_writer_flush(w) : 0;
}

/* Timestamps of EVENT and MEMINFO records are zigzag deltas within a chunk. */
static uint8_t *put_time(cmt_writer *w, uint8_t *p, uint64_t t)
{
    p = cmt__put_varint(p, cmt__zigzag((int64_t)(t - w->prev_t)));
    w->prev_t = t;
    return p;
}

static uint64_t known_plus_one(int32_t v)
{
    return v < 0 ? 0 : (uint64_t)v + 1;
}

int cmt_writer_process(cmt_writer *w, const struct cmt_process *pr)
{
    size_t need = slen(pr->hostname) + slen(pr->exe) + slen(pr->job_id) + 12 * CMT__VARINT_MAX;
    for (uint32_t i = 0; i < pr->argc; i++)
        need += slen(pr->argv[i]) + CMT__VARINT_MAX;
    int rc = scratch(w, need);
    if (rc)
        return rc;
    uint8_t *p = w->scratch;
    p = cmt__put_varint(p, pr->pid);
    p = cmt__put_varint(p, pr->ppid);
    p = cmt__put_varint(p, pr->start_wall_ns);
    p = cmt__put_varint(p, pr->start_mono_ns);
    p = cmt__put_varint(p, pr->driver_version);
    p = put_str(p, pr->hostname, slen(pr->hostname));
    p = put_str(p, pr->exe, slen(pr->exe));
    p = cmt__put_varint(p, pr->argc);
    for (uint32_t i = 0; i < pr->argc; i++)
        p = put_str(p, pr->argv[i], slen(pr->argv[i]));
    /* 3.1: value + 1, so that 0 (and a payload that ends before them) means unknown */
    p = cmt__put_varint(p, known_plus_one(pr->rank));
    p = cmt__put_varint(p, known_plus_one(pr->local_rank));
    p = cmt__put_varint(p, known_plus_one(pr->world_size));
    p = put_str(p, pr->job_id, slen(pr->job_id));
    return emit(w, CMT_REC_PROCESS, p);
}

/* Appends record `type` whose payload is the varints v[0 .. n-1] (n <= 14), then the strings
 * s[0 .. ns-1] (ns <= 2; NULL: an absent string, written as an empty one). */
static int emit_fields(cmt_writer *w, uint32_t type, const uint64_t *v, size_t n,
                       const char *const *s, size_t ns)
{
    size_t need = 0;
    for (size_t i = 0; i < ns; i++)
        need += slen(s[i]);
    int rc = scratch(w, need);
    if (rc)
        return rc;
    uint8_t *p = w->scratch;
    for (size_t i = 0; i < n; i++)
        p = cmt__put_varint(p, v[i]);
    for (size_t i = 0; i < ns; i++)
        p = put_str(p, s[i], slen(s[i]));
    return emit(w, type, p);
}

int cmt_writer_env(cmt_writer *w, const char *name, const char *value)
{
    const char *const s[] = {name, value};
    return emit_fields(w, CMT_REC_ENV, NULL, 0, s, 2);
}

int cmt_writer_api(cmt_writer *w, const struct cmt_api *a)
{
    const uint64_t v[] = {a->id, a->op};
    return emit_fields(w, CMT_REC_API, v, 2, &a->name, 1);
}

int cmt_writer_string(cmt_writer *w, uint32_t id, const char *s)
{
    const uint64_t v[] = {id};
    return emit_fields(w, CMT_REC_STRING, v, 1, &s, 1);
}

int cmt_writer_module(cmt_writer *w, const struct cmt_module *m)
{
    int rc = scratch(w, slen(m->path) + m->build_id_len);
    if (rc)
        return rc;
    uint8_t *p = cmt__put_varint(w->scratch, m->id);
    p = put_str(p, m->path, slen(m->path));
    p = cmt__put_varint(p, m->base);
    p = cmt__put_varint(p, m->size);
    p = put_str(p, (const char *)m->build_id, m->build_id_len);
    return emit(w, CMT_REC_MODULE, p);
}

int cmt_writer_stack_node(cmt_writer *w, const struct cmt_stack_node *n)
{
    const uint64_t v[] = {n->id, n->parent, n->ip};
    return emit_fields(w, CMT_REC_STACK_NODE, v, 3, NULL, 0);
}

int cmt_writer_thread(cmt_writer *w, const struct cmt_thread *t)
{
    const uint64_t v[] = {t->tid};
    return emit_fields(w, CMT_REC_THREAD, v, 1, &t->name, 1);
}

int cmt_writer_device(cmt_writer *w, const struct cmt_device *d)
{
    int rc = scratch(w, slen(d->name));
    if (rc)
        return rc;
    uint8_t *p = cmt__put_varint(w->scratch, cmt__zigzag(d->dev));
    p = put_str(p, d->name, slen(d->name));
    p = cmt__put_varint(p, d->total_bytes);
    p = cmt__put_varint(p, d->free_bytes);
    p = cmt__put_varint(p, d->t_ns);
    return emit(w, CMT_REC_DEVICE, p);
}

/* Before an event of a block of `type`: a block of the other type closes first (file order is
 * event order). */
static int begin_block(cmt_writer *w, uint32_t type)
{
    if (w->block_events && w->block_type != type) {
        int rc = close_block(w);
        if (rc)
            return rc;
    }
    w->block_type = type;
    return 0;
}

/* After an event of the block: the group it completes ends, the chunk it fills is flushed. */
static inline int end_block_event(cmt_writer *w)
{
    w->block_events++;
    if (++w->group_events == CMT_GROUP_EVENTS_MAX) {
        int rc = end_group(w);
        if (rc)
            return rc;
    }
    return w->raw_len + w->block_bytes >= w->chunk_bytes ? cmt_writer_flush(w) : 0;
}

#define HEAD_MAX (8 * CMT__VARINT_MAX) /* an event's head bytes at most (EVENTS' or ALLOC's) */
#define REFILL_EVENTS 256              /* events that col_refill makes room for at once */

/* Room for REFILL_EVENTS more events in every column, so that an event checks one counter,
 * not each column it writes. @return 0, or CMT_ENOMEM. */
static int col_refill(cmt_writer *w)
{
    for (int k = 0; k < CMT_NCOLS; k++) {
        size_t most = (k == CMT_COL_HEAD ? HEAD_MAX : CMT__VARINT_MAX) * REFILL_EVENTS;
        if (reserve(&w->col[k].buf, &w->col[k].cap, w->col[k].len + most))
            return CMT_ENOMEM;
    }
    w->col_events = REFILL_EVENTS;
    return 0;
}

/* Before an event's bytes: room for them in every column. @return 0, or CMT_ENOMEM. */
static inline int col_room(cmt_writer *w)
{
    if (__builtin_expect(w->col_events == 0, 0) && col_refill(w))
        return CMT_ENOMEM;
    w->col_events--;
    return 0;
}

/* Column k's end, where its next bytes go (room made by col_room). */
static inline uint8_t *col_at(cmt_writer *w, int k)
{
    return w->col[k].buf + w->col[k].len;
}

/* Column k's bytes now end at p (written after col_room). */
static inline void col_end(cmt_writer *w, int k, const uint8_t *p)
{
    size_t n = (size_t)(p - (w->col[k].buf + w->col[k].len));
    w->col[k].len += n;
    w->block_bytes += n;
}

/* Adds one varint to column k (room reserved). */
static inline void col_put(cmt_writer *w, int k, uint64_t v)
{
    CMT_ASSERT(w->col[k].len + CMT__VARINT_MAX <= w->col[k].cap);
    col_end(w, k, cmt__put_varint(w->col[k].buf + w->col[k].len, v));
}

int cmt_writer_event(cmt_writer *w, const struct cmt_event *e)
{
    if (w->failed)
        return CMT_ESINK;
    uint32_t mask = e->fields & ((UINT32_C(1) << CMT_NFIELDS) - 1);
    int rc = begin_block(w, CMT_REC_EVENTS);
    if (rc)
        return rc;
    if (col_room(w))
        return CMT_ENOMEM;
    uint8_t *head = col_at(w, CMT_COL_HEAD), *flags = head, *p = head + 1;
    *flags = 0; /* CMT_EV_* bits, filled in below */
    p = cmt__put_varint(p, e->api);
    if (e->seq - w->prev_seq != 1) {
        *flags |= CMT_EV_SEQ;
        p = cmt__put_varint(p, e->seq - w->prev_seq);
    }
    w->prev_seq = e->seq;
    if (e->tid != w->prev_tid) {
        *flags |= CMT_EV_TID;
        p = cmt__put_varint(p, cmt__zigzag((int64_t)e->tid - (int64_t)w->prev_tid));
        w->prev_tid = e->tid;
    }
    if (e->result != 0) {
        *flags |= CMT_EV_RESULT;
        p = cmt__put_varint(p, (uint32_t)e->result);
    }
    if (e->dev != w->prev_dev) {
        *flags |= CMT_EV_DEV;
        p = cmt__put_varint(p, cmt__zigzag(e->dev));
        w->prev_dev = e->dev;
    }
    if (e->stack != w->prev_stack) {
        *flags |= CMT_EV_STACK;
        p = cmt__put_varint(p, cmt__zigzag((int64_t)e->stack - (int64_t)w->prev_stack));
        w->prev_stack = e->stack;
    }
    col_end(w, CMT_COL_HEAD, cmt__put_varint(p, mask));
    col_put(w, CMT_COL_TIME, cmt__zigzag((int64_t)(e->t_ns - w->prev_t)));
    w->prev_t = e->t_ns;
    for (uint32_t m = mask; m; m &= m - 1) {
        int f = __builtin_ctz(m);
        if (CMT_DELTA_FIELDS & (UINT32_C(1) << f)) {
            col_put(w, CMT_COL_VALUES + f, cmt__zigzag((int64_t)(e->v[f] - w->prev_v[f])));
            w->prev_v[f] = e->v[f];
        } else {
            col_put(w, CMT_COL_VALUES + f, e->v[f]);
        }
    }
    w->events++;
    return end_block_event(w);
}

int cmt_writer_meminfo(cmt_writer *w, const struct cmt_meminfo *m)
{
    int rc = scratch(w, 0);
    if (rc)
        return rc;
    uint8_t *p = put_time(w, w->scratch, m->t_ns);
    p = cmt__put_varint(p, cmt__zigzag(m->dev));
    p = cmt__put_varint(p, m->reason);
    p = cmt__put_varint(p, m->free_bytes);
    p = cmt__put_varint(p, m->total_bytes);
    p = cmt__put_varint(p, m->seq);
    return emit(w, CMT_REC_MEMINFO, p);
}

int cmt_writer_note(cmt_writer *w, const struct cmt_note *n)
{
    const uint64_t v[] = {n->level};
    return emit_fields(w, CMT_REC_NOTE, v, 1, &n->text, 1);
}

int cmt_writer_signal(cmt_writer *w, const struct cmt_signal *s)
{
    const uint64_t v[] = {s->t_ns, s->signo, s->tid};
    return emit_fields(w, CMT_REC_SIGNAL, v, 3, NULL, 0);
}

int cmt_writer_end(cmt_writer *w, const struct cmt_end *e)
{
    const uint64_t v[] = {e->t_ns, e->events, e->dropped};
    return emit_fields(w, CMT_REC_END, v, 3, NULL, 0);
}

int cmt_writer_symbol(cmt_writer *w, const struct cmt_symbol *s)
{
    const uint64_t v[] = {s->node, s->function, s->file, s->line, s->module};
    return emit_fields(w, CMT_REC_SYMBOL, v, 5, NULL, 0);
}

int cmt_membuf_sink(void *membuf, const void *data, size_t len)
{
    struct cmt_membuf *b = membuf;
    if (reserve_with(&malloc_allocator, &b->data, &b->cap, b->len + len))
        return -1;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    return 0;
}

void cmt_membuf_free(struct cmt_membuf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int cmt_fd_sink(void *fd_ptr, const void *data, size_t len)
{
    int fd = *(int *)fd_ptr;
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int cmt_writer_alloc_info(cmt_writer *w, const struct cmt_alloc_info *a)
{
    int rc = scratch(w, slen(a->name) + slen(a->version) + slen(a->conf));
    if (rc)
        return rc;
    uint8_t *p = cmt__put_varint(w->scratch, a->id);
    p = cmt__put_varint(p, a->t_ns);
    p = cmt__put_varint(p, cmt__zigzag(a->dev));
    p = put_str(p, a->name, slen(a->name));
    p = put_str(p, a->version, slen(a->version));
    p = put_str(p, a->conf, slen(a->conf));
    return emit(w, CMT_REC_ALLOCATOR, p);
}

/* An ALLOC_EVENT whose value of field f is v[f] (packed = 0) or v[i], f the i-th set bit of
 * its fields (packed = 1). */
static inline int alloc_event(cmt_writer *w, const struct cmt_alloc_event *e, const uint64_t *v,
                              int packed)
{
    if (w->failed)
        return CMT_ESINK;
    uint32_t mask = e->fields & ((UINT32_C(1) << CMT_NAFIELDS) - 1);
    int rc = begin_block(w, CMT_REC_ALLOC_EVENTS);
    if (rc)
        return rc;
    if (col_room(w))
        return CMT_ENOMEM;
    uint8_t *h = col_at(w, CMT_ACOL_HEAD);
    h = cmt__put_varint(h, e->allocator);
    h = cmt__put_varint(h, e->action);
    h = cmt__put_varint(h, e->tid);
    h = cmt__put_varint(h, cmt__zigzag(e->dev));
    h = cmt__put_varint(h, e->stack);
    col_end(w, CMT_ACOL_HEAD, cmt__put_varint(h, mask));
    col_put(w, CMT_ACOL_TIME, cmt__zigzag((int64_t)(e->t_ns - w->prev_at)));
    w->prev_at = e->t_ns;
    size_t n = 0;
    for (uint32_t m = mask; m; m &= m - 1) {
        int f = __builtin_ctz(m);
        uint64_t value = packed ? v[n++] : v[f];
        col_put(w, CMT_ACOL_VALUES + f, cmt__zigzag((int64_t)(value - w->prev_av[f])));
        w->prev_av[f] = value;
    }
    return end_block_event(w);
}

int cmt_writer_alloc_event(cmt_writer *w, const struct cmt_alloc_event *e)
{
    return alloc_event(w, e, e->v, 0);
}

int cmt_writer_alloc_event_packed(cmt_writer *w, const struct cmt_alloc_event *e,
                                  const uint64_t *packed)
{
    return alloc_event(w, e, packed, 1);
}

int cmt_writer_range(cmt_writer *w, const struct cmt_range *g)
{
    int rc = scratch(w, slen(g->message));
    if (rc)
        return rc;
    uint8_t *p = cmt__put_varint(w->scratch, g->action);
    p = cmt__put_varint(p, g->t_ns);
    p = cmt__put_varint(p, g->tid);
    p = cmt__put_varint(p, g->domain);
    p = cmt__put_varint(p, g->category);
    p = cmt__put_varint(p, g->id);
    p = put_str(p, g->message, slen(g->message));
    p = cmt__put_varint(p, g->have_seq ? g->seq + 1 : 0); /* 0: before any driver event */
    return emit(w, CMT_REC_RANGE, p);
}

int cmt_writer_record(cmt_writer *w, const struct cmt_record *rec)
{
    switch (rec->type) {
    case CMT_REC_PROCESS: return cmt_writer_process(w, &rec->u.process);
    case CMT_REC_ENV: return cmt_writer_env(w, rec->u.env.name, rec->u.env.value);
    case CMT_REC_API: return cmt_writer_api(w, &rec->u.api);
    case CMT_REC_STRING: return cmt_writer_string(w, rec->u.string.id, rec->u.string.text);
    case CMT_REC_MODULE: return cmt_writer_module(w, &rec->u.module);
    case CMT_REC_STACK_NODE: return cmt_writer_stack_node(w, &rec->u.stack_node);
    case CMT_REC_THREAD: return cmt_writer_thread(w, &rec->u.thread);
    case CMT_REC_DEVICE: return cmt_writer_device(w, &rec->u.device);
    case CMT_REC_EVENT: return cmt_writer_event(w, &rec->u.event);
    case CMT_REC_MEMINFO: return cmt_writer_meminfo(w, &rec->u.meminfo);
    case CMT_REC_NOTE: return cmt_writer_note(w, &rec->u.note);
    case CMT_REC_SIGNAL: return cmt_writer_signal(w, &rec->u.signal);
    case CMT_REC_END: return cmt_writer_end(w, &rec->u.end);
    case CMT_REC_SYMBOL: return cmt_writer_symbol(w, &rec->u.symbol);
    case CMT_REC_ALLOCATOR: return cmt_writer_alloc_info(w, &rec->u.alloc_info);
    case CMT_REC_ALLOC_EVENT: return cmt_writer_alloc_event(w, &rec->u.alloc_event);
    case CMT_REC_RANGE: return cmt_writer_range(w, &rec->u.range);
    default: return 0; /* a reader returns no other type */
    }
}
