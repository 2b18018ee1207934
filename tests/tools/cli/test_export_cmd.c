/* Tests of `cumemtrace export`: every format is produced and validated (perfetto JSON against
 * the trace-event format, folded stacks parsed back, the memory-viz pickle loaded by Python
 * with the snapshot structure; check_export.py does the Python side), the tables' columns are
 * the documented ones, the weights and sums agree with `report --json`, and bad options give
 * one line and exit 2. Python checks skip without python3, except in CI (CI=true). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "commands.h"
#include "trace_builder.h"

#define P0 UINT64_C(0x700000000000)

/* Two call sites on a 24 GiB device: 3 x 1 GiB layers (one freed), 10 x 512 KiB activations
 * (5 freed), a frame whose name holds ';' and bytes that are not UTF-8, an OOM (a 30 GiB
 * request over capacity), a retry that fails: fatal; no END (a crashed run). */
static const char *export_trace(int index)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 23 * TB_GIB);
    uint32_t layer = tb_stack(&b, "layer", 3);
    uint32_t act = tb_frame(&b, tb_stack(&b, "forward", 2), "ops::act;fused\xff");
    cmt_writer_env(b.w, "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False");
    for (int i = 0; i < 3; i++)
        tb_alloc(&b, P0 + (uint64_t)i * 2 * TB_GIB, TB_GIB, layer);
    for (int i = 0; i < 10; i++)
        tb_alloc(&b, P0 + 64 * TB_GIB + (uint64_t)i * TB_MIB, 512 * 1024, act);
    tb_free(&b, P0 + 2 * TB_GIB);
    for (int i = 0; i < 10; i += 2)
        tb_free(&b, P0 + 64 * TB_GIB + (uint64_t)i * TB_MIB);
    uint64_t seq = tb_alloc_fail(&b, 30 * TB_GIB, layer);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 20 * TB_GIB, 24 * TB_GIB, seq);
    seq = tb_alloc_fail(&b, 30 * TB_GIB, layer);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 20 * TB_GIB, 24 * TB_GIB, seq);
    tb_finish(&b, 0);
    const char *path = temp_trace(b.buf.data, b.buf.len, index);
    tb_free_builder(&b);
    return path;
}

/* Runs a command with its stdout saved to `out`. @return its status. */
static int run_to(int (*fn)(int, char **), const char *const *argv, const char *out)
{
    struct captured c = capture_run(fn, argv);
    FILE *f = fopen(out, "w");
    cr_assert_not_null(f);
    fputs(c.out, f);
    fclose(f);
    int status = c.status;
    captured_free(&c);
    return status;
}

/* python3 check_export.py ARGS: 0 when it passes; skips the test without python3 outside CI. */
static int check(const char *args)
{
    const char *ci = getenv("CI");
    if (system("python3 -c 'import pickle, json' >/dev/null 2>&1") != 0) {
        if (ci && strcmp(ci, "true") == 0)
            cr_assert_fail("python3 is needed in CI to check the exports");
        cr_skip_test("python3 is not installed: the export checks need it");
    }
    const char *src = getenv("CMT_SOURCE_DIR");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 %s/tests/tools/cli/check_export.py %s", src ? src : ".",
             args);
    return system(cmd);
}

static char report_json[128], oom_json[128];

/* The trace and its report --json and oom --json, saved beside it. */
static const char *prepared(int index)
{
    const char *path = export_trace(index);
    snprintf(report_json, sizeof report_json, "%s.report.json", path);
    snprintf(oom_json, sizeof oom_json, "%s.oom.json", path);
    const char *rargv[] = {"report", "--json", path, NULL};
    run_to(cmt_cmd_report, rargv, report_json);
    const char *oargv[] = {"oom", "--json", path, NULL};
    run_to(cmt_cmd_oom, oargv, oom_json);
    return path;
}

static void cleanup(const char *path, const char *out)
{
    remove(report_json);
    remove(oom_json);
    remove(out);
    remove(path);
}

