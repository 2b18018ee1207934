/* whatif_selfcheck.c — the model replays the run's own settings and is compared with the
 * segments the allocator recorded (whatif_blocks.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caching_model.h"
#include "cmt_error.h"
#include "cmt_grow.h"
#include "whatif_blocks.h"

struct segments {
    struct cmt_whatif_segment *v;
    size_t count, cap;
};

struct modelled {
    struct segments allocs, frees;
    size_t request; /* the stream event being replayed */
    int failed;
};

static void add(struct modelled *m, struct segments *to, uint64_t size)
{
    if (CMT_GROW(to->v, to->cap, to->count + 1, 64) != 0) {
        m->failed = 1; /* the model goes on; the comparison is given up */
        return;
    }
    to->v[to->count++] = (struct cmt_whatif_segment){size, m->request};
}

static int on_device_alloc(void *ctx, uint64_t address, uint64_t size)
{
    (void)address;
    struct modelled *m = ctx;
    add(m, &m->allocs, size);
    return 0;
}

static void on_device_free(void *ctx, uint64_t address, uint64_t size)
{
    (void)address;
    struct modelled *m = ctx;
    add(m, &m->frees, size);
}

/* Replays every event, past failures. @return 0 or a CMT_E* code that stopped it. */
static int replay(struct cmt_model *model, const struct cmt_whatif_stream *s, struct modelled *m,
                  uint64_t *ooms)
{
    cmt_model_handle *handles = calloc(s->id_count ? s->id_count : 1, sizeof *handles);
    if (!handles)
        return CMT_EMODEL_NOMEM;
    int rc = 0;
    struct cmt_whatif_cursor cur;
    struct cmt_whatif_event ev;
    cmt_whatif_cursor_init(&cur, s);
    for (size_t k = 0; !rc && cmt_whatif_cursor_next(&cur, &ev); k++) {
        const struct cmt_whatif_event *e = &ev;
        m->request = k;
        if (cmt_whatif_event_empties_cache(e)) {
            cmt_model_empty_cache(model);
            continue;
        }
        if (e->id >= s->id_count)
            continue;
        if (e->is_free) {
            if (handles[e->id])
                cmt_model_free(model, handles[e->id]);
            handles[e->id] = 0;
            continue;
        }
        int arc = cmt_model_alloc(model, e->size, e->stream, &handles[e->id]);
        if (arc == CMT_EMODEL_OOM)
            ++*ooms;
        else if (arc)
            rc = arc;
    }
    if (!rc && cur.error)
        rc = cur.error;
    free(handles);
    return rc;
}

static void keep_diff(struct cmt_whatif_selfcheck *c, const struct cmt_whatif_stream *s,
                      size_t index, bool is_free, const struct cmt_whatif_segment *rec,
                      const struct cmt_whatif_segment *mod)
{
    if (c->diff_count >= CMT_WHATIF_CHECK_DIFFS)
        return;
    struct cmt_whatif_check_diff *d = &c->diffs[c->diff_count++];
    memset(d, 0, sizeof *d);
    d->index = index;
    d->is_free = is_free;
    if (rec)
        d->recorded = *rec;
    if (mod)
        d->model = *mod;
    size_t request = rec ? rec->request : mod->request;
    struct cmt_whatif_event e;
    if (cmt_whatif_stream_event(s, request, &e) == 0) {
        d->request_bytes = e.size;
        d->t_ns = e.t_ns;
        d->site = e.site;
    }
}

/* By request, then size: one release frees its segments in the allocator's own order. */
static int by_request(const void *a, const void *b)
{
    const struct cmt_whatif_segment *x = a, *y = b;
    if (x->request != y->request)
        return (x->request > y->request) - (x->request < y->request);
    return (x->size > y->size) - (x->size < y->size);
}

/* In order: the i-th recorded segment against the i-th modelled one (after the prelude).
 * @return the modelled ones compared. */
