/* Tests of export_partitioned.c against links planted under DIR (issue 24 item 2): at a part
 * file, a table directory, a run directory, dangling or not, each is refused with one line
 * naming it, a non-zero exit, and nothing outside DIR touched; a hard link keeps its target.
 * The parts are zstd frames that decompress to the --compress none tables, and the tables (csv,
 * jsonl, parquet) are the same bytes whatever --jobs is (issue 26 item 4). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "capture.h"
#include "commands.h"
#include "trace_builder.h"

/* The test's scratch: ROOT/t.cmt (a trace with an OOM episode), ROOT/out (DIR), ROOT/outside
 * (a directory that must stay empty) and ROOT/victim (a file that must keep its bytes). */
static char root[128], trace[192], dir[192], outside[192], victim[192];

static void scratch(void)
{
    snprintf(root, sizeof root, "/tmp/cmt_partitioned_%d_XXXXXX", (int)getpid());
    cr_assert_not_null(mkdtemp(root));
    snprintf(trace, sizeof trace, "%s/t.cmt", root);
    snprintf(dir, sizeof dir, "%s/out", root);
    snprintf(outside, sizeof outside, "%s/outside", root);
    snprintf(victim, sizeof victim, "%s/victim", root);
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_stack(&b, "layer", 2);
    tb_alloc(&b, 0x700000000000, TB_GIB, s);
    uint64_t seq = tb_alloc_fail(&b, 30 * TB_GIB, s);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 23 * TB_GIB, 24 * TB_GIB, seq);
    tb_finish(&b, 1);
    cr_assert_eq(tb_save(&b, trace), 0);
    tb_free_builder(&b);
    cr_assert_eq(mkdir(dir, 0777), 0);
    cr_assert_eq(mkdir(outside, 0777), 0);
    FILE *f = fopen(victim, "w");
    cr_assert_not_null(f);
    fputs("the program's data\n", f);
    fclose(f);
}

static void cleanup(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    cr_expect_eq(system(cmd), 0);
}

/* Creates the directories of DIR/rel's parent. */
static void parents(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        mkdir(path, 0777);
        *p = '/';
    }
}

/* A symbolic link DIR/rel -> target. */
static void plant(const char *rel, const char *target)
{
    char path[512];
    parents(rel);
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    cr_assert_eq(symlink(target, path), 0, "%s", path);
}

static struct captured export_csv(void)
{
    const char *argv[] = {"export", "-f", "csv",      "--partitioned", dir,
                          "--run",  "r1", "--events", trace,           NULL};
    return capture_run(cmt_cmd_export, argv);
}

/* The export refused, in one line naming DIR/rel, and nothing reached `outside` or `victim`. */
static void expect_refused(const char *rel)
{
    struct captured c = export_csv();
    char named[512];
    snprintf(named, sizeof named,
             "cumemtrace export: %s/%s: a symbolic link: refusing to write through it\n", dir, rel);
    cr_expect_neq(c.status, 0, "%s", c.out);
    cr_expect_str_eq(c.err, named, "one line naming it");
    captured_free(&c);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", outside);
    cr_expect_eq(system(cmd), 0, "nothing was written outside DIR");
    FILE *f = fopen(victim, "r");
    char line[64] = "";
    cr_assert_not_null(f);
    cr_expect_not_null(fgets(line, sizeof line, f));
    fclose(f);
    cr_expect_str_eq(line, "the program's data\n", "the victim kept its bytes");
}

/* The bytes of the zstd file at path, decompressed (NUL-terminated; free it), or NULL when it
 * is not one whole, sound frame. */
static char *unzstd(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char in[1 << 20];
    size_t n = fread(in, 1, sizeof in, f), cap = 1 << 16, len = 0;
    fclose(f);
    ZSTD_DCtx *d = ZSTD_createDCtx();
    char *out = malloc(cap + 1);
    ZSTD_inBuffer ib = {in, n, 0};
    size_t left = 1;
    while (out && !ZSTD_isError(left) && (ib.pos < ib.size || left)) {
        if (len == cap && !(out = realloc(out, (cap *= 2) + 1)))
            break;
        ZSTD_outBuffer ob = {out + len, cap - len, 0};
        left = ZSTD_decompressStream(d, &ob, &ib);
        len += ob.pos;
        if (!ob.pos && ib.pos == ib.size && left)
            left = (size_t)-1; /* truncated: no more input */
    }
    ZSTD_freeDCtx(d);
    if (out && (ZSTD_isError(left) || left)) {
        free(out);
        out = NULL;
    }
    if (out) {
        out[len] = 0;
        *size = len;
    }
    return out;
}

/* @return whether DIR/rel exists (not following a link). */
static int exists(const char *rel)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    return lstat(path, &st) == 0;
}

