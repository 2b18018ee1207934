/* timeline_svg.c — a self-contained SVG chart of a timeline: one panel per device, the kinds
 * present stacked (each in its colour, the legend's), the memory held by other processes on
 * top (from the free/total samples), the device's capacity, the peak and out-of-memory failures
 * marked, axes labelled with units. Labels are placed where they overlap no other label. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "pass.h"
#include "site_timeline.h"
#include "timeline.h"

#define W 900
#define PANEL_H 290
#define LEFT 90
#define RIGHT 20
#define TOP 40
#define BOTTOM 70
#define CHAR_W 6.5 /* an 11 px sans-serif character, generously: labels are placed by it */

/* one colour per charted kind (by its place among them), whichever kinds are present */
static const char *const colors[] = {"#4e79a7", "#59a14f", "#edc948",
                                     "#f28e2b", "#b07aa1", "#76b7b2"};
#define NCOLORS (sizeof colors / sizeof *colors)
#define OTHERS_FILL "#9a9a9a"
#define OOM_COLOR "#e15759"

static void file_sink(void *f, const char *p, size_t n)
{
    fwrite(p, 1, n, f);
}

/* Text from the trace (device and API names), escaped so the file stays well-formed. */
static void xml_text(FILE *f, const char *text)
{
    cmt__xml_escape(text, file_sink, f);
}

/* A "nice" axis step: 1, 2 or 5 times a power of ten (or of 1024 for bytes). */
static double nice_step(double range, int ticks)
{
    double raw = range / ticks, p = 1;
    while (p * 10 <= raw)
        p *= 10;
    while (p > raw && p > 1e-9)
        p /= 10;
    return raw <= p * 2 ? p * 2 : raw <= p * 5 ? p * 5 : p * 10;
}

/* The same in bytes: a nice number of GiB, MiB or KiB, so grid lines read 4 GiB, not 4.66. */
static double nice_bytes_step(double range, int ticks)
{
    double unit = range >= 2.0 * (1 << 30)   ? (double)(1 << 30)
                  : range >= 2.0 * (1 << 20) ? (double)(1 << 20)
                  : range >= 2.0 * (1 << 10) ? (double)(1 << 10)
                                             : 1.0;
    double step = nice_step(range / unit, ticks) * unit;
    return step >= 1 ? step : 1;
}

/* A panel's plot area: its size, and the time and bytes its width and height stand for. */
struct frame {
    double w, h, ymax;
    uint64_t t_end;
};

static double x_of(const struct frame *fr, uint64_t t)
{
    return LEFT + (double)t / (double)fr->t_end * fr->w;
}

static double y_of(const struct frame *fr, uint64_t v)
{
    return TOP + fr->h - (double)v / fr->ymax * fr->h;
}

/* The labels placed in a panel so far, as boxes: a new one goes to the first of its candidate
 * places that overlaps none of them and stays inside the panel. */
#define MAX_LABELS 64
struct labels {
    double box[MAX_LABELS][4]; /* x0, y0, x1, y1 */
    int n;
};

static int overlaps(const struct labels *l, const double b[4])
{
    if (b[0] < 0 || b[2] > W || b[1] < 0 || b[3] > PANEL_H)
        return 1;
    for (int i = 0; i < l->n; i++)
        if (b[0] < l->box[i][2] && l->box[i][0] < b[2] && b[1] < l->box[i][3] &&
            l->box[i][1] < b[3])
            return 1;
    return 0;
}

/* Reserves the box of a text of `chars` characters whose baseline starts at (x, y). */
static void reserve(struct labels *l, double x, double y, size_t chars)
{
    if (l->n < MAX_LABELS) {
        double b[4] = {x, y - 10, x + (double)chars * CHAR_W, y + 2};
        memcpy(l->box[l->n++], b, sizeof b);
    }
}

/* Picks the first candidate (x[i], y[i]: start of the baseline) where a text of `chars`
 * characters overlaps nothing, reserves it. @return its index (the last when none is free). */
static int place(struct labels *l, const double *x, const double *y, int n, size_t chars)
{
    int i = 0;
    for (; i < n - 1; i++) {
        double b[4] = {x[i], y[i] - 10, x[i] + (double)chars * CHAR_W, y[i] + 2};
        if (!overlaps(l, b))
            break;
    }
    reserve(l, x[i], y[i], chars);
    return i;
}

