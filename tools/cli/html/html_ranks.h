/* html_ranks.h — internal to `cumemtrace html`: the "Ranks" view of a page over several traces
 * (a directory of one trace per rank, or three files or more). The traces are loaded as one run
 * by the fleet library (fleet.h: who each process was, its order, which failed first); each is
 * then replayed once more for its device memory over time: the allocator's allocated and
 * reserved bytes where the trace has allocator-level records, the driver's live bytes otherwise,
 * of its busiest device, with its out-of-memory episodes as `oom` finds them. The page draws
 * every rank on one time axis (ranks_view.js); the full page below it is one rank's: the first
 * to fail, else the one with the highest peak. docs/analysis.md (`html`) describes the `ranks` key. */
#ifndef CMT__HTML_RANKS_H
#define CMT__HTML_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include "fleet.h"

struct cmt__json;

enum cmt__html_rank_source {
    CMT__HTML_RANK_NONE,      /* no device memory, or the trace could not be read */
    CMT__HTML_RANK_DRIVER,    /* the driver's live bytes */
    CMT__HTML_RANK_ALLOCATOR, /* the allocator's allocated and reserved bytes */
};

/* An out-of-memory episode of a rank, as `oom` gives it. */
struct cmt__html_rank_oom {
    uint64_t t_ns, request_bytes;
    int32_t dev;
    int verdict;
};

/* One rank's line: buckets of its chosen device (the state at each bucket's highest value, and
 * its last), its peak, its episodes. */
struct cmt__html_rank {
    int source; /* enum cmt__html_rank_source */
    int32_t dev;
    uint64_t peak_bytes, peak_t_ns; /* reserved peak, or live peak, of dev */
    uint64_t width_ns;              /* per bucket */
    struct cmt_timeline_point *points;
    uint32_t point_count;
    struct cmt__html_rank_oom *ooms;
    uint32_t oom_count;
};

struct cmt__html_ranks {
    struct cmt_fleet fleet;       /* the processes, sorted by rank */
    struct cmt__html_rank *ranks; /* one per fleet process, in its order */
    int64_t shown;                /* the process whose full page is drawn, -1 none readable */
    const char *shown_why;        /* "first to fail", "first with an out-of-memory failure",
                                      "highest peak" */
    int aligned;                  /* on the wall clock (the runs overlap), else each from 0 */
};

/* Loads the traces at paths (n of them) and replays each for its line (at most `points`
 * buckets). A trace that cannot be read is kept with its error (fleet.h).
 * @return 0, or CMT_ENOMEM (*ranks is then freed). */
int cmt__html_ranks_load(struct cmt__html_ranks *ranks, const char *const *paths, size_t n,
                         uint32_t points);
/* Frees what cmt__html_ranks_load filled. */
void cmt__html_ranks_free(struct cmt__html_ranks *ranks);
/* @return the path of the shown process's trace, NULL when none could be read. */
const char *cmt__html_ranks_shown_path(const struct cmt__html_ranks *ranks);
/* The page's `ranks` object (docs/analysis.md, `html`). */
void cmt__html_ranks_json(struct cmt__json *j, const struct cmt__html_ranks *ranks);

#endif
