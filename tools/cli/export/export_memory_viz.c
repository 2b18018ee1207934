/* export_memory_viz.c — a PyTorch memory snapshot (the pickle torch.cuda.memory._dump_snapshot
 * writes) of a trace, so pytorch.org/memory_viz opens any traced program.
 *
 * A device whose allocator recorded its actions (ALLOC_EVENT records: a PyTorch snapshot
 * imported, or an instrumented allocator) is shown as that allocator saw it: its trace entries
 * are those actions under their snapshot names with c10's figures (except the ones that only
 * describe the state before the recorded window, CMT_AFLAG_BEFORE), its segments are the
 * allocator's segments live at the end (an expandable one: each contiguous mapped range) with
 * their blocks (allocated, pending free) and the free extents between them as inactive blocks.
 * Any other device is shown from its driver calls: each allocation of device
 * memory is a segment holding one block of its size, the trace entries are segment_alloc +
 * alloc at the allocation, free_requested + free_completed + segment_free at its free, oom at
 * an out-of-memory failure, the segments what is still live at the end. VMM handles are
 * segments at their handle value (they have no address of their own); memory of an unknown
 * device (dev -1) is shown on device 0.
 *
 * Frames come from the trace's stacks (innermost first, as PyTorch writes them); each frame,
 * each stack and each repeated string is written once and shared through the pickle's memo. */
#include <stdlib.h>
#include <string.h>

#include "cmt_grow.h"
#include "export/export.h"
#include "oom.h"
#include "export/pickle_writer.h"

/* ACT_ALLOCATOR: an ALLOC_EVENT record, action `aa` (enum cmt_alloc_action) */
enum { ACT_ALLOC, ACT_FREE, ACT_OOM, ACT_ALLOCATOR };

struct cmt__memviz_entry {
    uint64_t addr, size, stream, t_ns, device_free;
    uint64_t requested, pool; /* ACT_ALLOCATOR */
    uint32_t stack, flags;
    int32_t dev;
    uint8_t action, aa;
};

static int device_kind(int kind)
{
    return CMT_KIND_IS_DEVICE_MEMORY(kind);
}

/* The kinds whose allocations and frees the trace shows. Not graph memory: a launch makes
 * several allocations at once, which a replay step does not name one by one
 * (docs/analysis.md "Graph memory"), so only its frees would show. Its live memory is in the
 * segments. */
static int traced_kind(int kind)
{
    return device_kind(kind) && kind != CMT_KIND_GRAPH;
}

/* The device a snapshot shows memory on: an unknown (-1) or out-of-range ordinal is 0. */
static int32_t shown_device(int32_t dev)
{
    return dev >= 0 && dev < CMT_MAX_DEVICES ? dev : 0;
}

static void add(struct cmt__export_memory_viz *x, const struct cmt__memviz_entry *e)
{
    if (x->failed)
        return;
    if (x->count == x->cap && CMT_GROW(x->entries, x->cap, x->count + 1, 4096) != 0) {
        x->failed = 1;
        return;
    }
    x->entries[x->count++] = *e;
}

/* An allocator's action, kept as it is: the snapshot's trace entries and segments come from
 * them on the devices that have them. */
static void add_alloc_event(struct cmt__export_memory_viz *x, const struct cmt_alloc_event *a)
{
    const uint64_t *v = a->v;
#define CMT__AV(name) ((a->fields & CMT_AF(name)) ? v[CMT_AFIELD_##name] : 0)
    struct cmt__memviz_entry e = {
        .addr = CMT__AV(ADDR),
        .size = CMT__AV(SIZE),
        .stream = CMT__AV(STREAM),
        .t_ns = a->t_ns,
        .device_free = CMT__AV(DEVICE_FREE),
        .requested = (a->fields & CMT_AF(REQUESTED)) ? v[CMT_AFIELD_REQUESTED] : CMT__AV(SIZE),
        .pool = CMT__AV(POOL),
        .stack = a->stack,
        .flags = (uint32_t)CMT__AV(FLAGS),
        .dev = shown_device(a->dev),
        .action = ACT_ALLOCATOR,
        .aa = (uint8_t)a->action};
#undef CMT__AV
    /* c10's snapshot entry carries the bytes active when it was taken (the allocator's blocks
     * allocated or pending free): the event's own figure where it has one */
    uint64_t *active = &x->active[e.dev];
    if (a->action == CMT_AA_ALLOC)
        *active += e.size;
    else if (a->action == CMT_AA_FREE_COMPLETED)
        *active -= e.size < *active ? e.size : *active;
    else if (a->action == CMT_AA_SNAPSHOT && !(a->fields & CMT_AF(SIZE)))
        e.size = *active;
    if (a->action >= 1 && a->action < CMT_AA_MAX)
        add(x, &e);
}

