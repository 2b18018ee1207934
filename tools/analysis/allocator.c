/* allocator.c — the allocator-level view from ALLOCATOR and ALLOC_EVENT records (allocator.h). */
#include "allocator.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_grow.h"
#include "cmt_search.h"
#include "frames.h"
#include "replay_map.h"

#define MAX_STATES 4096   /* (allocator, device) pairs a hostile trace may make us keep */
#define MAX_UNPLACED 4096 /* blocks awaiting their segment that are looked for when one comes */

struct cmt_alloc {
    struct cmt_alloc_device *devs;
    size_t dev_count, dev_cap;
    struct cmt_alloc_settings *settings;
    size_t settings_count, settings_cap;
    int present;
    size_t last; /* index of the last state used: events come in runs */
};

int cmt_alloc_create(cmt_alloc **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : CMT_ENOMEM;
}

void cmt_alloc_destroy(cmt_alloc *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->dev_count; i++) {
        free(a->devs[i].segments);
        free(a->devs[i].unplaced);
        if (a->devs[i].block_map)
            cmt__map_free(a->devs[i].block_map);
        free(a->devs[i].block_map);
    }
    free(a->devs);
    free(a->settings);
    free(a);
}

int cmt_alloc_present(const cmt_alloc *a)
{
    return a->present;
}

size_t cmt_alloc_device_count(const cmt_alloc *a)
{
    return a->dev_count;
}

const struct cmt_alloc_device *cmt_alloc_device_at(const cmt_alloc *a, size_t i)
{
    return i < a->dev_count ? &a->devs[i] : NULL;
}

const struct cmt_alloc_device *cmt_alloc_device(const cmt_alloc *a, uint32_t allocator, int32_t dev)
{
    for (size_t i = 0; i < a->dev_count; i++)
        if (a->devs[i].dev == dev && (!allocator || a->devs[i].allocator == allocator))
            return &a->devs[i];
    return NULL;
}

struct cmt_alloc_figures cmt_alloc_device_figures(const cmt_alloc *a, int32_t dev)
{
    struct cmt_alloc_figures f = {0};
    for (size_t i = 0; i < a->dev_count; i++) {
        const struct cmt_alloc_figures *n = &a->devs[i].now;
        if (a->devs[i].dev != dev)
            continue;
        f.allocated_bytes += n->allocated_bytes;
        f.active_bytes += n->active_bytes;
        f.requested_bytes += n->requested_bytes;
        f.reserved_bytes += n->reserved_bytes;
        f.inactive_split_bytes += n->inactive_split_bytes;
        f.segments += n->segments;
        f.blocks += n->blocks;
    }
    return f;
}

int cmt_alloc_summarize(const cmt_alloc *a, struct cmt_alloc_summary *h)
{
    memset(h, 0, sizeof *h);
    for (size_t i = 0; a && i < a->dev_count; i++) {
        const struct cmt_alloc_device *d = &a->devs[i];
        h->events += d->alloc_events + d->free_events + d->segment_allocs + d->segment_frees;
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++)
            seen = a->devs[k].dev == d->dev;
        if (seen)
            continue;
        uint64_t peak_allocated = 0, peak_reserved = 0, t = 0, t_reserved = 0;
        for (size_t k = i; k < a->dev_count; k++) /* every allocator on this device */
            if (a->devs[k].dev == d->dev) {
                peak_allocated += a->devs[k].peak.allocated_bytes;
                peak_reserved += a->devs[k].peak.reserved_bytes;
                if (a->devs[k].peak_allocated_t_ns > t)
                    t = a->devs[k].peak_allocated_t_ns;
                if (a->devs[k].peak_reserved_t_ns > t_reserved)
                    t_reserved = a->devs[k].peak_reserved_t_ns;
            }
        struct cmt_alloc_figures now = cmt_alloc_device_figures(a, d->dev);
        h->allocated_bytes_at_end += now.allocated_bytes;
        h->reserved_bytes_at_end += now.reserved_bytes;
        if (!h->devices++ || peak_allocated > h->peak_allocated_bytes) {
            h->dev = d->dev;
            h->peak_allocated_bytes = peak_allocated;
            h->peak_reserved_bytes = peak_reserved;
            h->peak_allocated_t_ns = t;
            h->peak_reserved_t_ns = t_reserved;
        }
    }
    return h->devices > 0;
}

