/* ledger_internal.h — internal: the ledger's state, shared by ledger.c (moments, rows) and
 * ledger_peak.c (the process peak's moment, kept during the one replay). */
#ifndef CMT__LEDGER_INTERNAL_H
#define CMT__LEDGER_INTERNAL_H

#include "ledger.h"
#include "replay_internal.h"

struct cmt__raw_pool {
    uint32_t allocator;
    uint64_t pool, tensors, blocks, cached;
};
struct cmt__raw_site {
    uint32_t site;
    uint64_t bytes, count;
};
/* A moment as measured during the replay. */
struct cmt__raw {
    struct cmt_ledger_moment m;
    struct cmt__raw_pool *pools;
    size_t pool_count, pool_cap;
    struct cmt__raw_site *sites; /* by site index */
    size_t site_count;
    uint64_t graph, pools_retained, rounding;
    int have_sample;
    uint64_t sample_free, sample_total, sample_process;
};
/* The last free/total sample of a device slot, with this process's bytes then. */
struct cmt__sample {
    int have;
    uint64_t free, total, t, process, events; /* events: how many had been applied */
    uint64_t looked; /* the device's samples count when last compared with this */
};

/* A device's change since the peak's moment at one call site: bytes and allocations (mark:
 * the peak it belongs to; an older mark is zero). */
struct cmt__peak_cell {
    int64_t bytes, count;
    uint32_t mark;
};
/* A device slot's cells, by call site (the event's cell is two loads away: slots, cells). */
struct cmt__peak_slot {
    struct cmt__peak_cell *cells;
    size_t cap;
};

/* The process peak's moment (CMT_LEDGER_AT_PEAK), kept in the one replay: when the first
 * event after the peak's time comes (the moment the peak's time closes, as a second replay
 * to that time would take it), the devices, samples and counters are copied; from then on
 * every event's change of a device's driver allocations is summed by (device, call site), so
 * at finish the moment is the live set less those sums. A new peak starts again (mark). Not
 * kept (a second replay must take it) when the clock goes backwards, an event changes the
 * live set in a way the step does not say object by object, allocator records come, or the
 * sums would pass the budget. */
struct cmt__ledger_peak {
    int open;    /* a peak was seen */
    int closed;  /* its time has passed: the copies below are its moment */
    int invalid; /* not kept */
    /* lazy: the peak moves on at nearly every event (a ramp, allocations never freed), so its
     * moment is not copied when its time passes; the first event after it that is no new
     * peak takes the copies from the replay's own (rp->peak_devices), when nothing else has
     * happened since the peak's event (else the peak is not kept). streak: peaks in a row
     * whose moment was copied and never used. */
    int lazy;
    uint32_t streak;
    uint64_t t, last_t;
    uint32_t mark;
    /* at the moment */
    uint64_t events, last_seq;
    uint32_t device_count;
    struct cmt_replay_device *devices;
    struct cmt__sample *samples;
    uint64_t *graph_pool; /* the graph pool's retained bytes by slot */
    size_t device_cap;
    /* the sums since, by slot and site */
    struct cmt__peak_slot *slots;
    size_t slot_cap;
    size_t cells_used, budget; /* cells allocated; at most budget */
};

struct cmt_ledger {
    const cmt_alloc *alloc;
    const cmt_reader *reader;
    unsigned at;
    uint64_t *times;
    size_t time_count, next_time, time_cap;
    int own_times, times_moved; /* options.own_times; a time joined during this step */
    struct cmt__raw *raws;
    size_t count, cap;
    struct cmt__sample samples[MAX_DEVICE_SLOTS];
    uint8_t failed_slot[MAX_DEVICE_SLOTS]; /* own_times: the slot's first failure joined */
    size_t pending_oom; /* raws index + 1 of an OOM moment a sample may still complete */
    uint64_t events, last_seq;
    /* scratch, by replay site index */
    uint64_t *site_bytes, *site_count;
    uint32_t *touched;
    size_t touched_count, site_cap;
    uint64_t *handles; /* VMM handles mapped inside segments */
    size_t handle_count, handle_cap;
    int32_t dev; /* the device being measured */
    struct cmt__raw *cur;
    struct cmt__ledger_peak *peak; /* with CMT_LEDGER_AT_PEAK */
    int failed;
};

static inline uint32_t cmt__ledger_slot(int32_t dev)
{
    return dev >= -1 && dev < MAX_DEVICE_SLOTS - 1 ? (uint32_t)(dev + 1) : 0;
}

/* A new moment of device d at the end of l->raws (not yet counted: the caller's l->count++
 * keeps it), its time, context and rounding set. @return it, or NULL when out of memory. */
struct cmt__raw *cmt__ledger_new_raw(cmt_ledger *l, const struct cmt_replay_device *d, unsigned why,
                                     uint64_t t, uint64_t seq, size_t time_index);
/* Sets w's sample (and capacity) from s, the sample of w's device d when `events` events
 * had been applied, after keeping d's when it is newer. */
