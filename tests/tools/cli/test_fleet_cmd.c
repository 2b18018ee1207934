/* The analysis commands over several traces: report, oom, timeline and diff of a run of ranks
 * (tools/cli/fleet/), and one trace given alone still gives the single-trace output. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "commands.h"
#include "trace_builder.h"

#define MS UINT64_C(1000000)
#define WALL0 UINT64_C(1800000000000000000)

static char dirs[2][64];

static void make_dirs(void)
{
    for (int i = 0; i < 2; i++) {
        snprintf(dirs[i], sizeof dirs[i], "/tmp/cmt-fleet-cmd.XXXXXX");
        cr_assert_not_null(mkdtemp(dirs[i]));
    }
}

static void remove_dirs(void)
{
    for (int i = 0; i < 2; i++) {
        char cmd[160];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dirs[i]);
        cr_assert_eq(system(cmd), 0);
    }
}

/* A trace of rank r of a four-rank python run on node-a: pid base + r, job id job. */
static void begin_rank(struct tb *b, int32_t rank, uint64_t pid_base, const char *job)
{
    static const char *argv[] = {"python", "train.py"};
    struct cmt_process p = {pid_base + (uint64_t)rank,
                            1,
                            WALL0,
                            1000,
                            12040,
                            "node-a",
                            "/usr/bin/python3",
                            2,
                            argv,
                            rank,
                            rank,
                            4,
                            job};
    tb_begin_process(b, &p, 16 * TB_GIB, 16 * TB_GIB);
}

/* Rank r of a four-rank run in dirs[d]: `peak` from 1 ms to 10 ms; fails at fail_t when set. */
static void rank_trace(int d, int32_t rank, uint64_t peak, uint64_t fail_t)
{
    struct tb b;
    begin_rank(&b, rank, 200, "job-9");
    tb_hold(&b, peak, fail_t);
    tb_finish(&b, 1);
    char path[160];
    snprintf(path, sizeof path, "%s/run.%d.cmt", dirs[d], (int)rank);
    cr_assert_eq(tb_save(&b, path), 0);
    tb_free_builder(&b);
}

static void run_of_four(int d, uint64_t scale)
{
    for (int32_t r = 0; r < 4; r++)
        rank_trace(d, r, (uint64_t)(r + 1) * scale, r == 1 ? 5 * MS : r == 3 ? 3 * MS : 0);
}

static struct captured run(int (*fn)(int, char **), const char *const *argv)
{
    return capture_run(fn, argv);
}

Test(fleet_cmd, report_names_the_first_failing_rank, .init = make_dirs, .fini = remove_dirs)
{
    run_of_four(0, TB_GIB);
    const char *json[] = {"report", "--json", dirs[0], NULL};
    struct captured c = run(cmt_cmd_report, json);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "\"first_failing_rank\":3"), "%s", c.out);
    cr_expect(strstr(c.out, "\"pid\":202,\"rank\":2,\"local_rank\":2,\"world_size\":4,"
                            "\"host\":\"node-a\",\"job_id\":\"job-9\""),
              "%s", c.out);
    cr_expect(strstr(c.out, "\"imbalance\":{\"over\":\"ranks\",\"max_peak_bytes\":4294967296,"
                            "\"median_peak_bytes\":2684354560,\"ratio\":1.6"),
              "%s", c.out);
    cr_expect(strstr(c.out, "\"gpus\":[{\"gpu\":\"node-a/0\""), "%s", c.out);
    captured_free(&c);
    const char *text[] = {"report", "--jobs", "1", dirs[0], NULL};
    c = run(cmt_cmd_report, text);
    cr_expect(strstr(c.out, "4 traces: 4 processes, 4 ranks (0..3) of 4, on 1 host, job job-9\n"
                            "first failure: rank 3 (pid 203 on node-a) at "),
              "%s", c.out);
    cr_expect(strstr(c.out, "peaks: max 4.00 GiB, median 2.50 GiB per rank, imbalance 1.60"), "%s",
              c.out);
    captured_free(&c);
}

Test(fleet_cmd, one_trace_alone_is_the_single_trace_report, .init = make_dirs, .fini = remove_dirs)
{
    run_of_four(0, TB_GIB);
    char path[160];
    snprintf(path, sizeof path, "%s/run.0.cmt", dirs[0]);
    const char *one[] = {"report", "--json", path, NULL};
    struct captured c = run(cmt_cmd_report, one);
    cr_expect(!strncmp(c.out, "{\"file\":", 8), "%s", c.out);
    cr_expect_null(strstr(c.out, "first_failing_rank"));
    captured_free(&c);
}