size_t cmt_alloc_settings_count(const cmt_alloc *a)
{
    return a->settings_count;
}

const struct cmt_alloc_settings *cmt_alloc_settings_at(const cmt_alloc *a, size_t i)
{
    return i < a->settings_count ? &a->settings[i] : NULL;
}

const struct cmt_alloc_settings *cmt_alloc_settings(const cmt_alloc *a, uint32_t id)
{
    for (size_t i = 0; i < a->settings_count; i++)
        if (a->settings[i].id == id)
            return &a->settings[i];
    return NULL;
}

/* A "KEY:N" value of conf in MiB, as bytes. @return 0 when absent or beyond any device. */
static uint64_t conf_mb(const char *conf, const char *key)
{
    const char *p = conf ? strstr(conf, key) : NULL;
    if (!p)
        return 0;
    p += strlen(key);
    while (*p == ' ' || *p == ':')
        p++;
    uint64_t mb = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (mb > UINT64_MAX / 10 / 2)
            return 0; /* beyond any device: as unlimited */
        mb = mb * 10 + (uint64_t)(*p - '0');
    }
    return mb > (UINT64_MAX >> 21) ? 0 : mb << 20;
}

uint64_t cmt_alloc_conf_max_split(const char *conf)
{
    return conf_mb(conf, "max_split_size_mb");
}

uint64_t cmt_alloc_conf_non_split_rounding(const char *conf)
{
    uint64_t r = conf_mb(conf, "max_non_split_rounding_mb");
    return r ? r : UINT64_C(20) << 20;
}

/* ---- the state of one (allocator, device) ---- */

static struct cmt_alloc_device *state(cmt_alloc *a, uint32_t allocator, int32_t dev)
{
    if (a->last < a->dev_count && a->devs[a->last].allocator == allocator &&
        a->devs[a->last].dev == dev)
        return &a->devs[a->last];
    for (size_t i = 0; i < a->dev_count; i++)
        if (a->devs[i].allocator == allocator && a->devs[i].dev == dev) {
            a->last = i;
            return &a->devs[i];
        }
    if (a->dev_count >= MAX_STATES || CMT_GROW(a->devs, a->dev_cap, a->dev_count + 1, 4) != 0)
        return NULL;
    struct cmt_alloc_device *d = &a->devs[a->dev_count];
    memset(d, 0, sizeof *d);
    if (!(d->block_map = calloc(1, sizeof *d->block_map)))
        return NULL;
    d->allocator = allocator;
    d->dev = dev;
    a->last = a->dev_count++;
    return d;
}

/* @return the index of the first segment whose address is >= addr. */
static size_t segment_lower(const struct cmt_alloc_device *d, uint64_t addr)
{
    size_t at;
    CMT_LOWER_BOUND(at, d->segments, d->segment_count, .addr, addr);
    return at;
}

/* A live block is a map entry: key = address, size, aux = requested, seq = its segment's
 * address and object its id (0: none), site = stack, maps = state, refs = before. */
#define BLOCK_KIND 1

struct block_scan {
    const struct cmt__map *m;
    size_t i;
};

/* The next live block (the map's entries are dense). @return it, or NULL at the end. */
static struct cmt__entry *next_block(struct block_scan *s)
{
    return s->i < s->m->count ? &s->m->entries[s->i++] : NULL;
}

static int by_addr(const void *x, const void *y)
{
    const struct cmt_alloc_block *a = x, *b = y;
    return (a->addr > b->addr) - (a->addr < b->addr);
}