static unsigned memviz_step(struct cmt_observer *self, const cmt_replay *rp,
                            const struct cmt_replay_step *st)
{
    (void)rp;
    struct cmt__export_memory_viz *x = self->ctx;
    if (st->rec.type == CMT_REC_ALLOC_EVENT)
        add_alloc_event(x, &st->rec.u.alloc_event);
    if (st->rec.type == CMT_REC_ALLOCATOR && st->rec.u.alloc_info.conf &&
        *st->rec.u.alloc_info.conf) { /* the settings the allocator says it ran with */
        free(x->conf);
        x->conf = strdup(st->rec.u.alloc_info.conf);
    }
    if (st->rec.type != CMT_REC_EVENT)
        return CMT_OBSERVE_ALL;
    const struct cmt_event *ev = &st->rec.u.event;
    struct cmt__memviz_entry e = {.addr = st->key,
                                  .size = st->bytes,
                                  .stream = (ev->fields & CMT_F(STREAM)) ? ev->v[CMT_FIELD_STREAM]
                                                                         : 0,
                                  .t_ns = ev->t_ns,
                                  .stack = ev->stack,
                                  .dev = shown_device(ev->dev)};
    if (st->oom) {
        e.action = ACT_OOM;
        e.size = st->request;
        e.addr = 0;
        e.device_free = st->device && st->device->have_sample ? st->device->free_bytes : 0;
        add(x, &e);
    } else if (st->kind >= 0 && traced_kind(st->kind)) {
        if (st->is_alloc && st->failed)
            return CMT_OBSERVE_ALL;
        e.action = st->is_alloc ? ACT_ALLOC : ACT_FREE;
        if (!st->is_alloc && st->owner)
            e.dev = shown_device(st->owner->dev);
        add(x, &e);
    }
    return CMT_OBSERVE_ALL;
}

struct cmt_observer cmt__export_memory_viz_observer(struct cmt__export_memory_viz *x)
{
    memset(x, 0, sizeof *x);
    struct cmt_observer o = {.wants = CMT_OBSERVE_ALL, .step = memviz_step, .ctx = x};
    return o;
}

void cmt__export_memory_viz_free(struct cmt__export_memory_viz *x)
{
    free(x->entries);
    free(x->conf);
    memset(x, 0, sizeof *x);
}

/* ---- writing ---- */

/* The strings every entry repeats, written once and then taken from the memo (as Python's
 * pickler does with interned strings). */
/* clang-format off */
#define CMT__MEMVIZ_STRINGS(X)                     \
    X(ACTION, "action")                            \
    X(ADDR, "addr")                                \
    X(SIZE, "size")                                \
    X(STREAM, "stream")                            \
    X(TIME_US, "time_us")                          \
    X(FRAMES, "frames")                            \
    X(DEVICE_FREE, "device_free")                  \
    X(FILENAME, "filename")                        \
    X(LINE, "line")                                \
    X(NAME, "name")                                \
    X(SEGMENT_ALLOC, "segment_alloc")              \
    X(ALLOC, "alloc")                              \
    X(FREE_REQUESTED, "free_requested")            \
    X(FREE_COMPLETED, "free_completed")            \
    X(SEGMENT_FREE, "segment_free")                \
    X(SEGMENT_MAP, "segment_map")                  \
    X(SEGMENT_UNMAP, "segment_unmap")              \
    X(SNAPSHOT, "snapshot")                        \
    X(SMALL, "small")                              \
    X(INACTIVE, "inactive")                        \
    X(ACTIVE_PENDING_FREE, "active_pending_free")  \
    X(OOM, "oom")                                  \
    X(DEVICE, "device")                            \
    X(ADDRESS, "address")                          \
    X(TOTAL_SIZE, "total_size")                    \
    X(ALLOCATED_SIZE, "allocated_size")            \
    X(ACTIVE_SIZE, "active_size")                  \
    X(REQUESTED_SIZE, "requested_size")            \
    X(SEGMENT_TYPE, "segment_type")                \
    X(LARGE, "large")                              \
    X(SEGMENT_POOL_ID, "segment_pool_id")          \
    X(IS_EXPANDABLE, "is_expandable")              \
    X(BLOCKS, "blocks")                            \
    X(STATE, "state")                              \
    X(ACTIVE_ALLOCATED, "active_allocated")