static void axes(FILE *f, const struct frame *fr)
{
    char a[32];
    /* y axis in bytes */
    double step = nice_bytes_step(fr->ymax, 5);
    for (double v = 0; v <= fr->ymax; v += step) {
        double y = TOP + fr->h - v / fr->ymax * fr->h;
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", LEFT,
                W - RIGHT, y, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>\n",
                LEFT - 6, y + 4, cmt__bytes((uint64_t)v, a));
    }
    /* x axis in time: a tick label is left out where it would meet the one before */
    double tstep = nice_step((double)fr->t_end, 6), last_right = -1e9;
    for (double t = 0; t <= (double)fr->t_end; t += tstep) {
        double x = LEFT + t / (double)fr->t_end * fr->w;
        double half = (double)strlen(cmt__duration((uint64_t)t, a)) * CHAR_W / 2;
        if (x - half < last_right + 4 || x + half > W)
            continue;
        last_right = x + half;
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%s"
                "</text>\n",
                x, TOP + fr->h + 16, a);
    }
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">time since "
            "start</text>\n",
            LEFT + fr->w / 2, TOP + fr->h + 32);
}

/* Each bucket as two steps: up to its maximum at t_ns, then to its last value at last_t_ns. */
static uint64_t kinds_sum(const struct cmt_timeline_point *p, const int *chart, int k, int last)
{
    uint64_t sum = 0;
    for (int j = 0; j <= k; j++)
        sum += last ? p->last_kind_bytes[chart[j]] : p->kind_bytes[chart[j]];
    return sum;
}

static void areas(FILE *f, const struct cmt_timeline *tl, const struct cmt_timeline_device *d,
                  const struct frame *fr, const int *chart, unsigned nchart, unsigned present)
{
    /* stacked kinds: cumulative polygons from the top layer down, drawn as steps (memory
     * holds its level until the next change): each bucket up to its maximum, then down to
     * its last value. Kinds that are never present draw nothing. */
    for (int k = (int)nchart - 1; k >= 0; k--) {
        if (!(present >> k & 1))
            continue;
        fprintf(f,
                "<polygon class=\"kind\" data-kind=\"%s\" fill=\"%s\" fill-opacity=\"0.85\" "
                "points=\"%d,%.1f",
                cmt_kind_name(chart[k]), colors[(size_t)k % NCOLORS], LEFT, TOP + fr->h);
        double last_y = TOP + fr->h;
        for (uint32_t i = 0; i < tl->max_points; i++) {
            const struct cmt_timeline_point *p = &d->points[i];
            if (!p->used)
                continue;
            uint64_t sum = kinds_sum(p, chart, k, 0), sum_last = kinds_sum(p, chart, k, 1);
            double x = x_of(fr, p->t_ns), y = y_of(fr, sum);
            fprintf(f, " %.1f,%.1f %.1f,%.1f", x, last_y, x, y);
            last_y = y;
            if (sum_last != sum) {
                x = x_of(fr, p->last_t_ns);
                last_y = y_of(fr, sum_last);
                fprintf(f, " %.1f,%.1f %.1f,%.1f", x, y, x, last_y);
            }
        }
        fprintf(f, " %.1f,%.1f\"/>\n", LEFT + fr->w, TOP + fr->h);
    }
}

/* The process's level at time t: the live bytes of the last bucket step at or before it. */
static uint64_t level_at(const struct cmt_timeline *tl, const struct cmt_timeline_device *d,
                         uint64_t t)
{
    uint64_t v = 0;
    for (uint32_t i = 0; i < tl->max_points; i++) {
        const struct cmt_timeline_point *p = &d->points[i];
        if (!p->used || p->t_ns > t)
            continue;
        v = p->last_t_ns <= t ? p->last_live_bytes : p->live_bytes;
    }
    return v;
}

/* A step function as its changes: value v from time t on. */
struct step {
    uint64_t t, v;
};

/* The process's level as steps: each bucket's maximum at t_ns, its last value at last_t_ns.
 * @return how many (at most 2 * max_points). */
static size_t level_steps(const struct cmt_timeline *tl, const struct cmt_timeline_device *d,
                          struct step *out)
{
    size_t n = 0;
    for (uint32_t i = 0; i < tl->max_points; i++) {
        const struct cmt_timeline_point *p = &d->points[i];
        if (!p->used)
            continue;
        out[n++] = (struct step){p->t_ns, p->live_bytes};
        out[n++] = (struct step){p->last_t_ns, p->last_live_bytes};
    }
    return n;
}

/* The memory held by others, on top of the process's: a step per sample (from its bucket's
 * start, the most held among its samples), over the process's own steps. The band's edges are
 * evaluated at every change of either. */
