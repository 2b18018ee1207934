/* frag.c — fragmentation measures of a device's live set (docs/analysis.md). */
#include <stdlib.h>
#include <string.h>

#include "frag.h"

#include "cmt_error.h"
#include "cmt_grow.h"
#include "replay_internal.h"

#define DIGIT_BITS 11 /* the widest digit of the sort (2048 counts a pass) */
#define MAX_PASSES 8  /* 64 bits in digits of at least 8 bits */

/* The digits of an LSD radix sort over the address bits where some address differs from the
 * first (addresses share their high bits, and their low bits when aligned), in equal widths
 * of at most `widest` bits; a digit where no address differs is no pass. @return how many. */
static unsigned digits(uint64_t differ, unsigned widest, unsigned shift[MAX_PASSES], uint64_t *mask)
{
    if (!differ)
        return 0;
    unsigned lo = (unsigned)__builtin_ctzll(differ), hi = 63 - (unsigned)__builtin_clzll(differ);
    unsigned span = hi - lo + 1, passes = (span + widest - 1) / widest;
    unsigned width = (span + passes - 1) / passes, n = 0;
    *mask = (UINT64_C(1) << width) - 1;
    for (unsigned at = lo; at <= hi; at += width)
        if ((differ >> at) & *mask)
            shift[n++] = at;
    return n;
}

/* Sorts by address, stably (equal addresses keep their order, as a merge sort would).
 * The timeline measures the live set often, so this is an LSD radix sort on the address bits
 * that differ (digits of up to 11 bits for large sets, 8 for the rest, whose counts would cost
 * more than their passes), with insertion sort for small sets. s->tmp and s->count are its
 * buffers; the sorted ranges may end in s->tmp's, which then trades places with r's.
 * @return 0, or -1 when they cannot be had (nothing sorted). */
static int sort_ranges(struct cmt__frag_ranges *r, struct cmt__frag_scratch *s)
{
    struct cmt__frag_range *v = r->v;
    size_t n = r->n;
    if (n < 2)
        return 0;
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            struct cmt__frag_range x = v[i];
            size_t j = i;
            for (; j > 0 && v[j - 1].addr > x.addr; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return 0;
    }
    uint64_t differ = 0, mask = 0;
    for (size_t i = 1; i < n; i++)
        differ |= v[i].addr ^ v[0].addr;
    unsigned shift[MAX_PASSES];
    unsigned passes = digits(differ, n >= 4096 ? DIGIT_BITS : 8, shift, &mask);
    if (!passes) /* every address the same: stable means as it is */
        return 0;
    size_t buckets = (size_t)mask + 1;
    if (CMT_GROW(s->tmp.v, s->tmp.cap, n, 256) != 0 ||
        CMT_GROW(s->count, s->count_cap, passes * buckets, 256) != 0)
        return -1;
    size_t *count = s->count; /* row k: count[k * buckets ...] */
    memset(count, 0, passes * buckets * sizeof *count);
    for (size_t i = 0; i < n; i++)
        for (unsigned k = 0; k < passes; k++)
            count[k * buckets + ((v[i].addr >> shift[k]) & mask)]++;
    struct cmt__frag_range *from = v, *to = s->tmp.v;
    for (unsigned k = 0; k < passes; k++) {
        size_t *c = count + k * buckets, sum = 0;
        for (size_t j = 0; j < buckets; j++) {
            size_t x = c[j];
            c[j] = sum;
            sum += x;
        }
        unsigned b = shift[k];
        for (size_t i = 0; i < n; i++)
            to[c[(from[i].addr >> b) & mask]++] = from[i];
        struct cmt__frag_range *t = from;
        from = to;
        to = t;
    }
    if (from != v) { /* the sorted half is the scratch one: trade the buffers */
        struct cmt__frag_ranges t = *r;
        r->v = s->tmp.v;
        r->cap = s->tmp.cap;
        s->tmp.v = t.v;
        s->tmp.cap = t.cap;
    }
    return 0;
}

/* Room for `need` ranges in r. @return 0 or -1. */
static int reserve(struct cmt__frag_ranges *r, size_t need)
{
    return CMT_GROW(r->v, r->cap, need, 256) != 0 ? -1 : 0;
}

/* Appends a range. @return 0, or -1 when there is no room (nothing appended). */
static inline int push(struct cmt__frag_ranges *r, uint64_t addr, uint64_t size)
{
    if (__builtin_expect(r->n == r->cap, 0) && reserve(r, r->n + 1) != 0)
        return -1;
    r->v[r->n++] = (struct cmt__frag_range){addr, size};
    return 0;
}

/* Holes between allocations in address order (a is sorted). A gap wider than the device
 * itself is a jump between address regions, not memory an allocation could have used: it is
 * not a hole. */
static void holes(const struct cmt__frag_ranges *a, uint64_t limit, struct cmt_fragmentation *f)
{
    uint64_t end = 0;
    for (size_t i = 0; i < a->n; i++) {
        if (i && a->v[i].addr > end) {
            uint64_t gap = a->v[i].addr - end;
            if (gap <= limit) {
                f->hole_bytes += gap;
                if (gap > f->largest_hole)
                    f->largest_hole = gap;
            }
        }
        uint64_t e = a->v[i].addr + a->v[i].size;
        if (i == 0 || e > end)
            end = e;
    }
    f->hole_fragmentation = f->hole_bytes ? 1.0 - (double)f->largest_hole / (double)f->hole_bytes
                                          : 0;
}