/* @return the segment holding addr (end: a range ending at addr also counts), or NULL. */
static struct cmt_alloc_segment *segment_at(const struct cmt_alloc_device *d, uint64_t addr,
                                            int end)
{
    size_t i = segment_lower(d, addr);
    if (i < d->segment_count && d->segments[i].addr == addr)
        return &d->segments[i];
    if (i == 0)
        return NULL;
    struct cmt_alloc_segment *s = &d->segments[i - 1];
    return addr - s->addr < s->size || (end && addr - s->addr == s->size) ? s : NULL;
}

/* A segment's inactive split bytes: as in c10, none in an expandable segment (its free pages
 * can be unmapped whatever it holds). */
static uint64_t split_part(const struct cmt_alloc_segment *s)
{
    return !s->expandable && s->live_count && s->size > s->live_bytes ? s->size - s->live_bytes : 0;
}

/* A segment first seen plain turns out expandable: it leaves `segments` and inactive split. */
static void become_expandable(struct cmt_alloc_device *d, struct cmt_alloc_segment *s)
{
    if (s->expandable)
        return;
    d->now.inactive_split_bytes -= split_part(s);
    s->expandable = 1;
    d->now.segments--;
}

/* Changes a segment's live blocks or size, keeping the device's inactive split bytes. */
static void segment_change(struct cmt_alloc_device *d, struct cmt_alloc_segment *s,
                           int64_t live_bytes, int64_t live_count, int64_t size)
{
    d->now.inactive_split_bytes -= split_part(s);
    s->live_bytes += (uint64_t)live_bytes;
    s->live_count += (uint64_t)live_count;
    s->size += (uint64_t)size;
    d->now.inactive_split_bytes += split_part(s);
}

static uint64_t field(const struct cmt_alloc_event *e, unsigned f)
{
    return e->fields & (UINT32_C(1) << f) ? e->v[f] : 0;
}

/* The segment a block was placed in, when it is still there. */
static struct cmt_alloc_segment *block_segment(const struct cmt_alloc_device *d,
                                               const struct cmt__entry *b)
{
    struct cmt_alloc_segment *s = b->object ? segment_at(d, b->seq, 0) : NULL;
    return s && s->id == b->object ? s : NULL;
}

size_t cmt_alloc_blocks(const struct cmt_alloc_device *d, struct cmt_alloc_block **out)
{
    *out = NULL;
    if (!d->block_count)
        return 0;
    struct cmt_alloc_block *v = malloc(d->block_count * sizeof *v);
    if (!v)
        return (size_t)-1;
    size_t n = 0;
    struct block_scan scan = {d->block_map, 0};
    for (struct cmt__entry *e; n < d->block_count && (e = next_block(&scan));)
        v[n++] = (struct cmt_alloc_block){
            e->key, e->size, e->aux, block_segment(d, e) ? e->seq : 0, e->maps, e->refs, e->site};
    qsort(v, n, sizeof *v, by_addr);
    *out = v;
    return n;
}

/* A segment goes away under live blocks (a damaged trace): they lie in no segment now. */
static void unplace(struct cmt_alloc_device *d, const struct cmt_alloc_segment *s)
{
    d->outside_blocks += s->live_count;
}

/* Blocks recorded before a segment held them (a snapshot may list them first) that the new
 * segment s holds. */
static void place_waiting(struct cmt_alloc_device *d, struct cmt_alloc_segment *s)
{
    size_t kept = 0;
    for (size_t i = 0; i < d->unplaced_count; i++) {
        struct cmt__entry *b = cmt__map_find(d->block_map, d->unplaced[i]);
        if (!b || block_segment(d, b))
            continue; /* freed since, or placed */
        if (b->key - s->addr >= s->size) {
            d->unplaced[kept++] = d->unplaced[i];
            continue;
        }
        s->live_bytes += b->size;
        s->live_count++;
        b->seq = s->addr;
        b->object = s->id;
        if (d->outside_blocks)
            d->outside_blocks--;
    }
    d->unplaced_count = kept;
}

