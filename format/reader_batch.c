/* reader_batch.c — the events of an EVENTS block (v3) decoded CMT__BATCH_EVENTS at a time:
 * one tight loop keeps the column cursors and the delta bases in registers, reads without a
 * bound check per varint (the chunk's padding covers what a malformed batch may read past its
 * columns) and checks the batch as a whole at its end. A batch that fails any check changes
 * nothing: reader.c then decodes its events one at a time and stops at the malformed one, as
 * it would have without batches. */
#include "reader_internal.h"
#include "varint.h"

/* The delta bases and the cursors of the head, time, ptr, size and stream columns of a batch
 * being decoded: locals (registers) until the batch is known to be well formed. The other
 * fields' cursors and bases are arrays beside it (indexed by field: they stay in memory). */
struct batch_state {
    const uint8_t *head, *time, *ptr, *size, *stream;
    uint64_t seq, t, prev_ptr, prev_stream;
    uint32_t tid, stack;
    int64_t dev;
};

/* The values of e's fields but ptr, size and stream, from their columns col[f]. */
static inline __attribute__((always_inline)) void other_values(const uint8_t **col,
                                                               uint64_t *prev_v, uint64_t fields,
                                                               struct cmt_event *e, int *bad,
                                                               int pext)
{
    for (uint64_t m = fields & ~(uint64_t)(CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM)); m;
         m &= m - 1) {
        int f = __builtin_ctzll(m);
        uint64_t v = cmt__varint_fast_with(&col[f], bad, pext);
        if (CMT_DELTA_FIELDS >> f & 1)
            v = prev_v[f] += (uint64_t)cmt__unzigzag(v);
        e->v[f] = v;
    }
}

/* What the range checks of a batch's events need, gathered as they are decoded. */
struct batch_ranges {
    uint64_t wide;  /* api and result ORed: a bit above 31 is out of range */
    uint64_t flags; /* every event's flags ORed: an unknown bit is malformed */
    uint64_t dev;   /* each dev read, plus 2^31, ORed: a bit above 31 is outside int32_t */
};

/* One event of the batch into e, its parts' ranges into *g. */
static inline __attribute__((always_inline)) void batch_event(struct batch_state *s,
                                                              const uint8_t **col, uint64_t *prev_v,
                                                              struct cmt_event *e,
                                                              struct batch_ranges *g, int *bad,
                                                              int pext)
{
    uint64_t flags = cmt__varint_fast_with(&s->head, bad, pext);
    uint64_t api = cmt__varint_fast_with(&s->head, bad, pext);
    s->seq += flags & CMT_EV_SEQ ? cmt__varint_fast_with(&s->head, bad, pext) : 1;
    if (flags & CMT_EV_TID)
        s->tid += (uint32_t)cmt__unzigzag(cmt__varint_fast_with(&s->head, bad, pext));
    uint64_t result = flags & CMT_EV_RESULT ? cmt__varint_fast_with(&s->head, bad, pext) : 0;
    if (flags & CMT_EV_DEV) { /* else dev is the previous event's, already checked */
        s->dev = cmt__unzigzag(cmt__varint_fast_with(&s->head, bad, pext));
        g->dev |= (uint64_t)s->dev + (UINT64_C(1) << 31);
    }
    if (flags & CMT_EV_STACK)
        s->stack += (uint32_t)cmt__unzigzag(cmt__varint_fast_with(&s->head, bad, pext));
    uint64_t fields = cmt__varint_fast_with(&s->head, bad, pext) &
                      ((UINT64_C(1) << CMT_NFIELDS) - 1);
    s->t += (uint64_t)cmt__unzigzag(cmt__varint_fast_with(&s->time, bad, pext));
    if (fields & CMT_F(PTR))
        e->v[CMT_FIELD_PTR] = s->prev_ptr += (uint64_t)cmt__unzigzag(
            cmt__varint_fast_with(&s->ptr, bad, pext));
    if (fields & CMT_F(SIZE))
        e->v[CMT_FIELD_SIZE] = cmt__varint_fast_with(&s->size, bad, pext);
    if (fields & CMT_F(STREAM))
        e->v[CMT_FIELD_STREAM] = s->prev_stream += (uint64_t)cmt__unzigzag(
            cmt__varint_fast_with(&s->stream, bad, pext));
    if (__builtin_expect(fields & ~(uint64_t)(CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM)), 0))
        other_values(col, prev_v, fields, e, bad, pext);
    e->seq = s->seq;
    e->t_ns = s->t;
    e->tid = s->tid;
    e->api = (uint32_t)api;
    e->result = (int32_t)(uint32_t)result;
    e->dev = (int32_t)s->dev;
    e->stack = s->stack;
    e->fields = (uint32_t)fields;
    g->wide |= api | result;
    g->flags |= flags;
}

