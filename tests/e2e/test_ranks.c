/* Several processes under one `record`: a launcher's ranks (rank-named traces, the rank in
 * each trace, one merged report that names the first failing rank) and two processes that
 * share one simulated GPU (SIMCUDA_SHARED: the oom of one names the other). */
#include "e2e_util.h"

#include <sys/mman.h>

TestSuite(ranks, .init = e2e_setup, .fini = e2e_teardown);

static void cli(struct run *r, const char *const args[])
{
    char cmd[PATH_MAX];
    char *argv[E2E_MAX_ARGS];
    int n = 0;
    argv[n++] = (char *)e2e_path(cmd, "bin/cumemtrace");
    for (int i = 0; args[i]; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    e2e_run(r, argv);
}

/* The number after `key` in a JSON text (the first occurrence), -2 for null, -3 absent. */
static long long json_number(const char *json, const char *key)
{
    char k[128];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(json, k);
    if (!p)
        return -3;
    p += strlen(k);
    return !strncmp(p, "null", 4) ? -2 : strtoll(p, NULL, 10);
}

Test(ranks, a_launcher_s_four_ranks_give_four_rank_named_traces_and_one_report)
{
    static struct run r;
    char launcher[PATH_MAX], prog[PATH_MAX];
    setenv("SIMCUDA_DEVICES", "4", 1);
    setenv("SIMCUDA_MEMORY", "1GiB", 1);
    const char *opts[] = {"-o", "run.%r.cmt", NULL};
    const char *args[] = {"4", e2e_path(prog, "tests/progs/ranks"), "step", "3,1", NULL};
    e2e_record(&r, opts, e2e_path(launcher, "tests/progs/launcher"), args);
    cr_assert_eq(r.status, 1, "the failing ranks exit 1: %s", r.err);
    char names[8][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 8), 4, "%s", r.err);
    for (int i = 0; i < 4; i++) {
        char want[32], line[64];
        snprintf(want, sizeof want, "run.%d.cmt", i);
        cr_assert_str_eq(names[i], want);
        struct trace t;
        trace_load(&t, names[i]);
        cr_assert_eq(t.process->rank, i);
        cr_assert_eq(t.process->local_rank, i);
        cr_assert_eq(t.process->world_size, 4);
        cr_assert_str_eq(t.process->job_id, "test-run");
        snprintf(line, sizeof line, "%s (", want);
        cr_assert(strstr(r.err, line), "record lists %s: %s", want, r.err);
        snprintf(line, sizeof line, ", rank %d on ", i);
        cr_assert(strstr(r.err, line), "record names rank %d: %s", i, r.err);
        trace_free(&t);
    }
    const char *report[] = {"report", "--json", ".", NULL};
    cli(&r, report);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(json_number(r.out, "first_failing_rank"), 3, "%s", r.out);
    cr_assert_eq(json_number(r.out, "traces"), 4);
    for (int i = 0; i < 4; i++) { /* every process with its pid, rank, host and peak */
        char key[32];
        snprintf(key, sizeof key, "\"rank\":%d,", i);
        const char *p = strstr(r.out, key);
        cr_assert(p, "rank %d listed: %s", i, r.out);
        cr_assert(strstr(p, "\"host\":\""));
        cr_assert_eq(json_number(p, "peak_live_bytes"), (i + 1) * (64ll << 20));
    }
    const char *text[] = {"report", "run.0.cmt", "run.1.cmt", "run.2.cmt", "run.3.cmt", NULL};
    cli(&r, text);
    cr_assert(strstr(r.out, "first failure: rank 3 (pid "), "%s", r.out);
    cr_assert(strstr(r.out, "imbalance 1.60 (max / median)"), "%s", r.out);
}

