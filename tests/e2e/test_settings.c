/* The shim's settings mean what they say (issue 12 item 7): booleans in every usual spelling,
 * bad values refused in one line, nothing cut without a mark. */
#include "e2e_util.h"

TestSuite(settings, .init = e2e_setup, .fini = e2e_teardown);

static int lines(const char *s)
{
    int n = 0;
    for (; (s = strchr(s, '\n')); s++)
        n++;
    return n;
}

/* Files in the scratch directory besides the captured stdout and stderr. */
static int other_files(void)
{
    DIR *d = opendir(".");
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "stdout.txt") &&
             strcmp(e->d_name, "stderr.txt");
    closedir(d);
    return n;
}

Test(settings, disable_accepts_true_yes_and_on)
{
    static struct run r;
    const char *yes[] = {"1", "true", "yes", "on", "TRUE"};
    char names[4][NAME_MAX + 1];
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        setenv("CUMEMTRACE_DISABLE", yes[i], 1);
        e2e_run_bare(&r, "d.%p.cmt", "tests/progs/alloc_deep", NULL);
        cr_assert_eq(r.status, 0, "%s", r.err);
        cr_assert_str_eq(r.err, "", "CUMEMTRACE_DISABLE=%s", yes[i]);
        cr_assert_eq(e2e_traces(names, 4), 0, "CUMEMTRACE_DISABLE=%s records nothing", yes[i]);
    }
    setenv("CUMEMTRACE_DISABLE", "off", 1);
    e2e_run_bare(&r, "d.%p.cmt", "tests/progs/alloc_deep", NULL);
    unsetenv("CUMEMTRACE_DISABLE");
    cr_assert_str_eq(r.err, "");
    cr_assert_eq(e2e_traces(names, 4), 1, "CUMEMTRACE_DISABLE=off records");
}

Test(settings, bogus_clock_is_refused_in_one_line_and_tracing_goes_on)
{
    static struct run r;
    setenv("CUMEMTRACE_CLOCK", "bogus", 1);
    e2e_run_bare(&r, "c.cmt", "tests/progs/alloc_deep", NULL);
    unsetenv("CUMEMTRACE_CLOCK");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "cumemtrace: ignoring CUMEMTRACE_CLOCK=bogus"), "%s", r.err);
    cr_assert_eq(lines(r.err), 1, "%s", r.err);
    struct trace t;
    trace_load(&t, "c.cmt");
    cr_assert_eq(t.n, 4, "traced with the automatic clock");
    trace_free(&t);
}

/* The trace's NOTE records whose text contains `needle`. */
static int notes_with(const char *path, const char *needle)
{
    cmt_reader *rd;
    cr_assert_eq(cmt_reader_open_file(&rd, path, NULL), 0);
    struct cmt_record rec;
    int n = 0;
    while (cmt_reader_next(rd, &rec) > 0)
        n += rec.type == CMT_REC_NOTE && strstr(rec.u.note.text, needle) != NULL;
    cmt_reader_close(rd);
    return n;
}

/* A thread whose clock lags the others' by more than the writer's slack (CMT__SEQ_SLACK): its
 * calls reach the writer after later ones were written. The trace says so in one NOTE (and
 * the shim on stderr), and keeps every call; with no lag, no NOTE. */
Test(settings, a_call_behind_the_written_ones_is_kept_and_named_late)
{
    static struct run r;
    const char *lags[] = {"200", "0"};
    setenv("CUMEMTRACE_CLOCK", "monotonic", 1);
    for (int i = 0; i < 2; i++) {
        const char *args[] = {"1000", lags[i], NULL};
        const char *path = i ? "on_time.cmt" : "late.cmt";
        e2e_run_bare(&r, path, "tests/progs/late_clock", args);
        cr_assert_eq(r.status, 0, "%s", r.err);
        int late = notes_with(path, "a call reached the writer after later ones were written");
        cr_expect_eq(late, !i, "lag %s ms: %d late NOTEs", lags[i], late);
        cr_expect_eq(strstr(r.err, "cumemtrace: a call reached the writer") != NULL, !i, "%s",
                     r.err);
        struct trace t;
        trace_load(&t, path);
        size_t allocs = 0, frees = 0;
        for (size_t k = 0; k < t.n; k++) {
            allocs += !strcmp(api_of(&t, &t.ev[k]), "cuMemAlloc_v2");
            frees += !strcmp(api_of(&t, &t.ev[k]), "cuMemFree_v2");
        }
        cr_expect_eq(allocs, 1001, "lag %s ms", lags[i]);
        cr_expect_eq(frees, 1001, "lag %s ms", lags[i]);
        trace_free(&t);
    }
    unsetenv("CUMEMTRACE_CLOCK");
}

Test(settings, long_command_lines_are_marked_as_cut)
{
    static struct run r;
    static char big[70000];
    memset(big, 'a', sizeof big - 1);
    const char *args[] = {big, NULL};
    e2e_run_bare(&r, "big.cmt", "tests/progs/alloc_deep", args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(notes_with("big.cmt", "the command line is cut: 65535 of its "), 1);

    static char *argv[1600];
    char prog[PATH_MAX], shim[PATH_MAX];
    argv[0] = (char *)e2e_path(prog, "tests/progs/alloc_deep");
    for (int i = 1; i < 1500; i++)
        argv[i] = "x";
    setenv("LD_PRELOAD", e2e_path(shim, "lib/libcumemtrace.so"), 1);
    setenv("CUMEMTRACE_OUTPUT", "many.cmt", 1);
    e2e_run(&r, argv);
    unsetenv("LD_PRELOAD");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(notes_with("many.cmt", "the command line is cut: 1024 of its 1500 arguments"), 1);
    cr_assert_eq(notes_with("big.cmt", "cut") + notes_with("many.cmt", "cut"), 2);
}

Test(settings, long_output_paths_are_refused_not_cut)
{
    static struct run r;
    static char path[8192];
    for (int i = 0; i < 2500; i++)
        strcat(path, "./");
    strcat(path, "t.cmt"); /* 5005 bytes: cut at 4095 it would name the directory "./././." */
    e2e_run_bare(&r, path, "tests/progs/alloc_deep", NULL);
    cr_assert_eq(r.status, 0, "the program must not notice: %s", r.err);
    cr_assert(strstr(r.err, "cumemtrace: CUMEMTRACE_OUTPUT is 5005 bytes, longer than the 4095"),
              "%s", r.err);
    cr_assert_eq(lines(r.err), 1, "%s", r.err);
    path[0] = 0;
    for (int i = 0; i < 2042; i++)
        strcat(path, "./");
    strcat(path, "%p%p%p.cmt"); /* 4094 bytes, more once the pid is filled in */
    e2e_run_bare(&r, path, "tests/progs/alloc_deep", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "is longer than 4095 bytes"), "%s", r.err);
    cr_assert_eq(lines(r.err), 1, "%s", r.err);
    cr_assert_eq(other_files(), 0, "no file under a cut name");
}