static inline __attribute__((always_inline)) void load_state(const cmt_reader *r,
                                                             struct batch_state *s,
                                                             const uint8_t **col, uint64_t *prev_v)
{
    s->head = r->col[CMT_COL_HEAD];
    s->time = r->col[CMT_COL_TIME];
    s->ptr = r->col[CMT_COL_VALUES + CMT_FIELD_PTR];
    s->size = r->col[CMT_COL_VALUES + CMT_FIELD_SIZE];
    s->stream = r->col[CMT_COL_VALUES + CMT_FIELD_STREAM];
    memcpy(col, r->col + CMT_COL_VALUES, CMT_NFIELDS * sizeof *col);
    memcpy(prev_v, r->prev_v, CMT_NFIELDS * sizeof *prev_v);
    s->prev_ptr = r->prev_v[CMT_FIELD_PTR];
    s->prev_stream = r->prev_v[CMT_FIELD_STREAM];
    s->seq = r->prev_seq;
    s->t = r->prev_t;
    s->tid = r->prev_tid;
    s->stack = r->prev_stack;
    s->dev = r->prev_dev;
}

/* s's cursors into col, its bases into prev_v. @return non-zero when a cursor went past its
 * column's end. */
static inline __attribute__((always_inline)) int gather_state(const cmt_reader *r,
                                                              const struct batch_state *s,
                                                              const uint8_t **col, uint64_t *prev_v)
{
    col[CMT_FIELD_PTR] = s->ptr;
    col[CMT_FIELD_SIZE] = s->size;
    col[CMT_FIELD_STREAM] = s->stream;
    prev_v[CMT_FIELD_PTR] = s->prev_ptr;
    prev_v[CMT_FIELD_STREAM] = s->prev_stream;
    int past = s->head > r->col_end[CMT_COL_HEAD] || s->time > r->col_end[CMT_COL_TIME];
    for (int f = 0; f < CMT_NFIELDS; f++)
        past |= col[f] > r->col_end[CMT_COL_VALUES + f];
    return past;
}

static inline __attribute__((always_inline)) void store_state(cmt_reader *r,
                                                              const struct batch_state *s,
                                                              const uint8_t *const *col,
                                                              const uint64_t *prev_v)
{
    r->col[CMT_COL_HEAD] = s->head;
    r->col[CMT_COL_TIME] = s->time;
    memcpy(r->col + CMT_COL_VALUES, col, CMT_NFIELDS * sizeof *col);
    memcpy(r->prev_v, prev_v, CMT_NFIELDS * sizeof *prev_v);
    r->prev_seq = s->seq;
    r->prev_t = s->t;
    r->prev_tid = s->tid;
    r->prev_stack = s->stack;
    r->prev_dev = (int32_t)s->dev;
}

/* cmt__reader_fill_batch, its varints packed as cmt__varint_fast_with(pext) does. */
static inline __attribute__((always_inline)) int fill_batch(cmt_reader *r, int pext)
{
    uint32_t n = r->block_left < CMT__BATCH_EVENTS ? r->block_left : CMT__BATCH_EVENTS;
    struct batch_state s;
    const uint8_t *col[CMT_NFIELDS];
    uint64_t prev_v[CMT_NFIELDS];
    load_state(r, &s, col, prev_v);
    int bad = 0;
    struct batch_ranges g = {0, 0, 0};
    for (struct cmt_event *e = r->batch, *end = e + n; e != end; e++)
        batch_event(&s, col, prev_v, e, &g, &bad, pext);
    /* api and result fit 32 bits, dev is an int32_t, flags has no unknown bit */
    uint64_t out_of_range = (g.wide | g.dev) >> 32 | (g.flags & ~(uint64_t)CMT_EV_ALL);
    if (gather_state(r, &s, col, prev_v) | bad || out_of_range)
        return -1;
    store_state(r, &s, col, prev_v);
    r->block_left -= n;
    r->batch_next = r->batch;
    r->batch_end = r->batch + n;
    return 0;
}

static __attribute__((noinline)) int fill_batch_shifts(cmt_reader *r)
{
    return fill_batch(r, 0);
}

#if CMT__HAVE_PEXT
static __attribute__((noinline, target("bmi,bmi2"))) int fill_batch_pext(cmt_reader *r)
{
    return fill_batch(r, 1);
}
#endif

int cmt__reader_fill_batch(cmt_reader *r)
{
#if CMT__HAVE_PEXT
    if (r->pext)
        return fill_batch_pext(r);
#endif
    return fill_batch_shifts(r);
}

int cmt__reader_cpu_pext(void)
{
#if CMT__HAVE_PEXT
    /* AMD's before Zen 3 run pext in microcode, slower than the shift steps */
    return __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
           __builtin_cpu_is("intel");
#else
    return 0;
#endif
}
