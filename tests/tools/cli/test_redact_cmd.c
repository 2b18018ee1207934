/* `cumemtrace redact` (tools/cli/cmd_redact.c): the copy reads as the original in every analysis
 * while the host, the arguments, the environment and home paths are gone; bad use is refused. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "commands.h"
#include "reader.h"
#include "trace_builder.h"
#include "writer.h"

static char dir[] = "/tmp/cmt-redact-XXXXXX";

/* A trace of a process on host `host` with secrets in its arguments, environment and paths, an
 * allocation that stays, one freed and one that fails. */
static void save_trace(const char *path, const char *host, int32_t rank)
{
    static const char *argv[] = {"/home/alice/venv/bin/python", "train.py", "--token=hunter2"};
    struct cmt_process p = {.pid = 4242,
                            .ppid = 1,
                            .start_wall_ns = 1700000000000000000ull,
                            .start_mono_ns = 5000,
                            .driver_version = 12040,
                            .hostname = host,
                            .exe = "/home/alice/venv/bin/python3.11",
                            .argc = 3,
                            .argv = argv,
                            .rank = rank,
                            .local_rank = -1,
                            .world_size = -1};
    struct tb b;
    tb_begin_process(&b, &p, 8 * TB_GIB, 8 * TB_GIB);
    cr_assert_eq(cmt_writer_env(b.w, "PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:256"), 0);
    cr_assert_eq(cmt_writer_env(b.w, "CUMEMTRACE_OUTPUT", "/home/alice/traces/%p.cmt"), 0);
    cr_assert_eq(cmt_writer_env(b.w, "CUDA_HOME", "/opt/cuda"), 0);
    struct cmt_module m = {
        .id = 1, .path = "/home/alice/proj/libmodel.so", .base = 0x400000, .size = 0x1000};
    cr_assert_eq(cmt_writer_module(b.w, &m), 0);
    uint32_t s = tb_source_frame(&b, 0, "load_weights", "/home/alice/proj/model.c", 12);
    tb_alloc(&b, 0x7f0000000000, 3 * TB_GIB, s);
    tb_alloc(&b, 0x7f1000000000, TB_GIB, s);
    tb_free(&b, 0x7f1000000000);
    tb_alloc_fail(&b, 6 * TB_GIB, s);
    tb_finish(&b, 1);
    cr_assert_eq(tb_save(&b, path), 0);
    tb_free_builder(&b);
}

