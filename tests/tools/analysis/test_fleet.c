/* fleet: many traces as one run (tools/analysis/fleet.h) — ranks, peaks, the first failure on
 * the wall clock, GPUs shared by processes of one host, what the others held at a failure. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmt_error.h"
#include "fleet.h"
#include "ledger_expect.h"
#include "trace_builder.h"

#define MS UINT64_C(1000000)
#define WALL0 UINT64_C(1800000000000000000)

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/cmt-fleet.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

struct who {
    uint64_t pid;
    int32_t rank;
    const char *host;
    uint64_t wall, mono; /* start */
    const char *visible; /* CUDA_VISIBLE_DEVICES, or NULL */
};

static void begin(struct tb *b, const struct who *w)
{
    static const char *argv[] = {"python", "train.py"};
    struct cmt_process p = {w->pid, 1,    w->wall, w->mono, 12040, w->host, "/usr/bin/python3",
                            2,      argv, w->rank, w->rank, 4,     "job-1"};
    tb_begin_process(b, &p, 16 * TB_GIB, 16 * TB_GIB);
    if (w->visible)
        cr_assert_eq(cmt_writer_env(b->w, "CUDA_VISIBLE_DEVICES", w->visible), 0);
}

/* Events at trace time t (tb_event adds 1000 ns). */
static void at(struct tb *b, uint64_t t)
{
    b->t_ns = t - 1000;
}

static void save(struct tb *b, const char *name)
{
    char path[128];
    tb_finish(b, 1);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(tb_save(b, path), 0);
    tb_free_builder(b);
}

/* A rank that allocates `peak` and, when fail_t, fails a 20 GiB request at fail_t (twice). */
static void rank_trace(const struct who *w, uint64_t peak, uint64_t fail_t, const char *name)
{
    struct tb b;
    begin(&b, w);
    at(&b, 1 * MS);
    tb_alloc(&b, 0x7f0000000000, peak, 0);
    if (fail_t) {
        at(&b, fail_t);
        tb_alloc_fail(&b, 20 * TB_GIB, 0);
        tb_alloc_fail(&b, 20 * TB_GIB, 0);
    }
    at(&b, 20 * MS);
    tb_free(&b, 0x7f0000000000);
    save(&b, name);
}