/* Whether a segment counts in `segments`: as in PyTorch's memory_stats() "segment", an
 * expandable segment does not (its mapped pages count in reserved bytes only). */
static int counted(const struct cmt_alloc_segment *s)
{
    return !s->expandable;
}

static int segment_alloc(struct cmt_alloc_device *d, const struct cmt_alloc_event *e,
                         int expandable)
{
    uint64_t addr = field(e, CMT_AFIELD_ADDR), size = field(e, CMT_AFIELD_SIZE);
    uint64_t flags = field(e, CMT_AFIELD_FLAGS);
    size_t i = segment_lower(d, addr);
    if (i < d->segment_count && d->segments[i].addr == addr) { /* its free was not recorded */
        struct cmt_alloc_segment *old = &d->segments[i];
        unplace(d, old);
        d->now.inactive_split_bytes -= split_part(old);
        d->now.reserved_bytes -= old->size;
        d->now.segments -= counted(old);
        memmove(old, old + 1, (d->segment_count - i - 1) * sizeof *old);
        d->segment_count--;
    }
    if (CMT_GROW(d->segments, d->segment_cap, d->segment_count + 1, 16) != 0)
        return CMT_ENOMEM;
    struct cmt_alloc_segment *s = &d->segments[i];
    memmove(s + 1, s, (d->segment_count - i) * sizeof *s);
    d->segment_count++;
    if (++d->next_segment_id == 0) /* ids are never 0 (0: no segment) */
        d->next_segment_id = 1;
    *s = (struct cmt_alloc_segment){.addr = addr,
                                    .size = size,
                                    .stream = field(e, CMT_AFIELD_STREAM),
                                    .pool = field(e, CMT_AFIELD_POOL),
                                    .mapped_bytes = expandable ? size : 0,
                                    .expandable = expandable || (flags & CMT_AFLAG_EXPANDABLE),
                                    .before = !!(flags & CMT_AFLAG_BEFORE),
                                    .small = !!(flags & CMT_AFLAG_SMALL),
                                    .stack = e->stack,
                                    .id = d->next_segment_id};
    place_waiting(d, s);
    d->now.inactive_split_bytes += split_part(s);
    d->now.reserved_bytes += size;
    d->now.segments += counted(s);
    d->segment_allocs++;
    return 0;
}

static void segment_free(struct cmt_alloc_device *d, const struct cmt_alloc_event *e)
{
    struct cmt_alloc_segment *s = segment_at(d, field(e, CMT_AFIELD_ADDR), 0);
    if (!s)
        return;
    unplace(d, s);
    d->now.inactive_split_bytes -= split_part(s);
    d->now.reserved_bytes -= s->size;
    d->now.segments -= counted(s);
    d->segment_frees++;
    size_t i = (size_t)(s - d->segments);
    memmove(s, s + 1, (d->segment_count - i - 1) * sizeof *s);
    d->segment_count--;
}

/* Moves the live blocks of segment `from` that lie in [lo, hi) to segment `to` (which may be
 * `from` at a new address): the pieces of an expandable segment as maps join and unmaps split
 * its mapped range. */
static void refile(struct cmt_alloc_device *d, struct cmt_alloc_segment *from, uint64_t from_addr,
                   struct cmt_alloc_segment *to, uint64_t lo, uint64_t hi)
{
    struct block_scan scan = {d->block_map, 0};
    for (struct cmt__entry *b; (b = next_block(&scan));) {
        if (b->object != from->id || b->seq != from_addr || b->key < lo || b->key >= hi)
            continue;
        if (to != from) {
            segment_change(d, from, -(int64_t)b->size, -1, 0);
            segment_change(d, to, (int64_t)b->size, 1, 0);
        }
        b->seq = to->addr;
        b->object = to->id;
    }
}

