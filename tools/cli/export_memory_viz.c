/* export_memory_viz.c — a PyTorch memory snapshot (the pickle torch.cuda.memory._dump_snapshot
 * writes) of a driver trace, so pytorch.org/memory_viz opens any traced program. Each driver
 * allocation of device memory is a segment holding one block of its size: the trace entries are
 * segment_alloc + alloc at the allocation, free_requested + free_completed + segment_free at
 * its free, oom at an out-of-memory failure; `segments` is the state at the end (what is still
 * live), frames come from the trace's stacks (innermost first, as PyTorch writes them), each
 * frame and each stack written once and shared through the pickle's memo. VMM handles are
 * segments at their handle value (they have no address of their own); memory of an unknown
 * device (dev -1) is shown on device 0. */
#include <stdlib.h>
#include <string.h>

#include "cmt_grow.h"
#include "export.h"
#include "oom.h"
#include "pickle_writer.h"

enum { ACT_ALLOC, ACT_FREE, ACT_OOM };

struct cmt__memviz_entry {
    uint64_t addr, size, stream, t_ns, device_free;
    uint32_t stack;
    int32_t dev;
    uint8_t action;
};

static int device_kind(int kind)
{
    return CMT_KIND_IS_DEVICE_MEMORY(kind);
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

static unsigned memviz_step(struct cmt_observer *self, const cmt_replay *rp,
                            const struct cmt_replay_step *st)
{
    (void)rp;
    struct cmt__export_memory_viz *x = self->ctx;
    const struct cmt_event *ev = &st->rec.u.event;
    struct cmt__memviz_entry e = {.addr = st->key,
                                  .size = st->bytes,
                                  .stream = (ev->fields & CMT_F(STREAM)) ? ev->v[CMT_FIELD_STREAM]
                                                                         : 0,
                                  .t_ns = ev->t_ns,
                                  .stack = ev->stack,
                                  .dev = ev->dev < 0 ? 0 : ev->dev};
    if (st->oom) {
        e.action = ACT_OOM;
        e.size = st->request;
        e.addr = 0;
        e.device_free = st->device && st->device->have_sample ? st->device->free_bytes : 0;
        add(x, &e);
    } else if (st->kind >= 0 && device_kind(st->kind)) {
        if (st->is_alloc && st->failed)
            return CMT_OBSERVE_EVENT;
        e.action = st->is_alloc ? ACT_ALLOC : ACT_FREE;
        if (!st->is_alloc && st->owner)
            e.dev = st->owner->dev < 0 ? 0 : st->owner->dev;
        add(x, &e);
    }
    return CMT_OBSERVE_EVENT;
}

struct cmt_observer cmt__export_memory_viz_observer(struct cmt__export_memory_viz *x)
{
    memset(x, 0, sizeof *x);
    struct cmt_observer o = {
        .wants = CMT_OBSERVE_EVENT | CMT_OBSERVE_OOM, .step = memviz_step, .ctx = x};
    return o;
}

void cmt__export_memory_viz_free(struct cmt__export_memory_viz *x)
{
    free(x->entries);
    memset(x, 0, sizeof *x);
}

/* ---- writing ---- */

/* The strings every entry repeats, written once and then taken from the memo (as Python's
 * pickler does with interned strings). */
/* clang-format off */
#define CMT__MEMVIZ_STRINGS(X)              \
    X(ACTION, "action")                     \
    X(ADDR, "addr")                         \
    X(SIZE, "size")                         \
    X(STREAM, "stream")                     \
    X(TIME_US, "time_us")                   \
    X(FRAMES, "frames")                     \
    X(DEVICE_FREE, "device_free")           \
    X(FILENAME, "filename")                 \
    X(LINE, "line")                         \
    X(NAME, "name")                         \
    X(SEGMENT_ALLOC, "segment_alloc")       \
    X(ALLOC, "alloc")                       \
    X(FREE_REQUESTED, "free_requested")     \
    X(FREE_COMPLETED, "free_completed")     \
    X(SEGMENT_FREE, "segment_free")         \
    X(OOM, "oom")                           \
    X(DEVICE, "device")                     \
    X(ADDRESS, "address")                   \
    X(TOTAL_SIZE, "total_size")             \
    X(ALLOCATED_SIZE, "allocated_size")     \
    X(ACTIVE_SIZE, "active_size")           \
    X(REQUESTED_SIZE, "requested_size")     \
    X(SEGMENT_TYPE, "segment_type")         \
    X(LARGE, "large")                       \
    X(SEGMENT_POOL_ID, "segment_pool_id")   \
    X(IS_EXPANDABLE, "is_expandable")       \
    X(BLOCKS, "blocks")                     \
    X(STATE, "state")                       \
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
};

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

