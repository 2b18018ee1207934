/* The walking skeleton end to end: record → trace → dump, and record's own behaviour. */
#include "e2e_util.h"

TestSuite(record, .init = e2e_setup, .fini = e2e_teardown);

Test(record, deep_allocation_and_its_free_exactly)
{
    static struct run r;
    e2e_record(&r, NULL, "tests/progs/alloc_deep", NULL);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 1);
    cr_assert(strstr(r.err, names[0]) && strstr(r.err, "(4 events)"), "stderr: %s", r.err);
    struct trace t;
    trace_load(&t, names[0]);
    cr_assert_eq(t.rc, 0);
    cr_assert(cmt_reader_clean_exit(t.r));
    cr_assert_eq(cmt_reader_seq_gaps(t.r), 0);
    size_t allocs = 0, frees = 0;
    uint64_t ptr = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct cmt_event *e = &t.ev[i];
        cr_assert_eq(e->seq, i);
        if (!strcmp(api_of(&t, e), "cuMemAlloc_v2")) {
            allocs++;
            cr_assert_eq(e->result, 0);
            cr_assert_eq(e->dev, 0);
            cr_assert_eq(e->v[CMT_FIELD_SIZE], 12345678);
            cr_assert(e->fields & CMT_F(PTR));
            ptr = e->v[CMT_FIELD_PTR];
            /* static functions of a binary built without -rdynamic, named */
            cr_assert(stack_has(&t, e->stack, "level3"));
            cr_assert(stack_has(&t, e->stack, "level2"));
            cr_assert(stack_has(&t, e->stack, "level1"));
            cr_assert(stack_has(&t, e->stack, "alloc_deep.c:9"));
        } else if (!strcmp(api_of(&t, e), "cuMemFree_v2")) {
            frees++;
            cr_assert_eq(e->v[CMT_FIELD_PTR], ptr, "the free names the allocated pointer");
            cr_assert_gt(e->seq, 1);
        }
    }
    cr_assert_eq(allocs, 1);
    cr_assert_eq(frees, 1);
    cr_assert_eq(t.ndevices, 1);
    cr_assert_eq(t.nmem, 1, "one baseline");
    cr_assert_eq(t.mem[0].reason, CMT_MEMINFO_BASELINE);
    cr_assert_eq(t.mem[0].total_bytes, 24ull << 30);
    cr_assert_str_eq(t.process->argv[0] + strlen(t.process->argv[0]) - 10, "alloc_deep");
    trace_free(&t);
}

Test(record, dump_prints_the_events_as_json_lines)
{
    static struct run r;
    char path[NAME_MAX + 1], cli[PATH_MAX];
    e2e_record_one(&r, path, NULL, "tests/progs/alloc_deep", NULL, 0);
    char *argv[] = {(char *)e2e_path(cli, "bin/cumemtrace"), "dump", "--stacks", path, NULL};
    e2e_run(&r, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    int lines = 0;
    for (char *p = r.out; (p = strchr(p, '\n')); p++)
        lines++;
    cr_assert_eq(lines, 4, "%s", r.out);
    char *alloc = strstr(r.out, "\"api\":\"cuMemAlloc_v2\"");
    cr_assert_not_null(alloc);
    cr_assert(strstr(alloc, "\"size\":12345678"));
    cr_assert(strstr(alloc, "\"result\":0"));
    cr_assert(strstr(alloc, "\"frames\":[\"level3 alloc_deep.c:9\""), "%s", alloc);
    cr_assert(strstr(r.out, "\"api\":\"cuMemFree_v2\""));
    cr_assert(r.out[0] == '{', "each line is one object");
}

Test(record, program_without_cuda_writes_no_file)
{
    static struct run r;
    const char *args[] = {"none", NULL};
    e2e_record(&r, NULL, "tests/progs/scenarios", args);
    cr_assert_eq(r.status, 0);
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 0);
    cr_assert(strstr(r.err, "no trace written"), "%s", r.err);
}

