/* report.h — the summary of one run: its figures are the replay's (totals, devices, threads,
 * calls per API: replay.h); this adds the call sites that held the most at the process peak
 * and at the end (leaks), grouped by call site (sites.h), and apart from them the sites that
 * still hold pinned host memory at the end. The CLI presents it. */
#ifndef CMT_REPORT_H
#define CMT_REPORT_H

#include <stddef.h>

#include "replay.h"
#include "sites.h"

#define CMT_REPORT_TOP 10

struct cmt_report {
    struct cmt_ranked_site peak_sites[CMT_REPORT_TOP]; /* by bytes at the process peak */
    size_t peak_site_count;
    struct cmt_ranked_site leaks[CMT_REPORT_TOP]; /* by bytes still live at the end */
    size_t leak_count;
    /* by pinned host memory still live at the end (never in the figures above) */
    struct cmt_ranked_site host_sites[CMT_REPORT_TOP];
    size_t host_site_count;
};

/* The report as a replay observer (finish only): fills *r after the pass. */
struct cmt_observer cmt_report_observer(struct cmt_report *r);

#endif