static void trace_entry(struct writer *w, int action, const struct cmt__memviz_entry *e)
{
    cmt__pickle_dict(&w->pk);
    key_konst(w, S_ACTION, action);
    if (e->action == ACT_OOM) {
        key_uint(w, S_DEVICE_FREE, e->device_free);
    } else {
        key_uint(w, S_ADDR, e->addr);
    }
    key_uint(w, S_SIZE, e->size);
    key_uint(w, S_STREAM, e->stream);
    key_uint(w, S_TIME_US, w->t0_us + e->t_ns / 1000);
    konst(w, S_FRAMES);
    frames(w, e->stack);
    cmt__pickle_end_dict(&w->pk);
}

static void device_trace(struct writer *w, const struct cmt__export_memory_viz *x, int32_t dev)
{
    cmt__pickle_list(&w->pk);
    for (size_t i = 0; i < x->count; i++) {
        const struct cmt__memviz_entry *e = &x->entries[i];
        if (e->dev != dev)
            continue;
        if (e->action == ACT_ALLOC) {
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
    if (!device_kind(o->kind))
        return;
    const struct cmt_replay_site *site = cmt_replay_site(s->rp, o->site);
    uint32_t stack = site ? site->stack : 0;
    cmt__pickle_dict(&w->pk);
    key_uint(w, S_DEVICE, o->dev < 0 ? 0 : (uint64_t)o->dev);
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
    int32_t max_dev = 0;
    for (size_t i = 0; i < x->count; i++)
        if (x->entries[i].dev > max_dev)
            max_dev = x->entries[i].dev;
    for (uint32_t s = 0; s < cmt_replay_device_count(p->replay); s++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(p->replay, s);
        if (d && d->live_bytes && d->dev > max_dev)
            max_dev = d->dev;
    }
    cmt__pickle_begin(&w.pk, f);
    cmt__pickle_dict(&w.pk);
    cmt__pickle_str(&w.pk, "segments");
    cmt__pickle_list(&w.pk);
    struct segments_ctx sc = {&w, p->replay};
    cmt_replay_foreach_live(p->replay, segment, &sc);
    cmt__pickle_end_list(&w.pk);
    cmt__pickle_str(&w.pk, "device_traces");
    cmt__pickle_list(&w.pk);
    for (int32_t dev = 0; dev <= max_dev; dev++)
        device_trace(&w, x, dev);
    cmt__pickle_end_list(&w.pk);
    cmt__pickle_str(&w.pk, "allocator_settings");
    cmt__pickle_dict(&w.pk);
    const char *conf = cmt__export_alloc_conf(p->reader);
    if (conf) {
        cmt__pickle_str(&w.pk, "PYTORCH_CUDA_ALLOC_CONF");
        cmt__pickle_str(&w.pk, conf);
    }
    cmt__pickle_end_dict(&w.pk);
    cmt__pickle_str(&w.pk, "external_annotations");
    cmt__pickle_list(&w.pk);
    cmt__pickle_end_list(&w.pk);
    cmt__pickle_end_dict(&w.pk);
    int rc = cmt__pickle_end(&w.pk);
    free(w.node_memo);
    free(w.stack_memo);
    return rc;
}