/* clang-format on */
enum {
#define CMT__S_ENUM(id, text) S_##id,
    CMT__MEMVIZ_STRINGS(CMT__S_ENUM)
#undef CMT__S_ENUM
        S_COUNT
};

struct writer {
    struct cmt__pickle pk;
    const cmt_reader *r;
    uint32_t *node_memo, *stack_memo; /* memo index + 1 per node / leaf, 0: not yet written */
    uint32_t nodes;
    uint64_t t0_us;
    uint32_t string_memo[S_COUNT]; /* memo index + 1, 0: not yet written */
    const uint8_t *has_alloc;      /* per device 0..max_dev: its allocator's events are there */
    int32_t max_dev;
};

static int allocator_device(const struct writer *w, int32_t dev)
{
    return dev >= 0 && dev <= w->max_dev && w->has_alloc[dev];
}

static void konst(struct writer *w, int s)
{
    static const char *const text[] = {
#define CMT__S_TEXT(id, t) t,
        CMT__MEMVIZ_STRINGS(CMT__S_TEXT)
#undef CMT__S_TEXT
    };
    if (w->string_memo[s]) {
        cmt__pickle_get(&w->pk, w->string_memo[s] - 1);
        return;
    }
    cmt__pickle_str(&w->pk, text[s]);
    w->string_memo[s] = cmt__pickle_memoize(&w->pk) + 1;
}

static void key_str(struct writer *w, int k, const char *v)
{
    konst(w, k);
    cmt__pickle_str(&w->pk, v);
}

static void key_uint(struct writer *w, int k, uint64_t v)
{
    konst(w, k);
    cmt__pickle_uint(&w->pk, v);
}

static void key_konst(struct writer *w, int k, int v)
{
    konst(w, k);
    konst(w, v);
}

/* One frame dict {filename, line, name}, memoized per node. */
static void frame(struct writer *w, uint32_t node)
{
    if (node <= w->nodes && w->node_memo[node]) {
        cmt__pickle_get(&w->pk, w->node_memo[node] - 1);
        return;
    }
    char text[1024];
    const struct cmt_symbol *sym = cmt_reader_symbol(w->r, node);
    const char *function = sym && sym->function ? cmt_reader_string(w->r, sym->function) : NULL;
    const char *file = sym && sym->file ? cmt_reader_string(w->r, sym->file) : NULL;
    struct cmt_stack_node n;
    const struct cmt_module *m = NULL;
    if (!file && cmt_reader_stack_node(w->r, node, &n) == 0)
        m = cmt_reader_module_at(w->r, n.ip);
    if (!function)
        cmt_reader_format_frame(w->r, node, text, sizeof text);
    cmt__pickle_dict(&w->pk);
    key_str(w, S_FILENAME, file ? file : m && m->path ? m->path : "??");
    key_uint(w, S_LINE, sym && file ? sym->line : 0);
    key_str(w, S_NAME, function ? function : text);
    cmt__pickle_end_dict(&w->pk);
    uint32_t idx = cmt__pickle_memoize(&w->pk);
    if (node <= w->nodes)
        w->node_memo[node] = idx + 1;
}

/* The frames list of stack `leaf`, innermost first, memoized per leaf. */
static void frames(struct writer *w, uint32_t leaf)
{
    if (leaf <= w->nodes && leaf && w->stack_memo[leaf]) {
        cmt__pickle_get(&w->pk, w->stack_memo[leaf] - 1);
        return;
    }
    uint32_t idx = cmt__pickle_list_memo(&w->pk);
    uint32_t id = leaf;
    struct cmt_stack_node n;
    for (int depth = 0; id && depth < 512 && cmt_reader_stack_node(w->r, id, &n) == 0; depth++) {
        frame(w, id);
        if (n.parent == id)
            break;
        id = n.parent;
    }
    cmt__pickle_end_list(&w->pk);
    if (leaf && leaf <= w->nodes)
        w->stack_memo[leaf] = idx + 1;
}

