/* snapshot_trace.c — a parsed snapshot written as allocator-level records (snapshot_trace.h).
 *
 * Two passes over the trace entries. The first finds the state before the window (frees
 * without an alloc, segments freed without being allocated, dump-time segments and active
 * blocks the window did not make) and, for each alloc still live at dump time, the block's
 * exact size from the segments. The second writes: PROCESS, ALLOCATOR, DEVICEs, the
 * before-state, then every entry in order, each frame list as trie nodes before its first use.
 * Virtual addresses are unique across devices (CUDA's unified addressing), so one map per
 * kind of object serves every device. */
#include "snapshot_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caching_model.h"
#include "cmt_error.h"
#include "cmt_grow.h"
#include "cmt_search.h"
#include "snapshot_blocks.h"
#include "snapshot_internal.h"
#include "snapshot_ranges.h"

/* ---- the conversion's state ---- */

/* What qsort orders: a key and the index it belongs to (ties go by index: stable). */
struct sort_key {
    uint64_t key;
    uint32_t index;
};

static int cmp_key(const void *a, const void *b)
{
    const struct sort_key *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->index > y->index) - (x->index < y->index);
}

#define BEFORE_MARK (UINT64_C(1) << 63) /* live[addr] names a before-block, not an entry */
#define PENDING_BIT (UINT64_C(1) << 63) /* sizes[addr]: free requested, not completed */

struct conv {
    const struct cmt_snapshot *s;
    cmt_writer *w;
    struct cmt_snapshot_trace_stats st;
    struct cmt_model_config config; /* for round_size */
    uint64_t *entry_size;           /* per entry: the block size its alloc writes */
    struct cmt_alloc_event *before;
    size_t nbefore, before_cap;
    uint32_t *order; /* entries in writing order */
    uint32_t *leaf;  /* per snapshot stack: its leaf node, 0 = not written yet */
    struct cmt__u64_map nodes, strings, sizes;
    uint32_t next_node, next_string;
    uint64_t *allocated, *reserved; /* per device, as the events so far add up */
    uint64_t t0, t;
    int have_t0;
    struct sort_key *seg_order; /* segments by address, for the segment a block lies in */
    size_t next_annotation;     /* external_annotations written so far */
    struct open_annotation {    /* their START ranges not ended yet */
        const char *name;       /* interned: compared by address */
        uint32_t id;
    } * open;
    size_t nopen, open_cap;
    uint32_t next_range;
};

static uint64_t round_size(const struct conv *c, uint64_t requested)
{
    return cmt_model_round_size(&c->config, (size_t)requested);
}

/* The dump-time segment holding addr, or NULL. */
static const struct cmt_snapshot_segment *segment_at(const struct conv *c, uint64_t addr)
{
    size_t lo; /* the first segment whose address is above addr */
    CMT_UPPER_BOUND(lo, c->seg_order, c->s->nsegments, .key, addr);
    if (!lo)
        return NULL;
    const struct cmt_snapshot_segment *g = &c->s->segments[c->seg_order[lo - 1].index];
    return addr - g->addr < g->total_size ? g : NULL;
}

/* A segment's segment_pool_id as the trace's pool: 0 for PyTorch's default (0, 0), else the
 * pair packed (a private pool: a CUDA graph's, a MemPool). */
static uint64_t pool_of(const struct cmt_snapshot_segment *g)
{
    return g ? (uint64_t)(uint32_t)g->pool_id[0] << 32 | (uint32_t)g->pool_id[1] : 0;
}