static void others_band(FILE *f, const struct cmt_timeline *tl, const struct cmt_timeline_device *d,
                        const struct cmt_site_timeline *s,
                        const struct cmt_site_timeline_device *sd, const struct frame *fr)
{
    size_t cap = 2 * (size_t)tl->max_points + s->max_points + 1, np, no = 0, n = 0;
    struct step *level = malloc(cap * sizeof *level), *others = malloc(cap * sizeof *others);
    struct step *lo = malloc(2 * cap * sizeof *lo), *hi = malloc(2 * cap * sizeof *hi);
    if (!level || !others || !lo || !hi)
        goto out;
    np = level_steps(tl, d, level);
    for (uint32_t i = 0; i < s->max_points; i++)
        if (sd->points[i].sampled)
            others[no++] = (struct step){(uint64_t)i << s->width_shift, sd->points[i].others_bytes};
    /* merge the two by time: at each change, the level and the level plus others */
    uint64_t lv = 0, ov = 0;
    for (size_t a = 0, b = 0; a < np || b < no;) {
        uint64_t t = b >= no || (a < np && level[a].t <= others[b].t) ? level[a].t : others[b].t;
        for (; a < np && level[a].t == t; a++)
            lv = level[a].v;
        for (; b < no && others[b].t == t; b++)
            ov = others[b].v;
        t = t < fr->t_end ? t : fr->t_end;
        lo[n] = (struct step){t, lv};
        hi[n++] = (struct step){t, lv + ov};
    }
    fprintf(f,
            "<polygon class=\"others\" fill=\"url(#others)\" stroke=\"%s\" "
            "stroke-width=\"0.5\" points=\"%d,%.1f",
            OTHERS_FILL, LEFT, y_of(fr, 0));
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) { /* the top edge, left to right, as steps */
        fprintf(f, " %.1f,%.1f %.1f,%.1f", x_of(fr, hi[i].t), y_of(fr, prev), x_of(fr, hi[i].t),
                y_of(fr, hi[i].v));
        prev = hi[i].v;
    }
    fprintf(f, " %.1f,%.1f", LEFT + fr->w, y_of(fr, prev));
    prev = n ? lo[n - 1].v : 0;
    fprintf(f, " %.1f,%.1f", LEFT + fr->w, y_of(fr, prev));
    for (size_t i = n; i-- > 0;) { /* the process's level, right to left */
        uint64_t before = i ? lo[i - 1].v : 0;
        fprintf(f, " %.1f,%.1f %.1f,%.1f", x_of(fr, lo[i].t), y_of(fr, lo[i].v), x_of(fr, lo[i].t),
                y_of(fr, before));
    }
    fprintf(f, "\"/>\n");
out:
    free(level);
    free(others);
    free(lo);
    free(hi);
}

static void capacity(FILE *f, struct labels *l, const struct frame *fr, uint64_t total)
{
    char a[32], text[64];
    double y = y_of(fr, total);
    snprintf(text, sizeof text, "capacity %s", cmt__bytes(total, a));
    fprintf(f,
            "<line class=\"capacity\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#111\" "
            "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n",
            LEFT, W - RIGHT, y, y);
    double xs[] = {LEFT + 4, LEFT + 4}, ys[] = {y - 4, y + 13};
    int at = place(l, xs, ys, 2, strlen(text));
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n", xs[at], ys[at], text);
}

static void marks(FILE *f, struct labels *l, const struct cmt__pass *pass,
                  const struct cmt_timeline_device *d, const struct cmt_replay_device *rd,
                  const struct frame *fr)
{
    char a[32], text[64];
    /* OOM failures: a dashed line each, its label beside it in the first free row */
    for (uint32_t i = 0; pass->oom && i < cmt_oom_count(pass->oom); i++) {
        const struct cmt_oom_episode *e = cmt_oom_episode(pass->oom, i);
        if (e->dev != d->dev)
            continue;
        double x = x_of(fr, e->t_ns);
        fprintf(f,
                "<line class=\"oom\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"2\" stroke-dasharray=\"4 3\"><title>out of memory: ",
                x, x, TOP, TOP + fr->h, OOM_COLOR);
        xml_text(f, e->api);
        fprintf(f, " %s (%s)</title></line>\n", cmt__bytes(e->request_bytes, a),
                cmt_verdict_name(e->verdict));
        snprintf(text, sizeof text, "OOM %s", cmt__bytes(e->request_bytes, a));
        double w = (double)strlen(text) * CHAR_W, xs[12], ys[12];
        for (int r = 0; r < 6; r++) {
            xs[r] = x + 3, ys[r] = TOP + 10 + 13 * r;
            xs[6 + r] = x - 3 - w, ys[6 + r] = TOP + 10 + 13 * r;
        }
        int at = place(l, xs, ys, 12, strlen(text));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"%s\">%s</text>\n", xs[at],
                ys[at], OOM_COLOR, text);
    }
    /* the peak: a dot, its label above or below it, right or left */
    double px = x_of(fr, rd->peak_t_ns), py = y_of(fr, rd->peak_live_bytes);
    snprintf(text, sizeof text, "peak %s", cmt__bytes(rd->peak_live_bytes, a));
    double w = (double)strlen(text) * CHAR_W, xs[16], ys[16];
    for (int r = 0; r < 8; r++) { /* nearest first: above, below, then further out */
        double dy = r % 2 ? 16 + 14 * (r / 2) : -6 - 14 * (r / 2);
        xs[2 * r] = px + 6, ys[2 * r] = py + dy;
        xs[2 * r + 1] = px - 6 - w, ys[2 * r + 1] = py + dy;
    }
    int at = place(l, xs, ys, 16, strlen(text));
    fprintf(f,
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#000\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n",
            px, py, xs[at], ys[at], text);
}