static int is_block_action(unsigned aa)
{
    return aa == CMT_AA_ALLOC || aa == CMT_AA_FREE_REQUESTED || aa == CMT_AA_FREE_COMPLETED;
}

static void trace_entry(struct writer *w, int action, const struct cmt__memviz_entry *e)
{
    cmt__pickle_dict(&w->pk);
    key_konst(w, S_ACTION, action);
    if (e->action == ACT_OOM || (e->action == ACT_ALLOCATOR && e->aa == CMT_AA_OOM)) {
        key_uint(w, S_DEVICE_FREE, e->device_free);
    } else {
        key_uint(w, S_ADDR, e->addr);
    }
    /* c10 writes a block's request in its alloc and free entries (a 4 B tensor's block is
     * 512 B), and the rounded request in an oom entry (which is what the event's size says) */
    key_uint(w, S_SIZE,
             e->action == ACT_ALLOCATOR && is_block_action(e->aa) ? e->requested : e->size);
    key_uint(w, S_STREAM, e->stream);
    if (w->t0_us) /* else a snapshot without times: c10 wrote none */
        key_uint(w, S_TIME_US, w->t0_us + e->t_ns / 1000);
    if (!(e->action == ACT_ALLOCATOR && e->aa == CMT_AA_SNAPSHOT)) { /* c10 gives it no stack */
        konst(w, S_FRAMES);
        frames(w, e->stack);
    }
    cmt__pickle_end_dict(&w->pk);
}

/* The snapshot's name of an allocator action (enum cmt_alloc_action). */
static int action_string(unsigned aa)
{
    static const int s[CMT_AA_MAX] = {
        [CMT_AA_ALLOC] = S_ALLOC,
        [CMT_AA_FREE_REQUESTED] = S_FREE_REQUESTED,
        [CMT_AA_FREE_COMPLETED] = S_FREE_COMPLETED,
        [CMT_AA_SEGMENT_ALLOC] = S_SEGMENT_ALLOC,
        [CMT_AA_SEGMENT_FREE] = S_SEGMENT_FREE,
        [CMT_AA_SEGMENT_MAP] = S_SEGMENT_MAP,
        [CMT_AA_SEGMENT_UNMAP] = S_SEGMENT_UNMAP,
        [CMT_AA_OOM] = S_OOM,
        [CMT_AA_SNAPSHOT] = S_SNAPSHOT,
    };
    return aa < CMT_AA_MAX && s[aa] ? s[aa] : S_SNAPSHOT;
}

/* Device dev's trace entries: its allocator's actions when the trace has them (not those that
 * only describe the state before the recorded window), else its driver calls. */
static void device_trace(struct writer *w, const struct cmt__export_memory_viz *x, int32_t dev)
{
    int allocator = allocator_device(w, dev);
    cmt__pickle_list(&w->pk);
    for (size_t i = 0; i < x->count; i++) {
        const struct cmt__memviz_entry *e = &x->entries[i];
        if (e->dev != dev || (e->action == ACT_ALLOCATOR) != allocator)
            continue;
        if (e->action == ACT_ALLOCATOR) {
            if (!(e->flags & CMT_AFLAG_BEFORE))
                trace_entry(w, action_string(e->aa), e);
        } else if (e->action == ACT_ALLOC) {
            trace_entry(w, S_SEGMENT_ALLOC, e);
            trace_entry(w, S_ALLOC, e);
        } else if (e->action == ACT_FREE) {
            trace_entry(w, S_FREE_REQUESTED, e);
            trace_entry(w, S_FREE_COMPLETED, e);
            trace_entry(w, S_SEGMENT_FREE, e);
        } else {
            trace_entry(w, S_OOM, e);
        }
    }
    cmt__pickle_end_list(&w->pk);
}

struct segments_ctx {
    struct writer *w;
    const cmt_replay *rp;
};