static int add_before(struct conv *c, uint32_t action, int32_t dev, uint64_t addr, uint64_t size,
                      uint64_t requested, uint64_t stream, uint32_t flags, uint32_t stack)
{
    if (CMT_GROW(c->before, c->before_cap, c->nbefore + 1, 64))
        return CMT_ENOMEM;
    struct cmt_alloc_event *e = &c->before[c->nbefore++];
    memset(e, 0, sizeof *e);
    e->action = action;
    e->dev = dev;
    e->stack = stack; /* a snapshot stack id until written */
    e->fields = CMT_AF(ADDR) | CMT_AF(SIZE) | CMT_AF(STREAM) | CMT_AF(FLAGS);
    e->v[CMT_AFIELD_ADDR] = addr;
    e->v[CMT_AFIELD_SIZE] = size;
    e->v[CMT_AFIELD_STREAM] = stream;
    e->v[CMT_AFIELD_FLAGS] = CMT_AFLAG_BEFORE | flags;
    if (action == CMT_AA_ALLOC || action == CMT_AA_FREE_REQUESTED) {
        e->fields |= CMT_AF(REQUESTED);
        e->v[CMT_AFIELD_REQUESTED] = requested;
    }
    if (action == CMT_AA_ALLOC) {
        const struct cmt_snapshot_segment *g = segment_at(c, addr);
        if (g) {
            e->fields |= CMT_AF(SEGMENT);
            e->v[CMT_AFIELD_SEGMENT] = g->addr;
            e->v[CMT_AFIELD_FLAGS] |= (g->small ? CMT_AFLAG_SMALL : 0) |
                                      (g->expandable ? CMT_AFLAG_EXPANDABLE : 0);
        }
    }
    return 0;
}

static int before_block(struct conv *c, struct cmt__u64_map *live,
                        const struct cmt_snapshot_entry *e)
{
    int rc = add_before(c, CMT_AA_ALLOC, e->dev, e->addr, round_size(c, e->size), e->size,
                        e->stream, 0, 0);
    return rc ? rc : cmt__u64_map_put(live, e->addr, BEFORE_MARK | (c->nbefore - 1));
}

/* Pass 1 over the entries: the before-state they imply; live maps addr to what made it. */
/* A range the window unmaps without having mapped it: mapped before the window. */
struct before_map {
    struct conv *c;
    int32_t dev;
    uint64_t stream;
    uint32_t flags, stack;
};

static int add_before_map(void *ctx, uint64_t start, uint64_t end)
{
    struct before_map *m = ctx;
    return add_before(m->c, CMT_AA_SEGMENT_MAP, m->dev, start, end - start, 0, m->stream,
                      m->flags | CMT_AFLAG_EXPANDABLE, m->stack);
}

static int scan_entries(struct conv *c, struct cmt__u64_map *live, struct cmt__u64_map *segs,
                        struct cmt__ranges *mapped)
{
    int rc = 0;
    for (size_t i = 0; i < c->s->nentries && !rc; i++) {
        const struct cmt_snapshot_entry *e = &c->s->entries[i];
        c->entry_size[i] = round_size(c, e->size);
        switch (e->action) {
        case CMT_SNAPSHOT_ALLOC: rc = cmt__u64_map_put(live, e->addr, i + 1); break;
        case CMT_SNAPSHOT_FREE_REQUESTED:
            if (!cmt__u64_map_find(live, e->addr))
                rc = before_block(c, live, e);
            break;
        case CMT_SNAPSHOT_FREE_COMPLETED:
        case CMT_SNAPSHOT_FREE:
            if (!cmt__u64_map_find(live, e->addr))
                rc = before_block(c, live, e);
            cmt__u64_map_remove(live, e->addr);
            break;
        case CMT_SNAPSHOT_SEGMENT_ALLOC: rc = cmt__u64_map_put(segs, e->addr, e->size); break;
        case CMT_SNAPSHOT_SEGMENT_FREE:
            if (!cmt__u64_map_find(segs, e->addr))
                rc = add_before(c, CMT_AA_SEGMENT_ALLOC, e->dev, e->addr, e->size, 0, e->stream, 0,
                                0);
            cmt__u64_map_remove(segs, e->addr);
            break;
        case CMT_SNAPSHOT_SEGMENT_MAP:
            rc = cmt__ranges_add(mapped, e->addr, e->addr + e->size);
            break;
        case CMT_SNAPSHOT_SEGMENT_UNMAP: {
            struct before_map m = {c, e->dev, e->stream, 0, 0};
            rc = cmt__ranges_remove(mapped, e->addr, e->addr + e->size, add_before_map, &m);
            break;
        }
        }
    }
    return rc;
}