Test(export_cmd, perfetto_is_trace_event_json_with_counters_slices_and_the_oom)
{
    const char *path = prepared(0);
    char out[160], args[512];
    snprintf(out, sizeof out, "%s.json", path);
    const char *argv[] = {"export", "--format", "perfetto", "--min-slice", "1048576",
                          "-o",     out,        path,       NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    FILE *f = fopen(out, "r");
    cr_assert_not_null(f);
    static char body[1 << 18];
    body[fread(body, 1, sizeof body - 1, f)] = 0;
    fclose(f);
    /* the layers are slices named by their call site; the activations are below --min-slice */
    cr_expect(strstr(body, "\"ph\":\"b\",\"cat\":\"allocation\",\"name\":\"layer_0\""), "%s", body);
    cr_expect(!strstr(body, "\"name\":\"ops::act"), "activations are no slices");
    cr_expect(strstr(body, "\"verdict\":\"over_capacity\""), "%s", body);
    snprintf(args, sizeof args, "perfetto %s %s %s", out, report_json, oom_json);
    cr_expect_eq(check(args), 0);
    cleanup(path, out);
}

/* Parses folded stacks: @return the sum of the weights; *lines and the first line's stack. */
static uint64_t folded_sum(const char *text, int *lines, char *first, size_t size)
{
    uint64_t sum = 0;
    *lines = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        cr_assert(nl, "every line ends: %s", p);
        const char *sp = nl;
        while (sp > p && sp[-1] != ' ')
            sp--;
        cr_assert(sp > p, "a weight after the last space: %.*s", (int)(nl - p), p);
        if (!*lines)
            snprintf(first, size, "%.*s", (int)(sp - 1 - p), p);
        sum += strtoull(sp, NULL, 10);
        (*lines)++;
        p = nl + 1;
    }
    return sum;
}

static uint64_t json_u64(const char *json, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(json, k);
    cr_assert(p, "%s in %s", key, json);
    return strtoull(p + strlen(k), NULL, 10);
}

Test(export_cmd, collapsed_weights_sum_to_the_reports_figures)
{
    const char *path = export_trace(1);
    const char *rargv[] = {"report", "--json", path, NULL};
    struct captured r = capture_run(cmt_cmd_report, rargv);
    uint64_t peak = json_u64(r.out, "peak_live_bytes");
    uint64_t leaked = json_u64(r.out, "live_bytes_at_end");
    uint64_t calls = json_u64(r.out, "alloc_calls"),
             failed = json_u64(strstr(r.out, "\"devices\""), "failures");
    captured_free(&r);
    static const char *weights[] = {"peak", "leaked", "count"};
    uint64_t want[] = {peak, leaked, calls - failed};
    for (int w = 0; w < 3; w++) {
        const char *argv[] = {"export", "-f", "collapsed", "--weight", weights[w], path, NULL};
        struct captured c = capture_run(cmt_cmd_export, argv);
        cr_expect_eq(c.status, 0, "%s", c.err);
        int lines;
        char first[1024];
        cr_expect_eq(folded_sum(c.out, &lines, first, sizeof first), want[w], "%s: %s", weights[w],
                     c.out);
        cr_expect_eq(lines, 2, "one line per call site: %s", c.out);
        /* root first, the frame's ';' turned into ':' so the stack keeps its frames */
        cr_expect(strstr(c.out, "layer_2;layer_1;layer_0 "), "%s", c.out);
        cr_expect(strstr(c.out, "forward_1;forward_0;ops::act:fused"), "%s", c.out);
        captured_free(&c);
    }
    remove(path);
}

Test(export_cmd, collapsed_weights_pass_the_python_check)
{
    const char *path = prepared(2);
    char out[160], args[512];
    snprintf(out, sizeof out, "%s.folded", path);
    static const char *weights[] = {"peak", "leaked", "count"};
    for (int w = 0; w < 3; w++) {
        const char *argv[] = {"export", "-f", "collapsed", "--weight", weights[w],
                              "-o",     out,  path,        NULL};
        struct captured c = capture_run(cmt_cmd_export, argv);
        cr_expect_eq(c.status, 0, "%s", c.err);
        captured_free(&c);
        snprintf(args, sizeof args, "collapsed:%s %s %s", weights[w], out, report_json);
        cr_expect_eq(check(args), 0, "%s", weights[w]);
    }
    cleanup(path, out);
}