static void segment(void *ctx, const struct cmt_replay_object *o)
{
    struct segments_ctx *s = ctx;
    struct writer *w = s->w;
    if (!device_kind(o->kind) || allocator_device(w, shown_device(o->dev)))
        return; /* an allocator's device: its segments come from its events */
    const struct cmt_replay_site *site = cmt_replay_site(s->rp, o->site);
    uint32_t stack = site ? site->stack : 0;
    cmt__pickle_dict(&w->pk);
    key_uint(w, S_DEVICE, (uint64_t)shown_device(o->dev));
    key_uint(w, S_ADDRESS, o->addr);
    key_uint(w, S_TOTAL_SIZE, o->size);
    key_uint(w, S_ALLOCATED_SIZE, o->size);
    key_uint(w, S_ACTIVE_SIZE, o->size);
    key_uint(w, S_REQUESTED_SIZE, o->size);
    key_uint(w, S_STREAM, 0);
    key_konst(w, S_SEGMENT_TYPE, S_LARGE);
    konst(w, S_SEGMENT_POOL_ID);
    cmt__pickle_uint(&w->pk, 0);
    cmt__pickle_uint(&w->pk, 0);
    cmt__pickle_tuple2(&w->pk);
    konst(w, S_IS_EXPANDABLE);
    cmt__pickle_bool(&w->pk, 0);
    konst(w, S_FRAMES);
    frames(w, stack);
    konst(w, S_BLOCKS);
    cmt__pickle_list(&w->pk);
    cmt__pickle_dict(&w->pk);
    key_uint(w, S_ADDRESS, o->addr);
    key_uint(w, S_SIZE, o->size);
    key_uint(w, S_REQUESTED_SIZE, o->size);
    key_konst(w, S_STATE, S_ACTIVE_ALLOCATED);
    konst(w, S_FRAMES);
    frames(w, stack);
    cmt__pickle_end_dict(&w->pk);
    cmt__pickle_end_list(&w->pk);
    cmt__pickle_end_dict(&w->pk);
}

/* ---- the allocator's state at the end, from its events ---- */

struct keyed {
    int32_t dev;
    uint64_t key;
    size_t index; /* into the entries: file order */
};