/* Mapped bytes and the largest unmapped extent inside reservations. */
static void reservations(const struct cmt__frag_ranges *va, const struct cmt__frag_ranges *maps,
                         struct cmt_fragmentation *f)
{
    size_t m = 0;
    for (size_t i = 0; i < va->n; i++) {
        uint64_t lo = va->v[i].addr, hi = lo + va->v[i].size, at = lo;
        f->reserved_va_bytes += va->v[i].size;
        while (m < maps->n && maps->v[m].addr < lo)
            m++;
        for (; m < maps->n && maps->v[m].addr < hi; m++) {
            uint64_t s = maps->v[m].addr, e = s + maps->v[m].size;
            if (e > hi)
                e = hi;
            if (s > at && s - at > f->largest_unmapped)
                f->largest_unmapped = s - at;
            if (e > at) {
                f->mapped_in_va_bytes += e - (s > at ? s : at);
                at = e;
            }
        }
        if (hi > at && hi - at > f->largest_unmapped)
            f->largest_unmapped = hi - at;
    }
}

struct collect {
    int32_t dev;
    int failed;        /* a range found no room */
    uint64_t max_tick; /* only objects born at or before this replay tick */
    struct cmt__frag_scratch *s;
};

static inline __attribute__((always_inline)) void collect_one(struct collect *c, int kind,
                                                              int32_t dev, uint64_t addr,
                                                              uint64_t size, uint64_t tick)
{
    if (tick > c->max_tick)
        return;
    if (kind == CMT_KIND_MAPPING) {
        /* mappings of every device: a reservation names none */
        c->failed |= push(&c->s->maps, addr, size);
        return;
    }
    if (dev != c->dev)
        return;
    if (CMT_KIND_HAS(kind, HOLE)) /* managed memory has its own range: no holes */
        c->failed |= push(&c->s->allocs, addr, size);
    else if (kind == CMT_KIND_VA)
        c->failed |= push(&c->s->va, addr, size);
}

static void visit(const struct cmt__map *m, struct collect *c)
{
    for (size_t i = 0; i < m->count; i++) {
        const struct cmt__entry *e = &m->entries[i];
        collect_one(c, e->kind - 1, e->dev, e->key, e->size, e->seq);
    }
}

/* The live set of dev (objects born by max_tick, and the log's with with_log) into c->s,
 * sorted by address. @return 0 or CMT_ENOMEM. */
static int collect(const cmt_replay *rp, int with_log, struct collect *c)
{
    struct cmt__frag_scratch *s = c->s;
    s->allocs.n = s->va.n = s->maps.n = 0;
    /* the allocations are most of the live set: room for all at once */
    if (reserve(&s->allocs, rp->allocs.count + (with_log ? rp->log_count : 0)) != 0)
        return CMT_ENOMEM;
    visit(&rp->allocs, c);
    visit(&rp->vas, c);
    visit(&rp->mappings, c);
    for (size_t i = 0; with_log && i < rp->log_count; i++) {
        const struct cmt__logged *l = &rp->log[i];
        collect_one(c, l->kind - 1, l->dev, l->addr, l->size, 0);
    }
    /* mappings count only inside reservations: without one, their order is never read */
    if (c->failed || sort_ranges(&s->allocs, s) || sort_ranges(&s->va, s) ||
        (s->va.n && sort_ranges(&s->maps, s)))
        return CMT_ENOMEM;
    return 0;
}

static int measure(const cmt_replay *rp, int32_t dev, uint64_t max_tick, int with_log,
                   const struct cmt_replay_device *d, struct cmt__frag_scratch *s,
                   struct cmt_fragmentation *out)
{
    *out = (struct cmt_fragmentation){0};
    struct collect c = {.dev = dev, .max_tick = max_tick, .s = s};
    int rc = collect(rp, with_log, &c);
    if (rc)
        return rc;
    uint64_t limit = d && d->total_bytes ? d->total_bytes : UINT64_C(1) << 40;
    holes(&s->allocs, limit, out);
    reservations(&s->va, &s->maps, out);
    if (d) {
        out->waste_bytes = d->waste_bytes;
        out->pool_retained_bytes = d->kind_bytes[CMT_KIND_POOL];
    }
    return 0;
}

int cmt__frag_measure(const cmt_replay *rp, int32_t dev, struct cmt__frag_scratch *s,
                      struct cmt_fragmentation *out)
{
    return measure(rp, dev, UINT64_MAX, 0, cmt_replay_device(rp, dev), s, out);
}

void cmt__frag_scratch_free(struct cmt__frag_scratch *s)
{
    free(s->allocs.v);
    free(s->va.v);
    free(s->maps.v);
    free(s->tmp.v);
    free(s->count);
    memset(s, 0, sizeof *s);
}

int cmt_replay_fragmentation(const cmt_replay *rp, int32_t dev, struct cmt_fragmentation *out)
{
    struct cmt__frag_scratch s = {0};
    int rc = cmt__frag_measure(rp, dev, &s, out);
    cmt__frag_scratch_free(&s);
    return rc;
}

int cmt_replay_peak_fragmentation(const cmt_replay *rp, int32_t dev, struct cmt_fragmentation *out)
{
    const struct cmt_replay_device *d = NULL;
    uint32_t slot = (uint32_t)(dev + 1);
    if (dev >= -1 && slot < rp->peak_device_count)
        d = &rp->peak_devices[slot];
    struct cmt__frag_scratch s = {0};
    int rc = measure(rp, dev, rp->peak_tick, 1, d, &s, out);
    cmt__frag_scratch_free(&s);
    return rc;
}