Test(export_partitioned, a_link_at_a_part_file_is_refused, .init = scratch, .fini = cleanup)
{
    plant("processes/run=r1/part-t.csv.zst", victim);
    expect_refused("processes/run=r1/part-t.csv.zst");
    cr_expect(!exists("events"), "refused before anything was written");
}

Test(export_partitioned, a_link_at_a_table_directory_is_refused, .init = scratch, .fini = cleanup)
{
    plant("sites", outside);
    expect_refused("sites");
    cr_expect(!exists("processes") && !exists("events"), "refused before anything was written");
}

Test(export_partitioned, a_link_at_a_run_directory_is_refused, .init = scratch, .fini = cleanup)
{
    plant("episodes/run=r1", outside);
    expect_refused("episodes/run=r1");
}

Test(export_partitioned, a_link_of_the_runs_table_is_refused, .init = scratch, .fini = cleanup)
{
    plant("runs/run=r1/part-0.csv.zst", victim);
    expect_refused("runs/run=r1/part-0.csv.zst");
}

Test(export_partitioned, dangling_links_are_refused_and_create_nothing, .init = scratch,
     .fini = cleanup)
{
    char target[256];
    snprintf(target, sizeof target, "%s/created", outside);
    plant("events/run=r1/part-t.csv.zst", target);
    expect_refused("events/run=r1/part-t.csv.zst");
    cr_expect_neq(access(target, F_OK), 0, "no file was created through the link");
    unlink(target);
    char link[512];
    snprintf(link, sizeof link, "%s/events/run=r1/part-t.csv.zst", dir);
    cr_assert_eq(unlink(link), 0);
    snprintf(target, sizeof target, "%s/newdir", outside);
    plant("runs", target);
    expect_refused("runs");
    cr_expect_neq(access(target, F_OK), 0, "no directory was created through the link");
}

Test(export_partitioned, a_hard_link_at_a_part_file_keeps_its_targets_bytes, .init = scratch,
     .fini = cleanup)
{
    char path[512];
    parents("processes/run=r1/part-t.csv.zst");
    snprintf(path, sizeof path, "%s/processes/run=r1/part-t.csv.zst", dir);
    cr_assert_eq(link(victim, path), 0);
    struct captured c = export_csv();
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    FILE *f = fopen(victim, "r");
    char line[64] = "";
    cr_assert_not_null(f);
    cr_expect_not_null(fgets(line, sizeof line, f));
    fclose(f);
    cr_expect_str_eq(line, "the program's data\n");
    size_t n;
    char *table = unzstd(path, &n);
    cr_assert_not_null(table, "%s: a zstd frame", path);
    cr_expect(n > 14 && strncmp(table, "pid,host,rank,", 14) == 0, "the table was written: %.40s",
              table);
    free(table);
}

Test(export_partitioned, a_link_at_dir_itself_is_the_users_choice, .init = scratch, .fini = cleanup)
{
    char link[256];
    snprintf(link, sizeof link, "%s/via", root);
    cr_assert_eq(symlink(dir, link), 0);
    const char *argv[] = {"export", "-f", "csv", "--partitioned", link, "--run", "r1", trace, NULL};
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    cr_expect(exists("processes/run=r1/part-t.csv.zst"));
}

/* Traces ROOT/jobX/rankN.cmt of two runs, each with its own figures (some with an OOM). */
static void more_traces(char paths[][192], int n)
{
    for (int i = 0; i < n; i++) {
        char job[160];
        snprintf(job, sizeof job, "%s/job%c", root, 'A' + i % 2);
        mkdir(job, 0777);
        snprintf(paths[i], 192, "%s/rank%d.cmt", job, i);
        struct tb b;
        tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
        uint32_t s = tb_stack(&b, i % 3 ? "layer" : "head", 2 + i % 3);
        for (int k = 0; k <= i; k++)
            tb_alloc(&b, 0x700000000000 + (uint64_t)k * 2 * TB_GIB, TB_GIB + (uint64_t)i, s);
        if (i % 2) {
            uint64_t seq = tb_alloc_fail(&b, 30 * TB_GIB, s);
            tb_meminfo(&b, CMT_MEMINFO_OOM, 23 * TB_GIB, 24 * TB_GIB, seq);
        }
        tb_finish(&b, 1);
        cr_assert_eq(tb_save(&b, paths[i]), 0);
        tb_free_builder(&b);
    }
}

/* export -f FORMAT --partitioned ROOT/name --events [more0 more1] over the traces; must
 * succeed. */
