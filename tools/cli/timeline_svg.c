/* timeline_svg.c — a self-contained SVG chart of a timeline: one panel per device, kinds
 * stacked, the peak and out-of-memory failures marked, axes labelled with units. */
#include <inttypes.h>
#include <stdio.h>

#include "pass.h"
#include "output.h"
#include "timeline.h"

#define W 900
#define PANEL_H 260
#define LEFT 90
#define RIGHT 20
#define TOP 40
#define BOTTOM 40

static const char *const colors[] = {"#4e79a7", "#59a14f", "#edc948",
                                     "#f28e2b", "#b07aa1", "#76b7b2"};
#define NCOLORS (sizeof colors / sizeof *colors)

/* @return the length of the well-formed UTF-8 sequence at s (1 to 4), or 0. */
static int utf8_length(const unsigned char *s)
{
    int len = s[0] < 0x80                    ? 1
              : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
              : (s[0] & 0xf0) == 0xe0        ? 3
              : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
                                             : 0;
    for (int k = 1; k < len; k++)
        if ((s[k] & 0xc0) != 0x80)
            return 0;
    if (len == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
        return 0; /* overlong, or a surrogate */
    if (len == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
        return 0; /* overlong, or above U+10FFFF */
    return len;
}

/* Text from the trace (device and API names) may hold markup characters, control bytes (not
 * allowed in XML: dropped) and bytes that are not UTF-8 (each becomes U+FFFD), so the file
 * stays well-formed whatever the trace holds. */
static void xml_text(FILE *f, const char *text)
{
    for (const unsigned char *s = (const unsigned char *)text; *s;) {
        int len = utf8_length(s);
        switch (len ? *s : 0) {
        case 0: fputs("\xef\xbf\xbd", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if (*s >= 0x20 && *s != 0x7f)
                fwrite(s, 1, (size_t)len, f);
        }
        s += len ? len : 1;
    }
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
    /* x axis in time */
    double tstep = nice_step((double)fr->t_end, 6);
    for (double t = 0; t <= (double)fr->t_end; t += tstep) {
        double x = LEFT + t / (double)fr->t_end * fr->w;
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%s"
                "</text>\n",
                x, TOP + fr->h + 16, cmt__duration((uint64_t)t, a));
    }
    fprintf(f,
            "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">time since "
            "start</text>\n",
            LEFT + fr->w / 2, PANEL_H - 4);
}

static void areas(FILE *f, const struct cmt_timeline *tl, const struct cmt_timeline_device *d,
                  const struct frame *fr, const int *chart, unsigned nchart)
{
    /* stacked kinds: cumulative polygons from the top layer down, drawn as steps (memory
     * holds its level until the next change): each bucket up to its maximum, then down to
     * its last value */
    for (int k = (int)nchart - 1; k >= 0; k--) {
        fprintf(f, "<polygon fill=\"%s\" fill-opacity=\"0.85\" points=\"%d,%.1f",
                colors[(size_t)k % NCOLORS], LEFT, TOP + fr->h);
        double last_y = TOP + fr->h;
        for (uint32_t i = 0; i < tl->max_points; i++) {
            const struct cmt_timeline_point *p = &d->points[i];
            if (!p->used)
                continue;
            uint64_t sum = 0, sum_last = 0;
            for (int j = 0; j <= k; j++) {
                sum += p->kind_bytes[chart[j]];
                sum_last += p->last_kind_bytes[chart[j]];
            }
            double x = LEFT + (double)p->t_ns / (double)fr->t_end * fr->w;
            double y = TOP + fr->h - (double)sum / fr->ymax * fr->h;
            fprintf(f, " %.1f,%.1f %.1f,%.1f", x, last_y, x, y);
            last_y = y;
            if (sum_last != sum) {
                x = LEFT + (double)p->last_t_ns / (double)fr->t_end * fr->w;
                last_y = TOP + fr->h - (double)sum_last / fr->ymax * fr->h;
                fprintf(f, " %.1f,%.1f %.1f,%.1f", x, y, x, last_y);
            }
        }
        fprintf(f, " %.1f,%.1f\"/>\n", LEFT + fr->w, TOP + fr->h);
    }
    fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", LEFT,
            W - RIGHT, TOP + fr->h, TOP + fr->h);
}

static void marks(FILE *f, const struct cmt__pass *pass, const struct cmt_timeline_device *d,
                  const struct cmt_replay_device *rd, const struct frame *fr)
{
    char a[32];
    /* OOM failures and the peak */
    for (uint32_t i = 0; pass->oom && i < cmt_oom_count(pass->oom); i++) {
        const struct cmt_oom_episode *e = cmt_oom_episode(pass->oom, i);
        if (e->dev != d->dev)
            continue;
        double x = LEFT + (double)e->t_ns / (double)fr->t_end * fr->w;
        fprintf(f,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\" stroke=\"#e15759\" "
                "stroke-width=\"2\" stroke-dasharray=\"4 3\"><title>out of memory: ",
                x, x, TOP, TOP + fr->h);
        xml_text(f, e->api);
        fprintf(f, " %s (%s)</title></line>\n", cmt__bytes(e->request_bytes, a),
                cmt_verdict_name(e->verdict));
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" fill=\"#e15759\">OOM</text>\n",
                x + 3, TOP + 10);
    }
    double px = LEFT + (double)rd->peak_t_ns / (double)fr->t_end * fr->w;
    double py = TOP + fr->h - (double)rd->peak_live_bytes / fr->ymax * fr->h;
    fprintf(f,
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#000\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">peak %s</text>\n",
            px, py, px + 6, py - 6, cmt__bytes(rd->peak_live_bytes, a));
}

