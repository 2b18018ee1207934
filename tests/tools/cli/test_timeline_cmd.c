/* Tests of `timeline`'s figures: drops inside a bucket stay visible, releases recorded without
 * a device lower their device's series, the axis ends with the trace (issue 12 item 8). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "commands.h"
#include "trace_builder.h"

#define MS UINT64_C(1000000)

/* 4 GiB allocated and freed at once, then nothing but a cuMemGetInfo at 300 ms. */
static const char *freed_early_trace(int index)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "big_buffer", 2);
    tb_alloc(&b, 0x700000000000, 4 * TB_GIB, s);
    tb_free(&b, 0x700000000000);
    b.t_ns = 300 * MS - 1000;
    uint64_t v[] = {20 * TB_GIB, 24 * TB_GIB};
    tb_event(&b, TB_INFO, 0, 0, 0, CMT_F(FREE) | CMT_F(TOTAL), v);
    tb_finish(&b, 0);
    const char *path = temp_trace(b.buf.data, b.buf.len, index);
    tb_free_builder(&b);
    return path;
}

Test(timeline_cmd, csv_and_json_keep_each_buckets_last_value)
{
    const char *path = freed_early_trace(0);
    const char *argv[] = {"timeline", "--csv", path, NULL};
    struct captured c = capture_run(cmt_cmd_timeline, argv);
    cr_expect_eq(c.status, 0);
    cr_expect(strstr(c.out, ",oom,peak,last_t_ns,last_live_bytes\n"), "%s", c.out);
    /* the first bucket: 4 GiB at its maximum, 0 at its end (the free at 2 us) */
    cr_expect(strstr(c.out, "\n1000,0,4294967296,") && strstr(c.out, ",1,2000,0\n"), "%s", c.out);
    captured_free(&c);
    const char *jargv[] = {"timeline", "--json", path, NULL};
    c = capture_run(cmt_cmd_timeline, jargv);
    cr_expect_eq(c.status, 0);
    cr_expect(strstr(c.out, "\"live_bytes\":4294967296,"), "%s", c.out);
    cr_expect(strstr(c.out, "\"last_t_ns\":2000,\"last_live_bytes\":0}"), "%s", c.out);
    captured_free(&c);
}

Test(timeline_cmd, sparkline_drops_after_a_free_and_its_axis_ends_with_the_trace)
{
    const char *path = freed_early_trace(0);
    const char *argv[] = {"timeline", path, NULL};
    struct captured c = capture_run(cmt_cmd_timeline, argv);
    cr_expect_eq(c.status, 0);
    /* the peak's cell, then nothing held until the sample at 300 ms */
    cr_expect(strstr(c.out, "\n  █▁▁▁▁"), "%s", c.out);
    cr_expect(strstr(c.out, "  0 .. 300.00 ms\n"), "%s", c.out);
    cr_expect(!strstr(c.out, "██"), "%s", c.out);
    captured_free(&c);
}

Test(timeline_cmd, svg_draws_the_drop)
{
    const char *path = freed_early_trace(0);
    char svg[128];
    struct captured c = capture_svg(cmt_cmd_timeline, path, svg, sizeof svg);
    cr_expect_eq(c.status, 0);
    FILE *f = fopen(svg, "r");
    cr_assert_not_null(f);
    static char body[1 << 16];
    size_t n = fread(body, 1, sizeof body - 1, f);
    body[n] = 0;
    fclose(f);
    remove(svg);
    /* the device kind's area: up at 1 us and down at 2 us, both at the left edge (x 90); at
     * the right edge (x 880, the sample at 300 ms) it lies on the axis (y 220) */
    const char *poly = strstr(body, "data-kind=\"device\" fill=\"#4e79a7\"");
    cr_assert(poly, "%s", body);
    const char *end = strchr(poly, '>');
    cr_expect(strstr(poly, " 90.0,220.0 880.0,220.0") < end, "%.400s", poly);
    for (const char *p = poly; (p = strstr(p, " 880.0,")) && p < end; p++)
        cr_expect(strncmp(p + 7, "220.0", 5) == 0, "held to the end: %.400s", poly);
    captured_free(&c);
}