/* The shim alone (record now refuses an unwritable -o before the program starts). */
Test(record, unwritable_output_warns_once_and_the_program_runs_on)
{
    static struct run r;
    const char *args[] = {"threads", "2", "50", NULL};
    e2e_run_bare(&r, "/nonexistent-dir/x.%p.cmt", "tests/progs/scenarios", args);
    cr_assert_eq(r.status, 0, "the program must not notice: %s", r.err);
    cr_assert(strstr(r.err, "cumemtrace: cannot write /nonexistent-dir/x."), "%s", r.err);
    cr_assert_null(strstr(strstr(r.err, "cannot write") + 1, "cannot write"), "one line only");
}

Test(record, exit_status_and_bad_usage)
{
    static struct run r;
    const char *args[] = {"bogus-mode", NULL};
    e2e_record(&r, NULL, "tests/progs/scenarios", args);
    cr_assert_eq(r.status, 2, "the program's own status");
    char cli[PATH_MAX];
    char *unknown[] = {
        (char *)e2e_path(cli, "bin/cumemtrace"), "record", "--frobnicate", "--", "/bin/true", NULL};
    e2e_run(&r, unknown);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "unknown option '--frobnicate'"), "%s", r.err);
    char *missing[] = {cli, "record", "--", "/no/such/program", NULL};
    e2e_run(&r, missing);
    cr_assert_eq(r.status, 127);
    cr_assert(strstr(r.err, "cannot run /no/such/program"), "%s", r.err);
    char *nofile[] = {cli, "dump", "/no/such/trace.cmt", NULL};
    e2e_run(&r, nofile);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "/no/such/trace.cmt"), "%s", r.err);
    char *nocmd[] = {cli, "frobnicate", NULL};
    e2e_run(&r, nocmd);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "unknown command 'frobnicate'"), "%s", r.err);
}

Test(record, stack_depth_zero_records_no_stacks)
{
    static struct run r;
    const char *opts[] = {"--stack-depth", "0", NULL};
    char path[NAME_MAX + 1];
    e2e_record_one(&r, path, opts, "tests/progs/alloc_deep", NULL, 0);
    struct trace t;
    trace_load(&t, path);
    cr_assert_eq(t.n, 4);
    for (size_t i = 0; i < t.n; i++)
        cr_assert_eq(t.ev[i].stack, 0);
    trace_free(&t);
}

Test(record, report_json_shows_the_peak)
{
    static struct run r;
    char path[NAME_MAX + 1], cli[PATH_MAX];
    e2e_record_one(&r, path, NULL, "tests/progs/alloc_deep", NULL, 0);
    char *argv[] = {(char *)e2e_path(cli, "bin/cumemtrace"), "report", "--json", path, NULL};
    e2e_run(&r, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"peak_live_bytes\":12345678,"), "%s", r.out);
    cr_assert(strstr(r.out, "\"live_bytes_at_end\":0,"), "%s", r.out);
    cr_assert(strstr(r.out, "\"stack\":[\"level3 alloc_deep.c:9\""), "%s", r.out);
}

/* record fails early and truthfully (issue 12 item 6). */
Test(record, unwritable_output_is_refused_before_the_program_runs)
{
    static struct run r;
    const char *opts[] = {"-o", "/nonexistent-dir/x.%p.cmt", NULL};
    e2e_record(&r, opts, "/bin/sh", (const char *const[]){"-c", "touch ran", NULL});
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert(strstr(r.err, "cumemtrace record: cannot write traces in /nonexistent-dir: "), "%s",
              r.err);
    cr_assert_eq(access("ran", F_OK), -1, "the program was not started");
    mkdir("ro", 0500);
    const char *ro[] = {"-o", "ro/x.cmt", NULL};
    e2e_record(&r, ro, "/bin/sh", (const char *const[]){"-c", "touch ran", NULL});
    if (geteuid() != 0) { /* root may write anyway */
        cr_assert_eq(r.status, 2, "%s", r.err);
        cr_assert(strstr(r.err, "/ro: Permission denied"), "%s", r.err);
        cr_assert_eq(access("ran", F_OK), -1, "the program was not started");
    }
}