static void legend(FILE *f, const int *chart, unsigned nchart)
{
    /* legend */
    for (size_t k = 0; k < nchart; k++)
        fprintf(f,
                "<rect x=\"%zu\" y=\"28\" width=\"10\" height=\"10\" fill=\"%s\"/><text "
                "x=\"%zu\" y=\"37\" font-size=\"11\">%s</text>\n",
                (size_t)W - 560 + k * 110, colors[(size_t)k % NCOLORS], (size_t)W - 546 + k * 110,
                cmt_kind_name(chart[k]));
}

static void panel(FILE *f, const struct cmt__pass *pass, const struct cmt_timeline *tl,
                  const struct cmt_timeline_device *d, int y0)
{
    int chart[CMT_KIND_COUNT];
    unsigned nchart = cmt_timeline_charted_kinds(chart);
    const struct cmt_replay_device *rd = cmt_replay_device(pass->replay, d->dev);
    char a[32], b[32], label[160];
    struct frame fr = {W - LEFT - RIGHT, PANEL_H - TOP - BOTTOM, 1, 1};
    for (uint32_t i = 0; i < tl->max_points; i++)
        if (d->points[i].used && d->points[i].last_t_ns > fr.t_end)
            fr.t_end = d->points[i].last_t_ns;
    fr.ymax = rd->peak_live_bytes ? (double)rd->peak_live_bytes * 1.1 : 1;
    fprintf(f, "<g transform=\"translate(0,%d)\">\n", y0);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">", LEFT);
    xml_text(f, cmt__device_label(pass->replay, d->dev, label, sizeof label));
    fprintf(f, ": peak %s at %s</text>\n", cmt__bytes(rd->peak_live_bytes, a),
            cmt__duration(rd->peak_t_ns, b));
    axes(f, &fr);
    areas(f, tl, d, &fr, chart, nchart);
    marks(f, pass, d, rd, &fr);
    legend(f, chart, nchart);
    fprintf(f, "</g>\n");
}

int cmt__timeline_svg(FILE *f, const struct cmt__pass *pass, const struct cmt_timeline *tl)
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
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
    int y = 0;
    for (uint32_t s = 0; s < tl->device_count; s++) {
        const struct cmt_replay_device *rd = cmt_replay_device(pass->replay, tl->devices[s].dev);
        if (!rd || !rd->peak_live_bytes)
            continue;
        panel(f, pass, tl, &tl->devices[s], y);
        y += PANEL_H;
    }
    if (!panels)
        fprintf(f, "<text x=\"20\" y=\"40\">no device memory was allocated</text>\n");
    fprintf(f, "</svg>\n");
    return ferror(f) ? -1 : 0;
}