/* Pass 1, end: the dump-time segments and active blocks the window did not make. */
static int scan_segments(struct conv *c, struct cmt__u64_map *live, const struct cmt__u64_map *segs,
                         const struct cmt__ranges *mapped)
{
    for (size_t k = 0; k < c->s->nsegments; k++) {
        const struct cmt_snapshot_segment *g = &c->s->segments[k];
        uint32_t flags = g->small ? CMT_AFLAG_SMALL : 0;
        int rc = 0;
        if (g->expandable) { /* what the window did not map, and did not unmap since */
            struct before_map m = {c, g->dev, g->stream, flags, g->stack};
            rc = cmt__ranges_gaps(mapped, g->addr, g->addr + g->total_size, add_before_map, &m);
        } else if (!cmt__u64_map_find(segs, g->addr)) {
            rc = add_before(c, CMT_AA_SEGMENT_ALLOC, g->dev, g->addr, g->total_size, 0, g->stream,
                            flags, g->stack);
            if (!rc && pool_of(g)) {
                struct cmt_alloc_event *e = &c->before[c->nbefore - 1];
                e->fields |= CMT_AF(POOL);
                e->v[CMT_AFIELD_POOL] = pool_of(g);
            }
        }
        for (uint32_t j = 0; j < g->nblocks && !rc; j++) {
            const struct cmt_snapshot_block *b = &c->s->blocks[g->first_block + j];
            if (b->state == CMT_SNAPSHOT_INACTIVE)
                continue;
            uint64_t *v = cmt__u64_map_find(live, b->addr);
            if (!v) {
                rc = add_before(c, CMT_AA_ALLOC, g->dev, b->addr, b->size, b->requested, g->stream,
                                0, b->stack);
                /* freed before the window, waiting on a stream: active, not allocated */
                if (!rc && b->state == CMT_SNAPSHOT_ACTIVE_PENDING_FREE)
                    rc = add_before(c, CMT_AA_FREE_REQUESTED, g->dev, b->addr, b->size,
                                    b->requested, g->stream, 0, 0);
            } else if (*v & BEFORE_MARK)
                c->before[*v & ~BEFORE_MARK].v[CMT_AFIELD_SIZE] = b->size;
            else
                c->entry_size[*v - 1] = b->size; /* the exact size of a live alloc */
        }
        if (rc)
            return rc;
    }
    return 0;
}

static int block_action(uint32_t action)
{
    return action == CMT_AA_ALLOC || action == CMT_AA_FREE_REQUESTED;
}

/* Segments before blocks, so that every before-block lies in a segment already there; a
 * block's free request stays right after its alloc. */
static int cmp_before(const void *a, const void *b)
{
    const struct cmt_alloc_event *x = a, *y = b;
    int xs = !block_action(x->action), ys = !block_action(y->action);
    if (xs != ys)
        return ys - xs;
    if (x->dev != y->dev)
        return (x->dev > y->dev) - (x->dev < y->dev);
    return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The blocks of the window's allocations gone by the dump (the others have their sizes from
 * it), found again from the state before the window. */
static int window_sizes(struct conv *c, const struct cmt__u64_map *live)
{
    uint64_t *size = malloc((c->s->nentries + 1) * sizeof *size);
    int rc = size ? cmt__snapshot_block_sizes(c->s, &c->config, c->before, c->nbefore, size)
                  : CMT_ENOMEM;
    for (size_t i = 0; i < c->s->nentries && !rc; i++) {
        const struct cmt_snapshot_entry *e = &c->s->entries[i];
        const uint64_t *v = cmt__u64_map_find(live, e->addr);
        if (e->action == CMT_SNAPSHOT_ALLOC && !(v && *v == i + 1))
            c->entry_size[i] = size[i];
    }
    free(size);
    return rc;
}

