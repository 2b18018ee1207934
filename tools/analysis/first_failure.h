/* first_failure.h — the one definition of when a process failed and which of several failed
 * first, for every command over several traces: `report` (and `oom`, `timeline`) over a run
 * (fleet.h) and `export --partitioned`'s runs table.
 *
 * A process failed at its first *fatal* out-of-memory episode (no retry succeeded, oom.h),
 * else, when it died on a fatal signal, at its SIGNAL record (else its last event). The first
 * failing process is the earliest on the wall clock (PROCESS start_wall_ns + the trace time);
 * a process whose start is unknown (no PROCESS record) is not compared; equal times go to the
 * lower rank (unknown ranks last), then the lower pid. docs/analysis.md ("Several traces"). */
#ifndef CMT_FIRST_FAILURE_H
#define CMT_FIRST_FAILURE_H

#include <stdint.h>

#include "oom.h"
#include "replay.h"

enum cmt_fleet_failure {
    CMT_FLEET_NO_FAILURE = 0,
    CMT_FLEET_FAILED_OOM,    /* a fatal out-of-memory episode (no retry succeeded) */
    CMT_FLEET_FAILED_SIGNAL, /* died on a fatal signal */
};

/**
 * A failure's name in JSON and tables: "out_of_memory", "signal", "none".
 * @return a static string.
 */
const char *cmt_fleet_failure_name(int failure);

/* The first SIGNAL record of a trace, as an observer (cmt_signal_observer) finds it. */
struct cmt_signal_seen {
    uint64_t t_ns;
    int seen;
};

/**
 * An observer that keeps the first SIGNAL record's time in *seen (zeroed by the caller).
 * @return the observer (wants records).
 */
struct cmt_observer cmt_signal_observer(struct cmt_signal_seen *seen);

/**
 * When one process failed, from its finished OOM analysis (NULL: none ran), its replay's
 * totals (signaled, last_t_ns) and the SIGNAL record seen (NULL: none looked for).
 * @return enum cmt_fleet_failure; *t_ns (trace time) is set unless CMT_FLEET_NO_FAILURE.
 */
int cmt_process_failure(const cmt_oom *oom, const struct cmt_replay_totals *totals,
                        const struct cmt_signal_seen *signal, uint64_t *t_ns);

/* A process as the choice of the first failure sees it. */
struct cmt_failure_candidate {
    int have_start;         /* its PROCESS record was read */
    uint64_t start_wall_ns; /* PROCESS start_wall_ns */
    int32_t rank;           /* -1 unknown */
    uint64_t pid;
    int failure;   /* enum cmt_fleet_failure, as cmt_process_failure returned */
    uint64_t t_ns; /* its failure's trace time */
};

/* The first failure so far: `index` is the caller's number of that process (-1 none yet). */
struct cmt_first_failure {
    int64_t index;
    uint64_t wall_ns; /* when, on the wall clock */
    int32_t rank;
    uint64_t pid;
    int failure;
};

/**
 * Starts a choice: no process yet (index -1).
 * @return nothing.
 */
void cmt_first_failure_init(struct cmt_first_failure *first);

/**
 * Offers process `index`: it becomes the first when it failed, its start is known, and it
 * failed before the first so far (the header's order). Processes may come in any order.
 * @return 1 when it became the first, else 0.
 */
int cmt_first_failure_offer(struct cmt_first_failure *first, int64_t index,
                            const struct cmt_failure_candidate *candidate);

#endif /* CMT_FIRST_FAILURE_H */
