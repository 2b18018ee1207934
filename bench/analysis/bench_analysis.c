/* bench_analysis.c — times report, oom and timeline over a trace; prints events/s and the
 * peak RSS of each (one child process per analysis, output to /dev/null). Never asserts.
 * Events/s are per second of CPU time (user + system, the best of REPEAT runs): the machine
 * is shared, and wall time there measures the neighbours as much as the analysis.
 *
 * usage: cmt_bench_analysis TRACE.cmt [REPEAT]   (make one with cmt_bench_gen_trace) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "reader.h"

int cmt_cmd_report(int argc, char **argv);
int cmt_cmd_oom(int argc, char **argv);
int cmt_cmd_timeline(int argc, char **argv);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

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

static uint64_t count_events(const char *path, int repeat)
{
    cmt_reader *r;
    if (cmt_reader_open_file(&r, path) != 0)
        return 0;
    struct cmt_record rec;
    double best = 1e30;
    uint64_t n = 0;
    for (int k = 0; k < repeat; k++) {
        cmt_reader_rewind(r);
        double t0 = cpu_now();
        while (cmt_reader_next(r, &rec) > 0)
            ;
        double s = cpu_now() - t0;
        if (s < best)
            best = s;
        n = cmt_reader_event_count(r);
    }
    printf("%-18s %8.2f M events/s  (decoding only, %.3f s CPU, best of %d)\n", "reader",
           n / best / 1e6, best, repeat);
    cmt_reader_close(r);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cmt_bench_analysis TRACE.cmt [REPEAT]\n");
        return 2;
    }
    int repeat = argc > 2 ? atoi(argv[2]) : 3;
    if (repeat < 1)
        repeat = 1;
    uint64_t events = count_events(argv[1], repeat);
    struct {
        const char *name;
        int (*fn)(int, char **);
        char *args[4];
    } runs[] = {
        {"report", cmt_cmd_report, {"report", argv[1], NULL}},
        {"oom", cmt_cmd_oom, {"oom", argv[1], NULL}},
        {"timeline", cmt_cmd_timeline, {"timeline", argv[1], NULL}},
        {"timeline --csv", cmt_cmd_timeline, {"timeline", "--csv", argv[1], NULL}},
    };
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        double best = 1e30, best_wall = 1e30;
        long rss = 0;
        for (int k = 0; k < repeat; k++) {
            double t0 = now();
            pid_t pid = fork();
            if (pid == 0) {
                int fd = open("/dev/null", O_WRONLY);
                dup2(fd, 1);
                int argc2 = 0;
                while (runs[i].args[argc2])
                    argc2++;
                _exit(runs[i].fn(argc2, runs[i].args));
            }
            int status;
            struct rusage ru;
            wait4(pid, &status, 0, &ru);
            double wall = now() - t0, s = seconds(ru.ru_utime) + seconds(ru.ru_stime);
            if (s < best)
                best = s;
            if (wall < best_wall)
                best_wall = wall;
            rss = ru.ru_maxrss;
        }
        printf("%-18s %8.2f M events/s  (%.3f s CPU, %.3f s wall, best of %d, peak RSS %.1f MiB)\n",
               runs[i].name, events / best / 1e6, best, best_wall, repeat, rss / 1024.0);
    }
    return 0;
}
