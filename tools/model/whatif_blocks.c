/* whatif_blocks.c — the tensor stream from allocator-level records, and the self-check
 * (whatif_blocks.h). */
#include "whatif_blocks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "cmt_error.h"
#include "cmt_free.h"
#include "cmt_grow.h"
#include "cmt_search.h"

/* Live blocks of the kept device: an open-addressing table from address to tensor id (linear
 * probing, backward-shift deletion), so a long run costs no per-event shifting. */
struct live {
    uint64_t addr;
    uint32_t id; /* EMPTY: a free slot */
};
#define EMPTY UINT32_MAX

struct live_map {
    struct live *slots;
    size_t mask, count; /* capacity - 1 (a power of two, or 0) */
};

static size_t home(const struct live_map *m, uint64_t addr)
{
    return (size_t)((addr * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & m->mask;
}

/* @return the slot of addr, or NULL. */
static struct live *live_find(const struct live_map *m, uint64_t addr)
{
    if (!m->slots)
        return NULL;
    for (size_t i = home(m, addr);; i = (i + 1) & m->mask) {
        if (m->slots[i].id == EMPTY)
            return NULL;
        if (m->slots[i].addr == addr)
            return &m->slots[i];
    }
}

static int live_grow(struct live_map *m)
{
    size_t cap = m->slots ? (m->mask + 1) * 2 : 1024;
    struct live *slots = malloc(cap * sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < cap; i++)
        slots[i].id = EMPTY;
    struct live_map g = {slots, cap - 1, 0};
    for (size_t i = 0; m->slots && i <= m->mask; i++) {
        if (m->slots[i].id == EMPTY)
            continue;
        size_t j = home(&g, m->slots[i].addr);
        while (slots[j].id != EMPTY)
            j = (j + 1) & g.mask;
        slots[j] = m->slots[i];
        g.count++;
    }
    free(m->slots);
    *m = g;
    return 0;
}

/* @return a new slot for addr (not present), or NULL when out of memory. */
static struct live *live_insert(struct live_map *m, uint64_t addr, uint32_t id)
{
    if ((!m->slots || (m->count + 1) * 2 > m->mask + 1) && live_grow(m) != 0)
        return NULL;
    size_t i = home(m, addr);
    while (m->slots[i].id != EMPTY)
        i = (i + 1) & m->mask;
    m->slots[i] = (struct live){addr, id};
    m->count++;
    return &m->slots[i];
}

static void live_remove(struct live_map *m, struct live *e)
{
    size_t i = (size_t)(e - m->slots), j = i;
    for (;;) {
        j = (j + 1) & m->mask;
        if (m->slots[j].id == EMPTY)
            break;
        size_t h = home(m, m->slots[j].addr);
        if (((j - h) & m->mask) >= ((j - i) & m->mask)) { /* j may move back into i */
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].id = EMPTY;
    m->count--;
}

struct site {
    uint32_t stack, index;
};

/* A segment or a block held before the window, as the file proves it. */
struct held {
    uint64_t addr, size, requested, stream;
};

struct cmt_whatif_block_collector {
    struct cmt_whatif_stream *s;
    struct cmt_whatif_selfcheck *check;
    struct live_map live;
    uint32_t *free_ids; /* ids of ended tensors, reused as the replay reuses object ids */
    size_t free_id_count, free_id_cap;
    struct site *sites; /* by stack */
    size_t site_count, site_cap;
    uint32_t *site_stacks; /* site index -> stack */
    size_t site_stack_cap;
    bool have_device, conf_fixed;
    uint64_t reserved, capacity, total;
    bool have_capacity;
    size_t prelude_end; /* stream events from records flagged before the window */
    bool in_prelude;
    /* Segments were released and no segment was made since: at the next tensor event (or the
     * end) that was the allocator emptying its cache, not an OOM retry (whose releases the
     * request's new segment, or its OOM, follows). */
    bool released;
    uint64_t released_t_ns, released_seq;
    uint32_t released_stack;          /* the call stack of the first release (0: none recorded) */
    uint64_t reserved_before_release; /* what the allocator held when the releases began */
    uint64_t device_free_hint;        /* what it could hold, as far as the trace says yet */
    /* The state before the window (records flagged before, not expandable), kept until the
     * window's first event and then rebuilt in c10's own layout (rebuild_before). */
    struct held *held_segments, *held_blocks;
    struct cmt_model_config config; /* the run's settings, read when the first event fixes them */
    bool config_read;               /* they parsed (else config holds PyTorch's defaults) */
    uint64_t split_limit;
    size_t held_segment_count, held_segment_cap, held_block_count, held_block_cap;
    int failed;
};

/* The stream's input, as for any source (cmt_whatif_stream_push). */
static int push(struct cmt_whatif_block_collector *c, const struct cmt_whatif_event *e)
{
    return cmt_whatif_stream_push(c->s, e) ? -1 : 0;
}

/* The site index of a stack (sites are named at the end). */
static uint32_t site_of(struct cmt_whatif_block_collector *c, uint32_t stack)
{
    if (!stack)
        return 0;
    size_t lo;
    CMT_LOWER_BOUND(lo, c->sites, c->site_count, .stack, stack);
    if (lo < c->site_count && c->sites[lo].stack == stack)
        return c->sites[lo].index;
    uint32_t index = (uint32_t)c->site_count + 1;
    if (CMT_GROW(c->sites, c->site_cap, c->site_count + 1, 64) != 0 ||
        CMT_GROW(c->site_stacks, c->site_stack_cap, (size_t)index + 1, 64) != 0)
        return 0;
    memmove(&c->sites[lo + 1], &c->sites[lo], (c->site_count - lo) * sizeof *c->sites);
    c->sites[lo] = (struct site){stack, index};
    c->site_count++;
    c->site_stacks[index] = stack;
    return index;
}

static uint64_t field(const struct cmt_alloc_event *e, unsigned f)
{
    return e->fields & (UINT32_C(1) << f) ? e->v[f] : 0;
}

static int tensor_alloc(struct cmt_whatif_block_collector *c, const struct cmt_alloc_event *e)
{
    struct cmt_whatif_stream *s = c->s;
    uint64_t addr = field(e, CMT_AFIELD_ADDR);
    uint64_t size = e->fields & CMT_AF(REQUESTED) ? e->v[CMT_AFIELD_REQUESTED]
                                                  : field(e, CMT_AFIELD_SIZE);
    struct live *old = live_find(&c->live, addr);
    if (old) { /* its free was not recorded */
        struct cmt_whatif_event f = {.id = old->id, .t_ns = e->t_ns, .is_free = 1};
        if (push(c, &f) != 0 || CMT_GROW(c->free_ids, c->free_id_cap, c->free_id_count + 1, 64))
            return -1;
        c->free_ids[c->free_id_count++] = old->id;
        live_remove(&c->live, old);
    }
    uint32_t id = c->free_id_count ? c->free_ids[--c->free_id_count] : s->id_count++;
    if (!live_insert(&c->live, addr, id))
        return -1;
    struct cmt_whatif_event a = {.size = size,
                                 .stream = field(e, CMT_AFIELD_STREAM),
                                 .t_ns = e->t_ns,
                                 .seq = field(e, CMT_AFIELD_SEQ),
                                 .id = id,
                                 .site = site_of(c, e->stack)};
    s->allocs++;
    return push(c, &a);
}

static int tensor_free(struct cmt_whatif_block_collector *c, const struct cmt_alloc_event *e,
                       bool completed)
{
    struct live *b = live_find(&c->live, field(e, CMT_AFIELD_ADDR));
    if (!b) {
        if (!completed) /* a completed free after its request is no surprise */
            c->s->unmatched_frees++;
        return 0;
    }
    struct cmt_whatif_event f = {
        .id = b->id, .t_ns = e->t_ns, .seq = field(e, CMT_AFIELD_SEQ), .is_free = 1};
    if (push(c, &f) != 0 || CMT_GROW(c->free_ids, c->free_id_cap, c->free_id_count + 1, 64))
        return -1;
    c->free_ids[c->free_id_count++] = b->id;
    live_remove(&c->live, b);
    c->s->frees++;
    return 0;
}

/* The empty_cache() that released segments before this event, if any. */
static int emptied(struct cmt_whatif_block_collector *c)
{
    if (!c->released)
        return 0;
    c->released = false;
    c->s->empty_caches++;
    struct cmt_whatif_event x = {
        .t_ns = c->released_t_ns, .seq = c->released_seq, .is_free = 1, .failed = 1};
    return push(c, &x);
}

static int segment(struct cmt_whatif_block_collector *c, const struct cmt_alloc_event *e)
{
    struct cmt_whatif_selfcheck *k = c->check;
    uint64_t size = field(e, CMT_AFIELD_SIZE);
    switch (e->action) {
    case CMT_AA_SEGMENT_ALLOC:
        /* An OOM retry's releases (or garbage collection's) come before the new segment of
         * the request that needed them, in the same allocator call: with the same stack.
         * Releases from another stack, or (no stacks recorded) when that segment fit beside
         * everything held before them, were no failed allocation: the program emptied the
         * cache. */
        if (c->released && !(c->released_stack && e->stack && c->released_stack != e->stack) &&
            !(c->device_free_hint && c->reserved_before_release + size <= c->device_free_hint)) {
            c->released = false;
            /* the retry's first device allocation failed: the capacity was below this */
            uint64_t bound = c->reserved_before_release + size - 1;
            if (!strstr(k->conf, "garbage_collection_threshold") &&
                (!k->capacity_bound || bound < k->capacity_bound))
                k->capacity_bound = bound;
        }
        if (emptied(c) != 0)
            return -1;
        c->reserved += size;
        if (field(e, CMT_AFIELD_FLAGS) & CMT_AFLAG_BEFORE) {
            k->before_segments++;
            /* the model gets it as a tensor of its size, freed at once: a cached segment */
            struct cmt_whatif_event a = {.size = size,
                                         .stream = field(e, CMT_AFIELD_STREAM),
                                         .t_ns = e->t_ns,
                                         .id = c->s->id_count++};
            struct cmt_whatif_event f = {.id = a.id, .t_ns = e->t_ns, .is_free = 1};
            return push(c, &a) || push(c, &f) ? -1 : 0;
        }
        if (CMT_GROW(k->recorded, k->recorded_cap, k->recorded_segments + 1, 64) != 0)
            return -1;
        k->recorded[k->recorded_segments++] = (struct cmt_whatif_segment){size, c->s->event_count};
        return 0;
    case CMT_AA_SEGMENT_FREE:
        if (!(field(e, CMT_AFIELD_FLAGS) & CMT_AFLAG_BEFORE)) {
            if (CMT_GROW(k->recorded_free, k->recorded_free_cap, k->recorded_frees + 1, 64) != 0)
                return -1;
            k->recorded_free[k->recorded_frees++] = (struct cmt_whatif_segment){size,
                                                                                c->s->event_count};
        }
        /* fall through */
    case CMT_AA_SEGMENT_UNMAP:
        if (!(field(e, CMT_AFIELD_FLAGS) & CMT_AFLAG_BEFORE) && !c->released) {
            c->released = true;
            c->reserved_before_release = c->reserved;
            c->released_t_ns = e->t_ns;
            c->released_seq = field(e, CMT_AFIELD_SEQ);
            c->released_stack = e->stack;
        }
        c->reserved -= size < c->reserved ? size : c->reserved;
        return 0;
    case CMT_AA_SEGMENT_MAP:
        c->released = false;
        c->reserved += size;
        k->expandable = true;
        return 0;
    }
    return 0;
}

/* An out-of-memory failure proves that the allocator could not hold what it held then and the
 * segment the request needed (its device allocation failed, or a memory fraction refused it;
 * c10 had released its cache first): the replay's capacity is below that. Not with expandable
 * segments (pages, not segments) nor garbage collection (it frees on its own schedule). */
static void oom_bound(struct cmt_whatif_block_collector *c, const struct cmt_alloc_event *e)
{
    struct cmt_whatif_selfcheck *k = c->check;
    if (!c->config_read || k->expandable || strstr(k->conf, "expandable_segments:True") ||
        strstr(k->conf, "garbage_collection_threshold"))
        return;
    size_t size = (size_t)field(e, CMT_AFIELD_SIZE);
    uint64_t bound = c->reserved +
                     cmt_model_segment_size(&c->config, cmt_model_round_size(&c->config, size)) - 1;
    if (size && (!k->capacity_bound || bound < k->capacity_bound))
        k->capacity_bound = bound;
}

static int request_failed(struct cmt_whatif_block_collector *c, const struct cmt_alloc_event *e)
{
    struct cmt_whatif_stream *s = c->s;
    s->failed_allocs++;
    c->check->recorded_ooms++;
    if (!c->have_capacity && (e->fields & CMT_AF(DEVICE_FREE))) {
        /* what the allocator could reserve: the device's free memory and its own */
        uint64_t reserved = e->fields & CMT_AF(RESERVED) ? e->v[CMT_AFIELD_RESERVED] : c->reserved;
        c->capacity = e->v[CMT_AFIELD_DEVICE_FREE] + reserved;
        c->total = field(e, CMT_AFIELD_DEVICE_TOTAL);
        c->have_capacity = true;
    }
    struct cmt_whatif_event a = {.size = field(e, CMT_AFIELD_SIZE),
                                 .stream = field(e, CMT_AFIELD_STREAM),
                                 .t_ns = e->t_ns,
                                 .seq = field(e, CMT_AFIELD_SEQ),
                                 .site = site_of(c, e->stack),
                                 .id = CMT_WHATIF_NEW_ID,
                                 .failed = 1};
    return push(c, &a);
}

static int hold(struct held **v, size_t *count, size_t *cap, const struct cmt_alloc_event *e)
{
    if (CMT_GROW(*v, *cap, *count + 1, 64) != 0)
        return -1;
    uint64_t req = e->fields & CMT_AF(REQUESTED) ? e->v[CMT_AFIELD_REQUESTED] : 0;
    (*v)[(*count)++] = (struct held){field(e, CMT_AFIELD_ADDR), field(e, CMT_AFIELD_SIZE), req,
                                     field(e, CMT_AFIELD_STREAM)};
    return 0;
}

static int by_addr(const void *a, const void *b)
{
    const struct held *x = a, *y = b;
    return (x->addr > y->addr) - (x->addr < y->addr);
}

/* A tensor of the rebuild: pushed as allocated (its id returned), or freed. */
static int carve(struct cmt_whatif_block_collector *c, uint64_t size, uint64_t stream, uint32_t *id)
{
    *id = c->free_id_count ? c->free_ids[--c->free_id_count] : c->s->id_count++;
    struct cmt_whatif_event a = {.size = size, .stream = stream, .id = *id};
    return push(c, &a);
}

static int uncarve(struct cmt_whatif_block_collector *c, uint32_t id)
{
    struct cmt_whatif_event f = {.id = id, .is_free = 1};
    if (push(c, &f) != 0 || CMT_GROW(c->free_ids, c->free_id_cap, c->free_id_count + 1, 64))
        return -1;
    c->free_ids[c->free_id_count++] = id;
    return 0;
}

/* The fillers of a free gap, freed once every segment is carved (small-pool ones at most
 * 1 MiB, as small-pool requests are, and of sizes the settings do not round up). */
struct fillers {
    uint32_t *ids;
    size_t count, cap;
};

static int gap(struct cmt_whatif_block_collector *c, uint64_t size, uint64_t stream, bool small,
               struct fillers *f)
{
    if (!small && size &&
        (size <= CMT_MODEL_MIB || /* a small-pool request: not a layout c10 makes */
         cmt_model_round_size(&c->config, (size_t)size) != size))
        c->check->before_inexact++;
    for (uint64_t done = 0; done < size;) {
        uint64_t n = small && size - done > CMT_MODEL_MIB ? CMT_MODEL_MIB : size - done;
        while (small && n > 512 && cmt_model_round_size(&c->config, (size_t)n) != n)
            n &= n - 1; /* down to a power of two, which every rounding keeps */
        uint32_t id;
        if (carve(c, n, stream, &id) != 0 || CMT_GROW(f->ids, f->cap, f->count + 1, 64) != 0)
            return -1;
        f->ids[f->count++] = id;
        done += n;
    }
    return 0;
}

/* One held segment and its held blocks b[0 .. n-1] (by address): a tensor of the whole
 * segment (two of 1 MiB in the small pool) makes it, freed; then its pieces in address order,
 * each taking the front of the segment's free rest, the only free block of its stream and
 * pool while every earlier segment is full. A block's extent runs to the next block when the
 * gap between is one no free block can be (at most 1 MiB in the large pool: c10 did not split
 * it), or when the block was too large to split (at least max_split_size). @return 0, -1. */
static int rebuild_segment(struct cmt_whatif_block_collector *c, const struct held *g,
                           const struct held *b, size_t n, struct fillers *f)
{
    bool small = g->size <= 2 * CMT_MODEL_MIB;
    uint32_t id[2];
    if (small) {
        if (carve(c, CMT_MODEL_MIB, g->stream, &id[0]) ||
            carve(c, CMT_MODEL_MIB, g->stream, &id[1]) || uncarve(c, id[0]) || uncarve(c, id[1]))
            return -1;
    } else if (carve(c, g->size, g->stream, &id[0]) || uncarve(c, id[0])) {
        return -1;
    } else if (cmt_model_round_size(&c->config, (size_t)g->size) != g->size) {
        c->check->before_inexact++; /* the settings round it to a larger segment */
    }
    uint64_t at = g->addr, end = g->addr + g->size;
    for (size_t k = 0; k < n; k++) {
        uint64_t next = k + 1 < n ? b[k + 1].addr : end, size = b[k].size;
        if (b[k].addr < at || b[k].addr + size > next) {
            c->check->before_inexact++; /* blocks that overlap: not a layout c10 makes */
            continue;
        }
        if (!small && (next - (b[k].addr + size) <= CMT_MODEL_MIB ||
                       cmt_model_round_size(&c->config, (size_t)b[k].requested) >= c->split_limit))
            size = next - b[k].addr;
        if (cmt_model_round_size(&c->config, (size_t)size) != size ||
            (small && size > CMT_MODEL_MIB))
            c->check->before_inexact++; /* the model rounds it to another block */
        uint32_t t;
        if (gap(c, b[k].addr - at, g->stream, small, f) || carve(c, size, g->stream, &t) ||
            !live_insert(&c->live, b[k].addr, t))
            return -1;
        c->check->before_blocks++;
        at = b[k].addr + size;
    }
    return gap(c, end - at, g->stream, small, f);
}

/* The state at the window's start, in c10's layout: the held segments in address order (the
 * model's addresses rise in the same order), each carved into its blocks and free gaps.
 * Blocks in no held segment are placed where the model puts them. @return 0, -1. */
static int rebuild_before(struct cmt_whatif_block_collector *c)
{
    struct held *g = c->held_segments, *b = c->held_blocks;
    size_t ng = c->held_segment_count, nb = c->held_block_count, k = 0;
    struct fillers f = {0};
    int rc = 0;
    if (!c->config_read)
        c->check->before_inexact += nb; /* settings the model cannot read */
    if (ng)
        qsort(g, ng, sizeof *g, by_addr);
    if (nb)
        qsort(b, nb, sizeof *b, by_addr);
    for (size_t i = 0; i < ng && !rc; i++) {
        for (; k < nb && b[k].addr < g[i].addr; k++) { /* in no held segment */
            c->check->before_inexact++;
            uint32_t t;
            rc = carve(c, b[k].requested ? b[k].requested : b[k].size, b[k].stream, &t) ||
                 !live_insert(&c->live, b[k].addr, t);
        }
        size_t first = k;
        while (k < nb && b[k].addr < g[i].addr + g[i].size)
            k++;
        if (!rc)
            rc = rebuild_segment(c, &g[i], b ? &b[first] : NULL, k - first, &f); /* b: none held */
    }
    for (; k < nb && !rc; k++) {
        c->check->before_inexact++;
        uint32_t t;
        rc = carve(c, b[k].requested ? b[k].requested : b[k].size, b[k].stream, &t) ||
             !live_insert(&c->live, b[k].addr, t);
    }
    for (size_t i = 0; i < f.count && !rc; i++)
        rc = uncarve(c, f.ids[i]);
    free(f.ids);
    c->held_segment_count = c->held_block_count = 0;
    return rc ? -1 : 0;
}

/* A segment or block held before the window: kept for rebuild_before. */
static int hold_before(struct cmt_whatif_block_collector *c, const struct cmt_alloc_event *e)
{
    if (e->action == CMT_AA_ALLOC) {
        c->s->allocs++;
        return hold(&c->held_blocks, &c->held_block_count, &c->held_block_cap, e);
    }
    c->reserved += field(e, CMT_AFIELD_SIZE);
    c->check->before_segments++;
    if (c->reserved > c->check->recorded_peak_reserved)
        c->check->recorded_peak_reserved = c->reserved;
    return hold(&c->held_segments, &c->held_segment_count, &c->held_segment_cap, e);
}

static int on_event(struct cmt_whatif_block_collector *c, const struct cmt_alloc_event *e)
{
    struct cmt_whatif_stream *s = c->s;
    if (!c->have_device) {
        if (e->action != CMT_AA_ALLOC && e->action != CMT_AA_SEGMENT_ALLOC &&
            e->action != CMT_AA_SEGMENT_MAP)
            return 0;
        c->have_device = true;
        s->device = e->dev;
        c->check->present = true;
    }
    if (e->dev != s->device) {
        s->other_device_events++;
        return 0;
    }
    if (!c->conf_fixed) { /* the settings before the first event are the run's */
        c->conf_fixed = true;
        cmt_model_config_default(&c->config, 1);
        c->config_read = !c->check->conf[0] ||
                         cmt_model_config_parse(&c->config, c->check->conf, NULL) == 0;
        c->split_limit = c->config.max_split_size ? c->config.max_split_size : UINT64_MAX;
    }
    uint64_t flags = field(e, CMT_AFIELD_FLAGS);
    bool before = flags & CMT_AFLAG_BEFORE;
    if (before && !(flags & CMT_AFLAG_EXPANDABLE) &&
        (e->action == CMT_AA_ALLOC || e->action == CMT_AA_SEGMENT_ALLOC))
        return hold_before(c, e);
    if (!before && c->in_prelude) {
        c->in_prelude = false;
        if (rebuild_before(c) != 0)
            return -1;
        c->prelude_end = s->event_count;
    }
    int rc = 0;
    switch (e->action) {
    case CMT_AA_ALLOC: rc = emptied(c) ? -1 : tensor_alloc(c, e); break;
    case CMT_AA_FREE_REQUESTED: rc = emptied(c) ? -1 : tensor_free(c, e, false); break;
    case CMT_AA_FREE_COMPLETED: rc = emptied(c) ? -1 : tensor_free(c, e, true); break;
    case CMT_AA_OOM:
        c->released = false;
        oom_bound(c, e);
        rc = request_failed(c, e);
        break;
    default: rc = segment(c, e);
    }
    if (c->reserved > c->check->recorded_peak_reserved)
        c->check->recorded_peak_reserved = c->reserved;
    return rc;
}

static unsigned block_step(struct cmt_observer *self, const cmt_replay *rp,
                           const struct cmt_replay_step *st)
{
    struct cmt_whatif_block_collector *c = self->ctx;
    if (st->rec.type == CMT_REC_ALLOCATOR) {
        const struct cmt_alloc_info *info = &st->rec.u.alloc_info;
        if (!c->conf_fixed)
            snprintf(c->check->conf, sizeof c->check->conf, "%s", info->conf ? info->conf : "");
        struct cmt_whatif_stream *s = c->s;
        if (!s->torch_version[0] && info->version && info->version[0] >= '0' &&
            info->version[0] <= '9') {
            snprintf(s->torch_version, sizeof s->torch_version, "%s", info->version);
            snprintf(s->torch_version_source, sizeof s->torch_version_source,
                     "the ALLOCATOR record");
        }
    } else if (st->rec.type == CMT_REC_ALLOC_EVENT) {
        const struct cmt_replay_device *d = cmt_replay_device(rp, c->s->device);
        c->device_free_hint = c->have_capacity        ? c->capacity
                              : d && d->have_baseline ? d->baseline_free_bytes
                                                      : 0;
    }
    if (st->rec.type == CMT_REC_ALLOC_EVENT && on_event(c, &st->rec.u.alloc_event) != 0) {
        c->failed = 1;
        return 0;
    }
    return CMT_OBSERVE_RECORD;
}

static int name_sites(struct cmt_whatif_block_collector *c, const cmt_reader *r)
{
    struct cmt_whatif_stream *s = c->s;
    uint32_t n = (uint32_t)c->site_count + 1;
    s->sites = calloc(n, sizeof *s->sites);
    if (!s->sites)
        return -1;
    char text[512];
    for (uint32_t i = 0; i < n; i++) {
        text[0] = 0;
        uint32_t node = i ? cmt_alloc_site_node(r, c->site_stacks[i]) : 0;
        if (node)
            cmt_reader_format_frame(r, node, text, sizeof text);
        if (!(s->sites[i] = strdup(text)))
            return -1;
        s->site_count = i + 1;
    }
    return 0;
}

static int block_finish(struct cmt_observer *self, const cmt_replay *rp)
{
    struct cmt_whatif_block_collector *c = self->ctx;
    struct cmt_whatif_stream *s = c->s;
    if (!c->check->present)
        return 0;
    if (c->failed || emptied(c) || name_sites(c, cmt_replay_reader(rp)) ||
        (c->in_prelude && rebuild_before(c) != 0))
        return c->failed = 1, CMT_EMODEL_NOMEM;
    if (c->in_prelude)
        c->prelude_end = s->event_count;
    c->check->recorded_end_reserved = c->reserved;
    const struct cmt_replay_device *d = cmt_replay_device(rp, s->device);
    if (d && d->name)
        snprintf(s->device_name, sizeof s->device_name, "%s", d->name);
    if (c->have_capacity) {
        /* A PyTorch snapshot's oom entry has the device's free memory but not its total
         * (which PyTorch's message names as "total capacity"): then the driver's records of
         * the same trace say it (record --torch), the last sample first. */
        uint64_t total = c->total;
        if (!total && d)
            total = d->have_sample ? d->total_bytes
                                   : (d->have_baseline ? d->baseline_total_bytes : 0);
        s->device_free = c->capacity;
        s->device_total = total > c->capacity ? total : c->capacity;
    } else if (d && d->have_baseline) {
        s->device_total = d->baseline_total_bytes;
        s->device_free = d->baseline_free_bytes;
    }
    s->has_capacity = s->device_total > 0 && s->device_free > 0 &&
                      s->device_free <= s->device_total;
    if (!c->check->conf[0]) { /* no ALLOCATOR conf: the environment's, as the shim saw it */
        const cmt_reader *r = cmt_replay_reader(rp);
        for (size_t i = 0; i < cmt_reader_env_count(r); i++) {
            const struct cmt_env *e = cmt_reader_env(r, i);
            if (e->name && e->value && strcmp(e->name, "PYTORCH_CUDA_ALLOC_CONF") == 0)
                snprintf(c->check->conf, sizeof c->check->conf, "%s", e->value);
        }
    }
    if (strstr(c->check->conf, "expandable_segments:True"))
        c->check->expandable = true;
    return 0;
}

int cmt_whatif_block_collector_create(struct cmt_whatif_block_collector **out,
                                      struct cmt_whatif_stream *stream,
                                      struct cmt_whatif_selfcheck *check)
{
    *out = NULL;
    if (!stream || !check)
        return CMT_EINVALID;
    memset(stream, 0, sizeof *stream);
    memset(check, 0, sizeof *check);
    struct cmt_whatif_block_collector *c = calloc(1, sizeof *c);
    if (!c)
        return CMT_EMODEL_NOMEM;
    c->s = stream;
    c->check = check;
    c->in_prelude = true;
    *out = c;
    return 0;
}

struct cmt_observer cmt_whatif_block_observer(struct cmt_whatif_block_collector *c)
{
    return (struct cmt_observer){
        .wants = CMT_OBSERVE_RECORD, .step = block_step, .finish = block_finish, .ctx = c};
}

int cmt_whatif_block_collector_end(struct cmt_whatif_block_collector *c, int replay_rc,
                                   struct cmt_err *err)
{
    struct cmt_whatif_stream *s = c->s;
    int rc = 0;
    s->damage = replay_rc < 0 && replay_rc != CMT_ENOMEM ? replay_rc : 0;
    if (!c->check->present)
        rc = cmt_err_sys(err, CMT_ENOT_FOUND, 0);
    else if (c->failed || replay_rc == CMT_ENOMEM)
        rc = cmt_err_set(err, CMT_EMODEL_NOMEM, "out of host memory while reading the trace");
    else if (s->allocs == 0)
        rc = cmt_err_set(err, CMT_EWHATIF_EMPTY,
                         "the allocator-level records hold no block allocation");
    if (rc) {
        cmt_whatif_stream_free(s);
        return rc;
    }
    cmt_whatif_stream_finish(s); /* failed requests: ids after every tensor's */
    c->check->prelude_events = c->prelude_end;
    return 0;
}

void cmt_whatif_block_collector_destroy(struct cmt_whatif_block_collector *c)
{
    if (!c)
        return;
    CMT_FREE_ALL(c->live.slots, c->free_ids, c->sites, c->site_stacks, c->held_segments,
                 c->held_blocks, c);
}

/* The device of the trace's first allocator `oom`, kept instead of the first device seen: a
 * what-if is about the failure (a file with an OOM on cuda:1 replays cuda:1). */
static void prefer_failing_device(struct cmt_whatif_block_collector *c, cmt_reader *reader)
{
    struct cmt_record rec;
    cmt_reader_rewind(reader);
    while (cmt_reader_next(reader, &rec) == 1)
        if (rec.type == CMT_REC_ALLOC_EVENT && rec.u.alloc_event.action == CMT_AA_OOM) {
            c->have_device = true;
            c->s->device = rec.u.alloc_event.dev;
            c->check->present = true;
            break;
        }
    cmt_reader_rewind(reader);
}

int cmt_whatif_blocks_load(cmt_reader *reader, struct cmt_whatif_stream *stream,
                           struct cmt_whatif_selfcheck *check, struct cmt_err *err)
{
    if (!reader || !stream || !check)
        return cmt_err_sys(err, CMT_EINVALID, 0);
    struct cmt_whatif_block_collector *c;
    cmt_replay *rp = NULL;
    int rc = cmt_whatif_block_collector_create(&c, stream, check);
    if (rc)
        return cmt_err_sys(err, rc, 0);
    prefer_failing_device(c, reader);
    if (cmt_replay_create(&rp, reader) != 0) {
        cmt_whatif_block_collector_destroy(c);
        return cmt_err_set(err, CMT_EMODEL_NOMEM, "out of host memory while reading the trace");
    }
    struct cmt_observer obs = cmt_whatif_block_observer(c);
    rc = cmt_replay_run(rp, &obs, 1);
    rc = cmt_whatif_block_collector_end(c, rc == CMT_EMODEL_NOMEM ? CMT_ENOMEM : rc, err);
    cmt_replay_destroy(rp);
    cmt_whatif_block_collector_destroy(c);
    cmt_reader_rewind(reader);
    return rc;
}

int cmt_whatif_load_any(cmt_reader *reader, struct cmt_whatif_stream *stream,
                        struct cmt_whatif_selfcheck *check, struct cmt_err *err)
{
    return cmt_whatif_load_any_observed(reader, stream, check, NULL, 0, err);
}

int cmt_whatif_load_any_observed(cmt_reader *reader, struct cmt_whatif_stream *stream,
                                 struct cmt_whatif_selfcheck *check, struct cmt_observer *extra,
                                 size_t extra_count, struct cmt_err *err)
{
    if (!reader || !stream || !check || extra_count > 6 || (extra_count && !extra))
        return cmt_err_sys(err, CMT_EINVALID, 0);
    struct cmt_whatif_stream driver;
    struct cmt_whatif_collector *dc = NULL;
    struct cmt_whatif_block_collector *bc = NULL;
    cmt_replay *rp = NULL;
    int rc = cmt_whatif_collector_create(&dc, &driver);
    if (!rc)
        rc = cmt_whatif_block_collector_create(&bc, stream, check);
    if (!rc)
        prefer_failing_device(bc, reader);
    cmt_reader_rewind(reader);
    if (!rc && cmt_replay_create(&rp, reader) != 0)
        rc = CMT_EMODEL_NOMEM;
    if (rc) {
        cmt_whatif_collector_destroy(dc);
        cmt_whatif_block_collector_destroy(bc);
        return cmt_err_set(err, rc == CMT_EINVALID ? rc : CMT_EMODEL_NOMEM,
                           "out of host memory while reading the trace");
    }
    struct cmt_observer obs[8];
    for (size_t i = 0; i < extra_count; i++)
        obs[i] = extra[i];
    obs[extra_count] = cmt_whatif_observer(dc);
    obs[extra_count + 1] = cmt_whatif_block_observer(bc);
    int run = cmt_replay_run(rp, obs, extra_count + 2);
    run = run == CMT_EMODEL_NOMEM ? CMT_ENOMEM : run;
    rc = cmt_whatif_block_collector_end(bc, run, err);
    if (rc == CMT_ENOT_FOUND) { /* no allocator-level records: the driver's stream */
        rc = cmt_whatif_collector_end(dc, run, err);
        *stream = driver;
    } else {
        if (cmt_whatif_collector_end(dc, run, NULL) == 0)
            cmt_whatif_stream_free(&driver);
        /* The PyTorch version: the allocator's own, else the trace's. */
        if (!stream->torch_version[0]) {
            memcpy(stream->torch_version, driver.torch_version, sizeof stream->torch_version);
            memcpy(stream->torch_version_source, driver.torch_version_source,
                   sizeof stream->torch_version_source);
        }
    }
    cmt_replay_destroy(rp);
    cmt_whatif_collector_destroy(dc);
    cmt_whatif_block_collector_destroy(bc);
    cmt_reader_rewind(reader);
    return rc;
}

void cmt_whatif_selfcheck_free(struct cmt_whatif_selfcheck *check)
{
    if (!check)
        return;
    free(check->recorded);
    free(check->recorded_free);
    check->recorded = check->recorded_free = NULL;
    check->recorded_cap = check->recorded_free_cap = 0;
}
