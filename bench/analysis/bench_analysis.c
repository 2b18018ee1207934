/* bench_analysis.c — times report, oom and timeline over traces, next to an anchor
 * (heaptrack_print over a heaptrack trace of a known number of events). Never asserts.
 *
 * usage: cmt_bench_analysis [-r ROUNDS] [-H HEAPTRACK_FILE -E EVENTS] TRACE[=TWIN@EVENTS]...
 *
 * TWIN is a heaptrack trace of the same workload on malloc/free (EVENTS events): a trace
 * whose addresses and sizes are as random as the TRACE's is slower to read for any tool, so
 * its runs are also paired with heaptrack_print over TWIN ("x same-workload anchor").
 *
 * Each analysis runs in its own child process (output to /dev/null) and is measured in CPU
 * time (user + system, from wait4): the machine is shared, and wall time there measures the
 * neighbours as much as the analysis. The runs are interleaved in ROUNDS rounds (default 7)
 * and every run is paired with an anchor run just before it. Printed per run: the best and
 * the median CPU time, events/s at the best, and the median over rounds of the speed ratio to
 * its paired anchor run — the figure that survives a machine whose speed changes from minute
 * to minute. The reader alone (decoding, in process) is timed too. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "reader.h"

int cmt_cmd_report(int argc, char **argv);
int cmt_cmd_oom(int argc, char **argv);
int cmt_cmd_timeline(int argc, char **argv);

#define MAX_TRACES 8
#define MAX_ROUNDS 101

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *flag; /* extra argument before the trace, or NULL */
} runs[] = {
    {"report", cmt_cmd_report, NULL},
    {"oom", cmt_cmd_oom, NULL},
    {"timeline", cmt_cmd_timeline, NULL},
    {"timeline --csv", cmt_cmd_timeline, "--csv"},
};
#define NRUNS (sizeof runs / sizeof *runs)

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double seconds(struct timeval tv)
{
    return tv.tv_sec + tv.tv_usec / 1e6;
}

/* Decodes the whole trace in process. @return CPU seconds; *events the events read (0 when
 * the trace cannot be opened). */
static double reader_pass(const char *path, uint64_t *events)
{
    cmt_reader *r;
    *events = 0;
    if (cmt_reader_open_file(&r, path, NULL) != 0)
        return -1;
    struct cmt_record rec;
    double t0 = cpu_now();
    while (cmt_reader_next(r, &rec) > 0)
        ;
    double s = cpu_now() - t0;
    *events = cmt_reader_event_count(r);
    cmt_reader_close(r);
    return s;
}

/* Runs fn (or, with fn NULL, exec's argv) in a child with stdout on /dev/null.
 * @return CPU seconds of the child; *rss its peak RSS in KiB. */
static double timed_child(int (*fn)(int, char **), char **argv, long *rss)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        if (!fn) {
            execvp(argv[0], argv);
            _exit(127);
        }
        int argc = 0;
        while (argv[argc])
            argc++;
        _exit(fn(argc, argv));
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0)
        return -1;
    if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 1))
        return -1; /* 1: the analysis found damage or OOMs, still a full run */
    *rss = ru.ru_maxrss;
    return seconds(ru.ru_utime) + seconds(ru.ru_stime);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double s[MAX_ROUNDS];
    memcpy(s, v, n * sizeof *v);
    qsort(s, n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static double best_of(const double *v, int n)
{
    double b = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < b)
            b = v[i];
    return b;
}

/* The median over rounds of the speed ratio of runs t (of `events`) to the reference runs
 * paired with them (of `ref_events`). */
static double paired(uint64_t events, const double *t, uint64_t ref_events, const double *t_ref,
                     int rounds)
{
    double ratio[MAX_ROUNDS];
    for (int k = 0; k < rounds; k++)
        ratio[k] = (events / t[k]) / (ref_events / t_ref[k]);
    return median(ratio, rounds);
}

/* One row: best and median CPU time, events/s at the best, peak RSS (rss < 0: none), with an
 * anchor the median over rounds of the paired speed ratio, and with t_reader (the reader's
 * runs of the same rounds) the run's speed as a share of the reader's (issue 26: >= 75%). */
static void line(const char *name, uint64_t events, const double *t, const double *t_anchor,
                 uint64_t anchor_events, const double *t_twin, uint64_t twin_events, int rounds,
                 long rss, const double *t_reader)
{
    double b = best_of(t, rounds);
    printf("  %-32s best %.3f s (%5.1f M events/s)  median %.3f s", name, b, events / b / 1e6,
           median(t, rounds));
    if (rss >= 0)
        printf("  peak RSS %5.1f MiB", rss / 1024.0);
    else
        printf("  %19s", "");
    if (t_anchor)
        printf("  x%.2f anchor", paired(events, t, anchor_events, t_anchor, rounds));
    if (t_twin)
        printf("  x%.2f same-workload anchor", paired(events, t, twin_events, t_twin, rounds));
    if (t_reader)
        printf("  %3.0f%% of the reader", 100 * paired(events, t, events, t_reader, rounds));
    printf("\n");
}

static int usage(void)
{
    fprintf(stderr, "usage: cmt_bench_analysis [-r ROUNDS] [-H HEAPTRACK_FILE -E EVENTS] "
                    "TRACE[=TWIN@EVENTS]...\n");
    return 2;
}

