/* frag.c — fragmentation measures of a device's live set (docs/analysis.md). */
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "replay_internal.h"
#include "cmt_grow.h"

struct range {
    uint64_t addr, size;
};

struct ranges {
    struct range *v;
    size_t n, cap;
    int failed;
};

/* Sorts by address, stably (equal addresses keep their order, as a merge sort would).
 * The timeline measures the live set often, so this is an LSD radix sort on the address
 * bytes that differ (addresses share their high bytes), with insertion sort for small sets.
 * @return 0, or -1 when the scratch buffer cannot be had (nothing sorted). */
static int sort_ranges(struct range *v, size_t n)
{
    if (n < 2)
        return 0;
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            struct range x = v[i];
            size_t j = i;
            for (; j > 0 && v[j - 1].addr > x.addr; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return 0;
    }
    size_t(*count)[256] = calloc(8, sizeof *count);
    struct range *tmp = malloc(n * sizeof *tmp);
    if (!count || !tmp) {
        free(count);
        free(tmp);
        return -1;
    }
    uint64_t differ = 0; /* the bits where some address differs from the first */
    for (size_t i = 1; i < n; i++)
        differ |= v[i].addr ^ v[0].addr;
    unsigned bytes[8], nbytes = 0; /* the bytes that differ: the passes to make */
    for (unsigned b = 0; b < 8; b++)
        if ((differ >> (8 * b)) & 0xff)
            bytes[nbytes++] = b;
    for (size_t i = 0; i < n; i++)
        for (unsigned k = 0; k < nbytes; k++)
            count[bytes[k]][(v[i].addr >> (8 * bytes[k])) & 0xff]++;
    struct range *from = v, *to = tmp;
    for (unsigned k = 0; k < nbytes; k++) {
        unsigned b = bytes[k];
        size_t *c = count[b];
        size_t sum = 0;
        for (unsigned j = 0; j < 256; j++) {
            size_t x = c[j];
            c[j] = sum;
            sum += x;
        }
        for (size_t i = 0; i < n; i++)
            to[c[(from[i].addr >> (8 * b)) & 0xff]++] = from[i];
        struct range *t = from;
        from = to;
        to = t;
    }
    if (from != v)
        memcpy(v, from, n * sizeof *v);
    free(count);
    free(tmp);
    return 0;
}

static void push(struct ranges *r, uint64_t addr, uint64_t size)
{
    if (CMT_GROW(r->v, r->cap, r->n + 1, 256) != 0) {
        r->failed = 1;
        return;
    }
    r->v[r->n++] = (struct range){addr, size};
}

/* Holes between allocations in address order (a is sorted). A gap wider than the device
 * itself is a jump between address regions, not memory an allocation could have used: it is
 * not a hole. */
static void holes(const struct ranges *a, uint64_t limit, struct cmt_fragmentation *f)
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
static void reservations(const struct ranges *va, const struct ranges *maps,
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
    uint64_t max_tick; /* only objects born at or before this replay tick */
    struct ranges allocs, va, maps;
};

static void collect_one(struct collect *c, int kind, int32_t dev, uint64_t addr, uint64_t size,
                        uint64_t tick)
{
    if (tick > c->max_tick)
        return;
    if (kind == CMT_KIND_MAPPING) {
        push(&c->maps, addr, size); /* mappings of every device: a reservation names none */
        return;
    }
    if (dev != c->dev)
        return;
    if (CMT_KIND_HAS(kind, HOLE)) /* managed memory has its own range: no holes */
        push(&c->allocs, addr, size);
    else if (kind == CMT_KIND_VA)
        push(&c->va, addr, size);
}

static void visit(const struct cmt__map *m, struct collect *c)
{
    for (size_t i = 0; i < m->count; i++) {
        const struct cmt__entry *e = &m->entries[i];
        collect_one(c, e->kind - 1, e->dev, e->key, e->size, e->seq);
    }
}

static int measure(const cmt_replay *rp, int32_t dev, uint64_t max_tick, int with_log,
                   const struct cmt_replay_device *d, struct cmt_fragmentation *out)
{
    *out = (struct cmt_fragmentation){0};
    struct collect c = {.dev = dev, .max_tick = max_tick};
    visit(&rp->allocs, &c);
    visit(&rp->vas, &c);
    visit(&rp->mappings, &c);
    for (size_t i = 0; with_log && i < rp->log_count; i++) {
        const struct cmt__logged *l = &rp->log[i];
        collect_one(&c, l->kind - 1, l->dev, l->addr, l->size, 0);
    }
    int rc = 0;
    if (c.allocs.failed || c.va.failed || c.maps.failed || sort_ranges(c.allocs.v, c.allocs.n) ||
        sort_ranges(c.va.v, c.va.n) || sort_ranges(c.maps.v, c.maps.n)) {
        rc = CMT_ENOMEM;
    } else {
        uint64_t limit = d && d->total_bytes ? d->total_bytes : UINT64_C(1) << 40;
        holes(&c.allocs, limit, out);
        reservations(&c.va, &c.maps, out);
        if (d) {
            out->waste_bytes = d->waste_bytes;
            out->pool_retained_bytes = d->kind_bytes[CMT_KIND_POOL];
        }
    }
    free(c.allocs.v);
    free(c.va.v);
    free(c.maps.v);
    return rc;
}

int cmt_replay_fragmentation(const cmt_replay *rp, int32_t dev, struct cmt_fragmentation *out)
{
    return measure(rp, dev, UINT64_MAX, 0, cmt_replay_device(rp, dev), out);
}

int cmt_replay_peak_fragmentation(const cmt_replay *rp, int32_t dev, struct cmt_fragmentation *out)
{
    const struct cmt_replay_device *d = NULL;
    uint32_t slot = (uint32_t)(dev + 1);
    if (dev >= -1 && slot < rp->peak_device_count)
        d = &rp->peak_devices[slot];
    return measure(rp, dev, rp->peak_tick, 1, d, out);
}