Test(export_cmd, memory_viz_pickle_loads_as_a_snapshot_whose_segments_hold_the_live_bytes)
{
    const char *path = prepared(3);
    char out[160], args[512];
    snprintf(out, sizeof out, "%s.pickle", path);
    const char *argv[] = {"export", "--format=memory-viz", "--output", out, path, NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    snprintf(args, sizeof args, "memory-viz %s %s", out, report_json);
    cr_expect_eq(check(args), 0);
    cleanup(path, out);
}

/* An allocator's event; requested 0: the event has no REQUESTED field; figures: a free
 * request carries the allocator's figures after it. */
static void write_alloc_event(struct tb *b, uint32_t action, uint64_t addr, uint64_t size,
                              uint64_t requested, uint32_t stack, uint32_t flags, int figures)
{
    b->t_ns += 1000;
    struct cmt_alloc_event e = {.allocator = 1,
                                .action = action,
                                .t_ns = b->t_ns,
                                .tid = 77,
                                .dev = 0,
                                .stack = stack,
                                .fields = CMT_AF(ADDR) | CMT_AF(SIZE) | CMT_AF(FLAGS)};
    e.v[CMT_AFIELD_ADDR] = addr;
    e.v[CMT_AFIELD_SIZE] = size;
    e.v[CMT_AFIELD_FLAGS] = flags;
    if (requested) {
        e.fields |= CMT_AF(REQUESTED);
        e.v[CMT_AFIELD_REQUESTED] = requested;
    }
    if (figures && action == CMT_AA_FREE_REQUESTED) { /* the allocator's figures after it */
        e.fields |= CMT_AF(ALLOCATED) | CMT_AF(RESERVED);
        e.v[CMT_AFIELD_ALLOCATED] = 5 * TB_MIB + addr % TB_MIB;
        e.v[CMT_AFIELD_RESERVED] = 20 * TB_MIB;
    }
    cr_assert_eq(cmt_writer_alloc_event(b->w, &e), 0);
}

static void alloc_event_requested(struct tb *b, uint32_t action, uint64_t addr, uint64_t size,
                                  uint64_t requested, uint32_t stack, uint32_t flags)
{
    write_alloc_event(b, action, addr, size, requested, stack, flags, 1);
}

static void alloc_event(struct tb *b, uint32_t action, uint64_t addr, uint64_t size, uint32_t stack,
                        uint32_t flags)
{
    alloc_event_requested(b, action, addr, size, 0, stack, flags);
}

/* Exports the trace at path as memory-viz and checks the pickle against `report --json` and
 * the segments, actions (and where given sizes, unframed actions) of the JSON `expected`. */
static void export_as_expected(const char *path, const char *expected)
{
    char out[160], report[160], expect[160], args[600];
    snprintf(out, sizeof out, "%s.pickle", path);
    snprintf(report, sizeof report, "%s.report.json", path);
    snprintf(expect, sizeof expect, "%s.expect.json", path);
    const char *rargv[] = {"report", "--json", path, NULL};
    run_to(cmt_cmd_report, rargv, report);
    FILE *f = fopen(expect, "w");
    cr_assert_not_null(f);
    fputs(expected, f);
    fclose(f);
    const char *argv[] = {"export", "-f", "memory-viz", "-o", out, path, NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    snprintf(args, sizeof args, "memory-viz-expect %s %s %s", out, report, expect);
    cr_expect_eq(check(args), 0);
    remove(expect);
    remove(report);
    remove(out);
}

/* A trace begun for a caching allocator's events (its ALLOCATOR record with settings conf).
 * @return a stack for them. */
static uint32_t allocator_trace(struct tb *b, const char *conf)
{
    tb_begin(b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(b, "tensor", 2);
    struct cmt_alloc_info info = {1, 0, 0, "pytorch-cuda-caching", "2.6.0", conf};
    cr_assert_eq(cmt_writer_alloc_info(b->w, &info), 0);
    return s;
}

/* A caching allocator's own events beside its driver calls: a 20 MiB segment with a block
 * allocated, one freed, one free requested but not completed, one from before the recorded
 * window; a small segment got and given back. */
Test(export_cmd, memory_viz_shows_an_allocators_segments_and_blocks_from_its_events)
{
    struct tb b;
    uint32_t s = allocator_trace(&b, "max_split_size_mb:64");
    const uint64_t S = P0, T = P0 + TB_GIB;
    tb_alloc(&b, S, 20 * TB_MIB, s);
    alloc_event(&b, CMT_AA_SEGMENT_ALLOC, S, 20 * TB_MIB, s, 0);
    alloc_event(&b, CMT_AA_ALLOC, S + 12 * TB_MIB, TB_MIB, s, CMT_AFLAG_BEFORE);
    alloc_event(&b, CMT_AA_ALLOC, S, 4 * TB_MIB, s, 0);
    alloc_event(&b, CMT_AA_ALLOC, S + 4 * TB_MIB, 2 * TB_MIB, s, 0);
    alloc_event(&b, CMT_AA_FREE_REQUESTED, S + 4 * TB_MIB, 2 * TB_MIB, s, 0);
    alloc_event(&b, CMT_AA_FREE_COMPLETED, S + 4 * TB_MIB, 2 * TB_MIB, s, 0);
    alloc_event(&b, CMT_AA_ALLOC, S + 8 * TB_MIB, TB_MIB, s, 0);
    alloc_event(&b, CMT_AA_FREE_REQUESTED, S + 8 * TB_MIB, TB_MIB, s, 0);
    tb_alloc(&b, T, 2 * TB_MIB, s);
    alloc_event(&b, CMT_AA_SEGMENT_ALLOC, T, 2 * TB_MIB, s, CMT_AFLAG_SMALL);
    alloc_event(&b, CMT_AA_SEGMENT_FREE, T, 2 * TB_MIB, s, CMT_AFLAG_SMALL);
    tb_free(&b, T);
    tb_finish(&b, 1);
    const char *path = temp_trace(b.buf.data, b.buf.len, 6);
    tb_free_builder(&b);
    char expected[2048];
    const uint64_t M = TB_MIB;
    snprintf(expected, sizeof expected,
             "{\"segments\": [{\"address\": %llu, \"total_size\": %llu, \"allocated_size\": "
             "%llu, \"active_size\": %llu, \"segment_type\": \"large\", \"blocks\": ["
             "[0, %llu, \"active_allocated\"], [%llu, %llu, \"inactive\"], "
             "[%llu, %llu, \"active_pending_free\"], [%llu, %llu, \"inactive\"], "
             "[%llu, %llu, \"active_allocated\"], [%llu, %llu, \"inactive\"]]}], "
             "\"actions\": [\"segment_alloc\", \"alloc\", \"alloc\", \"free_requested\", "
             "\"free_completed\", \"alloc\", \"free_requested\", \"segment_alloc\", "
             "\"segment_free\"], \"conf\": \"max_split_size_mb:64\"}\n",
             (unsigned long long)S, (unsigned long long)(20 * M), (unsigned long long)(5 * M),
             (unsigned long long)(6 * M), (unsigned long long)(4 * M), (unsigned long long)(4 * M),
             (unsigned long long)(4 * M), (unsigned long long)(8 * M), (unsigned long long)M,
             (unsigned long long)(9 * M), (unsigned long long)(3 * M), (unsigned long long)(12 * M),
             (unsigned long long)M, (unsigned long long)(13 * M), (unsigned long long)(7 * M));
    export_as_expected(path, expected);
    /* perfetto: the allocator's figures as a counter track beside the driver's */
    const char *pargv[] = {"export", "-f", "perfetto", path, NULL};
    struct captured c = capture_run(cmt_cmd_export, pargv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "\"name\":\"GPU 0 allocator\""), "%s", c.out);
    cr_expect(strstr(c.out, "\"args\":{\"allocated\":5242880,\"reserved\":20971520,"
                            "\"inactive_split\":"),
              "%s", c.out);
    captured_free(&c);
    remove(path);
}

/* An expandable segment as c10 reports it: one segment per contiguous mapped range, its size
 * the bytes mapped, a block spanning two maps inside it, an unmap splitting the range in two;
 * the trace's alloc and free entries carry the request (c10's), not the block's size; a
 * snapshot entry the bytes active then, and no frames. */
Test(export_cmd, memory_viz_writes_mapped_ranges_as_segments_and_requests_in_the_trace)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "tensor", 2);
    struct cmt_alloc_info info = {
        1, 0, 0, "pytorch-cuda-caching", "2.6.0", "expandable_segments:True"};
    cr_assert_eq(cmt_writer_alloc_info(b.w, &info), 0);
    const uint64_t A = P0, M = TB_MIB, X = CMT_AFLAG_EXPANDABLE;
    tb_alloc(&b, A, 40 * M, s);
    alloc_event(&b, CMT_AA_SEGMENT_MAP, A, 20 * M, s, X);
    alloc_event_requested(&b, CMT_AA_ALLOC, A, 4 * M, 3 * M + 5, s, X);
    alloc_event(&b, CMT_AA_SEGMENT_MAP, A + 20 * M, 20 * M, s, X);
    alloc_event_requested(&b, CMT_AA_ALLOC, A + 10 * M, 20 * M, 20 * M - 100, s, X);
    alloc_event(&b, CMT_AA_SEGMENT_MAP, A + 40 * M, 20 * M, s, X);
    alloc_event(&b, CMT_AA_SEGMENT_MAP, A + 60 * M, 20 * M, s, X);
    alloc_event(&b, CMT_AA_SEGMENT_UNMAP, A + 40 * M, 20 * M, s, X);
    tb_alloc(&b, A + 60 * M, 20 * M, s);
    alloc_event_requested(&b, CMT_AA_ALLOC, A + 60 * M, 2 * M, 2 * M, s, X);
    alloc_event_requested(&b, CMT_AA_FREE_REQUESTED, A, 4 * M, 3 * M + 5, s, X);
    alloc_event_requested(&b, CMT_AA_FREE_COMPLETED, A, 4 * M, 3 * M + 5, s, X);
    b.t_ns += 1000; /* a snapshot taken: no size of its own, no stack */
    struct cmt_alloc_event snap = {.allocator = 1, .action = CMT_AA_SNAPSHOT, .t_ns = b.t_ns};
    cr_assert_eq(cmt_writer_alloc_event(b.w, &snap), 0);
    tb_finish(&b, 1);
    const char *path = temp_trace(b.buf.data, b.buf.len, 7);
    tb_free_builder(&b);
    char expected[2048];
    unsigned long long m = M;
    snprintf(expected, sizeof expected,
             "{\"segments\": [{\"address\": %llu, \"total_size\": %llu, \"allocated_size\": "
             "%llu, \"active_size\": %llu, \"segment_type\": \"large\", \"blocks\": ["
             "[0, %llu, \"inactive\"], [%llu, %llu, \"active_allocated\"], "
             "[%llu, %llu, \"inactive\"]]}, "
             "{\"address\": %llu, \"total_size\": %llu, \"allocated_size\": %llu, "
             "\"active_size\": %llu, \"segment_type\": \"large\", \"blocks\": ["
             "[0, %llu, \"active_allocated\"], [%llu, %llu, \"inactive\"]]}], "
             "\"actions\": [\"segment_map\", \"alloc\", \"segment_map\", \"alloc\", "
             "\"segment_map\", \"segment_map\", \"segment_unmap\", \"alloc\", "
             "\"free_requested\", \"free_completed\", \"snapshot\"], \"unframed\": [\"snapshot\"], "
             "\"sizes\": [%llu, %llu, %llu, %llu, %llu, %llu, %llu, %llu, %llu, %llu, %llu], "
             "\"conf\": \"expandable_segments:True\"}\n",
             (unsigned long long)A, 40 * m, 20 * m, 20 * m, 10 * m, 10 * m, 20 * m, 30 * m, 10 * m,
             (unsigned long long)A + 60 * m, 20 * m, 2 * m, 2 * m, 2 * m, 2 * m, 18 * m, 20 * m,
             3 * m + 5, 20 * m, 20 * m - 100, 20 * m, 20 * m, 20 * m, 2 * m, 3 * m + 5, 3 * m + 5,
             22 * m);
    export_as_expected(path, expected);
    remove(path);
}