/* The legend, on its own row under the axis: the kinds present, then the others band and the
 * capacity line when drawn. */
static void legend(FILE *f, struct labels *l, const int *chart, unsigned nchart, unsigned present,
                   int others, int cap)
{
    double x = LEFT, y = PANEL_H - 12;
    for (unsigned k = 0; k < nchart + 2; k++) {
        const char *name = k < nchart    ? cmt_kind_name(chart[k])
                           : k == nchart ? "held by others"
                                         : "capacity";
        if ((k < nchart && !(present >> k & 1)) || (k == nchart && !others) ||
            (k == nchart + 1 && !cap))
            continue;
        if (k < nchart)
            fprintf(f,
                    "<rect class=\"legend\" data-kind=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"10\" "
                    "height=\"10\" fill=\"%s\"/>",
                    name, x, y - 9, colors[(size_t)k % NCOLORS]);
        else if (k == nchart)
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"url(#others)\" "
                    "stroke=\"%s\"/>",
                    x, y - 9, OTHERS_FILL);
        else
            fprintf(f,
                    "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#111\" "
                    "stroke-width=\"1.5\" stroke-dasharray=\"4 2\"/>",
                    x - 2, x + 12, y - 4, y - 4);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n", x + 14, y, name);
        reserve(l, x, y, strlen(name) + 3);
        x += 14 + (double)strlen(name) * CHAR_W + 16;
    }
}

/* The charted kinds that hold memory anywhere in the series, as bits by their place. */
static unsigned present_kinds(const struct cmt_timeline *tl, const struct cmt_timeline_device *d,
                              const int *chart, unsigned nchart)
{
    unsigned present = 0;
    for (uint32_t i = 0; i < tl->max_points; i++)
        for (unsigned k = 0; d->points[i].used && k < nchart; k++)
            if (d->points[i].kind_bytes[chart[k]] || d->points[i].last_kind_bytes[chart[k]])
                present |= 1u << k;
    return present;
}

/* The phase band above the plot: the outermost ranges (depth 0, marks aside; a start/end range
 * and a thread's outermost push alike) as bars on the time axis, coloured by phase, named
 * where the bar is wide enough and in its tooltip. */
static void phase_band(FILE *f, const struct cmt_phases *ph, const struct frame *fr)
{
    const double y = TOP - 12, h = 10;
    double drawn_to = -1; /* a range under a pixel wide where one was drawn adds nothing */
    for (size_t i = 0; i < ph->range_count; i++) {
        const struct cmt_phase_range *r = &ph->ranges[i];
        if (r->action == CMT_RA_MARK || r->depth || r->start_ns >= fr->t_end)
            continue;
        uint64_t end = r->end_ns < fr->t_end ? r->end_ns : fr->t_end;
        double x0 = x_of(fr, r->start_ns), x1 = x_of(fr, end);
        if (x1 - x0 < 1 && x0 < drawn_to)
            continue;
        if (x1 - x0 < 1)
            x1 = x0 + 1;
        drawn_to = x1 > drawn_to ? x1 : drawn_to;
        const char *name = cmt_phases_name(ph, r->phase);
        fprintf(f,
                "<rect class=\"phase\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"%s\" fill-opacity=\"0.5\"><title>",
                x0, y, x1 - x0, h, colors[r->phase % NCOLORS]);
        xml_text(f, name);
        fprintf(f, "</title></rect>\n");
        if ((x1 - x0) > CHAR_W * 0.8 * (double)(strlen(name) + 1)) {
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\">", x0 + 2, y + 8);
            xml_text(f, name);
            fprintf(f, "</text>\n");
        }
    }
}