Test(fleet_cmd, timeline_puts_the_ranks_side_by_side, .init = make_dirs, .fini = remove_dirs)
{
    run_of_four(0, TB_GIB);
    const char *csv[] = {"timeline", "--csv", "--points", "4", dirs[0], NULL};
    struct captured c = run(cmt_cmd_timeline, csv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    /* 10 ms in four buckets of 2.5 ms: every rank holds its peak from 1 to 10 ms */
    cr_expect(!strncmp(c.out, "t_ns,wall_ns,rank_0,rank_1,rank_2,rank_3\n", 41), "%s", c.out);
    cr_expect(strstr(c.out, ",1073741824,2147483648,3221225472,4294967296\n"), "%s", c.out);
    captured_free(&c);
    const char *json[] = {"timeline", "--json", "--points", "4", dirs[0], NULL};
    c = run(cmt_cmd_timeline, json);
    cr_expect(strstr(c.out, "\"rank\":3,"), "%s", c.out);
    cr_expect(strstr(c.out, "\"failure_offset_ns\":3001000"), "%s", c.out);
    captured_free(&c);
    const char *both[] = {"timeline", "--csv", "--json", dirs[0], NULL};
    c = run(cmt_cmd_timeline, both);
    cr_expect_eq(c.status, 2);
    captured_free(&c);
    /* one point is too few: one line says so (it once exited 2 in silence) */
    const char *one[] = {"timeline", "--points", "1", dirs[0], NULL};
    c = run(cmt_cmd_timeline, one);
    cr_expect_eq(c.status, 2);
    cr_expect(strstr(c.err, "--points wants a number 2..100000, got '1'"), "%s", c.err);
    captured_free(&c);
}

Test(fleet_cmd, diff_compares_two_runs_rank_by_rank, .init = make_dirs, .fini = remove_dirs)
{
    run_of_four(0, TB_GIB);
    run_of_four(1, 2 * TB_GIB); /* every rank doubled */
    const char *text[] = {"diff", dirs[0], dirs[1], NULL};
    struct captured c = run(cmt_cmd_diff, text);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "  rank_2             3.00 GiB     6.00 GiB   +100.0%      0      0\n"),
              "%s", c.out);
    captured_free(&c);
    const char *gate[] = {"diff", "--fail-if-peak-grows", "50", dirs[0], dirs[1], NULL};
    c = run(cmt_cmd_diff, gate);
    cr_expect_eq(c.status, 1, "a rank grew by 100%%");
    captured_free(&c);
    const char *json[] = {"diff", "--json", dirs[1], dirs[1], NULL};
    c = run(cmt_cmd_diff, json);
    cr_expect(strstr(c.out, "\"peak_delta_bytes\":0"), "%s", c.out);
    captured_free(&c);
}

Test(fleet_cmd, oom_over_ranks_lists_each_failure, .init = make_dirs, .fini = remove_dirs)
{
    run_of_four(0, TB_GIB);
    const char *text[] = {"oom", dirs[0], NULL};
    struct captured c = run(cmt_cmd_oom, text);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "run.1.cmt: out of memory #1: "), "%s", c.out);
    cr_expect(strstr(c.out, "run.3.cmt: out of memory #1: "), "%s", c.out);
    cr_expect(strstr(c.out, "2 of the 4 traces: no out-of-memory failures\n"), "%s", c.out);
    captured_free(&c);
    const char *json[] = {"oom", "--json", dirs[0], NULL};
    c = run(cmt_cmd_oom, json);
    cr_expect(!strncmp(c.out, "{\"traces\":[{\"file\":", 19), "%s", c.out);
    cr_expect(strstr(c.out, "\"held_by_others\":[{"), "ranks on one GPU: %s", c.out);
    size_t none = 0, some = 0; /* each trace once: those without failures with no episode */
    for (const char *p = c.out; (p = strstr(p, "\"episodes\":[")); p++)
        *(p[12] == ']' ? &none : &some) += 1;
    cr_expect_eq(none, 2, "%s", c.out);
    cr_expect_eq(some, 2, "%s", c.out);
    captured_free(&c);
}

