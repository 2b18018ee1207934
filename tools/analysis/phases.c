/* phases.c — ranges and the memory of each phase (phases.h). */
#include "phases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_grow.h"

/* key → (phase, bytes), open addressing with linear probing; key 0 is stored as 1 + key. */
struct slot {
    uint64_t key; /* 0: empty */
    uint64_t bytes;
    uint32_t phase;
};
struct map {
    struct slot *slots;
    size_t cap, count; /* cap: a power of two */
};

static size_t hash64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k;
}

static struct slot *map_find(const struct map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    key++;
    for (size_t i = hash64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].key == key)
            return &m->slots[i];
        if (!m->slots[i].key)
            return NULL;
    }
}

static int map_put(struct map *m, uint64_t key, uint32_t phase, uint64_t bytes)
{
    if ((m->count + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        struct slot *s = calloc(cap, sizeof *s), *old = m->slots;
        if (!s)
            return CMT_ENOMEM;
        for (size_t i = 0; i < m->cap; i++)
            if (old[i].key) {
                size_t j = hash64(old[i].key) & (cap - 1);
                while (s[j].key)
                    j = (j + 1) & (cap - 1);
                s[j] = old[i];
            }
        free(old);
        m->slots = s;
        m->cap = cap;
    }
    struct slot *at = map_find(m, key);
    if (!at) {
        size_t i = hash64(key + 1) & (m->cap - 1);
        while (m->slots[i].key)
            i = (i + 1) & (m->cap - 1);
        at = &m->slots[i];
        at->key = key + 1;
        m->count++;
    }
    at->phase = phase;
    at->bytes = bytes;
    return 0;
}

/* Removes the slot (backward shift, so that probes stay unbroken). */
static void map_erase(struct map *m, struct slot *at)
{
    size_t i = (size_t)(at - m->slots), mask = m->cap - 1;
    m->slots[i].key = 0;
    m->count--;
    for (size_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
        size_t home = hash64(m->slots[j].key) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) { /* its home is at or before the hole */
            m->slots[i] = m->slots[j];
            m->slots[j].key = 0;
            i = j;
        }
    }
}

struct thread_stack {
    uint32_t tid;
    uint32_t top; /* range index + 1 of its innermost open push range, 0 none */
    uint32_t depth;
};

struct state {
    struct map driver, blocks, starts; /* objects by key; open start ranges by id */
    struct thread_stack *threads;
    size_t thread_count, thread_cap;
    uint32_t last_tid;     /* the thread of the latest driver call (for thread 0: unknown) */
    uint32_t *open_starts; /* range indexes, in opening order */
    size_t open_start_count, open_start_cap;
    uint32_t *names; /* phase index + 1 by name hash (open addressing), cap a power of two */
    size_t name_cap;
    char **domains; /* by domain id (NULL: not named) */
    size_t domain_cap;
    size_t phase_cap, range_cap, oom_cap;
    uint64_t block_live;
    int started; /* a RANGE was seen: events count from there on */
    int failed;
};

static size_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return hash64(h);
}

static int add_phase(struct cmt_phases *ph, struct state *s, const char *name)
{
    if (CMT_GROW(ph->phases, s->phase_cap, ph->phase_count + 1, 16))
        return CMT_ENOMEM;
    char *copy = strdup(name);
    if (!copy)
        return CMT_ENOMEM;
    memset(&ph->phases[ph->phase_count], 0, sizeof ph->phases[0]);
    ph->phases[ph->phase_count].name = copy;
    ph->phase_count++;
    return 0;
}

