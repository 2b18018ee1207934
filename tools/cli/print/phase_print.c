/* phase_print.c — the phases as the commands show them (phase_print.h). */
#include "print/phase_print.h"

#include <inttypes.h>
#include <string.h>

static int have_ranges(const struct cmt_phases *ph)
{
    return ph->phase_count > 1;
}

static const char *shown_name(const struct cmt_phases *ph, uint32_t i, char *buf, size_t size)
{
    return i ? cmt__text(cmt_phases_name(ph, i), buf, size) : "(no phase)";
}

static void text_row(FILE *f, const struct cmt_phases *ph, uint32_t i)
{
    const struct cmt_phase_stats *st = cmt_phases_stats(ph, i);
    char a[32], b[32], c[32], d[32], name[256], count[32] = "";
    if (st->live_count)
        snprintf(count, sizeof count, " (%" PRIu64 ")", st->live_count);
    fprintf(f, "  %-36s %6" PRIu64 " %10s %8" PRIu64 " allocs %10s %10s %10s%s\n",
            shown_name(ph, i, name, sizeof name), i ? ph->phases[i].instances : 0,
            cmt__duration(ph->phases[i].total_ns, d), st->alloc_count,
            cmt__bytes(st->alloc_bytes, a), cmt__bytes(st->peak_bytes, b),
            cmt__bytes(st->live_bytes, c), count);
}

void cmt__phases_text(FILE *f, const struct cmt_phases *ph)
{
    if (!have_ranges(ph))
        return;
    uint32_t order[CMT__PHASES_SHOWN];
    size_t n = cmt_phases_ranked(ph, order, CMT__PHASES_SHOWN);
    fprintf(f, "\nby phase (%s; %zu ranges, %" PRIu64 " marks)\n",
            ph->have_blocks ? "allocator blocks" : "driver allocations", ph->range_count,
            ph->marks);
    fprintf(f, "  %-36s %6s %10s %15s %10s %10s %s\n", "phase", "times", "time", "allocations",
            "allocated", "peak", "still live at the end");
    for (size_t k = 0; k < n; k++)
        if (ph->phases[order[k]].instances) /* a name only marks carry is no phase */
            text_row(f, ph, order[k]);
    if (cmt_phases_stats(ph, 0)->alloc_count)
        text_row(f, ph, 0);
    if (ph->phase_count - 1 > n)
        fprintf(f, "  ... %zu more phases (--json lists them all)\n", ph->phase_count - 1 - n);
}

static void json_stats(struct cmt__json *j, const struct cmt_phase_stats *st)
{
    CMT__JSON_U64S(j, {"alloc_count", st->alloc_count}, {"alloc_bytes", st->alloc_bytes},
                   {"free_count", st->free_count}, {"freed_bytes", st->freed_bytes},
                   {"peak_bytes", st->peak_bytes}, {"leaked_bytes", st->live_bytes},
                   {"leaked_count", st->live_count}, {"failures", st->failures});
}