static void export_to(const char *name, const char *format, const char *more0, const char *more1,
                      char paths[][192], int n)
{
    char out[256];
    snprintf(out, sizeof out, "%s/%s", root, name);
    const char *argv[24] = {"export", "-f", format, "--partitioned", out, "--events"};
    int argc = 6;
    if (more0) {
        argv[argc++] = more0;
        argv[argc++] = more1;
    }
    for (int i = 0; i < n; i++)
        argv[argc++] = paths[i];
    argv[argc] = NULL;
    struct captured c = capture_run(cmt_cmd_export, argv);
    cr_assert_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "wrote 6 traces as 2 runs"), "%s", c.out);
    captured_free(&c);
}

Test(export_partitioned, the_same_tables_whatever_the_number_of_jobs, .init = scratch,
     .fini = cleanup)
{
    char paths[6][192];
    more_traces(paths, 6);
    static const char *formats[] = {"csv", "jsonl", "parquet"};
    for (int f = 0; f < 3; f++) {
        export_to("one", formats[f], "--jobs", "1", paths, 6);
        export_to("four", formats[f], "--jobs", "4", paths, 6);
        export_to("all", formats[f], NULL, NULL, paths, 6); /* the processors */
        char cmd[700];
        snprintf(cmd, sizeof cmd, "diff -r '%s/one' '%s/four' && diff -r '%s/one' '%s/all'", root,
                 root, root, root);
        cr_expect_eq(system(cmd), 0, "%s: --jobs 1, 4 and the default differ", formats[f]);
        snprintf(cmd, sizeof cmd, "test $(ls '%s'/one/events/*/* | wc -l) = 6", root);
        cr_expect_eq(system(cmd), 0, "an events part per trace");
        snprintf(cmd, sizeof cmd, "rm -rf '%s/one' '%s/four' '%s/all'", root, root, root);
        cr_assert_eq(system(cmd), 0);
    }
}

Test(export_partitioned, the_parts_are_zstd_frames_of_the_plain_tables, .init = scratch,
     .fini = cleanup)
{
    char paths[6][192];
    more_traces(paths, 6);
    export_to("zst", "csv", NULL, NULL, paths, 6);
    export_to("plain", "csv", "--compress", "none", paths, 6);
    char cmd[600], name[1400];
    snprintf(cmd, sizeof cmd, "cd '%s/plain' && find . -type f | sort", root);
    FILE *list = popen(cmd, "r");
    cr_assert_not_null(list);
    int files = 0;
    while (fscanf(list, "%599s", cmd) == 1) {
        unsigned long plain_n;
        size_t n = 0;
        snprintf(name, sizeof name, "%s/plain/%s", root, cmd);
        char *plain = capture_file(name, &plain_n);
        snprintf(name, sizeof name, "%s/zst/%s.zst", root, cmd);
        char *unpacked = unzstd(name, &n);
        cr_assert_not_null(plain);
        cr_expect_not_null(unpacked, "%s: a whole zstd frame", name);
        cr_expect(unpacked && n == plain_n && memcmp(plain, unpacked, n) == 0,
                  "%s: the same table as --compress none", name);
        free(plain);
        free(unpacked);
        files++;
    }
    pclose(list);
    cr_expect_geq(files, 6 * 3 + 2, "events, processes, sites per trace; a runs part per run");
    snprintf(cmd, sizeof cmd, "test $(find '%s/zst' -type f | wc -l) = %d", root, files);
    cr_expect_eq(system(cmd), 0, "no other file");
}

Test(export_partitioned, bad_compress_and_jobs_are_usage_errors, .init = scratch, .fini = cleanup)
{
    const char *bad[][10] = {
        {"export", "-f", "csv", "--partitioned", dir, "--compress", "gzip", trace, NULL},
        {"export", "-f", "csv", "--partitioned", dir, "--jobs", "0", trace, NULL},
        {"export", "-f", "csv", "--partitioned", dir, "--jobs", "65", trace, NULL},
        {"export", "-f", "csv", "--jobs", "2", trace, NULL},
        {"export", "-f", "csv", "--compress", "none", trace, NULL},
        {"export", "-f", "parquet", "-o", victim, trace, NULL}};
    static const char *said[] = {"--compress wants zstd or none, got 'gzip'",
                                 "--jobs wants a number from 1 to 64, got '0'",
                                 "--jobs wants a number from 1 to 64, got '65'",
                                 "--compress or --jobs is for --partitioned",
                                 "--compress or --jobs is for --partitioned",
                                 "--format parquet writes --partitioned DIR's parts"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct captured c = capture_run(cmt_cmd_export, bad[i]);
        cr_expect_eq(c.status, 2, "%s", c.err);
        cr_expect(strstr(c.err, said[i]), "%s", c.err);
        captured_free(&c);
    }
    cr_expect(!exists("runs"), "nothing written");
}