/* 1 GiB of physical memory on device 0, released and unmapped by calls recorded with dev -1
 * (the shim records the current context's device; these calls need none), at 100 ms. */
Test(timeline_cmd, releases_without_a_device_lower_their_devices_series)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "vmm", 2);
    uint64_t create[] = {TB_GIB, 0xabc};
    tb_event(&b, TB_CREATE, 0, 0, s, CMT_F(SIZE) | CMT_F(HANDLE), create);
    uint64_t reserve[] = {0x7f0000000000, TB_GIB};
    tb_event(&b, TB_RESERVE, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE), reserve);
    uint64_t map[] = {0x7f0000000000, TB_GIB, 0xabc};
    tb_event(&b, TB_MAP, 0, 0, 0, CMT_F(PTR) | CMT_F(SIZE) | CMT_F(HANDLE), map);
    b.t_ns = 100 * MS - 2000;
    uint64_t release[] = {0xabc};
    tb_event(&b, TB_RELEASE, 0, -1, 0, CMT_F(HANDLE), release);
    uint64_t unmap[] = {0x7f0000000000, TB_GIB};
    tb_event(&b, TB_UNMAP, 0, -1, 0, CMT_F(PTR) | CMT_F(SIZE), unmap);
    b.t_ns = 300 * MS - 1000;
    uint64_t v[] = {24 * TB_GIB, 24 * TB_GIB};
    tb_event(&b, TB_INFO, 0, 0, 0, CMT_F(FREE) | CMT_F(TOTAL), v);
    tb_finish(&b, 0);
    const char *path = temp_trace(b.buf.data, b.buf.len, 1);
    tb_free_builder(&b);

    const char *argv[] = {"timeline", "--csv", path, NULL};
    struct captured c = capture_run(cmt_cmd_timeline, argv);
    cr_expect_eq(c.status, 0);
    /* device 0's own row at 100 ms, with nothing left; no series for "device -1" */
    cr_expect(strstr(c.out, "\n100000000,0,0,"), "%s", c.out);
    cr_expect(!strstr(c.out, ",-1,"), "%s", c.out);
    captured_free(&c);
    const char *targv[] = {"timeline", path, NULL};
    c = capture_run(cmt_cmd_timeline, targv);
    /* held for 11 cells of 8.4 ms, then released */
    cr_expect(strstr(c.out, "\n  ███████████▁") && !strstr(c.out, "████████████"), "%s", c.out);
    captured_free(&c);
}

/* The summary takes no sampled hole measures (cmt_timeline_set_no_holes), yet its line at the
 * peak measures the peak's live set: 1 GiB between two buffers; the CSV's peak row has it too. */
Test(timeline_cmd, summary_measures_the_peaks_gaps_without_the_sampling)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "two_buffers", 2);
    tb_alloc(&b, 0x700000000000, TB_GIB, s);
    tb_alloc(&b, 0x700000000000 + 2 * TB_GIB, TB_GIB, s);
    tb_finish(&b, 0);
    const char *path = temp_trace(b.buf.data, b.buf.len, 2);
    tb_free_builder(&b);

    const char *argv[] = {"timeline", path, NULL};
    struct captured c = capture_run(cmt_cmd_timeline, argv);
    cr_expect_eq(c.status, 0);
    cr_expect(strstr(c.out, "at the peak: address gaps 1.00 GiB (largest 1.00 GiB, "
                            "fragmentation 0.00;"),
              "%s", c.out);
    captured_free(&c);
    const char *cargv[] = {"timeline", "--csv", path, NULL};
    c = capture_run(cmt_cmd_timeline, cargv);
    cr_expect_eq(c.status, 0);
    cr_expect(strstr(c.out, ",2,1073741824,1073741824,0.0000,0,"), "%s", c.out);
    captured_free(&c);
}
