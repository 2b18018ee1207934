/* writer_batch.c — the writer thread's memory and its batch of entries (writer_batch.h). */
#include "writer_batch.h"

#include <string.h>
#include <sys/mman.h>

#include "cmt_error.h"
#include "emit.h"

/* Each block is a mapping with its size in front. */
void *cmt__map_alloc(void *ctx, size_t size)
{
    (void)ctx;
    size_t *p = mmap(NULL, size + 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    p[0] = size + 16;
    return (char *)p + 16;
}

void cmt__map_free(void *ctx, void *p)
{
    (void)ctx;
    if (p)
        munmap((char *)p - 16, *(size_t *)((char *)p - 16));
}

const struct cmt_allocator cmt__map_allocator = {cmt__map_alloc, cmt__map_free, NULL};

int cmt__map_grow(void **items, size_t *cap, size_t need, size_t unit, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : first;
    while (n < need)
        n *= 2;
    void *p = cmt__map_alloc(NULL, n * unit);
    if (!p)
        return -1;
    if (*cap)
        memcpy(p, *items, *cap * unit);
    cmt__map_free(NULL, *items);
    *items = p;
    *cap = n;
    return 0;
}

void cmt__batch_begin(struct cmt__batch *b)
{
    b->nruns = 0;
}

int cmt__batch_add_run(struct cmt__batch *b, struct cmt__thread *t, uint64_t tail, uint64_t head)
{
    void *runs = b->runs;
    int rc = cmt__map_grow(&runs, &b->runs_cap, b->nruns + 1, sizeof *b->runs, 16);
    b->runs = runs;
    if (rc)
        return -1;
    b->runs[b->nruns++] = (struct cmt__run){t, tail, head};
    return 0;
}

static const struct cmt__queued *at(const struct cmt__run *r, uint64_t pos)
{
    return &r->t->ring[pos & r->t->mask];
}

/* The runs merged in place: the order of each run's next entry is kept (CMT__ORDER_MAX:
 * done). */
static int merge_emit(struct cmt__batch *b, uint64_t limit,
                      int (*emit)(void *, const struct cmt__queued *), void *ctx,
                      uint64_t *next_seq)
{
    size_t n = b->nruns;
    struct cmt__run *runs = b->runs;
    cmt__order key[CMT__BATCH_RUNS];
    cmt__order stop_key = limit == UINT64_MAX ? CMT__ORDER_MAX - 1 : cmt__order_of_seq(limit);
    for (size_t r = 0; r < n; r++)
        key[r] = cmt__queued_order(at(&runs[r], runs[r].pos));
    for (;;) {
        size_t best = 0;
        cmt__order next = CMT__ORDER_MAX; /* the lowest order of the other runs */
        for (size_t r = 1; r < n; r++) {
            if (key[r] < key[best]) {
                next = key[best];
                best = r;
            } else if (key[r] < next) {
                next = key[r];
            }
        }
        if (key[best] >= stop_key)
            return 0;
        struct cmt__run *r = &runs[best];
        cmt__order stop = next < stop_key ? next : stop_key;
        do {
            const struct cmt__queued *e = at(r, r->pos);
            int rc = emit(ctx, e);
            if (rc)
                return rc;
            *next_seq = e->seq + 1;
        } while (++r->pos < r->end && cmt__queued_order(at(r, r->pos)) < stop);
        key[best] = r->pos < r->end ? cmt__queued_order(at(r, r->pos)) : CMT__ORDER_MAX;
    }
}

/* More runs than merge_emit takes: copied out, heap sorted, written; each run's pos then found
 * by bisection (its entries below `limit` are a prefix of it). */
static int sort_emit(struct cmt__batch *b, uint64_t limit,
                     int (*emit)(void *, const struct cmt__queued *), void *ctx, uint64_t *next_seq)
{
    size_t len = 0;
    for (size_t r = 0; r < b->nruns; r++)
        len += (size_t)(b->runs[r].end - b->runs[r].pos);
    void *items = b->items;
    int grown = cmt__map_grow(&items, &b->cap, len, sizeof *b->items, 4096);
    b->items = items;
    if (grown)
        return CMT_ENOMEM;
    size_t len_at = 0;
    for (size_t r = 0; r < b->nruns; r++) {
        const struct cmt__run *run = &b->runs[r];
        for (uint64_t p = run->pos; p < run->end;) { /* in at most two pieces: the ring wraps */
            size_t from = (size_t)(p & run->t->mask), k = (size_t)(run->end - p);
            k = k < run->t->mask + 1 - from ? k : run->t->mask + 1 - from;
            memcpy(b->items + len_at, &run->t->ring[from], k * sizeof *b->items);
            len_at += k;
            p += k;
        }
    }
    cmt__queued_sort(b->items, len);
    int rc = 0;
    for (size_t i = 0; !rc && i < len && b->items[i].seq < limit; i++) {
        rc = emit(ctx, &b->items[i]);
        *next_seq = b->items[i].seq + 1;
    }
    for (size_t r = 0; r < b->nruns; r++) {
        struct cmt__run *run = &b->runs[r];
        uint64_t lo = run->pos, hi = run->end;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (at(run, mid)->seq < limit)
                lo = mid + 1;
            else
                hi = mid;
        }
        run->pos = lo;
    }
    return rc;
}

int cmt__batch_emit(struct cmt__batch *b, uint64_t limit,
                    int (*emit)(void *ctx, const struct cmt__queued *e), void *ctx,
                    uint64_t *next_seq)
{
    if (b->nruns == 0)
        return 0;
    return b->nruns <= CMT__BATCH_RUNS ? merge_emit(b, limit, emit, ctx, next_seq)
                                       : sort_emit(b, limit, emit, ctx, next_seq);
}