static void setup(void)
{
    cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(redact_cmd, .init = setup, .fini = teardown);

/* The output of `cmd PATH` after its first line (which names the path), less report's process
 * line (host and command line: what redact changes). */
static char *analysis(const char *cmd, const char *path)
{
    const char *argv[] = {cmd, path, NULL};
    struct captured c = capture_run(!strcmp(cmd, "oom") ? cmt_cmd_oom : cmt_cmd_report, argv);
    cr_assert_eq(c.status, 0, "%s: %s", cmd, c.err);
    char *rest = strdup(strchr(c.out, '\n')), *line = strstr(rest, "\nprocess    ");
    if (line)
        memmove(line, strchr(line + 1, '\n'), strlen(strchr(line + 1, '\n')) + 1);
    captured_free(&c);
    return rest;
}

Test(redact_cmd, the_copy_analyses_the_same_and_keeps_no_secret)
{
    char in[128], out[128];
    snprintf(in, sizeof in, "%s/run.cmt", dir);
    snprintf(out, sizeof out, "%s/run.redacted.cmt", dir);
    save_trace(in, "gpu-node-17.example.org", -1);
    const char *argv[] = {"redact", in, NULL};
    struct captured c = capture_run(cmt_cmd_redact, argv);
    cr_assert_eq(c.status, 0, "%s", c.err);
    cr_assert(strstr(c.out, "host name replaced, 2 arguments dropped, 2 environment variables "
                            "dropped (1 kept), 4 home-directory paths shortened to ~"),
              "%s", c.out);
    captured_free(&c);

    unsigned long len;
    char *bytes = capture_file(out, &len);
    cr_assert(bytes);
    static const char *const secrets[] = {"gpu-node-17", "hunter2",           "train.py",
                                          "alice",       "CUMEMTRACE_OUTPUT", "/opt/cuda"};
    cmt_reader *r;
    cr_assert_eq(cmt_reader_open_file(&r, out, NULL), 0);
    struct cmt_record rec;
    int rc, strings = 0;
    while ((rc = cmt_reader_next(r, &rec)) == 1) {
        const char *texts[4] = {NULL};
        if (rec.type == CMT_REC_PROCESS) {
            texts[0] = rec.u.process.hostname, texts[1] = rec.u.process.exe;
            cr_assert_str_eq(rec.u.process.hostname, "host1");
            cr_assert_eq(rec.u.process.argc, 1);
            cr_assert_str_eq(rec.u.process.argv[0], "~/venv/bin/python");
        } else if (rec.type == CMT_REC_ENV) {
            texts[0] = rec.u.env.name, texts[1] = rec.u.env.value;
            cr_assert_str_eq(rec.u.env.name, "PYTORCH_CUDA_ALLOC_CONF");
        } else if (rec.type == CMT_REC_STRING) {
            texts[0] = rec.u.string.text;
            strings += strstr(rec.u.string.text, "~/proj/model.c") != NULL;
        } else if (rec.type == CMT_REC_MODULE) {
            texts[0] = rec.u.module.path;
            cr_assert_str_eq(rec.u.module.path, "~/proj/libmodel.so");
        }
        for (int t = 0; t < 4; t++)
            for (size_t s = 0; texts[t] && s < sizeof secrets / sizeof *secrets; s++)
                cr_assert_null(strstr(texts[t], secrets[s]), "%s in %s", secrets[s], texts[t]);
    }
    cr_assert_eq(rc, 0);
    cr_assert_eq(strings, 1, "the source file, shortened");
    cmt_reader_close(r);
    free(bytes);

    for (int k = 0; k < 2; k++) {
        const char *cmd = k ? "oom" : "report";
        char *a = analysis(cmd, in), *b = analysis(cmd, out);
        cr_assert_str_eq(a, b, "%s differs:\n%s\n---\n%s", cmd, a, b);
        cr_assert(strlen(a) > 200, "%s said little: %s", cmd, a);
        free(a);
        free(b);
    }
}

Test(redact_cmd, a_directory_of_ranks_keeps_one_name_per_host)
{
    char ranks[128], copies[128], path[192];
    snprintf(ranks, sizeof ranks, "%s/ranks", dir);
    snprintf(copies, sizeof copies, "%s/copies", dir);
    cr_assert_eq(mkdir(ranks, 0755), 0);
    static const char *const hosts[] = {"node-a", "node-b", "node-a"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/rank%d.cmt", ranks, i);
        save_trace(path, hosts[i], i);
    }
    const char *argv[] = {"redact", "--quiet", ranks, "-o", copies, NULL};
    struct captured c = capture_run(cmt_cmd_redact, argv);
    cr_assert_eq(c.status, 0, "%s", c.err);
    cr_assert_str_eq(c.out, "");
    captured_free(&c);
    static const char *const want[] = {"host1", "host2", "host1"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/rank%d.cmt", copies, i);
        cmt_reader *r;
        cr_assert_eq(cmt_reader_open_file(&r, path, NULL), 0, "%s", path);
        cr_assert_eq(cmt_reader_preload(r), 0);
        cr_assert_str_eq(cmt_reader_process(r)->hostname, want[i]);
        cr_assert_eq(cmt_reader_process(r)->rank, i);
        cmt_reader_close(r);
    }
    /* again into the same folder: nothing is overwritten */
    const char *again[] = {"redact", ranks, "-o", copies, NULL};
    c = capture_run(cmt_cmd_redact, again);
    cr_assert_eq(c.status, 1);
    cr_assert(strstr(c.err, "File exists (never overwritten"), "%s", c.err);
    captured_free(&c);
}

Test(redact_cmd, bad_use_is_one_line_and_a_status)
{
    char in[128];
    snprintf(in, sizeof in, "%s/a.cmt", dir);
    save_trace(in, "h", -1);
    const char *none[] = {"redact", NULL};
    struct captured c = capture_run(cmt_cmd_redact, none);
    cr_assert_eq(c.status, 2);
    captured_free(&c);
    const char *two[] = {"redact", in, in, NULL};
    c = capture_run(cmt_cmd_redact, two);
    cr_assert_eq(c.status, 2, "several inputs need -o DIR");
    cr_assert(strstr(c.err, "-o DIR"), "%s", c.err);
    captured_free(&c);
    const char *missing[] = {"redact", "/nonexistent/x.cmt", "-o", "/tmp/never-written.cmt", NULL};
    c = capture_run(cmt_cmd_redact, missing);
    cr_assert_eq(c.status, 1);
    cr_assert_eq(access("/tmp/never-written.cmt", F_OK), -1);
    captured_free(&c);
    char junk[128];
    snprintf(junk, sizeof junk, "%s/junk.cmt", dir);
    FILE *f = fopen(junk, "w");
    fputs("not a trace", f);
    fclose(f);
    const char *bad[] = {"redact", junk, NULL};
    c = capture_run(cmt_cmd_redact, bad);
    cr_assert_eq(c.status, 1);
    cr_assert(!strchr(strchr(c.err, '\n') + 1, '\n'), "one line: %s", c.err);
    captured_free(&c);
}