static void segment_remove(struct cmt_alloc_device *d, struct cmt_alloc_segment *s)
{
    size_t i = (size_t)(s - d->segments);
    memmove(s, s + 1, (d->segment_count - i - 1) * sizeof *s);
    d->segment_count--;
}

/* Pages mapped into an expandable segment: they join the mapped range that ends where they
 * start and the one that starts where they end (c10 reports one segment per contiguous mapped
 * range, and a block may span what two maps made). */
static int segment_map(struct cmt_alloc_device *d, const struct cmt_alloc_event *e)
{
    uint64_t addr = field(e, CMT_AFIELD_ADDR), size = field(e, CMT_AFIELD_SIZE);
    struct cmt_alloc_segment *s = segment_at(d, addr, 1);
    size_t i = segment_lower(d, addr + size);
    struct cmt_alloc_segment *next = i < d->segment_count && d->segments[i].addr == addr + size &&
                                             d->segments[i].expandable && addr + size > addr
                                         ? &d->segments[i]
                                         : NULL;
    if (!s && next) { /* it grows downwards: the same segment at a lower address */
        uint64_t old = next->addr;
        segment_change(d, next, 0, 0, (int64_t)size);
        next->addr = addr;
        next->mapped_bytes += size;
        refile(d, next, old, next, old, UINT64_MAX);
        d->now.reserved_bytes += size;
        return 0;
    }
    if (!s)
        return segment_alloc(d, e, 1);
    segment_change(d, s, 0, 0, (int64_t)size);
    s->mapped_bytes += size;
    become_expandable(d, s); /* a segment first seen plain may turn out expandable */
    d->now.reserved_bytes += size;
    if (next && next != s && s->addr + s->size == next->addr) { /* it closes a hole */
        segment_change(d, s, 0, 0, (int64_t)next->size);
        s->mapped_bytes += next->mapped_bytes;
        refile(d, next, next->addr, s, 0, UINT64_MAX); /* next holds nothing after */
        segment_remove(d, next);
    }
    return 0;
}

/* Pages unmapped from an expandable segment: it shrinks at either end, or splits in two. */
static int segment_unmap(struct cmt_alloc_device *d, const struct cmt_alloc_event *e)
{
    uint64_t addr = field(e, CMT_AFIELD_ADDR), size = field(e, CMT_AFIELD_SIZE);
    struct cmt_alloc_segment *s = segment_at(d, addr, 0);
    if (!s)
        return 0;
    uint64_t end = s->addr + s->size, stop = size > end - addr ? end : addr + size;
    size = stop - addr;
    d->now.reserved_bytes -= size;
    become_expandable(d, s);
    if (addr == s->addr && stop == end) { /* all of it */
        unplace(d, s);
        d->now.inactive_split_bytes -= split_part(s);
        segment_remove(d, s);
        return 0;
    }
    if (addr == s->addr) { /* its start: the rest begins at stop */
        uint64_t old = s->addr;
        segment_change(d, s, 0, 0, -(int64_t)size);
        s->addr = stop;
        s->mapped_bytes = s->size;
        refile(d, s, old, s, stop, UINT64_MAX);
        return 0;
    }
    size_t i = (size_t)(s - d->segments);
    segment_change(d, s, 0, 0, -(int64_t)(end - addr));
    s->mapped_bytes = s->size;
    if (stop == end) /* its end */
        return 0;
    if (CMT_GROW(d->segments, d->segment_cap, d->segment_count + 1, 16) != 0)
        return CMT_ENOMEM;
    s = &d->segments[i];
    memmove(s + 2, s + 1, (d->segment_count - i - 1) * sizeof *s);
    d->segment_count++;
    if (++d->next_segment_id == 0)
        d->next_segment_id = 1;
    struct cmt_alloc_segment *upper = s + 1;
    *upper = *s;
    upper->addr = stop;
    upper->size = upper->mapped_bytes = end - stop;
    upper->live_bytes = upper->live_count = 0;
    upper->id = d->next_segment_id;
    refile(d, s, s->addr, upper, stop, UINT64_MAX);
    return 0;
}