/* The columns of a csv header line, each of which docs/export.md must name as `column`. */
static void columns_documented(const char *header)
{
    const char *src = getenv("CMT_SOURCE_DIR");
    char doc_path[1024];
    snprintf(doc_path, sizeof doc_path, "%s/docs/export.md", src ? src : ".");
    FILE *f = fopen(doc_path, "r");
    cr_assert_not_null(f, "%s", doc_path);
    static char doc[1 << 17];
    doc[fread(doc, 1, sizeof doc - 1, f)] = 0;
    fclose(f);
    char col[128];
    for (const char *p = header; *p && *p != '\n';) {
        size_t n = strcspn(p, ",\n");
        char quoted[140];
        snprintf(col, sizeof col, "%.*s", (int)n, p);
        snprintf(quoted, sizeof quoted, "`%s`", col);
        cr_expect(strstr(doc, quoted), "column %s is not documented in docs/export.md", col);
        p += n + (p[n] == ',');
    }
}

Test(export_cmd, csv_and_jsonl_tables_have_a_row_per_item_and_documented_columns)
{
    const char *path = export_trace(4);
    static const char *tables[] = {"events", "sites", "episodes", "processes"};
    int rows[] = {0, 2, 1, 1};
    rows[0] = 3 + 10 + 1 + 5 + 2; /* allocations, frees, failed requests */
    for (int t = 0; t < 4; t++) {
        const char *argv[] = {"export", "-f", "csv", "--table", tables[t], path, NULL};
        struct captured c = capture_run(cmt_cmd_export, argv);
        cr_expect_eq(c.status, 0, "%s", c.err);
        int lines = 0;
        for (const char *p = c.out; (p = strchr(p, '\n')); p++)
            lines++;
        cr_expect_eq(lines, rows[t] + 1, "%s: a header and a row each: %s", tables[t], c.out);
        cr_expect(strncmp(c.out, "pid,host,rank,", 14) == 0, "%s", c.out);
        columns_documented(c.out);
        captured_free(&c);
        const char *jargv[] = {"export", "-f", "jsonl", "--table", tables[t], path, NULL};
        c = capture_run(cmt_cmd_export, jargv);
        cr_expect_eq(c.status, 0, "%s", c.err);
        lines = 0;
        for (const char *p = c.out; (p = strchr(p, '\n')); p++, lines++)
            cr_expect(p[1] == 0 || p[1] == '{', "one object a line");
        cr_expect_eq(lines, rows[t], "%s: %s", tables[t], c.out);
        cr_expect(strstr(c.out, "{\"pid\":100,\"host\":\"testhost\",\"rank\":null,"), "%s", c.out);
        captured_free(&c);
    }
    /* the site table names the configuration and a frame with a comma-free, quoted-when-needed
     * text; the process table carries the allocator settings */
    const char *argv[] = {"export", "-f", "csv", "--table", "processes", path, NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect(strstr(c.out, ",expandable_segments:False,"), "%s", c.out);
    captured_free(&c);
    const char *eargv[] = {"export", "-f", "csv", "--table", "episodes", path, NULL};
    c = capture_run(cmt_cmd_export, eargv);
    cr_expect(strstr(c.out, ",true,over_capacity,"), "%s", c.out);
    captured_free(&c);
    remove(path);
}

Test(export_cmd, bad_options_give_one_line_and_exit_2)
{
    const char *path = export_trace(5);
    const char *cases[][10] = {
        {"export", path, NULL},
        {"export", "-f", "svg", path, NULL},
        {"export", "-f", "perfetto", "--weight", "peak", path, NULL},
        {"export", "-f", "collapsed", "--weight", "max", path, NULL},
        {"export", "-f", "perfetto", "--table", "sites", path, NULL},
        {"export", "-f", "csv", "--table", "runs", path, NULL},
        {"export", "-f", "perfetto", "--partitioned", "/tmp/x", path, NULL},
        /* windows and caps */
        {"export", "-f", "csv", "--from", "1s", path, NULL},
        {"export", "-f", "collapsed", "--device", "0", path, NULL},
        {"export", "-f", "perfetto", "--max-entries", "10", path, NULL},
        {"export", "-f", "perfetto", "--from", "soon", path, NULL},
        {"export", "-f", "perfetto", "--from", "2s", "--to", "1s", path, NULL},
        {"export", "-f", "perfetto", "--device", "gpu0", path, NULL},
        {"export", "-f", "memory-viz", "--max-entries", "-3", path, NULL},
    }; /* several traces are taken (test_trace_dirs.c) */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct captured c = capture_run(cmt_cmd_export, cases[i]);
        cr_expect_eq(c.status, 2, "case %zu: %s", i, c.err);
        cr_expect(strncmp(c.err, "cumemtrace export: ", 19) == 0, "case %zu: %s", i, c.err);
        cr_expect(strchr(c.err, '\n') == c.err + strlen(c.err) - 1, "one line: %s", c.err);
        captured_free(&c);
    }
    const char *missing[] = {"export", "-f", "csv", "/nonexistent/trace.cmt", NULL};
    struct captured c = capture_run(cmt_cmd_export, missing);
    cr_expect_eq(c.status, 1);
    cr_expect(strstr(c.err, "/nonexistent/trace.cmt"), "%s", c.err);
    captured_free(&c);
    /* --rank among traces that do not record one */
    const char *rank[] = {"export", "-f", "perfetto", "--rank", "3", path, NULL};
    c = capture_run(cmt_cmd_export, rank);
    cr_expect_eq(c.status, 1, "%s", c.err);
    cr_expect(strstr(c.err, "no trace of rank 3"), "%s", c.err);
    captured_free(&c);
    remove(path);
}