int main(int argc, char **argv)
{
    int rounds = 7, opt;
    const char *anchor = NULL;
    uint64_t anchor_events = 0;
    while ((opt = getopt(argc, argv, "r:H:E:")) != -1) {
        switch (opt) {
        case 'r': rounds = atoi(optarg); break;
        case 'H': anchor = optarg; break;
        case 'E': anchor_events = strtoull(optarg, NULL, 10); break;
        default: return usage();
        }
    }
    int ntraces = argc - optind;
    if (ntraces < 1 || ntraces > MAX_TRACES || rounds < 1 || rounds > MAX_ROUNDS ||
        (anchor && !anchor_events))
        return usage();
    char **traces = argv + optind;
    char *twin[MAX_TRACES] = {0};
    uint64_t twin_events[MAX_TRACES] = {0};
    for (int i = 0; i < ntraces; i++) {
        char *eq = strchr(traces[i], '='), *at = eq ? strrchr(eq, '@') : NULL;
        if (!eq)
            continue;
        if (!at || !(twin_events[i] = strtoull(at + 1, NULL, 10)))
            return usage();
        *eq = *at = 0;
        twin[i] = eq + 1;
    }

    uint64_t events[MAX_TRACES];
    for (int i = 0; i < ntraces; i++) {
        struct stat sb;
        if (reader_pass(traces[i], &events[i]) < 0 || !events[i] || stat(traces[i], &sb) != 0) {
            fprintf(stderr, "cmt_bench_analysis: %s: no events read\n", traces[i]);
            return 1;
        }
        printf("%s: %" PRIu64 " events, %.2f bytes/event on disk\n", traces[i], events[i],
               (double)sb.st_size / events[i]);
    }

    /* column 0: the reader alone; 1..NRUNS: the analyses */
    static double t[MAX_TRACES][NRUNS + 1][MAX_ROUNDS], ta[MAX_TRACES][NRUNS + 1][MAX_ROUNDS],
        tw[MAX_TRACES][NRUNS + 1][MAX_ROUNDS];
    static long rss[MAX_TRACES][NRUNS + 1];
    long anchor_rss = 0;
    char *anchor_argv[] = {"heaptrack_print", (char *)anchor, NULL};
    for (int k = 0; k < rounds; k++)
        for (int i = 0; i < ntraces; i++)
            for (size_t j = 0; j <= NRUNS; j++) {
                if (anchor && (ta[i][j][k] = timed_child(NULL, anchor_argv, &anchor_rss)) < 0) {
                    fprintf(stderr, "cmt_bench_analysis: heaptrack_print %s failed\n", anchor);
                    return 1;
                }
                char *twin_argv[] = {"heaptrack_print", twin[i], NULL};
                long twin_rss;
                if (twin[i] && (tw[i][j][k] = timed_child(NULL, twin_argv, &twin_rss)) < 0) {
                    fprintf(stderr, "cmt_bench_analysis: heaptrack_print %s failed\n", twin[i]);
                    return 1;
                }
                if (j == 0) {
                    uint64_t read;
                    t[i][0][k] = reader_pass(traces[i], &read);
                    rss[i][0] = -1;
                    continue;
                }
                char *a[4];
                int n = 0;
                a[n++] = (char *)runs[j - 1].name;
                if (runs[j - 1].flag)
                    a[n++] = (char *)runs[j - 1].flag;
                a[n++] = traces[i];
                a[n] = NULL;
                if ((t[i][j][k] = timed_child(runs[j - 1].fn, a, &rss[i][j])) < 0) {
                    fprintf(stderr, "cmt_bench_analysis: %s %s failed\n", runs[j - 1].name,
                            traces[i]);
                    return 1;
                }
            }

    printf("\n%d interleaved rounds; CPU seconds per run (user + system)\n", rounds);
    if (anchor) {
        double all[MAX_TRACES * (NRUNS + 1) * MAX_ROUNDS];
        int n = 0;
        for (int i = 0; i < ntraces; i++)
            for (size_t j = 0; j <= NRUNS; j++)
                for (int k = 0; k < rounds; k++)
                    all[n++] = ta[i][j][k];
        double b = best_of(all, n);
        qsort(all, n, sizeof *all, cmp_double);
        printf("  %-32s best %.3f s (%5.1f M events/s)  median %.3f s  peak RSS %5.1f MiB\n",
               "heaptrack_print (anchor)", b, anchor_events / b / 1e6,
               n % 2 ? all[n / 2] : (all[n / 2 - 1] + all[n / 2]) / 2, anchor_rss / 1024.0);
    }
    for (int i = 0; i < ntraces; i++) {
        printf("%s\n", traces[i]);
        if (twin[i]) {
            double b = tw[i][0][0];
            for (size_t j = 0; j <= NRUNS; j++)
                b = b < best_of(tw[i][j], rounds) ? b : best_of(tw[i][j], rounds);
            printf("  %-32s best %.3f s (%5.1f M events/s) over %s\n",
                   "heaptrack_print, same workload", b, twin_events[i] / b / 1e6, twin[i]);
        }
        for (size_t j = 0; j <= NRUNS; j++)
            line(j ? runs[j - 1].name : "reader alone (in process)", events[i], t[i][j],
                 anchor ? ta[i][j] : NULL, anchor_events, twin[i] ? tw[i][j] : NULL, twin_events[i],
                 rounds, rss[i][j], j ? t[i][0] : NULL);
    }
    if (anchor)
        printf("\nx anchor: median over rounds of (events/s of the run) / (events/s of the "
               "heaptrack_print run just before it);\nx same-workload anchor: the same, with "
               "heaptrack_print over the trace's malloc/free twin\n");
    printf("%% of the reader: median over rounds of (events/s of the run) / (events/s of the "
           "reader alone in the same round)\n");
    return 0;
}