static void block_gone(struct cmt_alloc_device *d, struct cmt__entry *b)
{
    struct cmt_alloc_segment *s = block_segment(d, b);
    if (s)
        segment_change(d, s, -(int64_t)b->size, -1, 0);
    else if (d->outside_blocks)
        d->outside_blocks--;
    if (b->maps == CMT_BLOCK_ACTIVE)
        d->now.allocated_bytes -= b->size;
    d->now.requested_bytes -= b->aux; /* as active bytes: when the free completes */
    d->now.active_bytes -= b->size;
    d->now.blocks--;
    cmt__map_remove(d->block_map, b);
    d->block_count--;
}

static int block_alloc(struct cmt_alloc_device *d, const struct cmt_alloc_event *e)
{
    uint64_t addr = field(e, CMT_AFIELD_ADDR), size = field(e, CMT_AFIELD_SIZE);
    uint64_t requested = e->fields & CMT_AF(REQUESTED) ? e->v[CMT_AFIELD_REQUESTED] : size;
    if (!(e->fields & CMT_AF(SIZE)))
        size = requested;
    struct cmt__entry *old = cmt__map_find(d->block_map, addr);
    if (old) /* its free was not recorded */
        block_gone(d, old);
    struct cmt__entry *b = cmt__map_insert(d->block_map, addr);
    if (!b)
        return CMT_ENOMEM;
    d->block_count++;
    struct cmt_alloc_segment *s = segment_at(d, addr, 0);
    *b = (struct cmt__entry){.key = addr,
                             .size = size,
                             .aux = requested,
                             .seq = s ? s->addr : 0,
                             .object = s ? s->id : 0,
                             .site = e->stack,
                             .refs = !!(field(e, CMT_AFIELD_FLAGS) & CMT_AFLAG_BEFORE),
                             .kind = BLOCK_KIND,
                             .maps = CMT_BLOCK_ACTIVE};
    if (s)
        segment_change(d, s, (int64_t)size, 1, 0);
    else {
        d->outside_blocks++;
        if (d->unplaced_count < MAX_UNPLACED &&
            CMT_GROW(d->unplaced, d->unplaced_cap, d->unplaced_count + 1, 64) == 0)
            d->unplaced[d->unplaced_count++] = addr;
    }
    d->now.allocated_bytes += size;
    d->now.active_bytes += size;
    d->now.requested_bytes += requested;
    d->now.blocks++;
    d->alloc_events++;
    return 0;
}

static void block_free(struct cmt_alloc_device *d, const struct cmt_alloc_event *e, int completed)
{
    struct cmt__entry *b = cmt__map_find(d->block_map, field(e, CMT_AFIELD_ADDR));
    if (!b) {
        if (!completed) /* a completed free after its request was seen is no surprise */
            d->unknown_frees++;
        return;
    }
    if (completed) {
        block_gone(d, b);
        return;
    }
    if (b->maps == CMT_BLOCK_ACTIVE) {
        b->maps = CMT_BLOCK_PENDING_FREE;
        d->now.allocated_bytes -= b->size;
        d->free_events++;
    }
}

static void peaks(struct cmt_alloc_device *d, uint64_t t_ns)
{
    struct cmt_alloc_figures *n = &d->now, *p = &d->peak;
    if (n->allocated_bytes > p->allocated_bytes) {
        p->allocated_bytes = n->allocated_bytes;
        d->peak_allocated_t_ns = t_ns;
    }
    if (n->reserved_bytes > p->reserved_bytes) {
        p->reserved_bytes = n->reserved_bytes;
        d->peak_reserved_t_ns = t_ns;
    }
#define CMT__PEAK(f) p->f = n->f > p->f ? n->f : p->f
    CMT__PEAK(active_bytes);
    CMT__PEAK(requested_bytes);
    CMT__PEAK(inactive_split_bytes);
    CMT__PEAK(segments);
    CMT__PEAK(blocks);
#undef CMT__PEAK
}

