/* diff.c — the comparison of two runs (see diff.h). */
#include "diff.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "sites.h"

#define KEY 1024

static int32_t peak_device(const cmt_replay *rp)
{
    int32_t best = -1;
    uint64_t max = 0;
    for (uint32_t s = 0; s < cmt_replay_device_count(rp); s++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(rp, s);
        if (d && d->peak_live_bytes > max) {
            max = d->peak_live_bytes;
            best = d->dev;
        }
    }
    return best;
}

static int side_finish(struct cmt_observer *self, const cmt_replay *rp)
{
    struct cmt_diff_side *side = self->ctx;
    uint32_t n = cmt_replay_site_count(rp);
    side->peak_dev = peak_device(rp);
    side->have_frag = cmt_replay_peak_fragmentation(rp, side->peak_dev, &side->frag_at_peak) == 0;
    side->sites = calloc(n ? n : 1, sizeof *side->sites);
    if (!side->sites)
        return CMT_ENOMEM;
    char key[KEY];
    for (uint32_t i = 0; i < n; i++) {
        const struct cmt_replay_site *s = cmt_replay_site(rp, i);
        if (!s->at_peak_bytes)
            continue;
        struct cmt_diff_site d = {
            .key = strdup(cmt_site_key(cmt_replay_reader(rp), s->stack, key, sizeof key)),
            .stack = s->stack,
            .bytes = s->at_peak_bytes};
        if (d.key)
            side->sites[side->site_count++] = d;
    }
    return 0;
}

struct cmt_observer cmt_diff_observer(struct cmt_diff_side *side)
{
    memset(side, 0, sizeof *side);
    side->peak_dev = -1;
    return (struct cmt_observer){.finish = side_finish, .ctx = side};
}

void cmt_diff_side_free(struct cmt_diff_side *side)
{
    for (size_t i = 0; i < side->site_count; i++)
        free(side->sites[i].key);
    free(side->sites);
    memset(side, 0, sizeof *side);
}

static int by_key(const void *x, const void *y)
{
    return strcmp(((const struct cmt_site_delta *)x)->key, ((const struct cmt_site_delta *)y)->key);
}

static uint64_t magnitude(const struct cmt_site_delta *s)
{
    return s->a > s->b ? s->a - s->b : s->b - s->a;
}

static int by_change(const void *x, const void *y)
{
    uint64_t a = magnitude(x), b = magnitude(y);
    return a < b ? 1 : a > b ? -1 : 0;
}

int cmt_diff_sites(const struct cmt_diff_side *a, const struct cmt_diff_side *b,
                   struct cmt_site_delta **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    struct cmt_site_delta *v = calloc(a->site_count + b->site_count + 1, sizeof *v);
    if (!v)
        return CMT_ENOMEM;
    size_t n = 0;
    for (int side = 0; side < 2; side++) {
        const struct cmt_diff_side *s = side ? b : a;
        for (size_t i = 0; i < s->site_count; i++) {
            struct cmt_site_delta d = {.key = s->sites[i].key};
            if (side) {
                d.b = s->sites[i].bytes;
                d.stack_b = s->sites[i].stack;
            } else {
                d.a = s->sites[i].bytes;
                d.stack_a = s->sites[i].stack;
            }
            v[n++] = d;
        }
    }
    qsort(v, n, sizeof *v, by_key);
    size_t m = 0; /* merge equal keys */
    for (size_t i = 0; i < n; i++) {
        if (m && strcmp(v[m - 1].key, v[i].key) == 0) {
            v[m - 1].a += v[i].a;
            v[m - 1].b += v[i].b;
            if (!v[m - 1].stack_a)
                v[m - 1].stack_a = v[i].stack_a;
            if (!v[m - 1].stack_b)
                v[m - 1].stack_b = v[i].stack_b;
        } else {
            v[m++] = v[i];
        }
    }
    qsort(v, m, sizeof *v, by_change);
    *out = v;
    *count = m;
    return 0;
}