void cmt__ledger_sample_into(cmt_ledger *l, struct cmt__raw *w, struct cmt__sample *s,
                             const struct cmt_replay_device *d, uint64_t events);

/* A peak seen whose moment is still to be taken (and can be). */
static inline int cmt__ledger_peak_waiting(const struct cmt__ledger_peak *p)
{
    return p && p->open && !p->closed && !p->invalid;
}

/* ledger_peak.c */
int cmt__ledger_peak_create(cmt_ledger *l, size_t budget);
void cmt__ledger_peak_destroy(cmt_ledger *l);
/* The first event after the peak's time is next: the moment. */
void cmt__ledger_peak_close(cmt_ledger *l, const cmt_replay *rp);
/* Before the ledger looks at a step that is no new peak, with a lazy peak open: its moment
 * when the step is the first event after the peak's time (or the peak not kept when that
 * moment is lost). */
void cmt__ledger_peak_lazy_step(cmt_ledger *l, struct cmt_observer *self, const cmt_replay *rp,
                                const struct cmt_replay_step *st);
/* At finish: the peak's moments, one per device seen by then, when kept. */
void cmt__ledger_peak_finish(cmt_ledger *l, const cmt_replay *rp);

/* Every event, with the peak kept. */
void cmt__ledger_peak_event(cmt_ledger *l, struct cmt_observer *self, const cmt_replay *rp,
                            const struct cmt_replay_step *st);

/* A new peak at the step's event: its time (self's next moment, when earlier). */
void cmt__ledger_peak_new(cmt_ledger *l, struct cmt_observer *self, const cmt_replay *rp);

/* The kinds summed in cells: device memory but graph memory (the device's figures say it). */
#define CMT__LEDGER_DRIVER_KINDS (CMT_KIND_MASK(DEVICE_MEMORY) & ~(1u << CMT_KIND_GRAPH))
_Static_assert(CMT_KIND_COUNT < 31, "cmt__ledger_peak_fast shifts by a kind & 31");
_Static_assert(CMT_NO_OBJECT == 0, "cmt__ledger_peak_fast ORs replaced with all_devices");

/* One allocation (delta > 0) or free of delta bytes, not 0, into c, fresh when its mark is an
 * earlier moment's. */
static inline __attribute__((always_inline)) void cmt__peak_cell_add(
    const struct cmt__ledger_peak *p, struct cmt__peak_cell *c, int64_t delta)
{
    if (c->mark != p->mark)
        *c = (struct cmt__peak_cell){.mark = p->mark};
    c->bytes += delta;
    c->count += (delta >> 63) | 1; /* +1 an allocation, -1 a free */
}

/* What cmt__ledger_peak_event does with almost every event (one of no sample and no OOM: the
 * caller tests that). @return 1 when the step was applied: once the peak's moment is taken, an
 * event that is no new peak and changes at most one driver allocation of its own device at a
 * (slot, site) that has its cell; or any event that is no new peak once the peak is not kept
 * (cmt__ledger_peak_event would do nothing with it). -1 for a new peak the caller must give to
 * cmt__ledger_peak_new (its time is this step's, after the last). 0 for any other step (nothing
 * changed: cmt__ledger_peak_event takes it). p is not NULL: without a peak kept, the ledger
 * is shown no event that is neither a sample nor an OOM failure (ledger_wants).
 *
 * One flag says the moment is taken: `closed` (a lazy peak is never closed while steps come:
 * peak_new clears closed where it sets lazy, and only the lazy moment's copy, which clears
 * lazy, closes it again). */
static inline int cmt__ledger_peak_fast(struct cmt__ledger_peak *p, const cmt_replay *rp,
                                        const struct cmt_replay_step *st)
{
    uint64_t t = st->rec.u.event.t_ns;
    int64_t delta = st->delta;
    if (t < p->last_t) /* the clock went backwards: the general path says so */
        return 0;
    /* delta's sign is random (an allocation or a free): tested after the peak's tick */
    if (rp->peak_tick == rp->tick && delta > 0) {
        if (p->invalid)
            return 1;
        p->last_t = t;
        return -1;
    }
    if (!p->closed || st->owner || (st->replaced | (uint32_t)st->all_devices)) /* no object: 0 */
        return p->invalid; /* not kept: nothing to do; else the general path */
    if (delta) {
        uint32_t slot = (uint32_t)st->rec.u.event.dev + 1, site = st->site;
        /* kind is -1 .. CMT_KIND_COUNT - 1: -1 shifts by 31, past every kind's bit */
        if (!((CMT__LEDGER_DRIVER_KINDS >> ((unsigned)st->kind & 31u) & 1u) && slot < p->slot_cap &&
              site < p->slots[slot].cap))
            return p->invalid;
        cmt__peak_cell_add(p, &p->slots[slot].cells[site], delta);
    }
    p->last_t = t;
    p->streak = 0; /* the moment copied is used */
    return 1;
}

#endif