static uint64_t compare(struct cmt_whatif_selfcheck *c, const struct cmt_whatif_stream *s,
                        const struct cmt_whatif_segment *recorded, size_t n_recorded,
                        const struct segments *m, bool is_free, uint64_t *agreeing)
{
    size_t first = 0;
    while (first < m->count && m->v[first].request < c->prelude_events)
        first++;
    size_t n_model = m->count - first;
    size_t n = n_recorded > n_model ? n_recorded : n_model;
    for (size_t i = 0; i < n; i++) {
        const struct cmt_whatif_segment *rec = i < n_recorded ? &recorded[i] : NULL;
        const struct cmt_whatif_segment *mod = i < n_model ? &m->v[first + i] : NULL;
        if (rec && mod && rec->size == mod->size && rec->request == mod->request)
            ++*agreeing;
        else
            keep_diff(c, s, i, is_free, rec, mod);
    }
    return n_model;
}

/* The segment frees of each request as sets of sizes (one release frees its segments in the
 * allocator's own order): both sorted by (request, size), walked together; a free on one side
 * only is a disagreement. @return the modelled ones compared. */
static uint64_t compare_frees(struct cmt_whatif_selfcheck *c, const struct cmt_whatif_stream *s,
                              const struct segments *m)
{
    size_t i = 0, j = 0, index = 0;
    while (j < m->count && m->v[j].request < c->prelude_events)
        j++;
    uint64_t n_model = m->count - j;
    while (i < c->recorded_frees || j < m->count) {
        const struct cmt_whatif_segment *rec = i < c->recorded_frees ? &c->recorded_free[i] : NULL;
        const struct cmt_whatif_segment *mod = j < m->count ? &m->v[j] : NULL;
        int order = !rec ? 1 : !mod ? -1 : by_request(rec, mod);
        if (order == 0)
            c->agreeing_frees++;
        else
            keep_diff(c, s, index, true, order < 0 ? rec : NULL, order > 0 ? mod : NULL);
        i += order <= 0;
        j += order >= 0;
        index++;
    }
    return n_model;
}

int cmt_whatif_selfcheck_run(const struct cmt_whatif_stream *s, uint64_t capacity,
                             uint64_t device_total, struct cmt_whatif_selfcheck *c)
{
    if (!s || !c || !capacity)
        return CMT_EINVALID;
    struct cmt_model_config config;
    c->capacity_bounded = c->capacity_bound && c->capacity_bound < capacity;
    if (c->capacity_bounded)
        capacity = c->capacity_bound;
    cmt_model_config_default(&config, capacity);
    config.device_total = device_total > capacity ? device_total : capacity;
    config.device_index = s->device;
    c->error[0] = 0;
    struct cmt_err err = {0};
    if (c->conf[0] && cmt_model_config_parse(&config, c->conf, &err) != 0) {
        snprintf(c->error, sizeof c->error, "%.*s", (int)sizeof c->error - 1, err.text);
        return CMT_EMODEL_PARSE;
    }
    struct cmt_model *model;
    int rc = cmt_model_create(&config, &model);
    if (rc)
        return rc;
    struct modelled m = {0};
    struct cmt_model_device_hooks hooks = {on_device_alloc, on_device_free, &m};
    cmt_model_set_device_hooks(model, &hooks);
    c->model_ooms = 0;
    rc = replay(model, s, &m, &c->model_ooms);
    struct cmt_model_stats stats;
    cmt_model_get_stats(model, &stats);
    cmt_model_destroy(model);
    c->model_peak_reserved = stats.peak_reserved;
    c->model_end_reserved = stats.reserved_bytes;
    c->agreeing = c->agreeing_frees = 0;
    c->diff_count = 0;
    if (!rc && m.failed)
        rc = CMT_EMODEL_NOMEM;
    if (!rc && !c->expandable) {
        c->model_segments = compare(c, s, c->recorded, c->recorded_segments, &m.allocs, false,
                                    &c->agreeing);
        if (m.frees.count) /* (qsort wants an array, even of none) */
            qsort(m.frees.v, m.frees.count, sizeof *m.frees.v, by_request);
        if (c->recorded_frees)
            qsort(c->recorded_free, c->recorded_frees, sizeof *c->recorded_free, by_request);
        c->model_frees = compare_frees(c, s, &m.frees);
    }
    free(m.allocs.v);
    free(m.frees.v);
    c->ran = rc == 0;
    return rc;
}