static int scan(struct conv *c)
{
    struct cmt__u64_map live = {0}, segs = {0};
    struct cmt__ranges mapped = {0};
    int rc = scan_entries(c, &live, &segs, &mapped);
    if (!rc) /* the blocks allocations took, where c10 did not split them */
        rc = cmt__snapshot_block_sizes(c->s, &c->config, NULL, 0, c->entry_size);
    if (!rc)
        rc = scan_segments(c, &live, &segs, &mapped);
    if (!rc) /* the blocks the window frees, where c10 did not split them */
        rc = cmt__snapshot_before_sizes(c->before, c->nbefore, &c->config);
    if (!rc && c->nbefore) /* those gone by the dump: also in the segments made before */
        rc = window_sizes(c, &live);
    cmt__u64_map_free(&live);
    cmt__u64_map_free(&segs);
    cmt__ranges_free(&mapped);
    if (!rc && c->nbefore) { /* stable: the index breaks ties */
        for (size_t i = 0; i < c->nbefore; i++)
            c->before[i].tid = (uint32_t)i;
        qsort(c->before, c->nbefore, sizeof *c->before, cmp_before);
        for (size_t i = 0; i < c->nbefore; i++)
            c->before[i].tid = 0;
    }
    return rc;
}

/* ---- writing ---- */

static int string_id(struct conv *c, const char *text, uint32_t *id)
{
    uint64_t *v = cmt__u64_map_find(&c->strings, (uint64_t)(uintptr_t)text);
    if (v) {
        *id = (uint32_t)*v;
        return 0;
    }
    *id = ++c->next_string;
    int rc = cmt_writer_string(c->w, *id, text);
    return rc ? rc : cmt__u64_map_put(&c->strings, (uint64_t)(uintptr_t)text, *id);
}

/* The trie node of one frame under `parent`, written with its SYMBOL when new. */
static int frame_node(struct conv *c, uint32_t parent, uint32_t frame, uint32_t *node)
{
    uint64_t key = ((uint64_t)parent << 32 | frame) + 1;
    uint64_t *v = cmt__u64_map_find(&c->nodes, key);
    if (v) {
        *node = (uint32_t)*v;
        return 0;
    }
    const struct cmt_snapshot_frame *f = &c->s->frames[frame];
    struct cmt_stack_node n = {.id = ++c->next_node, .parent = parent};
    n.ip = (uint64_t)n.id * 16;
    struct cmt_symbol sym = {.node = n.id, .line = f->line};
    int rc;
    if ((rc = cmt_writer_stack_node(c->w, &n)) || (rc = string_id(c, f->name, &sym.function)))
        return rc;
    if (strcmp(f->file, "??") != 0 && *f->file && (rc = string_id(c, f->file, &sym.file)))
        return rc;
    if ((rc = cmt_writer_symbol(c->w, &sym)) || (rc = cmt__u64_map_put(&c->nodes, key, n.id)))
        return rc;
    c->st.stack_nodes++;
    *node = n.id;
    return 0;
}

/* The leaf node of snapshot stack `stack` (frames innermost first), writing what is new. */
static int leaf_node(struct conv *c, uint32_t stack, uint32_t *leaf)
{
    *leaf = 0;
    if (!stack || stack >= c->s->nstacks)
        return 0;
    if (c->leaf[stack]) {
        *leaf = c->leaf[stack];
        return 0;
    }
    uint32_t n;
    const uint32_t *frames = cmt_snapshot_stack_frames(c->s, stack, &n);
    uint32_t node = 0;
    for (uint32_t k = n; k-- > 0;) {
        int rc = frame_node(c, node, frames[k], &node);
        if (rc)
            return rc;
    }
    *leaf = c->leaf[stack] = node;
    return 0;
}

static uint64_t *device_slot(uint64_t *per_device, const struct conv *c, int32_t dev)
{
    return dev >= 0 && (uint32_t)dev < c->s->ndevices ? &per_device[dev] : NULL;
}

static void add_to(uint64_t *slot, uint64_t bytes, int sign)
{
    if (slot)
        *slot = sign > 0 ? *slot + bytes : (*slot > bytes ? *slot - bytes : 0);
}

