/* The partitioned export read by DuckDB (issue 15 item 4): four traces of two runs, with
 * different pids, hosts, allocator settings and verdicts, exported as csv, jsonl and parquet,
 * in zstd-compressed parts (the default, issue 26 item 4) that DuckDB reads by their name
 * (parquet: its pages compressed inside, and every table the csv one's rows); the
 * DuckDB checks (duckdb_check.cjs, @duckdb/node-api installed with npm under the build tree
 * at the first run) compare the tables' peaks and verdicts with `report --json` and
 * `oom --json`, and run docs/fleet.md's DuckDB queries. Skips when npm or the network is not
 * there, except in CI (CI=true), where it must run. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "commands.h"
#include "duckdb_prefix.h"
#include "trace_builder.h"

#define P0 UINT64_C(0x700000000000)

struct spec {
    const char *run, *host, *conf;
    uint64_t pid;
    int scenario; /* 0 no OOM, 1 over capacity, 2 held by others, 3 fragmentation */
};

static const struct spec specs[] = {
    {"jobA", "node-a", "expandable_segments:True", 101, 0},
    {"jobA", "node-b", "expandable_segments:True", 102, 1},
    {"jobB", "node-a", NULL, 201, 2},
    {"jobB", "node-c", "max_split_size_mb:128", 202, 3},
};

static void write_trace(const struct spec *s, const char *path)
{
    struct tb b;
    uint64_t total = 24 * TB_GIB, others = s->scenario == 2 ? 20 * TB_GIB : 0;
    tb_begin(&b, total, total - others);
    static const char *argv[] = {"python", "train.py"};
    struct cmt_process p = {s->pid,
                            1,
                            1700000000000000000ull + s->pid * 1000000000ull,
                            5000,
                            12040,
                            s->host,
                            "/usr/bin/python3",
                            2,
                            argv,
                            -1,
                            -1,
                            -1,
                            NULL};
    cmt_writer_process(b.w, &p);
    if (s->conf)
        cmt_writer_env(b.w, "PYTORCH_CUDA_ALLOC_CONF", s->conf);
    uint32_t st = tb_stack(&b, "train_step", 3);
    uint64_t seq;
    switch (s->scenario) {
    case 0:
        for (int i = 0; i < 4; i++)
            tb_alloc(&b, P0 + (uint64_t)i * 2 * TB_GIB, TB_GIB, st);
        tb_free(&b, P0 + 2 * TB_GIB);
        break;
    case 1:
        for (int i = 0; i < 10; i++)
            tb_alloc(&b, P0 + (uint64_t)i * 2 * TB_GIB, TB_GIB, st);
        seq = tb_alloc_fail(&b, (UINT64_C(1) << 63) + 30 * TB_GIB, st); /* past INT64_MAX */
        tb_meminfo(&b, CMT_MEMINFO_OOM, 14 * TB_GIB, total, seq);
        break;
    case 2:
        tb_alloc(&b, P0, 2 * TB_GIB, st);
        seq = tb_alloc_fail(&b, 4 * TB_GIB, st);
        tb_meminfo(&b, CMT_MEMINFO_OOM, 2 * TB_GIB, total, seq);
        break;
    default:
        for (int i = 0; i < 8; i++)
            tb_alloc(&b, P0 + (uint64_t)i * 2 * TB_GIB, 2 * TB_GIB, st);
        for (int i = 0; i < 8; i += 2)
            tb_free(&b, P0 + (uint64_t)i * 2 * TB_GIB);
        seq = tb_alloc_fail(&b, 3 * TB_GIB, st);
        tb_meminfo(&b, CMT_MEMINFO_OOM, 16 * TB_GIB, total, seq);
        break;
    }
    tb_finish(&b, 1);
    cr_assert_eq(tb_save(&b, path), 0);
    tb_free_builder(&b);
}

static void save(int (*fn)(int, char **), const char *cmd, const char *trace, const char *out)
{
    const char *argv[] = {cmd, "--json", trace, NULL};
    struct captured c = capture_run(fn, argv);
    cr_assert_eq(c.status, 0, "%s", c.err);
    FILE *f = fopen(out, "w");
    cr_assert_not_null(f);
    fputs(c.out, f);
    fclose(f);
    captured_free(&c);
}