void cmt__phases_json(struct cmt__json *j, const struct cmt_phases *ph)
{
    if (!have_ranges(ph))
        return;
    cmt__json_string(j, "phase_level", ph->have_blocks ? "allocator_blocks" : "driver");
    cmt__json_array(j, "phases");
    for (uint32_t i = 0; i < ph->phase_count; i++) {
        cmt__json_object(j, NULL);
        if (i)
            cmt__json_string(j, "name", cmt_phases_name(ph, i));
        else
            cmt__json_null(j, "name");
        cmt__json_u64(j, "instances", ph->phases[i].instances);
        cmt__json_u64(j, "time_ns", ph->phases[i].total_ns);
        json_stats(j, cmt_phases_stats(ph, i));
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
    cmt__json_array(j, "ranges");
    for (size_t i = 0; i < ph->range_count; i++) {
        const struct cmt_phase_range *r = &ph->ranges[i];
        cmt__json_object(j, NULL);
        cmt__json_string(j, "name", cmt_phases_name(ph, r->phase));
        cmt__json_string(j, "kind",
                         r->action == CMT_RA_PUSH    ? "push"
                         : r->action == CMT_RA_START ? "start"
                                                     : "mark");
        CMT__JSON_U64S(j, {"tid", r->tid}, {"depth", r->depth}, {"category", r->category},
                       {"start_ns", r->start_ns}, {"end_ns", r->end_ns});
        cmt__json_bool(j, "open", r->open);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
    cmt__json_u64(j, "ranges_dropped", ph->ranges_dropped);
}

const struct cmt_phase_oom *cmt__phase_oom_at(const struct cmt_phases *ph, uint64_t t_ns,
                                              uint32_t tid)
{
    for (size_t i = 0; i < ph->oom_count; i++)
        if (ph->ooms[i].t_ns >= t_ns && ph->ooms[i].tid == tid)
            return &ph->ooms[i];
    for (size_t i = 0; i < ph->oom_count; i++)
        if (ph->ooms[i].t_ns >= t_ns)
            return &ph->ooms[i];
    return ph->oom_count ? &ph->ooms[ph->oom_count - 1] : NULL;
}

void cmt__phase_oom_text(FILE *f, const struct cmt_phases *ph, uint64_t t_ns, uint32_t tid)
{
    const struct cmt_phase_oom *o = have_ranges(ph) ? cmt__phase_oom_at(ph, t_ns, tid) : NULL;
    char text[512];
    if (o)
        fprintf(f, "  phase      %s\n",
                o->phase ? cmt__text(o->path, text, sizeof text) : "(none: no range was open)");
}

void cmt__phase_oom_json(struct cmt__json *j, const struct cmt_phases *ph, uint64_t t_ns,
                         uint32_t tid)
{
    const struct cmt_phase_oom *o = have_ranges(ph) ? cmt__phase_oom_at(ph, t_ns, tid) : NULL;
    if (!o)
        return;
    if (o->phase)
        cmt__json_string(j, "phase", cmt_phases_name(ph, o->phase));
    else
        cmt__json_null(j, "phase");
    cmt__json_string(j, "phase_path", o->path);
}

/* Every phase name of a and of b (b's not in a after a's), as (index in a, index in b). */
static size_t joined(const struct cmt_phases *a, const struct cmt_phases *b, uint32_t (*pairs)[2],
                     size_t max)
{
    size_t n = 0; /* a name only marks carry is no phase */
    for (uint32_t i = 1; i < a->phase_count && n < max; i++) {
        if (!a->phases[i].instances)
            continue;
        pairs[n][0] = i;
        pairs[n][1] = cmt_phases_find(b, cmt_phases_name(a, i));
        if (pairs[n][1] && !b->phases[pairs[n][1]].instances)
            pairs[n][1] = 0;
        n++;
    }
    for (uint32_t i = 1; i < b->phase_count && n < max; i++)
        if (b->phases[i].instances && !cmt_phases_find(a, cmt_phases_name(b, i))) {
            pairs[n][0] = 0;
            pairs[n++][1] = i;
        }
    return n;
}

void cmt__phases_diff_text(FILE *f, const struct cmt_phases *a, const struct cmt_phases *b)
{
    if (!have_ranges(a) && !have_ranges(b))
        return;
    uint32_t pairs[64][2];
    size_t n = joined(a, b, pairs, 64);
    fprintf(f, "\nby phase\n  %-36s %21s %23s\n", "phase", "peak A -> B", "allocated A -> B");
    for (size_t k = 0; k < n; k++) {
        const struct cmt_phase_stats *x = cmt_phases_stats(a, pairs[k][0]),
                                     *y = cmt_phases_stats(b, pairs[k][1]);
        char p1[32], p2[32], b1[32], b2[32], name[256];
        const char *label = pairs[k][0] ? cmt_phases_name(a, pairs[k][0])
                                        : cmt_phases_name(b, pairs[k][1]);
        fprintf(f, "  %-36s %10s -> %-8s %10s -> %-10s%s\n", cmt__text(label, name, sizeof name),
                pairs[k][0] ? cmt__bytes(x->peak_bytes, p1) : "-",
                pairs[k][1] ? cmt__bytes(y->peak_bytes, p2) : "-",
                pairs[k][0] ? cmt__bytes(x->alloc_bytes, b1) : "-",
                pairs[k][1] ? cmt__bytes(y->alloc_bytes, b2) : "-",
                !pairs[k][0]   ? "  (only in B)"
                : !pairs[k][1] ? "  (only in A)"
                               : "");
    }
}

void cmt__phases_diff_json(struct cmt__json *j, const struct cmt_phases *a,
                           const struct cmt_phases *b)
{
    if (!have_ranges(a) && !have_ranges(b))
        return;
    uint32_t pairs[1024][2];
    size_t n = joined(a, b, pairs, 1024);
    cmt__json_array(j, "phases");
    for (size_t k = 0; k < n; k++) {
        cmt__json_object(j, NULL);
        cmt__json_string(j, "name",
                         pairs[k][0] ? cmt_phases_name(a, pairs[k][0])
                                     : cmt_phases_name(b, pairs[k][1]));
        const struct cmt_phases *side[2] = {a, b};
        for (int s = 0; s < 2; s++) {
            if (!pairs[k][s]) {
                cmt__json_null(j, s ? "b" : "a");
                continue;
            }
            cmt__json_object(j, s ? "b" : "a");
            json_stats(j, cmt_phases_stats(side[s], pairs[k][s]));
            cmt__json_end_object(j);
        }
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

/* The outermost ranges (depth 0, not marks) are the band's; of those that overlap [from, to),
 * the one that covers the most of it. */
uint32_t cmt__phase_band_at(const struct cmt_phases *ph, uint64_t from, uint64_t to)
{
    uint32_t best = 0;
    uint64_t best_cover = 0;
    for (size_t i = 0; i < ph->range_count; i++) {
        const struct cmt_phase_range *r = &ph->ranges[i];
        if (r->start_ns >= to)
            break; /* in opening order */
        if (r->action == CMT_RA_MARK || r->depth || r->end_ns <= from)
            continue;
        uint64_t lo = r->start_ns > from ? r->start_ns : from, hi = r->end_ns < to ? r->end_ns : to;
        if (hi - lo > best_cover) {
            best_cover = hi - lo;
            best = r->phase;
        }
    }
    return best;
}

void cmt__phase_band_text(FILE *f, const struct cmt_phases *ph, uint64_t width, uint64_t cells,
                          int labelled)
{
    if (!have_ranges(ph) || !width)
        return;
    uint32_t legend[26];
    size_t shown = 0;
    fputs(labelled ? "  phases    " : "  ", f);
    for (uint64_t i = 0; i < cells; i++) {
        uint32_t phase = cmt__phase_band_at(ph, i * width, (i + 1) * width);
        size_t k = 0;
        while (k < shown && legend[k] != phase)
            k++;
        if (phase && k == shown && shown < 26)
            legend[shown++] = phase;
        fputc(!phase ? ' ' : k < shown ? 'A' + (int)k : '?', f);
    }
    fputs(labelled ? "\n " : "  phases\n ", f);
    char name[256];
    for (size_t k = 0; k < shown; k++)
        fprintf(f, " %c %s", 'A' + (int)k,
                cmt__text(cmt_phases_name(ph, legend[k]), name, sizeof name));
    fputc('\n', f);
}

void cmt__phase_band_json(struct cmt__json *j, const struct cmt_phases *ph)
{
    cmt__json_array(j, "phases");
    size_t n = 0;
    for (size_t i = 0; i < ph->range_count && n < CMT__PHASE_BAND_MAX; i++) {
        const struct cmt_phase_range *r = &ph->ranges[i];
        if (r->action == CMT_RA_MARK || r->depth)
            continue;
        cmt__json_object(j, NULL);
        cmt__json_string(j, "n", cmt_phases_name(ph, r->phase));
        cmt__json_u64(j, "s", r->start_ns);
        cmt__json_u64(j, "e", r->end_ns);
        cmt__json_end_object(j);
        n++;
    }
    cmt__json_end_array(j);
}