/* Running totals and the live blocks' sizes, as an event changes them. */
static int account(struct conv *c, struct cmt_alloc_event *e)
{
    uint64_t addr = e->v[CMT_AFIELD_ADDR], size = e->v[CMT_AFIELD_SIZE];
    uint64_t *alloc = device_slot(c->allocated, c, e->dev);
    uint64_t *res = device_slot(c->reserved, c, e->dev);
    uint64_t *v;
    switch (e->action) {
    case CMT_AA_ALLOC: add_to(alloc, size, 1); return cmt__u64_map_put(&c->sizes, addr, size);
    case CMT_AA_FREE_REQUESTED:
        if ((v = cmt__u64_map_find(&c->sizes, addr)) && !(*v & PENDING_BIT)) {
            add_to(alloc, *v, -1);
            *v |= PENDING_BIT;
        }
        return 0;
    case CMT_AA_FREE_COMPLETED:
        if ((v = cmt__u64_map_find(&c->sizes, addr))) {
            if (!(*v & PENDING_BIT))
                add_to(alloc, *v, -1);
            cmt__u64_map_remove(&c->sizes, addr);
        }
        return 0;
    case CMT_AA_SEGMENT_ALLOC:
    case CMT_AA_SEGMENT_MAP: add_to(res, size, 1); return 0;
    case CMT_AA_SEGMENT_FREE:
    case CMT_AA_SEGMENT_UNMAP: add_to(res, size, -1); return 0;
    }
    return 0;
}

static const uint32_t action_of_entry[CMT_SNAPSHOT_ACTION_COUNT] = {
    [CMT_SNAPSHOT_ALLOC] = CMT_AA_ALLOC,
    [CMT_SNAPSHOT_FREE_REQUESTED] = CMT_AA_FREE_REQUESTED,
    [CMT_SNAPSHOT_FREE_COMPLETED] = CMT_AA_FREE_COMPLETED,
    [CMT_SNAPSHOT_SEGMENT_ALLOC] = CMT_AA_SEGMENT_ALLOC,
    [CMT_SNAPSHOT_SEGMENT_FREE] = CMT_AA_SEGMENT_FREE,
    [CMT_SNAPSHOT_SEGMENT_MAP] = CMT_AA_SEGMENT_MAP,
    [CMT_SNAPSHOT_SEGMENT_UNMAP] = CMT_AA_SEGMENT_UNMAP,
    [CMT_SNAPSHOT_SNAPSHOT] = CMT_AA_SNAPSHOT,
    [CMT_SNAPSHOT_OOM] = CMT_AA_OOM,
    [CMT_SNAPSHOT_FREE] = CMT_AA_FREE_COMPLETED,
};

static void set(struct cmt_alloc_event *e, unsigned field, uint64_t value)
{
    e->fields |= UINT32_C(1) << field;
    e->v[field] = value;
}

