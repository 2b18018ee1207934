/* snapshot_ranges.c — a sorted set of address ranges (snapshot_ranges.h). */
#include "snapshot_ranges.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_grow.h"
#include "cmt_search.h"

/* @return the index of the first range whose end is at or above addr. */
static size_t first_ending_from(const struct cmt__ranges *r, uint64_t addr)
{
    size_t at;
    CMT_LOWER_BOUND(at, r->v, r->n, .end, addr);
    return at;
}

int cmt__ranges_add(struct cmt__ranges *r, uint64_t start, uint64_t end)
{
    if (end <= start)
        return 0;
    size_t i = first_ending_from(r, start), j = i;
    while (j < r->n && r->v[j].start <= end) { /* overlapping or touching: joined */
        start = r->v[j].start < start ? r->v[j].start : start;
        end = r->v[j].end > end ? r->v[j].end : end;
        j++;
    }
    if (j == i) {
        if (CMT_GROW(r->v, r->cap, r->n + 1, 16))
            return CMT_ENOMEM;
        memmove(r->v + i + 1, r->v + i, (r->n - i) * sizeof *r->v);
        r->n++;
    } else {
        memmove(r->v + i + 1, r->v + j, (r->n - j) * sizeof *r->v);
        r->n -= j - i - 1;
    }
    r->v[i] = (struct cmt__range){start, end};
    return 0;
}

int cmt__ranges_gaps(const struct cmt__ranges *r, uint64_t start, uint64_t end, cmt__range_fn fn,
                     void *ctx)
{
    for (size_t i = first_ending_from(r, start + 1); start < end; i++) {
        uint64_t next = i < r->n && r->v[i].start < end ? r->v[i].start : end;
        int rc = next > start ? fn(ctx, start, next) : 0;
        if (rc)
            return rc;
        if (i >= r->n || r->v[i].start >= end)
            break;
        start = r->v[i].end;
    }
    return 0;
}

int cmt__ranges_remove(struct cmt__ranges *r, uint64_t start, uint64_t end, cmt__range_fn fn,
                       void *ctx)
{
    if (end <= start)
        return 0;
    int rc = cmt__ranges_gaps(r, start, end, fn, ctx);
    if (rc)
        return rc;
    size_t i = first_ending_from(r, start + 1);
    if (i < r->n && r->v[i].start < start && r->v[i].end > end) { /* inside one: it splits */
        if (CMT_GROW(r->v, r->cap, r->n + 1, 16))
            return CMT_ENOMEM;
        memmove(r->v + i + 1, r->v + i, (r->n - i) * sizeof *r->v);
        r->n++;
        r->v[i].end = start;
        r->v[i + 1].start = end;
        return 0;
    }
    if (i < r->n && r->v[i].start < start) /* the one below keeps its start */
        r->v[i++].end = start;
    size_t j = i;
    while (j < r->n && r->v[j].end <= end)
        j++;
    if (j < r->n && r->v[j].start < end) /* the one above keeps its end */
        r->v[j].start = end;
    if (j > i) { /* none may be left out: r->v may still be NULL */
        memmove(r->v + i, r->v + j, (r->n - j) * sizeof *r->v);
        r->n -= j - i;
    }
    return 0;
}

void cmt__ranges_free(struct cmt__ranges *r)
{
    free(r->v);
    memset(r, 0, sizeof *r);
}