static int by_key(const void *pa, const void *pb)
{
    const struct keyed *a = pa, *b = pb;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

struct block {
    const struct cmt__memviz_entry *e; /* its ALLOC */
    int pending;                       /* free requested, not completed */
};

struct segment_state {
    const struct cmt__memviz_entry *e; /* its SEGMENT_ALLOC or first SEGMENT_MAP */
    int32_t dev;
    uint64_t addr, size;
};

struct allocator_state {
    struct segment_state *segs;
    struct block *blocks;
    size_t nsegs, nblocks;
};

static int is_segment_action(unsigned aa)
{
    return aa == CMT_AA_SEGMENT_ALLOC || aa == CMT_AA_SEGMENT_FREE;
}

/* One segment's events, in file order: live at the end with its size, or not. */
static void settle_segment(struct allocator_state *s, const struct cmt__memviz_entry *all,
                           const struct keyed *k, size_t n)
{
    struct segment_state seg = {.dev = k[0].dev, .addr = k[0].key};
    int live = 0;
    for (size_t i = 0; i < n; i++) {
        const struct cmt__memviz_entry *e = &all[k[i].index];
        live = e->aa == CMT_AA_SEGMENT_ALLOC;
        if (live)
            seg.e = e, seg.size = e->size;
    }
    if (live && seg.size)
        s->segs[s->nsegs++] = seg;
}

/* ---- expandable segments: the mapped ranges ---- */

/* Disjoint mapped ranges, sorted by device and address; each keeps the map that made it. */
struct ranges {
    struct segment_state *r;
    size_t n, cap;
};

/* @return the index of the first range of dev (or of a later device) that ends above addr. */
static size_t range_lower(const struct ranges *m, int32_t dev, uint64_t addr)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct segment_state *g = &m->r[mid];
        if (g->dev < dev || (g->dev == dev && g->addr + g->size <= addr))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Takes [lo, hi) of dev out of the ranges: those inside go, those across an end are cut, one
 * across both is split in two. @return 0 or -1 (memory). */
static int ranges_remove(struct ranges *m, int32_t dev, uint64_t lo, uint64_t hi)
{
    for (size_t i = range_lower(m, dev, lo); i < m->n && m->r[i].dev == dev;) {
        struct segment_state *g = &m->r[i];
        uint64_t end = g->addr + g->size;
        if (g->addr >= hi)
            break;
        if (g->addr < lo && end > hi) { /* the middle goes: the part above becomes a range */
            if (CMT_GROW(m->r, m->cap, m->n + 1, 64) != 0)
                return -1;
            g = &m->r[i];
            memmove(g + 2, g + 1, (m->n - i - 1) * sizeof *g);
            m->n++;
            g[1] = *g;
            g[1].addr = hi;
            g[1].size = end - hi;
            g->size = lo - g->addr;
            break;
        }
        if (g->addr < lo) { /* its top goes */
            g->size = lo - g->addr;
            i++;
        } else if (end > hi) { /* its bottom goes */
            g->addr = hi;
            g->size = end - hi;
            break;
        } else { /* all of it */
            memmove(g, g + 1, (m->n - i - 1) * sizeof *g);
            m->n--;
        }
    }
    return 0;
}

/* A map or unmap, in file order. A map over what is mapped already (the import's state
 * before the window may overlap the window's own maps) maps it once. @return 0 or -1. */
static int ranges_apply(struct ranges *m, const struct cmt__memviz_entry *e)
{
    uint64_t end = e->addr + e->size < e->addr ? UINT64_MAX : e->addr + e->size;
    if (ranges_remove(m, e->dev, e->addr, end) != 0)
        return -1;
    if (e->aa == CMT_AA_SEGMENT_UNMAP || end == e->addr)
        return 0;
    if (CMT_GROW(m->r, m->cap, m->n + 1, 64) != 0)
        return -1;
    size_t i = range_lower(m, e->dev, e->addr);
    memmove(m->r + i + 1, m->r + i, (m->n - i) * sizeof *m->r);
    m->n++;
    m->r[i] = (struct segment_state){e, e->dev, e->addr, end - e->addr};
    return 0;
}

/* The expandable segments at the end, as c10 reports them: one per contiguous mapped range
 * of one stream (its expandable segment), named by the map at its start. @return 0 or -1. */
static int settle_mappings(struct allocator_state *s, const struct cmt__export_memory_viz *x)
{
    struct ranges m = {0};
    int rc = 0;
    for (size_t i = 0; i < x->count && rc == 0; i++) {
        const struct cmt__memviz_entry *e = &x->entries[i];
        if (e->action == ACT_ALLOCATOR &&
            (e->aa == CMT_AA_SEGMENT_MAP || e->aa == CMT_AA_SEGMENT_UNMAP))
            rc = ranges_apply(&m, e);
    }
    for (size_t i = 0; i < m.n && rc == 0; i++) {
        struct segment_state *last = s->nsegs ? &s->segs[s->nsegs - 1] : NULL;
        const struct segment_state *g = &m.r[i];
        if (i && last && last->dev == g->dev && last->addr + last->size == g->addr &&
            last->e->stream == g->e->stream)
            last->size += g->size;
        else
            s->segs[s->nsegs++] = *g;
    }
    free(m.r);
    return rc;
}

static void settle_block(struct allocator_state *s, const struct cmt__memviz_entry *all,
                         const struct keyed *k, size_t n)
{
    struct block b = {NULL, 0};
    for (size_t i = 0; i < n; i++) {
        const struct cmt__memviz_entry *e = &all[k[i].index];
        if (e->aa == CMT_AA_ALLOC)
            b.e = e, b.pending = 0;
        else if (e->aa == CMT_AA_FREE_REQUESTED)
            b.pending = 1;
        else
            b.e = NULL; /* FREE_COMPLETED */
    }
    if (b.e)
        s->blocks[s->nblocks++] = b;
}

static int by_address(const void *pa, const void *pb)
{
    const struct segment_state *a = pa, *b = pb;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int block_by_address(const void *pa, const void *pb)
{
    const struct block *a = pa, *b = pb;
    if (a->e->dev != b->e->dev)
        return a->e->dev < b->e->dev ? -1 : 1;
    return a->e->addr < b->e->addr ? -1 : a->e->addr > b->e->addr;
}

/* Groups the events of each key, in file order, and settles each. @return 0 or -1 (memory). */
static int settle(struct allocator_state *s, const struct cmt__export_memory_viz *x, int segments)
{
    struct keyed *k = malloc((x->count ? x->count : 1) * sizeof *k);
    size_t n = 0;
    if (!k)
        return -1;
    for (size_t i = 0; i < x->count; i++) {
        const struct cmt__memviz_entry *e = &x->entries[i];
        if (e->action != ACT_ALLOCATOR ||
            !(segments ? is_segment_action(e->aa) : is_block_action(e->aa)))
            continue;
        k[n++] = (struct keyed){e->dev, e->addr, i};
    }
    qsort(k, n, sizeof *k, by_key);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && k[j].dev == k[i].dev && k[j].key == k[i].key; j++)
            ;
        if (segments)
            settle_segment(s, x->entries, k + i, j - i);
        else
            settle_block(s, x->entries, k + i, j - i);
    }
    free(k);
    return 0;
}