Test(ranks, open_mpi_s_variables_name_the_ranks_too)
{
    static struct run r;
    char launcher[PATH_MAX], prog[PATH_MAX];
    const char *opts[] = {"-o", "mpi.%r.of.%h.cmt", NULL};
    const char *args[] = {"--mpi", "2", e2e_path(prog, "tests/progs/ranks"), "step", "", NULL};
    e2e_record(&r, opts, e2e_path(launcher, "tests/progs/launcher"), args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char host[256] = "", want[300];
    gethostname(host, sizeof host - 1);
    for (int i = 0; i < 2; i++) {
        struct trace t;
        snprintf(want, sizeof want, "mpi.%d.of.%s.cmt", i, host);
        trace_load(&t, want);
        cr_assert_eq(t.process->rank, i);
        cr_assert_eq(t.process->world_size, 2);
        cr_assert_null(t.process->job_id);
        trace_free(&t);
    }
}

Test(ranks, without_a_launcher_the_rank_is_unknown)
{
    static struct run r;
    char name[NAME_MAX + 1];
    const char *opts[] = {"-o", "solo.%r.%l.cmt", NULL};
    const char *args[] = {"step", "", NULL};
    e2e_record_one(&r, name, opts, "tests/progs/ranks", args, 0);
    cr_assert_str_eq(name, "solo.none.none.cmt");
    cr_assert_null(strstr(r.err, "rank"), "%s", r.err);
    struct trace t;
    trace_load(&t, name);
    cr_assert_eq(t.process->rank, -1);
    cr_assert_eq(t.process->local_rank, -1);
    cr_assert_eq(t.process->world_size, -1);
    trace_free(&t);
    const char *report[] = {"report", "--json", ".", NULL};
    cli(&r, report);
    cr_assert_eq(json_number(r.out, "first_failing_rank"), -2, "null: %s", r.out);
    cr_assert_eq(json_number(r.out, "rank"), -2, "null: %s", r.out);
}

/* The second write-up: a shared GPU, another job holds the memory. */
Test(ranks, on_a_shared_gpu_oom_names_the_process_that_held_the_memory)
{
    static struct run r;
    char shared[64], shm[80], prog[PATH_MAX], script[PATH_MAX * 2 + 64];
    snprintf(shared, sizeof shared, "cmt-e2e-%d", (int)getpid());
    setenv("SIMCUDA_SHARED", shared, 1);
    setenv("SIMCUDA_MEMORY", "8GiB", 1);
    e2e_path(prog, "tests/progs/ranks");
    snprintf(script, sizeof script, "%s hold 6000 & %s take 3000; s=$?; wait; exit $s", prog, prog);
    const char *args[] = {"-c", script, NULL};
    e2e_record(&r, NULL, "/bin/sh", args);
    snprintf(shm, sizeof shm, "/simcuda-%s", shared);
    shm_unlink(shm);
    unsetenv("SIMCUDA_SHARED");
    cr_assert_eq(r.status, 1, "B's requests fail: %s", r.err);
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 2, "%s", r.err);
    uint64_t holder = 0;
    for (int i = 0; i < 2; i++) {
        struct trace t;
        trace_load(&t, names[i]);
        if (t.process->argc > 1 && !strcmp(t.process->argv[1], "hold"))
            holder = t.process->pid;
        trace_free(&t);
    }
    cr_assert_neq(holder, 0);
    const char *oom[] = {"oom", names[0], names[1], NULL};
    cli(&r, oom);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want, "  held_by_others: pid %llu, %s hold 6000 held 5.86 GiB (",
             (unsigned long long)holder, prog);
    cr_assert(strstr(r.out, "verdict    held_by_others"), "%s", r.out);
    cr_assert(strstr(r.out, want), "expected '%s' in:\n%s", want, r.out);
    const char *json[] = {"oom", "--json", ".", NULL};
    cli(&r, json);
    char pid[64];
    snprintf(pid, sizeof pid, "\"held_by_others\":[{\"file\":");
    const char *p = strstr(r.out, pid);
    cr_assert(p, "%s", r.out);
    cr_assert_eq(json_number(p, "pid"), (long long)holder);
    cr_assert_eq(json_number(p, "held_bytes"), 6000ll << 20);
    /* the GPU's ledger at the failure: the holder's bytes, the two processes' contexts (simcuda's
     * 256 MiB each) and free add up to the capacity */
    const char *report[] = {"report", "--json", ".", NULL};
    cli(&r, report);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *c = strstr(r.out, "\"gpu_ledgers\":[{");
    cr_assert(c && strstr(c, "\"at\":\"oom\""), "%s", r.out);
    c = strstr(c, "\"combined\":");
    cr_assert(c, "%s", r.out);
    long long total = json_number(c, "total_bytes"), procs = json_number(c, "processes_bytes");
    long long beyond = json_number(c, "contexts_and_untraced_bytes");
    cr_assert_eq(total, 8ll << 30, "%s", c);
    cr_assert_eq(procs, 6000ll << 20, "%s", c);
    cr_assert_eq(beyond, 512ll << 20, "two contexts: %s", c);
    cr_assert_eq(json_number(c, "residual_bytes"), 0, "%s", c);
    cr_assert_eq(procs + beyond + json_number(c, "free_bytes"), total, "%s", c);
}