/* The event of trace entry i. */
static void entry_event(struct conv *c, size_t i, struct cmt_alloc_event *e)
{
    const struct cmt_snapshot_entry *s = &c->s->entries[i];
    memset(e, 0, sizeof *e);
    e->allocator = CMT_SNAPSHOT_ALLOCATOR_ID;
    e->action = action_of_entry[s->action];
    e->dev = s->dev;
    const struct cmt_snapshot_segment *g = NULL;
    uint64_t *v;
    uint32_t flags;
    switch (e->action) {
    case CMT_AA_ALLOC:
        set(e, CMT_AFIELD_ADDR, s->addr);
        set(e, CMT_AFIELD_SIZE, c->entry_size[i]);
        set(e, CMT_AFIELD_REQUESTED, s->size);
        set(e, CMT_AFIELD_STREAM, s->stream);
        if ((g = segment_at(c, s->addr)))
            set(e, CMT_AFIELD_SEGMENT, g->addr);
        flags = g ? (g->small ? CMT_AFLAG_SMALL : 0u) | (g->expandable ? CMT_AFLAG_EXPANDABLE : 0u)
                  : (s->size <= CMT_MODEL_MIB ? CMT_AFLAG_SMALL : 0u);
        if (flags)
            set(e, CMT_AFIELD_FLAGS, flags);
        break;
    case CMT_AA_FREE_REQUESTED:
    case CMT_AA_FREE_COMPLETED:
        v = cmt__u64_map_find(&c->sizes, s->addr);
        set(e, CMT_AFIELD_ADDR, s->addr);
        set(e, CMT_AFIELD_SIZE, v ? *v & ~PENDING_BIT : round_size(c, s->size));
        set(e, CMT_AFIELD_REQUESTED, s->size);
        set(e, CMT_AFIELD_STREAM, s->stream);
        break;
    case CMT_AA_SEGMENT_MAP:
    case CMT_AA_SEGMENT_UNMAP: set(e, CMT_AFIELD_FLAGS, CMT_AFLAG_EXPANDABLE); /* fall through */
    case CMT_AA_SEGMENT_ALLOC:
    case CMT_AA_SEGMENT_FREE:
        set(e, CMT_AFIELD_ADDR, s->addr);
        set(e, CMT_AFIELD_SIZE, s->size);
        set(e, CMT_AFIELD_STREAM, s->stream);
        if (e->action == CMT_AA_SEGMENT_ALLOC && pool_of(segment_at(c, s->addr)))
            set(e, CMT_AFIELD_POOL, pool_of(segment_at(c, s->addr)));
        break;
    case CMT_AA_OOM:
        set(e, CMT_AFIELD_SIZE, s->size);
        set(e, CMT_AFIELD_DEVICE_FREE, s->device_free);
        set(e, CMT_AFIELD_STREAM, s->stream);
        if ((v = device_slot(c->allocated, c, s->dev)))
            set(e, CMT_AFIELD_ALLOCATED, *v);
        if ((v = device_slot(c->reserved, c, s->dev)))
            set(e, CMT_AFIELD_RESERVED, *v);
        break;
    }
}

static int write_event(struct conv *c, struct cmt_alloc_event *e, uint32_t snapshot_stack)
{
    int rc = leaf_node(c, snapshot_stack, &e->stack);
    if (!rc)
        rc = account(c, e);
    if (!rc)
        rc = cmt_writer_alloc_event(c->w, e);
    if (!rc)
        c->st.events++;
    return rc;
}

static void entry_time(struct conv *c, const struct cmt_snapshot_entry *e)
{
    if (e->has_time && !c->have_t0) {
        c->t0 = e->time_us;
        c->have_t0 = 1;
    }
    uint64_t t = e->has_time ? (e->time_us > c->t0 ? e->time_us - c->t0 : 0) * 1000 : c->t + 1000;
    c->t = t > c->t ? t : c->t;
}

static int write_header(struct conv *c, const char *name)
{
    char exe[4096], conf[256] = "";
    snprintf(exe, sizeof exe, "pytorch-snapshot:%s", name ? name : "");
    for (size_t i = 0; i < c->s->nentries; i++) /* the first timed entry starts the trace */
        if (c->s->entries[c->order[i]].has_time) {
            c->t0 = c->s->entries[c->order[i]].time_us;
            c->have_t0 = 1;
            break;
        }
    const char *argv[1] = {NULL};
    struct cmt_process p = {.start_wall_ns = c->t0 * 1000,
                            .hostname = "",
                            .exe = exe,
                            .argv = argv,
                            .rank = -1, /* a snapshot does not say */
                            .local_rank = -1,
                            .world_size = -1};
    int rc = cmt_writer_process(c->w, &p);
    const struct cmt_snapshot_settings *st = &c->s->settings;
    if (st->conf)
        snprintf(conf, sizeof conf, "%s", st->conf);
    else if ((c->s->flags & CMT_SNAPSHOT_SETTINGS) &&
             cmt_model_config_format(&c->config, conf, sizeof conf) < 0)
        conf[0] = 0;
    struct cmt_alloc_info info = {.id = CMT_SNAPSHOT_ALLOCATOR_ID,
                                  .dev = -1,
                                  .name = CMT_SNAPSHOT_ALLOCATOR_NAME,
                                  .version = "",
                                  .conf = st->conf ? st->conf : conf};
    if (!rc)
        rc = cmt_writer_alloc_info(c->w, &info);
    for (uint32_t d = 0; d < c->s->ndevices && !rc; d++) {
        char dev_name[32];
        snprintf(dev_name, sizeof dev_name, "cuda:%u", d);
        struct cmt_device dev = {.dev = (int32_t)d, .name = dev_name};
        rc = cmt_writer_device(c->w, &dev);
    }
    return rc;
}