Test(export_duckdb, partitioned_tables_give_reports_peaks_and_ooms_verdicts)
{
    const char *prefix = duckdb_prefix();
    char root[256], path[1024], expected[512];
    snprintf(root, sizeof root, "/tmp/cmt_fleet_%d", (int)getpid());
    mkdir(root, 0777);
    snprintf(expected, sizeof expected, "%s/expected.json", root);
    FILE *ex = fopen(expected, "w");
    cr_assert_not_null(ex);
    fputs("[", ex);
    const char *traces[8];
    static char paths[4][512];
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        snprintf(path, sizeof path, "%s/%s", root, specs[i].run);
        mkdir(path, 0777);
        snprintf(paths[i], sizeof paths[i], "%s/%s/cumemtrace.%llu.cmt", root, specs[i].run,
                 (unsigned long long)specs[i].pid);
        write_trace(&specs[i], paths[i]);
        traces[i] = paths[i];
        char report[600], oom[600];
        snprintf(report, sizeof report, "%s.report.json", paths[i]);
        snprintf(oom, sizeof oom, "%s.oom.json", paths[i]);
        save(cmt_cmd_report, "report", paths[i], report);
        save(cmt_cmd_oom, "oom", paths[i], oom);
        fprintf(ex,
                "%s{\"run\":\"%s\",\"pid\":%llu,\"conf\":%s%s%s,\"report\":\"%s\","
                "\"oom\":\"%s\"}",
                i ? "," : "", specs[i].run, (unsigned long long)specs[i].pid,
                specs[i].conf ? "\"" : "", specs[i].conf ? specs[i].conf : "null",
                specs[i].conf ? "\"" : "", report, oom);
    }
    fputs("]\n", ex);
    fclose(ex);
    static const char *formats[] = {"csv", "jsonl", "parquet"};
    for (int f = 0; f < 3; f++) {
        char out[400], cmd[4096];
        snprintf(out, sizeof out, "%s/fleet-%s", root, formats[f]);
        const char *argv[] = {"export",  "--format", formats[f], "--partitioned", out, "--events",
                              traces[0], traces[1],  traces[2],  traces[3],       NULL};
        struct captured c = capture_run(cmt_cmd_export, argv);
        cr_expect_eq(c.status, 0, "%s", c.err);
        cr_expect(strstr(c.out, "wrote 4 traces as 2 runs"), "%s", c.out);
        captured_free(&c);
        const char *zst = f < 2 ? ".zst" : ""; /* parquet compresses its pages */
        snprintf(path, sizeof path, "%s/processes/run=jobB/part-cumemtrace.202.%s%s", out,
                 formats[f], zst);
        cr_expect_eq(access(path, R_OK), 0, "%s", path);
        snprintf(path, sizeof path, "%s/episodes/run=jobA/part-cumemtrace.101.%s%s", out,
                 formats[f], zst);
        cr_expect_neq(access(path, R_OK), 0, "no episodes, no file: %s", path);
        const char *src = getenv("CMT_SOURCE_DIR");
        snprintf(
            cmd, sizeof cmd,
            "node %s/tests/tools/cli/duckdb_check.cjs '%s' '%s' %s '%s' %s/docs/fleet.md%s%s%s",
            src ? src : ".", prefix, out, formats[f], expected, src ? src : ".", f == 2 ? " '" : "",
            f == 2 ? root : "", f == 2 ? "/fleet-csv'" : "");
        cr_expect_eq(system(cmd), 0, "%s", formats[f]);
    }
    char rm[300];
    snprintf(rm, sizeof rm, "rm -rf '%s'", root);
    cr_expect_eq(system(rm), 0);
}

Test(export_duckdb, two_traces_that_would_write_one_file_are_refused)
{
    char root[256], a[300], b[300];
    snprintf(root, sizeof root, "/tmp/cmt_fleet_dup_%d", (int)getpid());
    mkdir(root, 0777);
    snprintf(a, sizeof a, "%s/x", root);
    mkdir(a, 0777);
    snprintf(a, sizeof a, "%s/x/t.cmt", root);
    snprintf(b, sizeof b, "%s/t.cmt", root);
    write_trace(&specs[0], a);
    write_trace(&specs[1], b);
    char out[300];
    snprintf(out, sizeof out, "%s/out", root);
    const char *argv[] = {"export", "-f", "csv", "--partitioned", out, "--run", "same", a, b, NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 2);
    cr_expect(strstr(c.err, "would both be run=same/part-t"), "%s", c.err);
    captured_free(&c);
    cr_expect_neq(access(out, F_OK), 0, "refused before writing anything");
    remove(a);
    remove(b);
    snprintf(a, sizeof a, "%s/x", root);
    cr_expect_eq(rmdir(a), 0);
    cr_expect_eq(rmdir(root), 0);
}
