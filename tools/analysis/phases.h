/* phases.h — the program's own phases: the ranges of its trace (RANGE records: NVTX push/pop
 * and start/end, annotate.h's ranges, a PyTorch snapshot's external_annotations) and the
 * memory attributed to each phase. The CLI presents them (report and oom by phase, diff by
 * phase, the timeline's phase band, the exports' slices and phase column).
 *
 * Attribution (docs/analysis.md, "Phases"): an allocation belongs to the innermost push range
 * open on its own thread (any domain); on a thread with none open, to the latest start/end
 * range still open (those are process-wide: NVTX does not bind them to a thread); else to no
 * phase (index 0). A phase is a name ("message", or "domain:message" outside the default
 * domain): its instances' figures add up. Two levels are kept apart: driver allocations
 * (device memory, as the replay counts it) and allocator blocks (ALLOC_EVENT alloc / free,
 * what a caching allocator handed the program), shown when the trace has them. Memory is
 * followed from the first RANGE record on (a trace without ranges costs nothing per event):
 * what was allocated before it is in no figure. */
#ifndef CMT_PHASES_H
#define CMT_PHASES_H

#include <stddef.h>
#include <stdint.h>

#include "replay.h"

/* What one phase did at one level. */
struct cmt_phase_stats {
    uint64_t alloc_count, alloc_bytes; /* allocations made in the phase */
    uint64_t free_count, freed_bytes;  /* of those, freed (anywhere, any time) */
    uint64_t live_bytes, live_count;   /* allocated in it and live now (at the end: leaked) */
    uint64_t peak_bytes; /* the most the process held (all devices) while the phase was open */
    uint64_t failures;   /* allocations that failed in it (out of memory among them) */
};

/* All instances of one name. Index 0 is "no phase" (what no range covers). */
struct cmt_phase {
    const char *name;   /* "" for index 0 */
    uint64_t instances; /* push and start ranges of this name */
    uint64_t marks;     /* marks of this name */
    uint64_t total_ns;  /* time inside its instances (nested and parallel ones both count) */
    struct cmt_phase_stats driver, blocks;
};

/* One instance of a range (a mark is an instance of no duration). */
struct cmt_phase_range {
    uint32_t phase;  /* index into the phases */
    uint32_t action; /* CMT_RA_PUSH, CMT_RA_START or CMT_RA_MARK */
    uint32_t tid, domain, category;
    uint32_t depth;            /* push ranges open beneath it on its thread when it opened */
    uint32_t parent;           /* index + 1 of the push range it opened inside, 0 none */
    uint64_t start_ns, end_ns; /* end: the trace's last time while it is open */
    int open;                  /* never closed */
};

/* An out-of-memory failure (driver or allocator-level) and the phase it happened in. */
struct cmt_phase_oom {
    uint64_t t_ns, request;
    uint32_t tid;
    int allocator; /* 1: an allocator's oom record, 0: a driver call */
    uint32_t phase;
    char path[256]; /* the latest open start/end range, then the thread's open push ranges,
                     * outermost first, " > " between ("" none) */
};

#define CMT_PHASES_MAX_RANGES (1u << 20) /* instances kept; later ones only counted */

struct cmt_phases {
    struct cmt_phase *phases;
    size_t phase_count;
    struct cmt_phase_range *ranges; /* in opening order */
    size_t range_count;
    uint64_t ranges_dropped;   /* past CMT_PHASES_MAX_RANGES */
    uint64_t marks, unmatched; /* marks; pops and ends that closed nothing */
    struct cmt_phase_oom *ooms;
    size_t oom_count;
    int have_blocks; /* the trace has allocator-level blocks */
    uint64_t end_ns; /* the trace's last time */
    void *internal;
};

/* The phases as a replay observer (records and events). Put it before an observer that
 * asks cmt_phases_current() during the pass. cmt_phases_free releases what it fills. */
struct cmt_observer cmt_phases_observer(struct cmt_phases *ph);
void cmt_phases_free(struct cmt_phases *ph);

/* During the pass: the phase of an allocation made now on thread tid (0: none). */
uint32_t cmt_phases_current(const struct cmt_phases *ph, uint32_t tid);
/* The name of phase i ("" for 0 and out of range). */
const char *cmt_phases_name(const struct cmt_phases *ph, uint32_t i);
/* @return the index of phase `name`, or 0 when there is none. */
uint32_t cmt_phases_find(const struct cmt_phases *ph, const char *name);
/* The level the views show: the blocks when the trace has them, else the driver's. */
const struct cmt_phase_stats *cmt_phases_stats(const struct cmt_phases *ph, uint32_t i);
/* Phase indexes 1.. ordered by the stats' peak_bytes, then alloc_bytes (largest first),
 * into order[] (at most max). @return how many. */
size_t cmt_phases_ranked(const struct cmt_phases *ph, uint32_t *order, size_t max);

#endif
