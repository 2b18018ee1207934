/* html_outside.c — the page's memory outside the allocator, beside its history (html.h):
 * the driver's allocations no allocator segment covers (alloc_outside.h computes them), for
 * the band stacked on the active memory timeline and the list in the segment view
 * (html/outside_views.js draws them); docs/analysis.md (`html`) gives the keys. */
#include <stdlib.h>

#include "html/html.h"
#include "output.h"
#include "reader.h"
#include "replay.h"

#define LIVES 2000 /* allocations given to the page, the largest */

static int64_t never(uint64_t v)
{
    return v == CMT_ALLOC_NEVER ? -1 : (int64_t)v;
}

void cmt__html_outside_known_json(struct cmt__json *j, const struct cmt__html_run *run)
{
    cmt__json_bool(j, "outside_known", run->outside && cmt_alloc_outside_known(run->outside));
    cmt__json_i64(j, "outside_truncated",
                  run->outside ? cmt_alloc_outside_truncated(run->outside) : 0);
    size_t n = 0;
    const struct cmt_alloc_outside_site *s = run->outside
                                                 ? cmt_alloc_outside_sites(run->outside, &n)
                                                 : NULL;
    char frame[512];
    cmt__json_array(j, "outside_sites"); /* each a driver call's top frame, the most bytes first */
    for (size_t i = 0; i < n; i++) {
        frame[0] = 0;
        if (s[i].node)
            cmt_reader_format_frame(run->pass.reader, s[i].node, frame, sizeof frame);
        cmt__json_string(j, NULL, frame);
    }
    cmt__json_end_array(j);
}

int cmt__html_outside_json(struct cmt__json *j, const struct cmt__html_run *run, int32_t dev)
{
    const cmt_alloc_outside *o = run->outside;
    if (!o || !cmt_alloc_outside_known(o)) {
        cmt__json_null(j, "outside");
        return 0;
    }
    size_t total, *pick, n = cmt_alloc_outside_largest(o, dev, LIVES, &total, &pick), all;
    if (n == (size_t)-1)
        return -1;
    const struct cmt_alloc_outside_life *l = cmt_alloc_outside_lives(o, &all);
    cmt__json_object(j, "outside");
    cmt__json_u64(j, "lives_total", total);
    cmt__json_array(j, "lives"); /* [addr, bytes, from, to, site, from_t, to_t, kind] */
    for (size_t k = 0; k < n; k++) {
        const struct cmt_alloc_outside_life *x = &l[pick[k]];
        int64_t v[] = {(int64_t)x->addr, (int64_t)x->size,    never(x->from_seq), never(x->to_seq),
                       (int64_t)x->site, never(x->from_t_ns), never(x->to_t_ns)};
        cmt__json_array(j, NULL);
        for (size_t c = 0; c < sizeof v / sizeof *v; c++)
            cmt__json_i64(j, NULL, v[c]);
        cmt__json_string(j, NULL, cmt_kind_name(x->kind));
        cmt__json_end_array(j);
    }
    cmt__json_end_array(j);
    size_t no;
    const struct cmt_alloc_history_oom *oo = cmt_alloc_history_ooms(run->history, &no);
    cmt__json_array(j, "at_oom"); /* the bytes outside at each of dev's OOMs, as `ooms` */
    for (size_t i = 0; i < no; i++)
        if (oo[i].dev == dev)
            cmt__json_u64(j, NULL, cmt_alloc_outside_at(o, dev, oo[i].seq));
    cmt__json_end_array(j);
    cmt__json_end_object(j);
    free(pick);
    return 0;
}