/* The external_annotations due by time_us (all: every one left) as RANGE start and end records:
 * a snapshot names no thread, so they are process-wide ranges; an END closes the latest open
 * START of its name (record_function nests them). */
static int write_annotations(struct conv *c, uint64_t time_us, int all)
{
    int rc = 0;
    while (!rc && c->next_annotation < c->s->nannotations) {
        const struct cmt_snapshot_annotation *a = &c->s->annotations[c->next_annotation];
        if (!all && a->has_time && a->time_us > time_us)
            break;
        c->next_annotation++;
        uint64_t t = a->has_time && c->have_t0 && a->time_us > c->t0 ? (a->time_us - c->t0) * 1000
                                                                     : 0;
        c->t = t > c->t ? t : c->t;
        struct cmt_range g = {.t_ns = c->t, .message = a->name};
        if (a->start) {
            if (CMT_GROW(c->open, c->open_cap, c->nopen + 1, 16))
                return CMT_ENOMEM;
            c->open[c->nopen++] = (struct open_annotation){a->name, ++c->next_range};
            g.action = CMT_RA_START;
            g.id = c->next_range;
        } else {
            size_t k = c->nopen;
            while (k > 0 && c->open[k - 1].name != a->name)
                k--;
            if (!k)
                continue; /* an END without its START (the ring dropped it) */
            g.action = CMT_RA_END;
            g.id = c->open[k - 1].id;
            g.message = "";
            memmove(c->open + k - 1, c->open + k, (c->nopen - k) * sizeof *c->open);
            c->nopen--;
        }
        rc = cmt_writer_range(c->w, &g);
    }
    return rc;
}

static int write_all(struct conv *c, const char *name)
{
    int rc = write_header(c, name);
    for (size_t i = 0; i < c->nbefore && !rc; i++) {
        struct cmt_alloc_event e = c->before[i];
        e.allocator = CMT_SNAPSHOT_ALLOCATOR_ID;
        if (e.action == CMT_AA_ALLOC)
            c->st.before_blocks++;
        else if (!block_action(e.action))
            c->st.before_segments++;
        rc = write_event(c, &e, e.stack);
    }
    for (size_t k = 0; k < c->s->nentries && !rc; k++) {
        uint32_t i = c->order[k];
        struct cmt_alloc_event e;
        if (c->s->entries[i].has_time && (rc = write_annotations(c, c->s->entries[i].time_us, 0)))
            break;
        entry_time(c, &c->s->entries[i]);
        entry_event(c, i, &e);
        e.t_ns = c->t;
        rc = write_event(c, &e, c->s->entries[i].stack);
    }
    if (!rc)
        rc = write_annotations(c, 0, 1);
    struct cmt_end end = {.t_ns = c->t};
    return rc ? rc : cmt_writer_end(c->w, &end);
}

/* ---- set-up ---- */

static void settings_config(struct conv *c)
{
    const struct cmt_snapshot_settings *st = &c->s->settings;
    cmt_model_config_default(&c->config, (size_t)1 << 40);
    if (st->max_split_size > 0)
        c->config.max_split_size = (uint64_t)st->max_split_size;
    c->config.expandable_segments = st->expandable_segments;
    if (st->garbage_collection_threshold > 0 && st->garbage_collection_threshold < 1)
        c->config.garbage_collection_threshold = st->garbage_collection_threshold;
    int same = 1;
    for (int k = 1; k < CMT_SNAPSHOT_ROUNDUP_BUCKETS; k++)
        same &= st->roundup_power2_divisions[k] == st->roundup_power2_divisions[0];
    if (same) {
        c->config.roundup_power2_divisions = st->roundup_power2_divisions[0];
    } else {
        c->config.roundup_power2_per_interval = true;
        for (int k = 0; k < CMT_SNAPSHOT_ROUNDUP_BUCKETS && k < CMT_MODEL_ROUNDUP_INTERVALS; k++)
            c->config.roundup_power2_intervals[k] = st->roundup_power2_divisions[k];
    }
}