/* @return the index of phase `name` (created when new), 0 when memory ran out. */
static uint32_t intern(struct cmt_phases *ph, struct state *s, const char *name)
{
    if ((ph->phase_count + 1) * 2 > s->name_cap) {
        size_t cap = s->name_cap ? s->name_cap * 2 : 256;
        uint32_t *t = calloc(cap, sizeof *t);
        if (!t)
            return 0;
        for (size_t i = 1; i < ph->phase_count; i++) {
            size_t j = hash_str(ph->phases[i].name) & (cap - 1);
            while (t[j])
                j = (j + 1) & (cap - 1);
            t[j] = (uint32_t)i + 1;
        }
        free(s->names);
        s->names = t;
        s->name_cap = cap;
    }
    size_t j = hash_str(name) & (s->name_cap - 1);
    for (; s->names[j]; j = (j + 1) & (s->name_cap - 1))
        if (!strcmp(ph->phases[s->names[j] - 1].name, name))
            return s->names[j] - 1;
    if (add_phase(ph, s, name))
        return 0;
    s->names[j] = (uint32_t)ph->phase_count;
    return (uint32_t)ph->phase_count - 1;
}

static struct thread_stack *thread_of(struct state *s, uint32_t tid, int create)
{
    for (size_t i = 0; i < s->thread_count; i++)
        if (s->threads[i].tid == tid)
            return &s->threads[i];
    if (!create || CMT_GROW(s->threads, s->thread_cap, s->thread_count + 1, 16))
        return NULL;
    s->threads[s->thread_count] = (struct thread_stack){.tid = tid};
    return &s->threads[s->thread_count++];
}

uint32_t cmt_phases_current(const struct cmt_phases *ph, uint32_t tid)
{
    const struct state *s = ph->internal;
    if (!s)
        return 0;
    if (tid == 0) { /* unknown (a snapshot's entry): the latest driver call's thread, and the
                     * later opened of its innermost push range and the latest start range */
        const struct thread_stack *t = thread_of((struct state *)s, s->last_tid, 0);
        uint32_t push = t ? t->top : 0;
        uint32_t start = s->open_start_count ? s->open_starts[s->open_start_count - 1] + 1 : 0;
        uint32_t r = push > start ? push : start;
        return r ? ph->ranges[r - 1].phase : 0;
    }
    for (size_t i = 0; i < s->thread_count; i++)
        if (s->threads[i].tid == tid && s->threads[i].top)
            return ph->ranges[s->threads[i].top - 1].phase;
    if (s->open_start_count)
        return ph->ranges[s->open_starts[s->open_start_count - 1]].phase;
    return 0;
}

/* The open ranges an allocation on tid lies in, outermost first, into path. */
static void path_of(const struct cmt_phases *ph, uint32_t tid, char *path, size_t size)
{
    const struct state *s = ph->internal;
    uint32_t chain[64];
    size_t n = 0;
    const struct thread_stack *t = NULL;
    if (tid == 0)
        tid = s->last_tid; /* unknown: the latest driver call's (cmt_phases_current) */
    for (size_t i = 0; i < s->thread_count; i++)
        if (s->threads[i].tid == tid)
            t = &s->threads[i];
    for (uint32_t r = t ? t->top : 0; r && n < 63; r = ph->ranges[r - 1].parent)
        chain[n++] = r - 1;
    if (s->open_start_count) /* the process-wide range it lies in, outermost */
        chain[n++] = s->open_starts[s->open_start_count - 1];
    size_t at = 0;
    path[0] = 0;
    while (n-- > 0 && at < size) {
        int w = snprintf(path + at, size - at, "%s%s", at ? " > " : "",
                         ph->phases[ph->ranges[chain[n]].phase].name);
        at += w > 0 ? (size_t)w : 0;
    }
}

/* The phase name of a message in a domain. */
static uint32_t phase_of(struct cmt_phases *ph, struct state *s, const struct cmt_range *g)
{
    char name[320];
    const char *message = g->message && g->message[0] ? g->message : "(unnamed)";
    if (g->domain && g->domain < s->domain_cap && s->domains[g->domain])
        snprintf(name, sizeof name, "%s:%s", s->domains[g->domain], message);
    else if (g->domain)
        snprintf(name, sizeof name, "domain %u:%s", g->domain, message);
    else
        snprintf(name, sizeof name, "%s", message);
    return intern(ph, s, name);
}