static int allocator_state(struct allocator_state *s, const struct cmt__export_memory_viz *x)
{
    memset(s, 0, sizeof *s);
    s->segs = malloc((x->count ? x->count : 1) * sizeof *s->segs);
    s->blocks = malloc((x->count ? x->count : 1) * sizeof *s->blocks);
    if (!s->segs || !s->blocks || settle(s, x, 1) != 0 || settle_mappings(s, x) != 0 ||
        settle(s, x, 0) != 0)
        return -1;
    qsort(s->segs, s->nsegs, sizeof *s->segs, by_address);
    qsort(s->blocks, s->nblocks, sizeof *s->blocks, block_by_address);
    return 0;
}

static void block_dict(struct writer *w, uint64_t addr, uint64_t size, uint64_t requested,
                       int state, uint32_t stack)
{
    cmt__pickle_dict(&w->pk);
    key_uint(w, S_ADDRESS, addr);
    key_uint(w, S_SIZE, size);
    key_uint(w, S_REQUESTED_SIZE, requested);
    key_konst(w, S_STATE, state);
    konst(w, S_FRAMES);
    frames(w, stack);
    cmt__pickle_end_dict(&w->pk);
}

/* One segment of an allocator: its live blocks (b[0..n), in address order, inside it) and the
 * free extents between them as inactive blocks, as PyTorch's snapshot lists them. */
static void allocator_segment(struct writer *w, const struct segment_state *s,
                              const struct block *b, size_t n)
{
    uint64_t allocated = 0, active = 0, requested = 0, at = s->addr, end = s->addr + s->size;
    for (size_t i = 0; i < n; i++) {
        active += b[i].e->size;
        allocated += b[i].pending ? 0 : b[i].e->size;
        requested += b[i].e->requested;
    }
    const struct cmt__memviz_entry *e = s->e;
    cmt__pickle_dict(&w->pk);
    key_uint(w, S_DEVICE, (uint64_t)s->dev);
    key_uint(w, S_ADDRESS, s->addr);
    key_uint(w, S_TOTAL_SIZE, s->size);
    key_uint(w, S_ALLOCATED_SIZE, allocated);
    key_uint(w, S_ACTIVE_SIZE, active);
    key_uint(w, S_REQUESTED_SIZE, requested);
    key_uint(w, S_STREAM, e->stream);
    key_konst(w, S_SEGMENT_TYPE, (e->flags & CMT_AFLAG_SMALL) ? S_SMALL : S_LARGE);
    konst(w, S_SEGMENT_POOL_ID);
    cmt__pickle_uint(&w->pk, 0);
    cmt__pickle_uint(&w->pk, e->pool);
    cmt__pickle_tuple2(&w->pk);
    konst(w, S_IS_EXPANDABLE);
    cmt__pickle_bool(&w->pk, (e->flags & CMT_AFLAG_EXPANDABLE) || e->aa == CMT_AA_SEGMENT_MAP);
    konst(w, S_FRAMES);
    frames(w, e->stack);
    konst(w, S_BLOCKS);
    cmt__pickle_list(&w->pk);
    for (size_t i = 0; i < n; i++) {
        if (b[i].e->addr > at)
            block_dict(w, at, b[i].e->addr - at, 0, S_INACTIVE, 0);
        block_dict(w, b[i].e->addr, b[i].e->size, b[i].e->requested,
                   b[i].pending ? S_ACTIVE_PENDING_FREE : S_ACTIVE_ALLOCATED, b[i].e->stack);
        at = b[i].e->addr + b[i].e->size;
    }
    if (at < end)
        block_dict(w, at, end - at, 0, S_INACTIVE, 0);
    cmt__pickle_end_list(&w->pk);
    cmt__pickle_end_dict(&w->pk);
}

