/* report.c — the ranked call sites of a run's summary (see report.h). */
#include "report.h"

#include <string.h>

static int report_finish(struct cmt_observer *self, const cmt_replay *rp)
{
    struct cmt_report *r = self->ctx;
    r->peak_site_count = cmt_sites_rank(rp, CMT_RANK_AT_PEAK, r->peak_sites, CMT_REPORT_TOP);
    r->leak_count = cmt_sites_rank(rp, CMT_RANK_LIVE, r->leaks, CMT_REPORT_TOP);
    r->host_site_count = cmt_sites_rank(rp, CMT_RANK_HOST_LIVE, r->host_sites, CMT_REPORT_TOP);
    return 0;
}

struct cmt_observer cmt_report_observer(struct cmt_report *r)
{
    memset(r, 0, sizeof *r);
    return (struct cmt_observer){.finish = report_finish, .ctx = r};
}
