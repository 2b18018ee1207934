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
 * each stack and each repeated string is written once and shared through the pickle's memo.
 *
 * Streaming: each device's trace entries are a ring of its last max_entries (as PyTorch's
 * record_memory_history keeps them), the allocator's end state is rebuilt from its actions in
 * memory that follows what is live (memory_viz_state.c), so memory does not grow with the
 * trace. A window (--from/--to/--device) keeps the entries inside it; the segments are the
 * state at its end. */
#include <stdlib.h>
#include <string.h>

#include "cmt_grow.h"
#include "export/export.h"
#include "oom.h"
#include "export/memory_viz_state.h"
#include "export/pickle_writer.h"

enum {
    ACT_ALLOC = CMT__MEMVIZ_ALLOC,
    ACT_FREE = CMT__MEMVIZ_FREE,
    ACT_OOM = CMT__MEMVIZ_OOM,
    ACT_ALLOCATOR = CMT__MEMVIZ_ALLOCATOR
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

/* Entry e of the trace, shown as action string `shown`, into its device's ring: the last
 * max_entries of the device (0: all). */
static void add(struct cmt__export_memory_viz *x, const struct cmt__memviz_entry *e, int shown)
{
    struct cmt__memviz_ring *r = &x->rings[e->dev];
    if (x->failed || !cmt__export_window_dev(&x->window, e->dev))
        return;
    if (!cmt__export_window_time(&x->window, e->t_ns)) {
        x->outside++;
        return;
    }
    size_t i;
    if (x->max_entries && r->count == x->max_entries) { /* full: the oldest goes */
        i = r->head;
        r->head = (r->head + 1) % r->count;
        r->dropped++;
    } else {
        if (r->count == r->cap && CMT_GROW(r->e, r->cap, r->count + 1, 1024) != 0) {
            x->failed = 1;
            return;
        }
        i = r->count++;
    }
    r->e[i] = *e;
    r->e[i].shown = (uint8_t)shown;
}

/* The first allocator action on a device: from now on its trace is its allocator's, and the
 * driver's entries it kept are not shown. */
static void become_allocator_device(struct cmt__export_memory_viz *x, int32_t dev)
{
    struct cmt__memviz_ring *r = &x->rings[dev];
    x->has_alloc[dev] = 1;
    r->count = r->head = 0;
    r->dropped = 0;
}

static int action_string(unsigned aa);

/* An allocator's action, kept as it is: the snapshot's trace entries and segments come from
 * them on the devices that have them. */
static void add_alloc_event(struct cmt__export_memory_viz *x, const struct cmt_alloc_event *a)
{
    if (a->t_ns > x->window.to_ns) /* after the window: the state is the one at its end */
        return;
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
    if (a->action < 1 || a->action >= CMT_AA_MAX)
        return;
    if (e.dev > x->max_dev)
        x->max_dev = e.dev;
    if (!x->has_alloc[e.dev])
        become_allocator_device(x, e.dev);
    if (cmt__memviz_state_action(a->action) && cmt__memviz_actions_add(&x->actions, &e) != 0)
        x->failed = 1;
    if (!(e.flags & CMT_AFLAG_BEFORE)) /* the state before the window: not in PyTorch's ring */
        add(x, &e, action_string(e.aa));
}

static void note_device(struct cmt__export_memory_viz *x, int32_t dev)
{
    if (dev > x->max_dev)
        x->max_dev = dev;
}

static unsigned memviz_step(struct cmt_observer *self, const cmt_replay *rp,
                            const struct cmt_replay_step *st)
{
    (void)rp;
    struct cmt__export_memory_viz *x = self->ctx;
    if (st->rec.type == CMT_REC_ALLOC_EVENT)
        add_alloc_event(x, &st->rec.u.alloc_event);
    if (x->done)
        return 0;
    if (st->rec.type == CMT_REC_ALLOCATOR && st->rec.u.alloc_info.conf &&
        *st->rec.u.alloc_info.conf) { /* the settings the allocator says it ran with */
        free(x->conf);
        x->conf = strdup(st->rec.u.alloc_info.conf);
    }
    if (st->rec.type != CMT_REC_EVENT)
        return CMT_OBSERVE_ALL;
    const struct cmt_event *ev = &st->rec.u.event;
    if (ev->t_ns > x->window.to_ns) /* no moment came (none after it): the end is the state */
        return CMT_OBSERVE_ALL;
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
        note_device(x, e.dev);
        if (!x->has_alloc[e.dev])
            add(x, &e, S_OOM);
    } else if (st->kind >= 0 && traced_kind(st->kind)) {
        if (st->is_alloc && st->failed)
            return CMT_OBSERVE_ALL;
        e.action = st->is_alloc ? ACT_ALLOC : ACT_FREE;
        if (!st->is_alloc && st->owner)
            e.dev = shown_device(st->owner->dev);
        note_device(x, e.dev);
        if (x->has_alloc[e.dev])
            return CMT_OBSERVE_ALL;
        add(x, &e, st->is_alloc ? S_SEGMENT_ALLOC : S_FREE_REQUESTED);
        add(x, &e, st->is_alloc ? S_ALLOC : S_FREE_COMPLETED);
        if (!st->is_alloc)
            add(x, &e, S_SEGMENT_FREE);
    }
    return CMT_OBSERVE_ALL;
}

static void keep_live(void *ctx, const struct cmt_replay_object *o)
{
    struct cmt__export_memory_viz *x = ctx;
    if (!device_kind(o->kind) || x->failed)
        return;
    if (x->live_count == x->live_cap &&
        CMT_GROW(x->live, x->live_cap, x->live_count + 1, 256) != 0) {
        x->failed = 1;
        return;
    }
    x->live[x->live_count++] = *o;
}

