/* html.h — internal to `cumemtrace html`: what the command collects from each trace
 * (cmd_html.c) and the writer of the self-contained page (html_page.c), whose data is one JSON
 * object embedded in the page (docs/analysis.md, `html`, describes its keys). */
#ifndef CMT__HTML_H
#define CMT__HTML_H

#include <stdio.h>

#include "diff.h"
#include "pass.h"
#include "site_timeline.h"
#include "whatif.h"

#define CMT__HTML_WHATIF_MAX 8 /* settings in the what-if table */

/* One trace's analyses: the first pass (oom, report, diff side) and the second (the series
 * stacked by the groups the first pass chose, the tensor-level stream for the what-if). */
struct cmt__html_run {
    struct cmt__pass pass;
    struct cmt_site_groups groups;
    struct cmt_site_timeline series;
    int have_series;
    /* what-if: available, or why not */
    int have_whatif;
    char whatif_reason[512];
    uint64_t whatif_capacity;
    struct cmt_whatif_result whatif[CMT__HTML_WHATIF_MAX];
    size_t whatif_count;
    long whatif_best; /* index, -1 when every setting ran out of memory */
};

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