static int name_domain(struct state *s, const struct cmt_range *g)
{
    if (g->domain == 0 || g->domain > (1u << 20))
        return 0;
    size_t old = s->domain_cap;
    if (CMT_GROW(s->domains, s->domain_cap, (size_t)g->domain + 1, 16))
        return CMT_ENOMEM;
    memset(s->domains + old, 0, (s->domain_cap - old) * sizeof *s->domains);
    free(s->domains[g->domain]);
    s->domains[g->domain] = strdup(g->message ? g->message : "");
    return s->domains[g->domain] ? 0 : CMT_ENOMEM;
}

static void raise_peak(struct cmt_phase *p, uint64_t driver_live, uint64_t block_live)
{
    if (driver_live > p->driver.peak_bytes)
        p->driver.peak_bytes = driver_live;
    if (block_live > p->blocks.peak_bytes)
        p->blocks.peak_bytes = block_live;
}

/* Every open range's phase sees the live bytes now. */
static void raise_open_peaks(struct cmt_phases *ph, const cmt_replay *rp)
{
    struct state *s = ph->internal;
    uint64_t live = cmt_replay_totals(rp)->live_bytes;
    for (size_t i = 0; i < s->thread_count; i++)
        for (uint32_t r = s->threads[i].top; r; r = ph->ranges[r - 1].parent)
            raise_peak(&ph->phases[ph->ranges[r - 1].phase], live, s->block_live);
    for (size_t i = 0; i < s->open_start_count; i++)
        raise_peak(&ph->phases[ph->ranges[s->open_starts[i]].phase], live, s->block_live);
}

/* Opens a range instance (push, start or mark). @return its index + 1, 0 when not kept. */
static uint32_t open_range(struct cmt_phases *ph, struct state *s, const struct cmt_range *g,
                           const cmt_replay *rp)
{
    uint32_t phase = phase_of(ph, s, g);
    if (!phase)
        return 0;
    if (g->action == CMT_RA_MARK)
        ph->phases[phase].marks++;
    else
        ph->phases[phase].instances++;
    if (ph->range_count >= CMT_PHASES_MAX_RANGES ||
        CMT_GROW(ph->ranges, s->range_cap, ph->range_count + 1, 256)) {
        ph->ranges_dropped++;
        return 0;
    }
    struct cmt_phase_range *r = &ph->ranges[ph->range_count++];
    *r = (struct cmt_phase_range){.phase = phase,
                                  .action = g->action,
                                  .tid = g->tid,
                                  .domain = g->domain,
                                  .category = g->category,
                                  .start_ns = g->t_ns,
                                  .end_ns = g->t_ns,
                                  .open = g->action != CMT_RA_MARK};
    raise_peak(&ph->phases[phase], cmt_replay_totals(rp)->live_bytes, s->block_live);
    return (uint32_t)ph->range_count;
}

static void close_range(struct cmt_phases *ph, uint32_t index, uint64_t t_ns)
{
    struct cmt_phase_range *r = &ph->ranges[index];
    r->open = 0;
    r->end_ns = t_ns;
    ph->phases[r->phase].total_ns += t_ns - r->start_ns;
}

static int on_push(struct cmt_phases *ph, struct state *s, const struct cmt_range *g,
                   const cmt_replay *rp)
{
    struct thread_stack *t = thread_of(s, g->tid, 1);
    if (!t)
        return CMT_ENOMEM;
    uint32_t r = open_range(ph, s, g, rp);
    t->depth++;
    if (r) {
        ph->ranges[r - 1].parent = t->top;
        ph->ranges[r - 1].depth = t->depth - 1;
        t->top = r;
    }
    return 0;
}

