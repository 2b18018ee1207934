/* Output files are never a weapon (issue 12 item 1): the shim creates new files only, never
 * through a symlink, readable by the owner only; `record` refuses an existing -o unless
 * --force. */
#include "e2e_util.h"

TestSuite(output_files, .init = e2e_setup, .fini = e2e_teardown);

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static void assert_file_is(const char *path, const char *text)
{
    static char buf[4096];
    slurp(path, buf, sizeof buf);
    cr_assert_str_eq(buf, text, "%s was changed", path);
}

/* The one trace in the directory other than `not`, checked to hold alloc_deep's events. */
static void assert_one_trace_besides(const char * not, char path[NAME_MAX + 1])
{
    char names[8][NAME_MAX + 1];
    int n = e2e_traces(names, 8), found = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], not )) {
            found++;
            memcpy(path, names[i], NAME_MAX + 1);
        }
    cr_assert_eq(found, 1, "one new trace besides %s (%d files)", not, n);
    struct trace t;
    trace_load(&t, path);
    cr_assert_eq(t.rc, 0);
    cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 12345678), 1);
    trace_free(&t);
}

Test(output_files, bare_shim_never_follows_a_symlink)
{
    static struct run r;
    write_file("victim", "precious\n");
    cr_assert_eq(symlink("victim", "link.cmt"), 0);
    e2e_run_bare(&r, "link.cmt", "tests/progs/alloc_deep", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    assert_file_is("victim", "precious\n");
    char target[PATH_MAX] = "";
    cr_assert_gt(readlink("link.cmt", target, sizeof target - 1), 0, "the link is kept");
    char path[NAME_MAX + 1];
    assert_one_trace_besides("link.cmt", path);
    cr_assert(strstr(r.err, "link.cmt") && strstr(r.err, path), "says where it wrote: %s", r.err);
}

Test(output_files, bare_shim_never_overwrites_a_file)
{
    static struct run r;
    write_file("old.cmt", "an earlier trace\n");
    e2e_run_bare(&r, "old.cmt", "tests/progs/alloc_deep", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    assert_file_is("old.cmt", "an earlier trace\n");
    char path[NAME_MAX + 1];
    assert_one_trace_besides("old.cmt", path);
    const char *line = strstr(r.err, path);
    cr_assert(line, "stderr names the new file: %s", r.err);
    cr_assert_null(strstr(strchr(r.err, '\n') + 1, "cumemtrace:"), "one line: %s", r.err);
}

Test(output_files, trace_is_readable_by_its_owner_only)
{
    static struct run r;
    umask(022);
    e2e_run_bare(&r, "mode.cmt", "tests/progs/alloc_deep", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    struct stat st;
    cr_assert_eq(stat("mode.cmt", &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
}

Test(output_files, manifest_is_never_written_through_a_symlink)
{
    static struct run r;
    write_file("victim", "precious\n");
    cr_assert_eq(symlink("victim", "manifest"), 0);
    setenv("CUMEMTRACE_MANIFEST", "manifest", 1);
    e2e_run_bare(&r, "m.cmt", "tests/progs/alloc_deep", NULL);
    unsetenv("CUMEMTRACE_MANIFEST");
    cr_assert_eq(r.status, 0, "the program must not notice: %s", r.err);
    assert_file_is("victim", "precious\n");
}

Test(output_files, record_refuses_an_existing_output)
{
    static struct run r;
    write_file("r.cmt", "an earlier trace\n");
    const char *opts[] = {"-o", "r.cmt", NULL};
    e2e_record(&r, opts, "tests/progs/alloc_deep", NULL);
    cr_assert_neq(r.status, 0, "refused: %s", r.err);
    cr_assert(strstr(r.err, "r.cmt") && strstr(r.err, "--force"), "%s", r.err);
    assert_file_is("r.cmt", "an earlier trace\n");
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 1, "the program was not run");
}

Test(output_files, record_refuses_a_symlink_as_output)
{
    static struct run r;
    write_file("victim", "precious\n");
    cr_assert_eq(symlink("victim", "r.cmt"), 0);
    const char *opts[] = {"-o", "r.cmt", NULL};
    e2e_record(&r, opts, "tests/progs/alloc_deep", NULL);
    cr_assert_neq(r.status, 0, "refused: %s", r.err);
    assert_file_is("victim", "precious\n");
}

Test(output_files, record_force_replaces_without_following_a_symlink)
{
    static struct run r;
    write_file("victim", "precious\n");
    cr_assert_eq(symlink("victim", "r.cmt"), 0);
    const char *opts[] = {"--force", "-o", "r.cmt", NULL};
    e2e_record(&r, opts, "tests/progs/alloc_deep", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    assert_file_is("victim", "precious\n");
    struct stat st;
    cr_assert_eq(lstat("r.cmt", &st), 0);
    cr_assert(S_ISREG(st.st_mode), "the link itself was replaced by the trace");
    struct trace t;
    trace_load(&t, "r.cmt");
    cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 12345678), 1);
    trace_free(&t);
    write_file("r.cmt", "stale\n");
    e2e_record(&r, opts, "tests/progs/alloc_deep", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    trace_load(&t, "r.cmt");
    cr_assert_eq(count_api(&t, "cuMemAlloc_v2", 12345678), 1, "an existing file is replaced");
    trace_free(&t);
}
