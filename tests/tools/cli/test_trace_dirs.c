/* Every command takes a directory of traces (issue 23): dump and export go through each of its
 * traces, whatif takes its one trace or says in one line why several make no sense, html draws
 * its one trace or all of them (the ranks view). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "commands.h"
#include "trace_builder.h"

static char dir[96];

/* DIR with n traces, a.cmt, b.cmt, ...: each one allocation of (i + 1) GiB. */
static const char *make_dir(int n)
{
    snprintf(dir, sizeof dir, "/tmp/cmt-test-dirs-%d-%d", (int)getpid(), n);
    mkdir(dir, 0700);
    for (int i = 0; i < n; i++) {
        struct tb b;
        char path[160];
        tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
        tb_alloc(&b, 0x100000000, (uint64_t)(i + 1) * TB_GIB, tb_stack(&b, "main", 1));
        tb_finish(&b, 1);
        snprintf(path, sizeof path, "%s/%c.cmt", dir, 'a' + i);
        cr_assert_eq(tb_save(&b, path), 0);
        tb_free_builder(&b);
    }
    return dir;
}

static void remove_dir(int n)
{
    char path[160];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%c.cmt", dir, 'a' + i);
        unlink(path);
    }
    rmdir(dir);
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (; (s = strstr(s, what)); s += strlen(what))
        n++;
    return n;
}

Test(trace_dirs, dump_goes_through_each_trace_of_a_directory)
{
    const char *d = make_dir(2);
    const char *argv[] = {"dump", d, NULL};
    struct captured c = capture_run(cmt_cmd_dump, argv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect_eq(count(c.out, "{\"record\":\"file\""), 2, "%s", c.out);
    cr_expect(strstr(c.out, "/a.cmt\"}") < strstr(c.out, "/b.cmt\"}"), "name order: %s", c.out);
    cr_expect_eq(count(c.out, "\"size\":1073741824"), 1, "%s", c.out);
    cr_expect_eq(count(c.out, "\"size\":2147483648"), 1, "%s", c.out);
    captured_free(&c);
    remove_dir(2);
}

Test(trace_dirs, export_of_a_directory_gives_every_traces_rows_or_says_why_not)
{
    const char *d = make_dir(2);
    const char *csv[] = {"export", "-f", "csv", "--table", "processes", d, NULL};
    struct captured c = capture_run(cmt_cmd_export, csv);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect_eq(count(c.out, "\n"), 3, "a header and one row per trace: %s", c.out);
    captured_free(&c);
    const char *jsonl[] = {"export", "-f", "jsonl", "--table", "processes", d, NULL};
    c = capture_run(cmt_cmd_export, jsonl);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect_eq(count(c.out, "\n"), 2, "%s", c.out);
    captured_free(&c);
    const char *folded[] = {"export", "-f", "collapsed", d, NULL};
    c = capture_run(cmt_cmd_export, folded);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, " 1073741824\n") && strstr(c.out, " 2147483648\n"), "%s", c.out);
    captured_free(&c);
    const char *perfetto[] = {"export", "-f", "perfetto", d, NULL};
    c = capture_run(cmt_cmd_export, perfetto);
    cr_expect_eq(c.status, 1);
    cr_expect_eq(count(c.err, "\n"), 1, "one line: %s", c.err);
    cr_expect(strstr(c.err, "one trace"), "%s", c.err);
    captured_free(&c);
    remove_dir(2);
}

Test(trace_dirs, whatif_takes_a_directorys_one_trace_and_refuses_several_html_draws_them)
{
    char out[128];
    snprintf(out, sizeof out, "/tmp/cmt-test-dirs-%d.html", (int)getpid());
    const char *d = make_dir(1);
    const char *whatif[] = {"whatif", d, NULL};
    struct captured c = capture_run(cmt_cmd_whatif, whatif);
    cr_expect(!strstr(c.err, "not a regular file"), "%s", c.err);
    cr_expect(strstr(c.out, "a.cmt"), "the directory's trace: %s%s", c.out, c.err);
    captured_free(&c);
    const char *html[] = {"html", "-o", out, d, NULL};
    c = capture_run(cmt_cmd_html, html);
    cr_expect_eq(c.status, 0, "%s", c.err);
    captured_free(&c);
    remove_dir(1);
    d = make_dir(3);
    c = capture_run(cmt_cmd_whatif, whatif);
    cr_expect_eq(c.status, 1);
    cr_expect_eq(count(c.err, "\n"), 1, "one line: %s", c.err);
    cr_expect(strstr(c.err, "3 traces"), "%s", c.err);
    captured_free(&c);
    c = capture_run(cmt_cmd_html, html); /* the ranks view (test_html_cmd) */
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "ranks: 3 traces"), "%s", c.out);
    captured_free(&c);
    remove_dir(3);
    unlink(out);
}

Test(trace_dirs, symbolize_goes_through_a_directory_and_import_says_why_not)
{
    const char *d = make_dir(2);
    const char *sym[] = {"symbolize", d, NULL};
    struct captured c = capture_run(cmt_cmd_symbolize, sym);
    cr_expect(!strstr(c.err, "not a regular file"), "%s", c.err);
    cr_expect(strstr(c.out, "a.cmt") && strstr(c.out, "b.cmt"), "%s%s", c.out, c.err);
    captured_free(&c);
    const char *imp[] = {"import", d, NULL};
    c = capture_run(cmt_cmd_import, imp);
    cr_expect_eq(c.status, 1);
    cr_expect_eq(count(c.err, "\n"), 1, "one line: %s", c.err);
    cr_expect(strstr(c.err, "import converts one snapshot"), "%s", c.err);
    captured_free(&c);
    remove_dir(2);
}