static int settings(cmt_alloc *a, const struct cmt_alloc_info *info)
{
    struct cmt_alloc_settings *s = NULL;
    for (size_t i = 0; i < a->settings_count && !s; i++)
        if (a->settings[i].id == info->id)
            s = &a->settings[i];
    if (!s) {
        if (a->settings_count >= MAX_STATES ||
            CMT_GROW(a->settings, a->settings_cap, a->settings_count + 1, 4) != 0)
            return CMT_ENOMEM;
        s = &a->settings[a->settings_count++];
        memset(s, 0, sizeof *s);
        s->id = info->id;
    }
    s->dev = info->dev;
    s->name = info->name;
    s->version = info->version;
    s->conf = info->conf;
    s->changes++;
    return 0;
}

int cmt_alloc_observe(cmt_alloc *a, const struct cmt_replay_step *st)
{
    if (st->rec.type == CMT_REC_ALLOCATOR) {
        a->present = 1;
        return settings(a, &st->rec.u.alloc_info);
    }
    if (st->rec.type != CMT_REC_ALLOC_EVENT)
        return 0;
    a->present = 1;
    const struct cmt_alloc_event *e = &st->rec.u.alloc_event;
    if (e->dev < -1 || e->dev >= CMT_MAX_DEVICES)
        return 0; /* no such device: the replay bounds ordinals the same way */
    struct cmt_alloc_device *d = state(a, e->allocator, e->dev);
    if (!d)
        return CMT_ENOMEM;
    int rc = 0, before = !!(field(e, CMT_AFIELD_FLAGS) & CMT_AFLAG_BEFORE);
    if (before && e->action == CMT_AA_ALLOC) {
        d->before_peak = d->peak;
        d->before_peak_t_ns[0] = d->peak_allocated_t_ns;
        d->before_peak_t_ns[1] = d->peak_reserved_t_ns;
        d->before_addr = field(e, CMT_AFIELD_ADDR);
    } else if (before && e->action == CMT_AA_FREE_REQUESTED && d->before_addr &&
               d->before_addr == field(e, CMT_AFIELD_ADDR)) {
        d->peak = d->before_peak;
        d->peak_allocated_t_ns = d->before_peak_t_ns[0];
        d->peak_reserved_t_ns = d->before_peak_t_ns[1];
    }
    if (!before || e->action != CMT_AA_ALLOC)
        d->before_addr = 0;
    switch (e->action) {
    case CMT_AA_ALLOC: rc = block_alloc(d, e); break;
    case CMT_AA_FREE_REQUESTED: block_free(d, e, 0); break;
    case CMT_AA_FREE_COMPLETED: block_free(d, e, 1); break;
    case CMT_AA_SEGMENT_ALLOC: rc = segment_alloc(d, e, 0); break;
    case CMT_AA_SEGMENT_FREE: segment_free(d, e); break;
    case CMT_AA_SEGMENT_MAP: rc = segment_map(d, e); break;
    case CMT_AA_SEGMENT_UNMAP: rc = segment_unmap(d, e); break;
    case CMT_AA_OOM: d->ooms++; break;
    default: break; /* snapshot, and actions of a newer writer */
    }
    d->last_t_ns = e->t_ns;
    peaks(d, e->t_ns);
    if (before) /* the state before the window, rebuilt one block at a time: only its end counts */
        d->peak.inactive_split_bytes = d->now.inactive_split_bytes;
    return rc;
}

static unsigned alloc_step(struct cmt_observer *self, const cmt_replay *rp,
                           const struct cmt_replay_step *st)
{
    (void)rp;
    cmt_alloc_observe(self->ctx, st); /* out of memory: the view misses one event */
    return CMT_OBSERVE_RECORD;
}

struct cmt_observer cmt_alloc_observer(cmt_alloc *a)
{
    return (struct cmt_observer){.wants = CMT_OBSERVE_RECORD, .step = alloc_step, .ctx = a};
}
