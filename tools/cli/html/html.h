/* html.h — internal to `cumemtrace html`: what the command collects from each trace
 * (cmd_html.c) and the writer of the self-contained page (html_page.c), whose data is one JSON
 * object embedded in the page (docs/analysis.md, `html`, describes its keys). */
#ifndef CMT__HTML_H
#define CMT__HTML_H

#include <stdio.h>

#include "alloc_history.h"
#include "alloc_outside.h"
#include "diff.h"
#include "pass.h"
#include "site_levels.h"
#include "site_timeline.h"
#include "whatif.h"
#include "whatif_capacity.h"

#define CMT__HTML_WHATIF_MAX 8     /* settings in the what-if table */
#define CMT__HTML_ALLOC_DEVICES 64 /* devices with allocated/reserved lines */
#define CMT__HTML_ALLOC_SNAPS 16   /* allocator views kept */

/* The allocator level (html_alloc.c), from the second pass. */
struct cmt__html_alloc_sample {
    uint64_t t_ns, allocated, reserved;
    int used;
};
struct cmt__html_alloc_line { /* one device: 3 samples per bucket, in time order once sorted */
    int32_t dev;
    struct cmt__html_alloc_sample *samples;
};
enum { CMT__HTML_AT_OOM, CMT__HTML_AT_PEAK, CMT__HTML_AT_END };
struct cmt__html_alloc_snap { /* one allocator's segments and live blocks at one moment */
    uint32_t allocator;
    int32_t dev;
    int at;              /* CMT__HTML_AT_* */
    uint64_t t_ns;       /* the moment shown: of the OOM, the reserved peak's own time, the end */
    uint64_t state_t_ns; /* the allocator's last event when taken (the end's state when last) */
    struct cmt_alloc_figures fig;
    struct cmt_alloc_segment *segments; /* by address */
    size_t segment_count;
    struct cmt_alloc_block *blocks; /* by address */
    size_t block_count;
};
struct cmt__html_alloc {
    const cmt_alloc *first; /* the first pass's view (not owned): peaks, OOM counts */
    cmt_alloc *state;       /* the second pass's own view */
    uint32_t points;
    uint64_t width; /* ns per bucket */
    struct cmt__html_alloc_line lines[CMT__HTML_ALLOC_DEVICES];
    size_t line_count;
    struct cmt__html_alloc_snap snaps[CMT__HTML_ALLOC_SNAPS];
    size_t snap_count;
    /* reserved peaks reached, viewed once the blocks placed after them are in */
    struct cmt__html_alloc_pending {
        uint32_t allocator;
        int32_t dev;
        uint64_t t_ns; /* when the peak was reached */
    } pending[CMT__HTML_ALLOC_DEVICES];
    size_t pending_count;
    int failed; /* out of memory: parts are missing */
};
/* @return 0 or CMT_ENOMEM (cmt__html_alloc_free it either way). */
int cmt__html_alloc_init(struct cmt__html_alloc *h, const cmt_alloc *first, uint32_t points,
                         uint64_t end_t_ns);
/* The collector as a replay observer (records only). */
struct cmt_observer cmt__html_alloc_observer(struct cmt__html_alloc *h);
void cmt__html_alloc_free(struct cmt__html_alloc *h);
struct cmt__json;
struct cmt__html_run;
/* The page's `lines` of device dev: allocated and reserved, [] without allocator records. */
void cmt__html_alloc_lines_json(struct cmt__json *j, const struct cmt__html_run *run, int32_t dev);
/* The page's `allocator` object (null without allocator records). @return 0, or -1 when out of
 * memory. */
int cmt__html_alloc_json(struct cmt__json *j, const struct cmt__html_run *run);

/* One trace's analyses: the first pass (oom, report, diff side) and the second (the series
 * stacked by the groups the first pass chose, the tensor-level stream for the what-if). */
struct cmt__html_run {
    struct cmt__pass pass;
    struct cmt_site_groups groups;
    struct cmt_site_timeline series;
    int have_series;
    struct cmt_site_levels levels; /* finer levels around the peak and the first OOMs */
    /* what-if: available, or why not */
    int have_whatif;
    char whatif_reason[512];
    struct cmt_whatif_capacity whatif_capacity; /* cmt_whatif_capacity_choose's, as whatif */
    char whatif_capacity_text[512];             /* cmt__whatif_capacity_text's */
    char whatif_advice[512]; /* without a capacity: cmt__whatif_unknown_capacity_advice's */
    struct cmt_whatif_result whatif[CMT__HTML_WHATIF_MAX];
    size_t whatif_count;
    long whatif_best;             /* index, -1 when every setting ran out of memory */
    struct cmt__html_alloc alloc; /* when the trace has allocator-level records */
    int have_alloc;
    struct cmt_ledger *ledger; /* the ledger at evenly spaced times and the peak (second pass) */
    struct cmt_alloc *ledger_alloc;      /* the allocator-level view the ledger reads then */
    cmt_alloc_history *history;          /* its blocks and segments over the run (it reads it) */
    cmt_alloc_outside *outside;          /* driver memory outside those segments (it reads them) */
    const struct cmt__html_ranks *ranks; /* the page over several ranks: theirs (html_ranks.h) */
};

/* The page's `history` object (html_history.c): null without allocator records. @return 0, or
 * -1 when out of memory. */
int cmt__html_history_json(struct cmt__json *j, const struct cmt__html_run *run);

/* The history's memory outside the allocator (html_outside.c): `outside_known`,
 * `outside_truncated` and `outside_sites` (its driver call sites' frames). */
void cmt__html_outside_known_json(struct cmt__json *j, const struct cmt__html_run *run);
/* A device's `outside` object (null when the trace has no driver-level records).
 * @return 0, or -1 when out of memory. */
int cmt__html_outside_json(struct cmt__json *j, const struct cmt__html_run *run, int32_t dev);

/* The page's embedded template (html_template.c, generated from html/report.html at build
 * time): the page up to the data marker and after it. */
extern const char cmt__html_template[];
extern const unsigned long cmt__html_template_size;
#define CMT__HTML_MARKER "/*@CMT_DATA@*/"

/* Writes the page for one or two runs (deltas: the diff's call sites, for two).
 * @return 0, or -1 when writing failed or memory ran out. */
int cmt__html_write(FILE *f, const struct cmt__html_run *runs, size_t nruns,
                    const struct cmt_site_delta *deltas, size_t ndeltas);

/* The page's one-sentence summary of a run: its first OOM episode and verdict, or its peak.
 * @return buf. */
const char *cmt__html_summary(const struct cmt__html_run *run, char *buf, size_t size);

#endif