/* The partitioned export's rank columns come from the traces (format 3.1 PROCESS). */
Test(fleet_cmd, export_tables_carry_the_rank, .init = make_dirs, .fini = remove_dirs)
{
    run_of_four(0, TB_GIB);
    char out[160], in[160], cmd[400];
    snprintf(out, sizeof out, "%s/tables", dirs[1]);
    snprintf(in, sizeof in, "%s/run.1.cmt", dirs[0]); /* rank 1 fails at 5 ms */
    const char *argv[] = {"export", "--format",   "jsonl", "--partitioned",
                          out,      "--compress", "none",  "--run",
                          "r",      in,           NULL};
    struct captured c = run(cmt_cmd_export, argv);
    cr_assert_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    char text[4096] = "";
    snprintf(cmd, sizeof cmd, "cat %s/processes/run=r/* %s/runs/run=r/*", out, out);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    pclose(f);
    cr_expect(strstr(text, "{\"pid\":201,\"host\":\"node-a\",\"rank\":1,"), "%s", text);
    cr_expect(strstr(text, "\"first_failing_rank\":1,"), "%s", text); /* allocator columns next */
}

/* Rank r in dirs[d] that fails at t: 'o' a fatal OOM, 'r' an OOM a retry of the same size
 * survives (not a failure), 's' death on a signal (a SIGNAL record, no END). */
static void failing_trace(int d, int32_t rank, char how, uint64_t t)
{
    struct tb b;
    begin_rank(&b, rank, 300, "job-7");
    b.t_ns = 1 * MS;
    tb_alloc(&b, 0x7f0000000000, TB_GIB, 0);
    b.t_ns = t;
    if (how == 'o' || how == 'r')
        tb_alloc_fail(&b, 8 * TB_GIB, 0);
    if (how == 'r')
        tb_alloc(&b, 0x7f1000000000, 8 * TB_GIB, 0);
    if (how == 's') {
        struct cmt_signal sig = {t + 1000, 9, 77};
        cr_assert_eq(cmt_writer_signal(b.w, &sig), 0);
    } else {
        b.t_ns = 10 * MS;
        tb_free(&b, 0x7f0000000000);
    }
    tb_finish(&b, how != 's');
    char path[160];
    snprintf(path, sizeof path, "%s/run.%d.cmt", dirs[d], (int)rank);
    cr_assert_eq(tb_save(&b, path), 0);
    tb_free_builder(&b);
}

/* The number after "key": in text (-1 when absent, -2 when null). */
static long long number_after(const char *text, const char *key)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(text, pattern);
    if (!at)
        return -1;
    at += strlen(pattern);
    return strncmp(at, "null", 4) == 0 ? -2 : strtoll(at, NULL, 10);
}

/* One definition of the first failure (first_failure.h): `report` over the traces and the
 * partitioned export's runs table name the same process. Here the two used to differ: the
 * export took the earliest episode of any kind (rank 2's, which a retry survived) and left
 * out deaths by signal (rank 0's, the first real failure). */
Test(fleet_cmd, report_and_export_agree_on_the_first_failure, .init = make_dirs,
     .fini = remove_dirs)
{
    failing_trace(0, 0, 's', 3 * MS);
    failing_trace(0, 1, 'o', 5 * MS);
    failing_trace(0, 2, 'r', 2 * MS);
    failing_trace(0, 3, '-', 0);
    const char *json[] = {"report", "--json", dirs[0], NULL};
    struct captured c = run(cmt_cmd_report, json);
    cr_assert_eq(c.status, 0, "%s", c.err);
    long long report_rank = number_after(c.out, "first_failing_rank");
    char report[8192];
    const char *first = strstr(c.out, "\"first_failure\":");
    snprintf(report, sizeof report, "%s", first ? first : "");
    captured_free(&c);

    char out[160], cmd[400], in[4][160];
    snprintf(out, sizeof out, "%s/tables", dirs[1]);
    for (int r = 0; r < 4; r++)
        snprintf(in[r], sizeof in[r], "%s/run.%d.cmt", dirs[0], 3 - r); /* in another order */
    const char *argv[] = {"export", "--format", "jsonl", "--partitioned", out,   "--compress",
                          "none",   "--run",    "r",     in[0],           in[1], in[2],
                          in[3],    NULL};
    c = run(cmt_cmd_export, argv);
    cr_assert_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    char text[4096] = "";
    snprintf(cmd, sizeof cmd, "cat %s/runs/run=r/*", out);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    pclose(f);
    cr_expect_eq(number_after(text, "first_failing_rank"), report_rank, "%s", text);
    cr_expect_eq(report_rank, 0, "the death by signal at 3 ms comes first");
    cr_expect_eq(number_after(text, "first_failing_pid"), 300, "%s", text);
    cr_expect_eq(number_after(text, "first_failure_wall_ns"), (long long)(WALL0 + 3 * MS + 1000),
                 "%s", text);
    cr_expect(strstr(text, "\"first_failure\":\"signal\""), "%s", text);
    cr_expect(strstr(report, "\"failed\":\"signal\""), "report says so too: %s", report);
    cr_expect_eq(number_after(text, "failing_processes"), 2, "ranks 0 and 1: %s", text);
}