static int prepare(struct conv *c)
{
    const struct cmt_snapshot *s = c->s;
    size_t n = s->nentries ? s->nentries : 1, g = s->nsegments ? s->nsegments : 1;
    c->entry_size = malloc(n * sizeof *c->entry_size);
    c->order = malloc(n * sizeof *c->order);
    c->leaf = calloc(s->nstacks ? s->nstacks : 1, sizeof *c->leaf);
    c->allocated = calloc(s->ndevices ? s->ndevices : 1, sizeof *c->allocated);
    c->reserved = calloc(s->ndevices ? s->ndevices : 1, sizeof *c->reserved);
    c->seg_order = malloc(g * sizeof *c->seg_order);
    if (!c->entry_size || !c->order || !c->leaf || !c->allocated || !c->reserved || !c->seg_order)
        return CMT_ENOMEM;
    settings_config(c);
    for (size_t i = 0; i < s->nsegments; i++)
        c->seg_order[i] = (struct sort_key){s->segments[i].addr, (uint32_t)i};
    qsort(c->seg_order, s->nsegments, sizeof *c->seg_order, cmp_key);
    for (size_t i = 0; i < s->nentries; i++)
        c->order[i] = (uint32_t)i;
    if (s->ndevices > 1 && !(s->flags & CMT_SNAPSHOT_NO_TIME) && s->nentries) {
        struct sort_key *by_time = malloc(s->nentries * sizeof *by_time);
        if (!by_time)
            return CMT_ENOMEM;
        for (size_t i = 0; i < s->nentries; i++)
            by_time[i] = (struct sort_key){s->entries[i].time_us, (uint32_t)i};
        qsort(by_time, s->nentries, sizeof *by_time, cmp_key);
        for (size_t i = 0; i < s->nentries; i++)
            c->order[i] = by_time[i].index;
        free(by_time);
    }
    return 0;
}

int cmt_snapshot_to_trace(const struct cmt_snapshot *snap, cmt_writer *w, const char *name,
                          struct cmt_snapshot_trace_stats *stats)
{
    struct conv c = {.s = snap, .w = w};
    int rc = snap->nentries > UINT32_MAX - 1 ? CMT_EINVALID : prepare(&c);
    if (!rc)
        rc = scan(&c);
    if (!rc)
        rc = write_all(&c, name);
    if (stats)
        *stats = c.st;
    free(c.entry_size);
    free(c.order);
    free(c.leaf);
    free(c.allocated);
    free(c.reserved);
    free(c.seg_order);
    free(c.open);
    free(c.before);
    cmt__u64_map_free(&c.nodes);
    cmt__u64_map_free(&c.strings);
    cmt__u64_map_free(&c.sizes);
    return rc;
}

int cmt_snapshot_import(const void *data, size_t len, const char *name, cmt_sink_fn sink, void *ctx,
                        struct cmt_err *err, struct cmt_snapshot_trace_stats *stats)
{
    struct cmt_snapshot snap;
    int rc = cmt_snapshot_parse(&snap, data, len, err);
    if (rc)
        return rc;
    cmt_writer *w = NULL;
    rc = cmt_writer_create(&w, sink, ctx, NULL);
    if (!rc)
        rc = cmt_snapshot_to_trace(&snap, w, name, stats);
    if (!rc)
        rc = cmt_writer_flush(w);
    cmt_writer_destroy(w);
    cmt_snapshot_free(&snap);
    if (rc) /* the snapshot was sound: the code says it all */
        cmt_err_sys(err, rc, 0);
    return rc;
}
