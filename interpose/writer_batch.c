/* writer_batch.c — the writer thread's memory and its batch of entries (writer_batch.h). */
#include "writer_batch.h"

#include <string.h>
#include <sys/mman.h>

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

static int reserve(struct cmt__queued **items, size_t *cap, size_t n)
{
    void *p = *items;
    int rc = cmt__map_grow(&p, cap, n, sizeof **items, 4096);
    *items = p;
    return rc;
}

void cmt__batch_begin(struct cmt__batch *b)
{
    b->runs = b->len ? 1 : 0;
    b->run_start[0] = 0;
}

int cmt__batch_add_run(struct cmt__batch *b, const struct cmt__thread *t, uint64_t tail,
                       uint64_t head)
{
    if (reserve(&b->items, &b->cap, b->len + (size_t)(head - tail)))
        return -1;
    if (b->runs < CMT__BATCH_RUNS + 1)
        b->run_start[b->runs] = b->len;
    b->runs++;
    while (tail < head) {
        size_t at = (size_t)(tail & t->mask), n = (size_t)(head - tail);
        n = n < t->mask + 1 - at ? n : t->mask + 1 - at;
        memcpy(b->items + b->len, &t->ring[at], n * sizeof *t->ring);
        b->len += n;
        tail += n;
    }
    return 0;
}

/* Whether each run starts after the one before it ends (one thread, or threads that took
 * turns): then the batch is in order as it is. */
static int runs_in_order(const struct cmt__batch *b)
{
    for (size_t r = 1; r < b->runs; r++)
        if (cmt__queued_cmp(&b->items[b->run_start[r] - 1], &b->items[b->run_start[r]]) > 0)
            return 0;
    return 1;
}

/* Merges the runs (at most CMT__BATCH_RUNS, none empty) into b->merged. The key of each run's
 * next entry is kept; exhausted runs have UINT64_MAX. */
static void merge_runs(const struct cmt__batch *b)
{
    const struct cmt__queued *in = b->items;
    size_t pos[CMT__BATCH_RUNS], end[CMT__BATCH_RUNS], n = b->runs;
    uint64_t key[CMT__BATCH_RUNS];
    for (size_t r = 0; r < n; r++) {
        pos[r] = b->run_start[r];
        end[r] = r + 1 < n ? b->run_start[r + 1] : b->len;
        key[r] = cmt__queued_key(&in[pos[r]]);
    }
    for (size_t done = 0; done < b->len;) {
        size_t best = 0;
        uint64_t next = UINT64_MAX; /* the lowest key of the other runs */
        for (size_t r = 1; r < n; r++) {
            if (key[r] < key[best]) {
                next = key[best];
                best = r;
            } else if (key[r] < next) {
                next = key[r];
            }
        }
        size_t from = pos[best], to = from + 1;
        while (to < end[best] && cmt__queued_key(&in[to]) < next)
            to++;
        memcpy(b->merged + done, in + from, (to - from) * sizeof *in);
        done += to - from;
        pos[best] = to;
        key[best] = to < end[best] ? cmt__queued_key(&in[to]) : UINT64_MAX;
    }
}

void cmt__batch_sort(struct cmt__batch *b)
{
    if (b->runs <= 1 || (b->runs <= CMT__BATCH_RUNS && runs_in_order(b)))
        return;
    if (b->runs > CMT__BATCH_RUNS || reserve(&b->merged, &b->merged_cap, b->len)) {
        cmt__queued_sort(b->items, b->len);
        return;
    }
    merge_runs(b);
    struct cmt__queued *items = b->items;
    size_t cap = b->cap;
    b->items = b->merged;
    b->cap = b->merged_cap;
    b->merged = items;
    b->merged_cap = cap;
}

void cmt__batch_drop(struct cmt__batch *b, size_t n)
{
    memmove(b->items, b->items + n, (b->len - n) * sizeof *b->items);
    b->len -= n;
}