/* ---- windows and caps (--from, --to, --device, --max-entries) ---- */

/* Ten 1 MiB allocations, one a microsecond (t = 1..10 us), then the first five freed
 * (t = 11..15 us): 35 trace entries in memory-viz (2 per allocation, 3 per free). */
static const char *window_trace(int index)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 23 * TB_GIB);
    b.t_ns = 0;
    uint32_t s = tb_stack(&b, "window", 2);
    for (int i = 0; i < 10; i++)
        tb_alloc(&b, P0 + (uint64_t)i * TB_MIB, TB_MIB, s);
    for (int i = 0; i < 5; i++)
        tb_free(&b, P0 + (uint64_t)i * TB_MIB);
    tb_finish(&b, 1);
    const char *path = temp_trace(b.buf.data, b.buf.len, index);
    tb_free_builder(&b);
    return path;
}

/* Exports path as memory-viz with the options given and checks device 0's trace entries
 * (action and address) and the segments' bytes against `expected` (check_export.py
 * memory-viz-entries). @return the export's stderr (free it). */
static char *memviz_entries(const char *path, const char *const *options, const char *expected)
{
    char out[160], expect[160], args[400];
    snprintf(out, sizeof out, "%s.pickle", path);
    snprintf(expect, sizeof expect, "%s.expect.json", path);
    const char *argv[16] = {"export", "-f", "memory-viz", "-o", out};
    int n = 5;
    while (*options)
        argv[n++] = *options++;
    argv[n++] = path;
    argv[n] = NULL;
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    char *err = strdup(c.err);
    captured_free(&c);
    FILE *f = fopen(expect, "w");
    cr_assert_not_null(f);
    fputs(expected, f);
    fclose(f);
    snprintf(args, sizeof args, "memory-viz-entries %s %s", out, expect);
    cr_expect_eq(check(args), 0);
    remove(expect);
    remove(out);
    return err;
}