Test(record, program_that_cannot_run_says_so_in_one_line)
{
    static struct run r;
    char cli[PATH_MAX];
    char *missing[] = {(char *)e2e_path(cli, "bin/cumemtrace"), "record", "--", "/no/such/program",
                       NULL};
    e2e_run(&r, missing);
    cr_assert_eq(r.status, 127);
    cr_assert_str_eq(r.err, "cumemtrace record: cannot run /no/such/program: "
                            "No such file or directory\n");
    cr_assert_str_eq(r.out, "", "no report of traces: nothing ran");
    FILE *f = fopen("plain", "w");
    fputs("not a program\n", f);
    fclose(f);
    char path[PATH_MAX];
    char *plain[] = {cli, "record", "--", realpath("plain", path), NULL};
    e2e_run(&r, plain);
    cr_assert_eq(r.status, 126, "found but not executable, as a shell says");
    cr_assert(strstr(r.err, "Permission denied"), "%s", r.err);
}

/* The shim could not write (the directory depends on the pid, so record cannot check it
 * first): record says no trace was written, not that the program made no CUDA calls, and
 * exits non-zero although the program succeeded. */
Test(record, trace_the_shim_could_not_write_is_a_failure)
{
    static struct run r;
    const char *opts[] = {"-o", "/nonexistent-%p/x.cmt", NULL};
    e2e_record(&r, opts, "tests/progs/alloc_deep", NULL);
    cr_assert_eq(r.status, 1, "%s", r.err);
    cr_assert(strstr(r.err, "cannot write /nonexistent-"), "the shim's line: %s", r.err);
    cr_assert_null(strstr(r.out, "made no CUDA memory calls"), "%s", r.out);
    cr_assert_null(strstr(r.err, "made no CUDA memory calls"), "%s", r.err);
}

/* A fixed -o name and a program that forks: no process's trace is dropped; the one that finds
 * the name taken writes NAME.<pid>.cmt, and stderr says so. */
Test(record, fixed_output_name_with_a_fork_keeps_both_traces)
{
    static struct run r;
    const char *opts[] = {"-o", "r.cmt", NULL};
    const char *args[] = {"fork", NULL};
    e2e_record(&r, opts, "tests/progs/scenarios", args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 2, "%s", r.err);
    size_t parent = 0, child = 0;
    for (int i = 0; i < 2; i++) {
        struct trace t;
        trace_load(&t, names[i]);
        parent += count_api(&t, "cuMemAlloc_v2", 11111111);
        child += count_api(&t, "cuMemAlloc_v2", 22222222);
        if (strcmp(names[i], "r.cmt")) {
            char want[64];
            snprintf(want, sizeof want, "r.%llu.cmt", (unsigned long long)t.process->pid);
            cr_assert_str_eq(names[i], want, "the pid names the second trace");
            cr_assert(strstr(r.err, want), "warned: %s", r.err);
        }
        trace_free(&t);
    }
    cr_assert_eq(parent, 1);
    cr_assert_eq(child, 1);
}

/* record's own lines go to stderr: the program's stdout is the program's alone
 * (`cumemtrace record -- prog > out.json`). */
Test(record, own_lines_never_go_to_the_programs_stdout)
{
    static struct run r;
    e2e_record(&r, NULL, "/bin/sh",
               (const char *const[]){"-c", "echo program-output; exec \"$0\"",
                                     e2e_path((char[PATH_MAX]){0}, "tests/progs/alloc_deep"),
                                     NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "program-output\n");
    cr_assert(strstr(r.err, "cumemtrace: wrote ") && strstr(r.err, "(4 events)"), "%s", r.err);
    const char *args[] = {"none", NULL};
    e2e_record(&r, NULL, "tests/progs/scenarios", args);
    cr_assert_str_eq(r.out, "");
    cr_assert(strstr(r.err, "no trace written"), "%s", r.err);
}