static void load_dir_with(struct cmt_fleet *f, uint32_t series_points)
{
    char **paths;
    size_t n;
    const char *bad, *inputs[] = {dir};
    cr_assert_eq(cmt_fleet_paths(inputs, 1, &paths, &n, &bad), 0);
    struct cmt_fleet_options o = {.jobs = 2, .series_points = series_points};
    cr_assert_eq(cmt_fleet_load(f, (const char *const *)paths, n, &o), 0);
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

static void load_dir(struct cmt_fleet *f)
{
    load_dir_with(f, 0);
}

Test(fleet, ranks_peaks_imbalance_and_the_first_failure_on_the_wall_clock, .init = make_dir,
     .fini = remove_dir)
{
    /* rank 1 fails at its 9 ms, rank 2 at its 2 ms but started 4 ms later: rank 2 failed
     * first, 6 ms after rank 1's start (the wall clock decides, not the order of the files) */
    struct who r0 = {100, 0, "h", WALL0, 5000, NULL}, r1 = {101, 1, "h", WALL0, 5000, NULL},
               r2 = {102, 2, "h", WALL0 + 4 * MS, 5000 + 4 * MS, NULL};
    rank_trace(&r2, 2 * TB_GIB, 2 * MS, "a.cmt"); /* names not in rank order */
    rank_trace(&r1, 3 * TB_GIB, 9 * MS, "b.cmt");
    rank_trace(&r0, 1 * TB_GIB, 0, "c.cmt");
    struct cmt_fleet f;
    load_dir(&f);
    cr_assert_eq(f.count, 3);
    for (int32_t r = 0; r < 3; r++) {
        cr_assert_eq(f.processes[r].rank, r, "sorted by rank");
        cr_assert_eq(f.processes[r].pid, 100 + (uint64_t)r);
        cr_assert_str_eq(f.processes[r].host, "h");
        cr_assert_str_eq(f.processes[r].job_id, "job-1");
        cr_assert_str_eq(f.processes[r].command, "python train.py");
    }
    cr_assert_eq(f.rank_count, 3);
    cr_assert_eq(f.ranks[1].peak_live_bytes, 3 * TB_GIB);
    cr_assert_eq(f.first_failure, 2);
    cr_assert_eq(f.processes[2].failure, CMT_FLEET_FAILED_OOM);
    cr_assert_eq(f.first_failure_wall_ns, WALL0 + 6 * MS);
    cr_assert_eq(f.peak_max_bytes, 3 * TB_GIB);
    cr_assert_eq(f.peak_median_bytes, 2 * TB_GIB);
    cr_assert_float_eq(f.imbalance, 1.5, 1e-9);
    cr_assert_eq(cmt_fleet_find_rank(&f, 2), 2);
    cr_assert_eq(cmt_fleet_find_rank(&f, 7), -1);
    cr_assert_eq(f.gpu_count, 1, "one host, device 0 each: one GPU");
    cr_assert_str_eq(f.gpus[0].key, "h/0");
    cr_assert_eq(f.gpus[0].member_count, 3);
    cr_assert_eq(f.gpus[0].sum_of_peaks_bytes, 6 * TB_GIB);
    cr_assert_leq(f.gpus[0].combined_peak_bytes, 6 * TB_GIB);
    cr_assert_geq(f.gpus[0].combined_peak_bytes, 3 * TB_GIB);
    cmt_fleet_free(&f);
}

/* CMT_FLEET_NO_SERIES: no process has a series, and the rest is as with one */
Test(fleet, without_series_the_rest_is_the_same, .init = make_dir, .fini = remove_dir)
{
    struct who r0 = {100, 0, "h", WALL0, 5000, NULL},
               r1 = {101, 1, "h", WALL0 + 4 * MS, 5000, NULL};
    rank_trace(&r0, 1 * TB_GIB, 0, "a.cmt");
    rank_trace(&r1, 3 * TB_GIB, 9 * MS, "b.cmt");
    struct cmt_fleet with, without;
    load_dir_with(&with, 0);
    load_dir_with(&without, CMT_FLEET_NO_SERIES);
    cr_assert_eq(without.count, 2);
    for (uint32_t p = 0; p < 2; p++) {
        const struct cmt_fleet_process *a = &with.processes[p], *b = &without.processes[p];
        cr_assert_gt(a->series_count, 0);
        cr_assert_eq(b->series_count, 0);
        cr_assert_null(b->series);
        cr_assert_eq(a->events, b->events);
        cr_assert_eq(a->peak_live_bytes, b->peak_live_bytes);
        cr_assert_eq(a->busiest_dev, b->busiest_dev);
        cr_assert_eq(a->episode_count, b->episode_count);
        cr_assert_eq(a->failure, b->failure);
        cr_assert_eq(a->failure_t_ns, b->failure_t_ns);
    }
    cr_assert_eq(without.first_failure, 1);
    cr_assert_eq(without.first_failure_wall_ns, with.first_failure_wall_ns);
    cr_assert_eq(without.gpu_count, 1);
    cr_assert_eq(without.gpus[0].combined_peak_bytes, without.gpus[0].sum_of_peaks_bytes,
                 "no series: the bound");
    cmt_fleet_free(&with);
    cmt_fleet_free(&without);
}

Test(fleet, no_failure_and_no_rank, .init = make_dir, .fini = remove_dir)
{
    struct who a = {7, -1, "h", WALL0, 1, NULL}, b = {8, -1, "h", WALL0, 1, NULL};
    rank_trace(&a, 2 * TB_GIB, 0, "x.cmt");
    rank_trace(&b, 4 * TB_GIB, 0, "y.cmt");
    struct cmt_fleet f;
    load_dir(&f);
    cr_assert_eq(f.first_failure, -1);
    cr_assert_eq(f.rank_count, 0);
    cr_assert_eq(f.processes[0].rank, -1);
    cr_assert_eq(f.peak_max_bytes, 4 * TB_GIB, "over processes when no rank is known");
    cr_assert_eq(f.peak_median_bytes, 3 * TB_GIB);
    cmt_fleet_free(&f);
}

/* Other processes on the failing GPU, at the failure's moment on the host's clock. */
Test(fleet, held_by_others_is_what_each_other_process_held_at_that_moment, .init = make_dir,
     .fini = remove_dir)
{
    struct who holder = {10, -1, "h", WALL0, 1000 * MS, NULL};
    struct tb b;
    begin(&b, &holder);
    at(&b, 1 * MS);
    tb_alloc(&b, 0x7f0000000000, 4 * TB_GIB, 0);
    tb_alloc(&b, 0x7f0100000000, 2 * TB_GIB, 0);
    at(&b, 5 * MS);
    tb_free(&b, 0x7f0000000000); /* 2 GiB left from 5 ms on */
    at(&b, 30 * MS);
    tb_free(&b, 0x7f0100000000);
    save(&b, "holder.cmt");
    /* the failing process started 2 ms after the holder: its 1 ms and 4 ms are the holder's
     * 3 ms (6 GiB held) and 6 ms (2 GiB) */
    struct who victim = {11, -1, "h", WALL0 + 2 * MS, 1002 * MS, NULL};
    begin(&b, &victim);
    at(&b, 1 * MS);
    tb_alloc_fail(&b, 12 * TB_GIB, 0);
    at(&b, 3 * MS);
    tb_alloc(&b, 0x7f0000000000, 1 * TB_MIB, 0);
    at(&b, 4 * MS);
    tb_alloc_fail(&b, 15 * TB_GIB, 0);
    save(&b, "victim.cmt");
    /* same ordinal on another host, and another GPU of this host: neither shares it */
    struct who elsewhere = {12, -1, "h2", WALL0, 1000 * MS, NULL};
    struct who other_gpu = {13, -1, "h", WALL0, 1000 * MS, "1"};
    for (int i = 0; i < 2; i++) {
        begin(&b, i ? &other_gpu : &elsewhere);
        at(&b, 1 * MS);
        tb_alloc(&b, 0x7f0000000000, 8 * TB_GIB, 0);
        at(&b, 30 * MS);
        tb_free(&b, 0x7f0000000000);
        save(&b, i ? "other_gpu.cmt" : "elsewhere.cmt");
    }
    struct cmt_fleet f;
    load_dir(&f);
    cr_assert_eq(f.gpu_count, 3);
    cr_assert_str_eq(f.gpus[0].key, "h/0");
    cr_assert_str_eq(f.gpus[1].key, "h/1", "CUDA_VISIBLE_DEVICES=1: ordinal 0 is GPU 1");
    cr_assert_str_eq(f.gpus[2].key, "h2/0");
    int64_t v = -1;
    for (uint32_t p = 0; p < f.count; p++)
        if (f.processes[p].pid == 11)
            v = p;
    cr_assert_geq(v, 0);
    cr_assert_eq(f.processes[v].episode_count, 2);
    const uint64_t want[2] = {6 * TB_GIB, 2 * TB_GIB};
    struct cmt_fleet_holders **h;
    cr_assert_eq(cmt_fleet_held_by_others(&f, &h), 0);
    for (uint32_t e = 0; e < 2; e++) { /* both from one replay of the holder */
        cr_assert_eq(h[v][e].count, 1, "only the holder shares GPU h/0");
        cr_assert_eq(f.processes[h[v][e].list[0].process].pid, 10);
        cr_assert_eq(h[v][e].list[0].held_bytes, want[e], "episode %u", e);
    }
    cmt_fleet_holders_free(&f, h);
    cmt_fleet_free(&f);
}

/* A process at base: `first` bytes at 1 ms, a failure at fail[0], `second` more bytes at
 * grow_t, a failure at fail[1], its first allocation freed at 60 ms (its end). */
static void two_failures(const struct who *w, uint64_t base, uint64_t first, uint64_t grow_t,
                         uint64_t second, const uint64_t fail[2], const char *name)
{
    struct tb t;
    begin(&t, w);
    at(&t, 1 * MS);
    tb_alloc(&t, base, first, 0);
    at(&t, fail[0]);
    tb_alloc_fail(&t, 20 * TB_GIB, 0);
    at(&t, grow_t);
    tb_alloc(&t, base + 0x100000000, second, 0);
    at(&t, fail[1]);
    tb_alloc_fail(&t, 20 * TB_GIB, 0);
    at(&t, 60 * MS); /* both live past the other's failures */
    tb_free(&t, base);
    save(&t, name);
}

/* cmt_fleet_replay_fn as cmd_oom's printing pass is: the caller replays each process asked
 * with the held observer (copied, among its own), or fails as a trace moved away would. */
struct asked {
    const struct cmt_fleet *f;
    unsigned calls, with_held;
    int fail;
};

static int replay_here(void *ctx, uint32_t p, const struct cmt_observer *held)
{
    struct asked *a = ctx;
    a->calls++;
    if (!held)
        return 1;
    a->with_held++;
    if (a->fail)
        return CMT_EIO;
    cmt_reader *r;
    cmt_replay *rp;
    cr_assert_eq(cmt_reader_open_file(&r, a->f->processes[p].path, NULL), 0);
    cr_assert_eq(cmt_replay_create(&rp, r), 0);
    struct cmt_observer o[2] = {cmt_signal_observer(&(struct cmt_signal_seen){0}), *held};
    cr_assert_eq(cmt_replay_run(rp, o, 2), 0);
    cmt_replay_destroy(rp);
    cmt_reader_close(r);
    return 1;
}

/* Two processes on one GPU, each failing while the other holds memory: one replay of each
 * answers for every episode of the other, each at its own moment; the same when the caller
 * makes the replays (cmt_fleet_held_by_others_in), and a failed one fails the call. */
Test(fleet, held_by_others_answers_every_failing_process_at_each_of_its_episodes, .init = make_dir,
     .fini = remove_dir)
{
    struct who a = {20, -1, "h", WALL0, 1000 * MS, NULL};
    struct who b = {21, -1, "h", WALL0 + 10 * MS, 1010 * MS, NULL}; /* a's 10 ms is b's 0 */
    /* a fails at b's 2 ms (b holds 3 GiB) and 30 ms (5 GiB); b at a's 15 ms (a holds 1 GiB)
     * and 45 ms (5 GiB) */
    two_failures(&a, 0x7f0000000000, 1 * TB_GIB, 20 * MS, 4 * TB_GIB,
                 (const uint64_t[]){12 * MS, 40 * MS}, "a.cmt");
    two_failures(&b, 0x7e0000000000, 3 * TB_GIB, 25 * MS, 2 * TB_GIB,
                 (const uint64_t[]){5 * MS, 35 * MS}, "b.cmt");
    struct who idle = {22, -1, "h", WALL0, 1000 * MS, "1"}; /* another GPU: asked nothing */
    struct tb t;
    begin(&t, &idle);
    at(&t, 1 * MS);
    tb_alloc(&t, 0x7d0000000000, TB_GIB, 0);
    save(&t, "idle.cmt");
    struct cmt_fleet f;
    load_dir(&f);
    struct asked asked = {&f, 0, 0, 0};
    for (int caller = 0; caller < 2; caller++) {
        struct cmt_fleet_holders **h;
        cr_assert_eq(caller ? cmt_fleet_held_by_others_in(&f, &h, replay_here, &asked)
                            : cmt_fleet_held_by_others(&f, &h),
                     0);
        for (uint32_t p = 0; p < f.count; p++) {
            if (f.processes[p].pid == 22)
                continue;
            int is_a = f.processes[p].pid == 20;
            const uint64_t want[2] = {is_a ? 3 * TB_GIB : 1 * TB_GIB, 5 * TB_GIB};
            cr_assert_eq(f.processes[p].episode_count, 2);
            for (uint32_t e = 0; e < 2; e++) {
                cr_assert_eq(h[p][e].count, 1, "pid %llu episode %u",
                             (unsigned long long)f.processes[p].pid, e);
                cr_expect_eq(f.processes[h[p][e].list[0].process].pid, is_a ? 21 : 20);
                cr_expect_eq(h[p][e].list[0].held_bytes, want[e], "pid %llu episode %u, caller %d",
                             (unsigned long long)f.processes[p].pid, e, caller);
            }
        }
        cmt_fleet_holders_free(&f, h);
    }
    cr_expect_eq(asked.calls, 3, "every process is offered to the caller");
    cr_expect_eq(asked.with_held, 2, "the two that hold at the other's episodes with the question");
    asked.fail = 1;
    struct cmt_fleet_holders **h = (void *)&asked;
    cr_expect_eq(cmt_fleet_held_by_others_in(&f, &h, replay_here, &asked), CMT_EIO);
    cr_expect_null(h);
    cmt_fleet_free(&f);
}

Test(fleet, times_at_the_ends_of_the_clock_do_not_break_the_grid, .init = make_dir,
     .fini = remove_dir)
{
    struct who early = {1, 0, "h", 0, 1, NULL}, late = {2, 1, "h", UINT64_MAX - 5, 1, NULL};
    rank_trace(&early, TB_GIB, 0, "early.cmt");
    rank_trace(&late, TB_GIB, 2 * MS, "late.cmt");
    struct cmt_fleet f;
    load_dir(&f);
    uint64_t *v, w;
    cr_assert_eq(cmt_fleet_grid(&f, 7, &v, &w), 0);
    cr_assert_geq(w, 1);
    cr_assert_eq(v[0], TB_GIB, "the early rank at the start");
    free(v);
    cr_assert_eq(f.first_failure, 1);
    cr_assert_eq(f.first_failure_wall_ns, UINT64_MAX, "saturated, not wrapped");
    cmt_fleet_free(&f);
}

Test(fleet, two_runs_pair_by_rank, .init = make_dir, .fini = remove_dir)
{
    struct who r0 = {1, 0, "h", WALL0, 1, NULL}, r1 = {2, 1, "h", WALL0, 1, NULL},
               r3 = {3, 3, "h", WALL0, 1, NULL};
    rank_trace(&r0, TB_GIB, 0, "r0.cmt");
    rank_trace(&r1, TB_GIB, 0, "r1.cmt");
    struct cmt_fleet a, b;
    load_dir(&a);
    rank_trace(&r3, TB_GIB, 0, "r3.cmt");
    load_dir(&b);
    int64_t *pairs;
    size_t n;
    cr_assert_eq(cmt_fleet_pair(&a, &b, &pairs, &n), 0);
    cr_assert_eq(n, 3);
    cr_assert_eq(pairs[0], 0);
    cr_assert_eq(pairs[1], 0);
    cr_assert_eq(pairs[2], 1);
    cr_assert_eq(pairs[3], 1);
    cr_assert_eq(pairs[4], -1, "rank 3 only in b");
    cr_assert_eq(b.processes[pairs[5]].rank, 3);
    free(pairs);
    cmt_fleet_free(&a);
    cmt_fleet_free(&b);
}

Test(fleet, a_directory_lists_its_traces_and_an_unreadable_one_is_kept_apart, .init = make_dir,
     .fini = remove_dir)
{
    struct who w = {1, 0, "h", WALL0, 1, NULL};
    rank_trace(&w, TB_GIB, 0, "b.cmt");
    char path[128];
    snprintf(path, sizeof path, "%s/a.cmt", dir);
    FILE *junk = fopen(path, "w");
    fputs("not a trace", junk);
    fclose(junk);
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    fclose(fopen(path, "w"));
    char **paths;
    size_t n;
    const char *bad, *inputs[] = {dir, "/no/such/dir"};
    cr_assert_eq(cmt_fleet_paths(inputs, 1, &paths, &n, &bad), 0);
    cr_assert_eq(n, 2);
    cr_assert(strstr(paths[0], "/a.cmt") && strstr(paths[1], "/b.cmt"), "in name order");
    struct cmt_fleet f;
    cr_assert_eq(cmt_fleet_load(&f, (const char *const *)paths, n, NULL), 0);
    cr_assert_eq(f.count, 2);
    cr_assert_eq(f.processes[0].error, 0, "the readable one first (rank 0)");
    cr_assert_eq(f.processes[1].error, CMT_EBAD_MAGIC);
    cr_assert_eq(f.rank_count, 1);
    cmt_fleet_free(&f);
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    /* a file name that does not exist is kept (its open fails later); a directory too */
    cr_assert_eq(cmt_fleet_paths(inputs + 1, 1, &paths, &n, &bad), 0);
    cr_assert_eq(n, 1);
    free(paths[0]);
    free(paths);
}

/* The moment of the ledger over `times` of one trace, replayed alone (as a second replay to the
 * GPU's moment takes it). */
static cmt_ledger *ledger_alone(const char *path, uint64_t t, cmt_reader **r, cmt_replay **rp,
                                cmt_alloc **a)
{
    cmt_ledger *l;
    const struct cmt_ledger_options o = {.times = &t, .time_count = 1};
    cr_assert_eq(cmt_reader_open_file(r, path, NULL), 0);
    cr_assert_eq(cmt_replay_create(rp, *r), 0);
    cr_assert_eq(cmt_alloc_create(a), 0);
    cr_assert_eq(cmt_ledger_create(&l, *a, &o), 0);
    struct cmt_observer obs[2] = {cmt_alloc_observer(*a), cmt_ledger_observer(l)};
    cr_assert_eq(cmt_replay_run(*rp, obs, 2), 0);
    return l;
}

/* Process p's moment of device 0 at t, taken in the fleet's replay, is what a replay of its
 * trace alone to t gives. @return it. */
static const struct cmt_ledger_moment *same_as_alone(const struct cmt_fleet_process *p, uint64_t t)
{
    const struct cmt_ledger_moment *m;
    cr_assert_eq(cmt_fleet_ledger_at(p, t, 0, &m), 1, "pid %llu: a moment at %llu",
                 (unsigned long long)p->pid, (unsigned long long)t);
    cr_assert_not_null(m);
    cmt_reader *r;
    cmt_replay *rp;
    cmt_alloc *a;
    cmt_ledger *alone = ledger_alone(p->path, t, &r, &rp, &a);
    const struct cmt_ledger_moment *w = cmt_ledger_find(alone, CMT_LEDGER_AT_TIME, 0, 0);
    cr_assert_not_null(w);
    expect_same_moment(m, w);
    cmt_ledger_destroy(alone);
    cmt_alloc_destroy(a);
    cmt_replay_destroy(rp);
    cmt_reader_close(r);
    return m;
}

/* ledger_guess: read in the order of their start, the later process's ledger is taken in its
 * first replay at the moment the first started one's failure sets for their GPU, and the first
 * one's at its own failure and end (known only as its replay reaches them), each exactly as a
 * replay to that moment gives it: report DIR replays none of them again. */
Test(fleet, the_ledger_is_taken_in_the_first_replay_at_a_moment_guessed_right, .init = make_dir,
     .fini = remove_dir)
{
    struct who early = {20, 0, "h", WALL0, 1000 * MS, NULL};
    struct who late = {21, 1, "h", WALL0 + 2 * MS, 1002 * MS, NULL};
    struct tb b;
    begin(&b, &early);
    at(&b, 1 * MS);
    tb_alloc(&b, 0x7f0000000000, 4 * TB_GIB, 0);
    at(&b, 10 * MS);
    tb_alloc_fail(&b, 20 * TB_GIB, 0);
    at(&b, 20 * MS);
    tb_free(&b, 0x7f0000000000);
    save(&b, "b_early.cmt"); /* named after the late one: the order is the start's */
    begin(&b, &late);
    at(&b, 1 * MS);
    tb_alloc(&b, 0x7f0000000000, 2 * TB_GIB, 0);
    at(&b, 5 * MS);
    tb_alloc(&b, 0x7f0100000000, 3 * TB_GIB, 0);
    at(&b, 9 * MS); /* after the moment (its 8 ms): not in the ledger */
    tb_alloc(&b, 0x7f0200000000, 1 * TB_GIB, 0);
    at(&b, 15 * MS);
    tb_alloc_fail(&b, 20 * TB_GIB, 0);
    save(&b, "a_late.cmt");
    char **paths;
    size_t n;
    const char *bad, *inputs[] = {dir};
    cr_assert_eq(cmt_fleet_paths(inputs, 1, &paths, &n, &bad), 0);
    struct cmt_fleet f;
    struct cmt_fleet_options o = {.jobs = 1, .keep_readers = 1, .ledger_guess = 1};
    cr_assert_eq(cmt_fleet_load(&f, (const char *const *)paths, n, &o), 0);
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    cr_assert_eq(f.count, 2);
    cr_assert_eq(f.gpu_count, 1);
    uint64_t mono;
    int64_t oom;
    cr_assert(cmt_fleet_gpu_moment(&f, 0, &mono, &oom));
    cr_assert_eq(f.processes[oom].pid, 20, "the early one fails first");
    cr_assert_eq(mono, 1010 * MS);
    const struct cmt_fleet_process *e = &f.processes[0], *l = &f.processes[1];
    cr_assert_eq(l->pid, 21);
    const struct cmt_ledger_moment *m;
    m = same_as_alone(e, 10 * MS);
    cr_assert_eq(m->process_bytes, 4 * TB_GIB, "its own failure, its 4 GiB");
    m = same_as_alone(e, e->duration_ns); /* its end */
    cr_assert_eq(m->process_bytes, 0, "its end: freed");
    m = same_as_alone(l, 8 * MS);
    cr_assert_eq(m->process_bytes, 5 * TB_GIB, "2 + 3 GiB at its 8 ms, not the 1 GiB after");
    cr_assert_eq(cmt_fleet_ledger_at(l, 9 * MS, 0, &m), 0, "no moment nobody asked for");
    cmt_fleet_free(&f);
}
