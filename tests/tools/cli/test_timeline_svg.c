/* Tests of the SVG chart (timeline_svg.c): the capacity line, the band of memory held by other
 * processes, a legend of the kinds present in their areas' colours, labels that do not overlap. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "commands.h"
#include "trace_builder.h"

#define CHAR_W 6.5 /* what the chart places labels by, for an 11 px character */

/* The chart of the trace in b (finished), as a string (free it). */
static char *chart(struct tb *b, int index)
{
    const char *path = temp_trace(b->buf.data, b->buf.len, index);
    tb_free_builder(b);
    char svg[128];
    struct captured c = capture_svg(cmt_cmd_timeline, path, svg, sizeof svg);
    cr_assert_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    FILE *f = fopen(svg, "r");
    cr_assert_not_null(f);
    char *body = calloc(1, 1 << 20);
    cr_expect_gt(fread(body, 1, (1 << 20) - 1, f), 0);
    fclose(f);
    remove(svg);
    return body;
}

/* 6 GiB of cuMemAlloc on a 24 GiB device; `free_bytes` free in a sample after it. */
static char *six_gib(uint64_t free_bytes)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "weights", 2);
    tb_alloc(&b, 0x100000000, 6 * TB_GIB, s);
    tb_meminfo(&b, CMT_MEMINFO_OOM, free_bytes, 24 * TB_GIB, b.seq);
    tb_alloc(&b, 0x300000000, TB_GIB, s);
    tb_finish(&b, 1);
    return chart(&b, 0);
}

Test(timeline_svg, draws_the_capacity_line_at_the_devices_total)
{
    char *body = six_gib(18 * TB_GIB);
    const char *line = strstr(body, "<line class=\"capacity\"");
    cr_assert(line, "%s", body);
    /* the scale is 1.1 x the capacity over the 180 px plot that ends at y 220 */
    char y[64];
    snprintf(y, sizeof y, "y1=\"%.1f\"", 220.0 - 24.0 / (24.0 * 1.1) * 180.0);
    cr_expect(strstr(line, y) && strstr(line, y) < strchr(line, '>'), "%s: %.200s", y, line);
    cr_expect(strstr(body, ">capacity 24.00 GiB</text>"), "%s", body);
    free(body);
}

Test(timeline_svg, draws_the_memory_held_by_others_from_the_samples)
{
    /* 24 - 4 = 20 GiB used, 6 of them this process's: 14 GiB held by others */
    char *body = six_gib(4 * TB_GIB);
    const char *band = strstr(body, "<polygon class=\"others\"");
    cr_assert(band, "%s", body);
    /* its top reaches 6 + 14 = 20 GiB */
    char y[64];
    snprintf(y, sizeof y, ",%.1f ", 220.0 - 20.0 / (24.0 * 1.1) * 180.0);
    cr_expect(strstr(band, y) && strstr(band, y) < strchr(band, '>'), "%s: %.300s", y, band);
    cr_expect(strstr(body, ">held by others</text>"), "in the legend");
    free(body);
    /* free memory that is all this process's to explain: no band, none in the legend */
    body = six_gib(18 * TB_GIB);
    cr_expect(!strstr(body, "class=\"others\""), "%s", body);
    cr_expect(!strstr(body, "held by others"), "%s", body);
    free(body);
}

/* The value of attribute `name` in the element starting at e. */
static const char *attr(const char *e, const char *name, char *buf, size_t size)
{
    char key[64];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *end = strchr(e, '>'), *a = strstr(e, key);
    buf[0] = 0;
    if (a && a < end) {
        a += strlen(key);
        size_t n = (size_t)(strchr(a, '"') - a);
        snprintf(buf, size, "%.*s", (int)(n < size ? n : size - 1), a);
    }
    return buf;
}