/* Rank r's trace in dirs[0] with a phase: "load" (NVTX push on thread 77) around an allocation
 * of (r + 1) MiB; rank 1's trace has no ranges. */
static void phased_rank(int32_t rank)
{
    struct tb b;
    begin_rank(&b, rank, 300, "job-p");
    b.t_ns = 1 * MS;
    if (rank != 1)
        cr_assert_eq(cmt_writer_range(b.w, &(struct cmt_range){.action = CMT_RA_PUSH,
                                                               .t_ns = b.t_ns,
                                                               .tid = 77,
                                                               .message = "load"}),
                     0);
    tb_alloc(&b, 0x7f0000000000, (uint64_t)(rank + 1) * TB_MIB, 0);
    b.t_ns = 2 * MS;
    if (rank != 1)
        cr_assert_eq(cmt_writer_range(
                         b.w, &(struct cmt_range){.action = CMT_RA_POP, .t_ns = b.t_ns, .tid = 77}),
                     0);
    tb_finish(&b, 1);
    char path[160];
    snprintf(path, sizeof path, "%s/run.%d.cmt", dirs[0], (int)rank);
    cr_assert_eq(tb_save(&b, path), 0);
    tb_free_builder(&b);
}

Test(fleet_cmd, report_shows_each_ranks_phases, .init = make_dirs, .fini = remove_dirs)
{
    for (int32_t r = 0; r < 3; r++)
        phased_rank(r);
    const char *text[] = {"report", "--jobs", "1", dirs[0], NULL};
    struct captured c = run(cmt_cmd_report, text);
    cr_expect_eq(c.status, 0, "%s", c.err);
    const char *r2 = strstr(c.out, "\nrank 2 (pid 302 on node-a):\nby phase");
    cr_expect(r2, "%s", c.out);
    cr_expect(r2 && strstr(r2, "  load ") && strstr(r2, "3.00 MiB"), "%s", c.out);
    cr_expect(strstr(c.out, "\nrank 0 (pid 300 on node-a):\nby phase"), "%s", c.out);
    cr_expect(!strstr(c.out, "\nrank 1 (pid 301 on node-a):\nby phase"), "no ranges: no table");
    captured_free(&c);
    const char *json[] = {"report", "--json", dirs[0], NULL};
    c = run(cmt_cmd_report, json);
    const char *rp = strstr(c.out, "\"rank_phases\":[{\"file\":");
    const char *tail = c.out + (strlen(c.out) > 900 ? strlen(c.out) - 900 : 0);
    cr_expect(rp, "%s", tail);
    cr_expect(rp && strstr(rp, "\"pid\":300,") && !strstr(rp, "\"pid\":301,") &&
                  strstr(rp, "{\"name\":\"load\",\"instances\":1,") &&
                  strstr(rp, "\"alloc_bytes\":3145728"),
              "%s", tail);
    captured_free(&c);
}

/* The GPU ledger of `report DIR` replays each member only up to its moment, on the reader the
 * fleet kept from its first replay: the call sites are still named from the symbols that come
 * at the trace's end (a reader stopped at the moment without them would print addresses). */
Test(fleet_cmd, the_gpu_ledger_names_call_sites_from_the_symbols_at_the_end, .init = make_dirs,
     .fini = remove_dirs)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd,
             "cp '%s/valid_pytorch_oom.cmt' '%s/a.cmt' && cp '%s/valid_pytorch_oom.cmt' '%s/b.cmt'",
             CMT_GOLDEN_DIR, dirs[0], CMT_GOLDEN_DIR, dirs[0]);
    cr_assert_eq(system(cmd), 0);
    const char *argv[] = {"report", "--jobs", "1", dirs[0], NULL};
    struct captured c = capture_run(cmt_cmd_report, argv);
    cr_assert_eq(c.status, 0, "%s", c.err);
    const char *ledger = strstr(c.out, "ledger of GPU");
    cr_assert_not_null(ledger, "%s", c.out);
    cr_expect(strstr(ledger, "user code: cudaCachingAllocator_malloc_0 (17 allocations)"), "%s",
              ledger);
    cr_expect(!strstr(ledger, "user code: 0x"), "no frame left unnamed: %s", ledger);
    captured_free(&c);
}