/* The expected entries of window_trace's device 0 with the allocations [from, to) and the
 * frees of the first `frees`, and the segments' bytes, as memviz_entries takes them. */
static void window_entries(char *buf, size_t size, int from, int to, int frees,
                           uint64_t segment_bytes)
{
    snprintf(buf, size, "{\"traces\": [[");
    for (int i = from; i < to; i++) {
        unsigned long long a = P0 + (uint64_t)i * TB_MIB;
        snprintf(buf + strlen(buf), size - strlen(buf),
                 "%s[\"segment_alloc\", %llu], [\"alloc\", %llu]", i > from ? ", " : "", a, a);
    }
    for (int i = 0; i < frees; i++) {
        unsigned long long a = P0 + (uint64_t)i * TB_MIB;
        snprintf(buf + strlen(buf), size - strlen(buf),
                 ", [\"free_requested\", %llu], [\"free_completed\", %llu], "
                 "[\"segment_free\", %llu]",
                 a, a, a);
    }
    snprintf(buf + strlen(buf), size - strlen(buf), "]], \"segment_bytes\": %llu}",
             (unsigned long long)segment_bytes);
}

/* The file at path, NUL-terminated, into buf (at most size - 1 bytes). */
static void read_text(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = 0;
    fclose(f);
}

Test(export_cmd, memory_viz_keeps_each_devices_last_max_entries_and_says_what_it_left_out)
{
    const char *path = window_trace(20);
    char expected[1024];
    unsigned long long a2 = P0 + 2 * TB_MIB, a3 = P0 + 3 * TB_MIB, a4 = P0 + 4 * TB_MIB;
    snprintf(expected, sizeof expected,
             "{\"traces\": [[[\"segment_free\", %llu], [\"free_requested\", %llu], "
             "[\"free_completed\", %llu], [\"segment_free\", %llu], [\"free_requested\", %llu], "
             "[\"free_completed\", %llu], [\"segment_free\", %llu]]], \"segment_bytes\": %llu}",
             a2, a3, a3, a3, a4, a4, a4, (unsigned long long)(5 * TB_MIB));
    const char *seven[] = {"--max-entries", "7", NULL};
    char *err = memviz_entries(path, seven, expected);
    cr_expect(strstr(err, "last 7 trace entries (7 in all) and left out 28 older ones"), "%s", err);
    cr_expect(strchr(err, '\n') == err + strlen(err) - 1, "one line: %s", err);
    free(err);
    /* the default ring (100000) keeps all 35: nothing said */
    const char *none[] = {NULL};
    char all[4096];
    window_entries(all, sizeof all, 0, 10, 5, 5 * TB_MIB);
    err = memviz_entries(path, none, all);
    cr_expect_str_empty(err);
    free(err);
    remove(path);
}