/* The moment the window ends: the driver's segments are those live then. */
static void memviz_window_end(struct cmt_observer *self, const cmt_replay *rp)
{
    struct cmt__export_memory_viz *x = self->ctx;
    cmt_replay_foreach_live(rp, keep_live, x);
    x->done = 1;
    self->before_t = UINT64_MAX;
}

int cmt__export_memory_viz_init(struct cmt__export_memory_viz *x,
                                const struct cmt__export_window *window, uint64_t max_entries,
                                struct cmt_observer *observer)
{
    memset(x, 0, sizeof *x);
    x->window = *window;
    x->max_entries = max_entries;
    x->rings = calloc(CMT_MAX_DEVICES, sizeof *x->rings);
    if (!x->rings)
        return -1;
    *observer = (struct cmt_observer){.wants = CMT_OBSERVE_ALL,
                                      .step = memviz_step,
                                      .ctx = x,
                                      .before_t = window->to_ns,
                                      .before = window->to_ns != UINT64_MAX ? memviz_window_end
                                                                            : NULL};
    return 0;
}

void cmt__export_memory_viz_cut(const struct cmt__export_memory_viz *x, uint64_t *kept,
                                uint64_t *dropped)
{
    *kept = *dropped = 0;
    for (int32_t d = 0; x->rings && d < CMT_MAX_DEVICES; d++) {
        *kept += x->rings[d].count;
        *dropped += x->rings[d].dropped;
    }
}

void cmt__export_memory_viz_free(struct cmt__export_memory_viz *x)
{
    for (int32_t d = 0; x->rings && d < CMT_MAX_DEVICES; d++)
        free(x->rings[d].e);
    free(x->rings);
    cmt__memviz_actions_free(&x->actions);
    free(x->live);
    free(x->conf);
    memset(x, 0, sizeof *x);
}

/* ---- writing ---- */

struct writer {
    struct cmt__pickle pk;
    const cmt_reader *r;
    uint32_t *node_memo, *stack_memo; /* memo index + 1 per node / leaf, 0: not yet written */
    uint32_t nodes;
    uint64_t t0_us;
    uint32_t string_memo[S_COUNT]; /* memo index + 1, 0: not yet written */
    const uint8_t *has_alloc;      /* per device 0..max_dev: its allocator's events are there */
    int32_t max_dev;
    const struct cmt__export_window *window;
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
    return cmt__memviz_block_action(aa);
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

/* Device dev's trace entries, oldest first: its allocator's actions when the trace has them
 * (not those that only describe the state before the recorded window), else its driver calls
 * (both as add() kept them). */
static void device_trace(struct writer *w, const struct cmt__export_memory_viz *x, int32_t dev)
{
    const struct cmt__memviz_ring *r = &x->rings[dev];
    cmt__pickle_list(&w->pk);
    for (size_t i = 0; i < r->count; i++) {
        const struct cmt__memviz_entry *e = &r->e[(r->head + i) % r->count];
        trace_entry(w, e->shown, e);
    }
    cmt__pickle_end_list(&w->pk);
}

struct segments_ctx {
    struct writer *w;
    const cmt_replay *rp;
    const struct cmt__export_window *window;
};

static void segment(void *ctx, const struct cmt_replay_object *o)
{
    struct segments_ctx *s = ctx;
    struct writer *w = s->w;
    if (!device_kind(o->kind) || allocator_device(w, shown_device(o->dev)) ||
        !cmt__export_window_dev(s->window, shown_device(o->dev)))
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
static void allocator_segment(struct writer *w, const struct cmt__memviz_segment *s,
                              const struct cmt__memviz_block *b, size_t n)
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
static void allocator_segments(struct writer *w, const struct cmt__memviz_state *s)
{
    size_t b = 0;
    for (size_t i = 0; i < s->nsegs; i++) {
        const struct cmt__memviz_segment *seg = &s->segs[i];
        while (b < s->nblocks &&
               (s->blocks[b].e->dev < seg->dev ||
                (s->blocks[b].e->dev == seg->dev && s->blocks[b].e->addr < seg->addr)))
            b++;
        size_t first = b;
        if (!cmt__export_window_dev(w->window, seg->dev))
            continue;
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
    w.max_dev = x->max_dev;
    w.window = &x->window;
    for (uint32_t s = 0; s < cmt_replay_device_count(p->replay); s++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(p->replay, s);
        if (d && d->live_bytes && d->dev > w.max_dev && d->dev < CMT_MAX_DEVICES)
            w.max_dev = d->dev;
    }
    w.has_alloc = x->has_alloc;
    struct cmt__memviz_state as = {0};
    int rc = cmt__memviz_state(&as, &x->actions) == 0 ? 0 : -1;
    if (rc == 0) {
        cmt__pickle_begin(&w.pk, f);
        cmt__pickle_dict(&w.pk);
        cmt__pickle_str(&w.pk, "segments");
        cmt__pickle_list(&w.pk);
        struct segments_ctx sc = {&w, p->replay, &x->window};
        if (x->done) /* the window ended before the trace: the objects live then */
            for (size_t i = 0; i < x->live_count; i++)
                segment(&sc, &x->live[i]);
        else
            cmt_replay_foreach_live(p->replay, segment, &sc);
        allocator_segments(&w, &as);
        cmt__pickle_end_list(&w.pk);
        rc = write_rest(&w, x, p);
    }
    cmt__memviz_state_free(&as);
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