/* Closes the thread's innermost open push range of the domain. */
static void on_pop(struct cmt_phases *ph, struct state *s, const struct cmt_range *g)
{
    struct thread_stack *t = thread_of(s, g->tid, 0);
    uint32_t *link = t ? &t->top : NULL;
    while (link && *link && ph->ranges[*link - 1].domain != g->domain)
        link = &ph->ranges[*link - 1].parent;
    if (!link || !*link) {
        ph->unmatched++;
        return;
    }
    uint32_t r = *link;
    *link = ph->ranges[r - 1].parent; /* spliced out: the others stay open */
    t->depth--;
    close_range(ph, r - 1, g->t_ns);
}

static int on_start(struct cmt_phases *ph, struct state *s, const struct cmt_range *g,
                    const cmt_replay *rp)
{
    uint32_t r = open_range(ph, s, g, rp);
    if (!r)
        return 0;
    if (CMT_GROW(s->open_starts, s->open_start_cap, s->open_start_count + 1, 16))
        return CMT_ENOMEM;
    s->open_starts[s->open_start_count++] = r - 1;
    return map_put(&s->starts, g->id, r - 1, 0);
}

static void on_end(struct cmt_phases *ph, struct state *s, const struct cmt_range *g)
{
    struct slot *at = map_find(&s->starts, g->id);
    if (!at) {
        ph->unmatched++;
        return;
    }
    uint32_t r = at->phase;
    map_erase(&s->starts, at);
    for (size_t i = 0; i < s->open_start_count; i++)
        if (s->open_starts[i] == r) {
            memmove(s->open_starts + i, s->open_starts + i + 1,
                    (s->open_start_count - i - 1) * sizeof *s->open_starts);
            s->open_start_count--;
            break;
        }
    close_range(ph, r, g->t_ns);
}

static int on_range(struct cmt_phases *ph, const cmt_replay *rp, const struct cmt_range *g)
{
    struct state *s = ph->internal;
    if (g->t_ns > ph->end_ns)
        ph->end_ns = g->t_ns;
    switch (g->action) {
    case CMT_RA_PUSH: return on_push(ph, s, g, rp);
    case CMT_RA_POP: on_pop(ph, s, g); return 0;
    case CMT_RA_START: return on_start(ph, s, g, rp);
    case CMT_RA_END: on_end(ph, s, g); return 0;
    case CMT_RA_MARK:
        ph->marks++;
        open_range(ph, s, g, rp);
        return 0;
    case CMT_RA_DOMAIN: return name_domain(s, g);
    default: return 0; /* categories, and a newer writer's actions */
    }
}

static int on_oom(struct cmt_phases *ph, struct state *s, uint64_t t_ns, uint32_t tid,
                  uint64_t request, int allocator)
{
    if (CMT_GROW(ph->ooms, s->oom_cap, ph->oom_count + 1, 4))
        return CMT_ENOMEM;
    struct cmt_phase_oom *o = &ph->ooms[ph->oom_count++];
    *o = (struct cmt_phase_oom){.t_ns = t_ns,
                                .request = request,
                                .tid = tid,
                                .allocator = allocator,
                                .phase = cmt_phases_current(ph, tid)};
    path_of(ph, tid, o->path, sizeof o->path);
    return 0;
}

/* An allocation of `bytes` at key in the phase of tid, or its release. */
static int on_alloc(struct cmt_phases *ph, struct map *m, int blocks, uint32_t tid, uint64_t key,
                    uint64_t bytes)
{
    uint32_t phase = cmt_phases_current(ph, tid);
    struct cmt_phase_stats *st = blocks ? &ph->phases[phase].blocks : &ph->phases[phase].driver;
    st->alloc_count++;
    st->alloc_bytes += bytes;
    st->live_count++;
    st->live_bytes += bytes;
    struct slot *old = map_find(m, key);
    if (old) { /* replaced without a recorded free: it is no longer live */
        struct cmt_phase_stats *o = blocks ? &ph->phases[old->phase].blocks
                                           : &ph->phases[old->phase].driver;
        o->live_count--;
        o->live_bytes -= old->bytes;
    }
    return map_put(m, key, phase, bytes);
}