/* --from 4.5us --to 12.5us: the allocations at 5..10 us and the frees at 11 and 12 us; the
 * segments are those live at 12.5 us (8 MiB: the two first freed). */
Test(export_cmd, memory_viz_writes_the_window_and_the_segments_at_its_end)
{
    const char *path = window_trace(21);
    char expected[2048];
    window_entries(expected, sizeof expected, 4, 10, 2, 8 * TB_MIB);
    const char *window[] = {"--from", "4.5us", "--to", "12500ns", NULL};
    char *err = memviz_entries(path, window, expected);
    free(err);
    /* another device's view: empty */
    const char *other[] = {"--device", "1", NULL};
    err = memviz_entries(path, other, "{\"traces\": [[]], \"segment_bytes\": 0}");
    free(err);
    remove(path);
}

Test(export_cmd, perfetto_writes_only_the_window_with_the_state_at_its_start)
{
    const char *path = window_trace(22);
    char out[160], report[160], args[512];
    snprintf(out, sizeof out, "%s.json", path);
    snprintf(report, sizeof report, "%s.report.json", path);
    const char *rargv[] = {"report", "--json", path, NULL};
    run_to(cmt_cmd_report, rargv, report);
    const char *argv[] = {"export", "-f",    "perfetto", "--min-slice", "0",
                          "--from", "4.5us", "--to",     "12.5us",      "--device",
                          "0",      "-o",    out,        path,          NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    snprintf(args, sizeof args, "perfetto-window %s 4.5 12.5 0", out);
    cr_expect_eq(check(args), 0);
    snprintf(args, sizeof args, "perfetto %s %s", out, report); /* every slice begun and ended */
    cr_expect_eq(check(args), 0);
    static char text[1 << 16];
    read_text(out, text, sizeof text);
    /* it opens at 4.5 us with the 4 MiB then live, begun there, and ends at 12.5 us */
    cr_expect(strstr(text, "\"ts\":4.500,\"args\":{\"device\":4194304}"), "%s", text);
    cr_expect(strstr(text, "\"id\":\"0x700000300000\""), "%s", text);
    cr_expect(strstr(text, "\"ts\":12.500}"), "the live slices close at --to: %s", text);
    remove(report);
    remove(out);
    remove(path);
}

/* An allocator's actions without its own figures (as an imported snapshot's): the counters
 * are the figures the pass rebuilds, so they peak and end at report --json's allocator
 * figures; every block is a tensor slice named by its top frame. */
static void plain_event(struct tb *b, uint32_t action, uint64_t addr, uint64_t size, uint32_t stack)
{
    write_alloc_event(b, action, addr, size, 0, stack, 0, 0);
}

Test(export_cmd, perfetto_allocator_counters_and_tensor_slices_match_the_report)
{
    struct tb b;
    uint32_t s = allocator_trace(&b, "");
    const uint64_t S = P0, M = TB_MIB;
    plain_event(&b, CMT_AA_SEGMENT_ALLOC, S, 20 * M, s);
    plain_event(&b, CMT_AA_ALLOC, S, 4 * M, s);
    plain_event(&b, CMT_AA_ALLOC, S + 4 * M, 8 * M, s);
    plain_event(&b, CMT_AA_ALLOC, S + 12 * M, 2 * M, s);
    plain_event(&b, CMT_AA_FREE_REQUESTED, S + 4 * M, 8 * M, s);
    plain_event(&b, CMT_AA_FREE_COMPLETED, S + 4 * M, 8 * M, s);
    plain_event(&b, CMT_AA_FREE_COMPLETED, S + 16 * M, M, s); /* never allocated: no slice */
    tb_finish(&b, 1);
    const char *path = temp_trace(b.buf.data, b.buf.len, 23);
    tb_free_builder(&b);
    char out[160], report[160], args[512];
    snprintf(out, sizeof out, "%s.json", path);
    snprintf(report, sizeof report, "%s.report.json", path);
    const char *rargv[] = {"report", "--json", path, NULL};
    run_to(cmt_cmd_report, rargv, report);
    const char *argv[] = {"export", "-f", "perfetto", "-o", out, path, NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    snprintf(args, sizeof args, "perfetto-allocator %s %s", out, report);
    cr_expect_eq(check(args), 0);
    static char text[1 << 16];
    read_text(out, text, sizeof text);
    /* the free requested: 6 MiB allocated, the 8 MiB block still active (pending); completed:
     * 14 MiB of the 20 MiB segment free beside live blocks (split) */
    cr_expect(
        strstr(text, "\"allocated\":6291456,\"reserved\":20971520,\"inactive_split\":6291456"),
        "%s", text);
    cr_expect(
        strstr(text, "\"allocated\":6291456,\"reserved\":20971520,\"inactive_split\":14680064"),
        "%s", text);
    cr_expect(strstr(text, "{\"ph\":\"b\",\"cat\":\"tensor\",\"name\":\"tensor_"), "%s", text);
    cr_expect(strstr(text, "\"args\":{\"bytes\":8388608,\"requested\":8388608,\"dev\":0}"), "%s",
              text);
    /* from 3.5 us: the window opens at its first action (the 2 MiB alloc at 4 us) with the
     * figures after it and the two blocks live before it begun at 3.5 us; that alloc's own
     * slice begins at 4 us */
    const char *wargv[] = {"export", "-f", "perfetto", "--from", "3.5us", "-o", out, path, NULL};
    c = capture_run(cmt_cmd_export, wargv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    snprintf(args, sizeof args, "perfetto %s %s", out, report);
    cr_expect_eq(check(args), 0);
    read_text(out, text, sizeof text);
    cr_expect(strstr(text, "\"ts\":3.500,\"args\":{\"allocated\":14680064,"), "%s", text);
    cr_expect(strstr(text, "\"id\":\"0:0x700000400000\",\"pid\":100,\"tid\":0,\"ts\":3.500"), "%s",
              text);
    cr_expect(strstr(text, "\"id\":\"0:0x700000c00000\",\"pid\":100,\"tid\":77,\"ts\":4.000"), "%s",
              text);
    cr_expect(!strstr(text, "\"ts\":2.000"), "nothing before the window: %s", text);
    remove(report);
    remove(out);
    remove(path);
}

/* A directory of two ranks' traces: --rank 1 exports rank 1's process (pid 1001), as one view. */
Test(export_cmd, rank_picks_that_ranks_trace_of_a_directory)
{
    char dir[] = "/tmp/cmt-export-ranks-XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    for (int32_t rank = 0; rank < 2; rank++) {
        struct cmt_process p = {.pid = (uint64_t)(1000 + rank),
                                .exe = "train",
                                .rank = rank,
                                .local_rank = rank,
                                .world_size = 2};
        struct tb b;
        tb_begin_process(&b, &p, 24 * TB_GIB, 24 * TB_GIB);
        tb_alloc(&b, P0, TB_GIB, tb_stack(&b, "rank", 1));
        tb_finish(&b, 1);
        snprintf(path, sizeof path, "%s/rank%d.cmt", dir, rank);
        cr_assert_eq(tb_save(&b, path), 0);
        tb_free_builder(&b);
    }
    const char *argv[] = {"export", "-f", "perfetto", "--rank", "1", dir, NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "\"pid\":1001,"), "%s", c.out);
    cr_expect(!strstr(c.out, "\"pid\":1000,"), "%s", c.out);
    captured_free(&c);
    for (int32_t rank = 0; rank < 2; rank++) {
        snprintf(path, sizeof path, "%s/rank%d.cmt", dir, rank);
        remove(path);
    }
    rmdir(dir);
}