/* Every live segment of the allocators with the blocks inside it (blocks outside every live
 * segment are left out: the trace lost their segment's event). */
static void allocator_segments(struct writer *w, const struct allocator_state *s)
{
    size_t b = 0;
    for (size_t i = 0; i < s->nsegs; i++) {
        const struct segment_state *seg = &s->segs[i];
        while (b < s->nblocks &&
               (s->blocks[b].e->dev < seg->dev ||
                (s->blocks[b].e->dev == seg->dev && s->blocks[b].e->addr < seg->addr)))
            b++;
        size_t first = b;
        while (b < s->nblocks && s->blocks[b].e->dev == seg->dev &&
               s->blocks[b].e->addr + s->blocks[b].e->size <= seg->addr + seg->size)
            b++;
        allocator_segment(w, seg, s->blocks + first, b - first);
    }
}

static int write_rest(struct writer *w, const struct cmt__export_memory_viz *x,
                      const struct cmt__pass *p);

int cmt__export_memory_viz_end(struct cmt__export_memory_viz *x, const struct cmt__pass *p, FILE *f)
{
    if (x->failed)
        return -1;
    struct writer w = {.r = p->reader, .nodes = cmt_reader_stack_node_count(p->reader)};
    w.node_memo = calloc((size_t)w.nodes + 1, sizeof *w.node_memo);
    w.stack_memo = calloc((size_t)w.nodes + 1, sizeof *w.stack_memo);
    if (!w.node_memo || !w.stack_memo) {
        free(w.node_memo);
        free(w.stack_memo);
        return -1;
    }
    const struct cmt_process *proc = cmt_reader_process(p->reader);
    w.t0_us = proc ? proc->start_wall_ns / 1000 : 0;
    for (size_t i = 0; i < x->count; i++)
        if (x->entries[i].dev > w.max_dev)
            w.max_dev = x->entries[i].dev;
    for (uint32_t s = 0; s < cmt_replay_device_count(p->replay); s++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(p->replay, s);
        if (d && d->live_bytes && d->dev > w.max_dev && d->dev < CMT_MAX_DEVICES)
            w.max_dev = d->dev;
    }
    uint8_t *has_alloc = calloc((size_t)w.max_dev + 1, 1);
    struct allocator_state as = {0};
    int rc = has_alloc && allocator_state(&as, x) == 0 ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < x->count; i++)
        if (x->entries[i].action == ACT_ALLOCATOR)
            has_alloc[x->entries[i].dev] = 1;
    w.has_alloc = has_alloc;
    if (rc == 0) {
        cmt__pickle_begin(&w.pk, f);
        cmt__pickle_dict(&w.pk);
        cmt__pickle_str(&w.pk, "segments");
        cmt__pickle_list(&w.pk);
        struct segments_ctx sc = {&w, p->replay};
        cmt_replay_foreach_live(p->replay, segment, &sc);
        allocator_segments(&w, &as);
        cmt__pickle_end_list(&w.pk);
        rc = write_rest(&w, x, p);
    }
    free(as.segs);
    free(as.blocks);
    free(has_alloc);
    free(w.node_memo);
    free(w.stack_memo);
    return rc;
}

/* The snapshot after its segments. @return as cmt__pickle_end(). */
static int write_rest(struct writer *w, const struct cmt__export_memory_viz *x,
                      const struct cmt__pass *p)
{
    cmt__pickle_str(&w->pk, "device_traces");
    cmt__pickle_list(&w->pk);
    for (int32_t dev = 0; dev <= w->max_dev; dev++)
        device_trace(w, x, dev);
    cmt__pickle_end_list(&w->pk);
    cmt__pickle_str(&w->pk, "allocator_settings");
    cmt__pickle_dict(&w->pk);
    const char *conf = x->conf ? x->conf : cmt__export_alloc_conf(p->reader);
    if (conf) {
        cmt__pickle_str(&w->pk, "PYTORCH_CUDA_ALLOC_CONF");
        cmt__pickle_str(&w->pk, conf);
    }
    cmt__pickle_end_dict(&w->pk);
    cmt__pickle_str(&w->pk, "external_annotations");
    cmt__pickle_list(&w->pk);
    cmt__pickle_end_list(&w->pk);
    cmt__pickle_end_dict(&w->pk);
    return cmt__pickle_end(&w->pk);
}