static void on_release(struct cmt_phases *ph, struct map *m, int blocks, uint64_t key)
{
    struct slot *at = map_find(m, key);
    if (!at)
        return;
    struct cmt_phase_stats *st = blocks ? &ph->phases[at->phase].blocks
                                        : &ph->phases[at->phase].driver;
    st->free_count++;
    st->freed_bytes += at->bytes;
    st->live_count--;
    st->live_bytes -= at->bytes;
    map_erase(m, at);
}

static int on_block(struct cmt_phases *ph, const cmt_replay *rp, const struct cmt_alloc_event *a)
{
    struct state *s = ph->internal;
    uint64_t addr = a->v[CMT_AFIELD_ADDR], size = a->v[CMT_AFIELD_SIZE];
    if (a->t_ns > ph->end_ns)
        ph->end_ns = a->t_ns;
    switch (a->action) {
    case CMT_AA_ALLOC: {
        ph->have_blocks = 1;
        struct slot *old = map_find(&s->blocks, addr);
        s->block_live += size - (old ? old->bytes : 0);
        int rc = on_alloc(ph, &s->blocks, 1, a->tid, addr, size);
        raise_open_peaks(ph, rp);
        raise_peak(&ph->phases[cmt_phases_current(ph, a->tid)], 0, s->block_live); /* none too */
        return rc;
    }
    case CMT_AA_FREE_REQUESTED: {
        struct slot *at = map_find(&s->blocks, addr);
        s->block_live -= at ? at->bytes : 0;
        on_release(ph, &s->blocks, 1, addr);
        return 0;
    }
    case CMT_AA_OOM:
        ph->phases[cmt_phases_current(ph, a->tid)].blocks.failures++;
        return on_oom(ph, s, a->t_ns, a->tid, size, 1);
    default: return 0;
    }
}

static int on_event(struct cmt_phases *ph, const cmt_replay *rp, const struct cmt_replay_step *st)
{
    struct state *s = ph->internal;
    const struct cmt_event *e = &st->rec.u.event;
    if (e->t_ns > ph->end_ns)
        ph->end_ns = e->t_ns;
    s->last_tid = e->tid;
    if (st->is_alloc && st->failed) {
        ph->phases[cmt_phases_current(ph, e->tid)].driver.failures++;
        return st->oom ? on_oom(ph, s, e->t_ns, e->tid, st->request, 0) : 0;
    }
    if (st->kind < 0 || !CMT_KIND_IS_DEVICE_MEMORY(st->kind))
        return 0;
    uint64_t key = st->key * 64 + (uint64_t)st->kind;
    if (st->is_alloc) {
        int rc = on_alloc(ph, &s->driver, 0, e->tid, key, st->bytes);
        raise_open_peaks(ph, rp);
        raise_peak(&ph->phases[cmt_phases_current(ph, e->tid)], cmt_replay_totals(rp)->live_bytes,
                   0); /* no phase too */
        return rc;
    }
    on_release(ph, &s->driver, 0, key);
    return 0;
}

static unsigned step(struct cmt_observer *self, const cmt_replay *rp,
                     const struct cmt_replay_step *st)
{
    struct cmt_phases *ph = self->ctx;
    struct state *s = ph->internal;
    if (s->failed)
        return 0;
    if (!s->started) { /* a trace without ranges costs a test per record, nothing per event */
        if (st->rec.type != CMT_REC_RANGE)
            return CMT_OBSERVE_RECORD;
        s->started = 1;
    }
    int rc = 0;
    if (st->rec.type == CMT_REC_EVENT)
        rc = on_event(ph, rp, st);
    else if (st->rec.type == CMT_REC_RANGE)
        rc = on_range(ph, rp, &st->rec.u.range);
    else if (st->rec.type == CMT_REC_ALLOC_EVENT)
        rc = on_block(ph, rp, &st->rec.u.alloc_event);
    if (rc)
        s->failed = rc;
    return CMT_OBSERVE_ALL;
}

