/* emit.c — queued entries → trace records (emit.h). */
#include "emit.h"

#include <string.h>

uint64_t cmt__ticks_ns(const struct cmt__emitter *em, uint64_t ticks)
{
    return em->use_tsc ? (uint64_t)((double)ticks * em->ns_per_tick) : ticks;
}

uint64_t cmt__emit_ns(struct cmt__emitter *em, uint64_t ticks)
{
    uint64_t ns = cmt__ticks_ns(em, ticks);
    if (ns < em->last_t) /* a scale refinement may not move time backwards */
        ns = em->last_t;
    em->last_t = ns;
    return ns;
}

int cmt__emit_allocator(struct cmt__emitter *em, uint32_t id, const struct cmt__allocator_decl *d,
                        uint64_t ticks)
{
    /* not cmt__emit_ns: entries queued before the declaration may still follow it */
    return cmt_writer_alloc_info(em->w, &(struct cmt_alloc_info){.id = id,
                                                                 .t_ns = cmt__ticks_ns(em, ticks),
                                                                 .dev = d->dev,
                                                                 .name = d->name,
                                                                 .version = d->version,
                                                                 .conf = d->conf});
}

/* An ALLOC entry's record; `driver_seq` = the seq the next driver event's record gets. The
 * values go as the ring holds them, packed in bit order, SEQ (the highest bit) last. */
static int emit_alloc(struct cmt__emitter *em, const struct cmt__queued *e, uint64_t driver_seq,
                      uint64_t t_ns)
{
    struct cmt_alloc_event a;
    a.allocator = e->api;
    a.action = (uint32_t)e->result;
    a.t_ns = t_ns;
    a.tid = e->tid;
    a.dev = e->dev;
    a.stack = e->stack;
    /* at most CMT__ENTRY_VALUES of the program's fields (a salvaged entry's mask is the
     * file's: what lies past them is dropped) */
    uint32_t fields = cmt__queued_kept_fields(e->fields & (CMT_AF(SEQ) - 1));
    uint32_t n = cmt__bits_set(fields);
    uint64_t v[CMT__ENTRY_VALUES + 1];
    memcpy(v, e->v, sizeof e->v);
    if (driver_seq > 0) { /* after a driver event: its seq */
        fields |= CMT_AF(SEQ);
        v[n] = driver_seq - 1;
    }
    a.fields = fields;
    return cmt_writer_alloc_event_packed(em->w, &a, v);
}

/* A RANGE entry's record (shared.h says where its parts are). */
static int emit_range(struct cmt__emitter *em, const struct cmt__queued *e, uint64_t driver_seq,
                      uint64_t t_ns)
{
    char text[CMT__RANGE_TEXT + 1];
    size_t len = e->fields < CMT__RANGE_TEXT ? e->fields : CMT__RANGE_TEXT;
    memcpy(text, e->v, len);
    text[len] = 0;
    return cmt_writer_range(em->w, &(struct cmt_range){.action = e->api,
                                                       .t_ns = t_ns,
                                                       .tid = e->tid,
                                                       .domain = (uint32_t)e->result,
                                                       .category = (uint32_t)e->dev,
                                                       .id = e->stack,
                                                       .message = text,
                                                       .have_seq = driver_seq > 0,
                                                       .seq = driver_seq - (driver_seq > 0)});
}

int cmt__emit_entry(struct cmt__emitter *em, const struct cmt__queued *e)
{
    struct cmt_event event;
    const struct cmt_event *ev = &event;
    int alloc = e->kind == CMT__ENTRY_ALLOC || e->kind == CMT__ENTRY_RANGE; /* seqs of their own */
    if (!alloc) /* an ALLOC or RANGE entry uses only event.seq and event.t_ns: no memset */
        cmt__queued_unpack(e, &event);
    /* the record's seq: an EVENT's own number; a MEMINFO's, its event's (a BASELINE goes just
     * before it, an OOM just after); an ALLOC's or RANGE's, the next driver event's */
    uint64_t seq = em->events;
    if (e->kind == CMT__ENTRY_OOM && seq > 0)
        seq--;
    event.seq = seq;
    event.t_ns = cmt__emit_ns(em, e->t_ns);
    if ((e->kind == CMT__ENTRY_EVENT || alloc) && e->tid != em->named_tid && em->thread) {
        if (em->thread(em->thread_ctx, e->tid))
            return -1;
        em->named_tid = e->tid; /* the next entries of the same thread skip the lookup */
    }
    /* set before the record goes in: a chunk the writer flushes inside the call holds it */
    cmt__order passed = cmt__queued_order(e) + 1;
    if (passed > em->passed) /* never back: an entry that came late is below what is written */
        em->passed = passed;
    em->events += e->kind == CMT__ENTRY_EVENT;
    switch (e->kind) {
    case CMT__ENTRY_ALLOC: return emit_alloc(em, e, seq, event.t_ns);
    case CMT__ENTRY_RANGE: return emit_range(em, e, seq, event.t_ns);
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
    cmt__order x = cmt__queued_order(a), y = cmt__queued_order(b);
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