static void panel(FILE *f, const struct cmt__pass *pass, const struct cmt_timeline *tl,
                  const struct cmt_timeline_device *d, const struct cmt_site_timeline *s, int y0)
{
    int chart[CMT_KIND_COUNT];
    unsigned nchart = cmt_timeline_charted_kinds(chart);
    unsigned present = present_kinds(tl, d, chart, nchart);
    const struct cmt_replay_device *rd = cmt_replay_device(pass->replay, d->dev);
    const struct cmt_site_timeline_device *sd = s ? cmt_site_timeline_device(s, d->dev) : NULL;
    char a[32], b[32], label[160];
    struct frame fr = {W - LEFT - RIGHT, PANEL_H - TOP - BOTTOM, 1, 1};
    for (uint32_t i = 0; i < tl->max_points; i++)
        if (d->points[i].used && d->points[i].last_t_ns > fr.t_end)
            fr.t_end = d->points[i].last_t_ns;
    /* the scale holds the peak, the capacity and what others held on top of the process */
    uint64_t top = rd->peak_live_bytes, total = 0, most_others = 0;
    for (uint32_t i = 0; sd && i < s->max_points; i++) {
        const struct cmt_site_timeline_point *p = &sd->points[i];
        if (!p->sampled)
            continue;
        total = p->total_bytes > total ? p->total_bytes : total;
        most_others = p->others_bytes > most_others ? p->others_bytes : most_others;
        uint64_t t = (uint64_t)i << s->width_shift;
        uint64_t stacked = level_at(tl, d, t < fr.t_end ? t : fr.t_end) + p->others_bytes;
        top = stacked > top ? stacked : top;
    }
    top = total > top ? total : top;
    fr.ymax = top ? (double)top * 1.1 : 1;
    struct labels l = {.n = 0};
    fprintf(f, "<g transform=\"translate(0,%d)\">\n", y0);
    char title[256];
    cmt__device_label(pass->replay, d->dev, label, sizeof label);
    snprintf(title, sizeof title, "%s: peak %s at %s", label, cmt__bytes(rd->peak_live_bytes, a),
             cmt__duration(rd->peak_t_ns, b));
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">", LEFT);
    xml_text(f, title);
    fprintf(f, "</text>\n");
    double title_box[4] = {LEFT, 8, LEFT + 15 * 0.62 * (double)strlen(title), 26};
    memcpy(l.box[l.n++], title_box, sizeof title_box);
    axes(f, &fr);
    phase_band(f, &pass->phases, &fr);
    areas(f, tl, d, &fr, chart, nchart, present);
    if (most_others)
        others_band(f, tl, d, s, sd, &fr);
    fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", LEFT,
            W - RIGHT, TOP + fr.h, TOP + fr.h);
    if (total)
        capacity(f, &l, &fr, total);
    marks(f, &l, pass, d, rd, &fr);
    legend(f, &l, chart, nchart, present, most_others > 0, total > 0);
    fprintf(f, "</g>\n");
}

int cmt__timeline_svg(FILE *f, const struct cmt__pass *pass, const struct cmt_timeline *tl,
                      const struct cmt_site_timeline *samples)
{
    int panels = 0;
    for (uint32_t s = 0; s < tl->device_count; s++) {
        const struct cmt_replay_device *rd = cmt_replay_device(pass->replay, tl->devices[s].dev);
        if (rd && rd->peak_live_bytes)
            panels++;
    }
    int h = (panels ? panels : 1) * PANEL_H;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n",
            W, h, W, h);
    fprintf(f,
            "<defs><pattern id=\"others\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
            "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#eee\"/>"
            "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"%s\" stroke-width=\"3\"/>"
            "</pattern></defs>\n",
            OTHERS_FILL);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
    int y = 0;
    for (uint32_t s = 0; s < tl->device_count; s++) {
        const struct cmt_replay_device *rd = cmt_replay_device(pass->replay, tl->devices[s].dev);
        if (!rd || !rd->peak_live_bytes)
            continue;
        panel(f, pass, tl, &tl->devices[s], samples, y);
        y += PANEL_H;
    }
    if (!panels)
        fprintf(f, "<text x=\"20\" y=\"40\">no device memory was allocated</text>\n");
    fprintf(f, "</svg>\n");
    return ferror(f) ? -1 : 0;
}