static int finish(struct cmt_observer *self, const cmt_replay *rp)
{
    struct cmt_phases *ph = self->ctx;
    struct state *s = ph->internal;
    uint64_t last = cmt_replay_totals(rp)->last_t_ns;
    if (last > ph->end_ns)
        ph->end_ns = last;
    for (size_t i = 0; i < ph->range_count; i++)
        if (ph->ranges[i].open) {
            ph->ranges[i].end_ns = ph->end_ns;
            ph->phases[ph->ranges[i].phase].total_ns += ph->end_ns - ph->ranges[i].start_ns;
        }
    return s->failed;
}

struct cmt_observer cmt_phases_observer(struct cmt_phases *ph)
{
    memset(ph, 0, sizeof *ph);
    struct state *s = calloc(1, sizeof *s);
    ph->internal = s;
    if (!s || add_phase(ph, s, "")) { /* phase 0: none */
        if (s)
            s->failed = CMT_ENOMEM;
        return (struct cmt_observer){.wants = 0, .finish = finish, .ctx = ph};
    }
    return (struct cmt_observer){
        .wants = CMT_OBSERVE_RECORD, .step = step, .finish = finish, .ctx = ph};
}

void cmt_phases_free(struct cmt_phases *ph)
{
    struct state *s = ph->internal;
    if (s) {
        free(s->driver.slots);
        free(s->blocks.slots);
        free(s->starts.slots);
        free(s->threads);
        free(s->open_starts);
        free(s->names);
        for (size_t i = 0; i < s->domain_cap; i++)
            free(s->domains[i]);
        free(s->domains);
        free(s);
    }
    for (size_t i = 0; i < ph->phase_count; i++)
        free((char *)ph->phases[i].name);
    free(ph->phases);
    free(ph->ranges);
    free(ph->ooms);
    memset(ph, 0, sizeof *ph);
}

const char *cmt_phases_name(const struct cmt_phases *ph, uint32_t i)
{
    return i < ph->phase_count ? ph->phases[i].name : "";
}

uint32_t cmt_phases_find(const struct cmt_phases *ph, const char *name)
{
    for (size_t i = 1; i < ph->phase_count; i++)
        if (!strcmp(ph->phases[i].name, name))
            return (uint32_t)i;
    return 0;
}

const struct cmt_phase_stats *cmt_phases_stats(const struct cmt_phases *ph, uint32_t i)
{
    static const struct cmt_phase_stats none;
    if (i >= ph->phase_count)
        return &none;
    return ph->have_blocks ? &ph->phases[i].blocks : &ph->phases[i].driver;
}

struct rank_key {
    uint64_t peak, bytes;
    uint32_t phase;
};

static int by_peak(const void *a, const void *b)
{
    const struct rank_key *x = a, *y = b;
    if (x->peak != y->peak)
        return x->peak < y->peak ? 1 : -1;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return x->phase < y->phase ? -1 : 1;
}

size_t cmt_phases_ranked(const struct cmt_phases *ph, uint32_t *order, size_t max)
{
    size_t n = ph->phase_count > 1 ? ph->phase_count - 1 : 0;
    struct rank_key *all = malloc((n ? n : 1) * sizeof *all);
    if (!all)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const struct cmt_phase_stats *st = cmt_phases_stats(ph, (uint32_t)i + 1);
        all[i] = (struct rank_key){st->peak_bytes, st->alloc_bytes, (uint32_t)i + 1};
    }
    qsort(all, n, sizeof *all, by_peak);
    n = n < max ? n : max;
    for (size_t i = 0; i < n; i++)
        order[i] = all[i].phase;
    free(all);
    return n;
}
