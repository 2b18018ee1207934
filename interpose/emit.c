/* emit.c — queued entries → trace records (emit.h). */
#include "emit.h"

uint64_t cmt__emit_ns(struct cmt__emitter *em, uint64_t ticks)
{
    uint64_t ns = em->use_tsc ? (uint64_t)((double)ticks * em->ns_per_tick) : ticks;
    if (ns < em->last_t) /* a scale refinement may not move time backwards */
        ns = em->last_t;
    em->last_t = ns;
    return ns;
}

int cmt__emit_entry(struct cmt__emitter *em, const struct cmt__queued *e)
{
    struct cmt_event event;
    const struct cmt_event *ev = &event;
    cmt__queued_unpack(e, &event);
    event.t_ns = cmt__emit_ns(em, e->t_ns);
    if (e->kind == CMT__ENTRY_EVENT && em->thread && em->thread(em->thread_ctx, ev->tid))
        return -1;
    /* set before the record goes in: a chunk the writer flushes inside the call holds it */
    em->passed_key = cmt__queued_key(e) + 1;
    switch (e->kind) {
    case CMT__ENTRY_DEVICE: {
        if (ev->dev < 0 || ev->dev >= CMT_MAX_DEVICES)
            return 0;
        const struct cmt__device_info *d = &em->devices[ev->dev];
        return cmt_writer_device(
            em->w, &(struct cmt_device){ev->dev, d->name, d->total, d->free, ev->t_ns});
    }
    case CMT__ENTRY_BASELINE:
    case CMT__ENTRY_OOM:
        return cmt_writer_meminfo(
            em->w, &(struct cmt_meminfo){ev->t_ns, ev->dev,
                                         e->kind == CMT__ENTRY_OOM ? CMT_MEMINFO_OOM
                                                                   : CMT_MEMINFO_BASELINE,
                                         ev->v[CMT_FIELD_FREE], ev->v[CMT_FIELD_TOTAL], ev->seq});
    default: return cmt_writer_event(em->w, ev);
    }
}

int cmt__queued_cmp(const void *a, const void *b)
{
    uint64_t x = cmt__queued_key(a), y = cmt__queued_key(b);
    return x < y ? -1 : x > y;
}

static void sift_down(struct cmt__queued *a, size_t root, size_t n)
{
    for (size_t child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && cmt__queued_cmp(&a[child], &a[child + 1]) < 0)
            child++;
        if (cmt__queued_cmp(&a[root], &a[child]) >= 0)
            return;
        struct cmt__queued t = a[root];
        a[root] = a[child];
        a[child] = t;
    }
}

void cmt__queued_sort(struct cmt__queued *a, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (size_t end = n; end-- > 1;) {
        struct cmt__queued t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down(a, 0, end);
    }
}