Test(timeline_svg, the_legend_lists_the_kinds_present_in_their_areas_colours)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "mixed", 2);
    tb_alloc(&b, 0x100000000, 2 * TB_GIB, s);
    uint64_t async[] = {0x500000000, TB_GIB, 0x1};
    tb_event(&b, TB_ALLOC_ASYNC, 0, 0, s, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM), async);
    tb_finish(&b, 1);
    char *body = chart(&b, 1);
    int legends = 0;
    char kind[32], fill[32], want[160];
    for (const char *e = body; (e = strstr(e, "<rect class=\"legend\"")); e++, legends++) {
        attr(e, "data-kind", kind, sizeof kind);
        attr(e, "fill", fill, sizeof fill);
        cr_expect(strcmp(kind, "device") == 0 || strcmp(kind, "async") == 0, "absent: %s", kind);
        snprintf(want, sizeof want, "<polygon class=\"kind\" data-kind=\"%s\" fill=\"%s\"", kind,
                 fill);
        cr_expect(strstr(body, want), "the area of %s is drawn in the legend's %s", kind, fill);
    }
    cr_expect_eq(legends, 2, "%s", body);
    int areas = 0;
    for (const char *e = body; (e = strstr(e, "<polygon class=\"kind\"")); e++)
        areas++;
    cr_expect_eq(areas, 2, "an area only for the kinds present");
    free(body);
}

struct box {
    double x0, y0, x1, y1;
    char text[64];
};

/* Every <text> of the chart as the box the chart places it by. @return how many. */
static int text_boxes(const char *body, struct box *out, int max)
{
    int n = 0;
    char v[64];
    for (const char *e = body; n < max && (e = strstr(e, "<text ")); e++) {
        double x = atof(attr(e, "x", v, sizeof v)), y = atof(attr(e, "y", v, sizeof v));
        double size = atof(attr(e, "font-size", v, sizeof v));
        const char *t = strchr(e, '>') + 1;
        size_t len = (size_t)(strstr(t, "</text>") - t);
        double w = (double)len * (size > 11 ? size * 0.62 : CHAR_W), h = size > 11 ? 14 : 10;
        attr(e, "text-anchor", v, sizeof v);
        double x0 = strcmp(v, "end") == 0 ? x - w : strcmp(v, "middle") == 0 ? x - w / 2 : x;
        out[n] = (struct box){x0, y - h, x0 + w, y + 2, ""};
        snprintf(out[n].text, sizeof out[n].text, "%.*s", (int)(len < 63 ? len : 63), t);
        n++;
    }
    return n;
}

Test(timeline_svg, labels_do_not_overlap)
{
    /* three failed requests and the peak crowded at the right edge */
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "crowd", 2);
    tb_alloc(&b, 0x100000000, 2 * TB_GIB, s);
    b.t_ns = 100000000;
    tb_alloc(&b, 0x300000000, 20 * TB_GIB, s);
    tb_alloc_fail(&b, 8 * TB_GIB, s);
    tb_alloc_fail(&b, 9 * TB_GIB, s);
    tb_alloc_fail(&b, 10 * TB_GIB, s);
    tb_finish(&b, 1);
    char *body = chart(&b, 2);
    struct box boxes[128];
    int n = text_boxes(body, boxes, 128);
    cr_expect_geq(n, 10);
    int ooms = 0;
    for (int i = 0; i < n; i++) {
        ooms += strncmp(boxes[i].text, "OOM ", 4) == 0;
        cr_expect(boxes[i].x0 >= 0 && boxes[i].x1 <= 900, "inside: '%s'", boxes[i].text);
        for (int j = 0; j < i; j++) {
            const struct box *p = &boxes[i], *q = &boxes[j];
            cr_expect(!(p->x0 < q->x1 && q->x0 < p->x1 && p->y0 < q->y1 && q->y0 < p->y1),
                      "'%s' (%.0f,%.0f) overlaps '%s' (%.0f,%.0f)", p->text, p->x0, p->y0, q->text,
                      q->x0, q->y0);
        }
    }
    cr_expect_eq(ooms, 3, "%s", body);
    free(body);
}
