/* bench_pickle.c — times the pickle decoder on snapshot files next to an anchor: Python's
 * C unpickler (`pickle.loads`) on the same bytes, in a python3 child. Never asserts.
 *
 * usage: cmt_bench_pickle [-r ROUNDS] FILE...
 *
 * Both sides are measured in CPU time (user + system: page faults count) of the decode alone
 * (the file is read before the clock starts; Python's start-up and import are outside it),
 * and every round runs ours just after the paired Python run, so that a machine shared with
 * others slows both alike. Printed per file: the best CPU time and MB/s of each side and the
 * median over rounds of the ratio (Python's time / ours). Then, for ours, the best times of
 * the decode plus the snapshot parse, and of the whole import (decode, parse, conversion to
 * a compressed trace in memory): what `cumemtrace import` spends beyond reading the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pickle.h"
#include "snapshot_trace.h"

#define MAX_ROUNDS 101

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = n > 0 ? malloc((size_t)n) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Python's decode time of `path`, best of 3 in one child (so that one child per round
 * suffices). @return seconds, or a negative value when python3 failed. */
static double python_seconds(const char *path)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import pickle,sys,time\n"
             "d=open(sys.argv[1],\"rb\").read()\n"
             "b=9e9\n"
             "for _ in range(3):\n"
             "    t=time.process_time(); pickle.loads(d); b=min(b,time.process_time()-t)\n"
             "print(b)' '%s'",
             path);
    FILE *p = popen(cmd, "r");
    double s = -1;
    if (!p || fscanf(p, "%lf", &s) != 1)
        s = -1;
    if (p)
        pclose(p);
    return s;
}

static double ours_seconds(const unsigned char *b, size_t len, uint64_t *values)
{
    double best = 9e9;
    for (int k = 0; k < 3; k++) {
        double t = cpu_now();
        cmt_pickle *doc;
        struct cmt_err err = {0};
        uint64_t at = 0;
        int rc = cmt_pickle_decode(&doc, b, len, NULL, &err, &at);
        double dt = cpu_now() - t;
        if (rc) {
            fprintf(stderr, "decode failed at byte %llu: %s\n", (unsigned long long)at,
                    cmt_err_message(&err));
            return -1;
        }
        *values = cmt_pickle_value_count(doc);
        cmt_pickle_free(doc);
        if (dt < best)
            best = dt;
    }
    return best;
}

/* Best of 3: 1 = decode + parse, 2 = the whole import into memory. */
static double pipeline_seconds(const unsigned char *b, size_t len, int what)
{
    double best = 9e9;
    for (int k = 0; k < 3; k++) {
        double t = cpu_now();
        int rc;
        if (what == 1) {
            struct cmt_snapshot s;
            rc = cmt_snapshot_parse(&s, b, len, NULL);
            if (!rc)
                cmt_snapshot_free(&s);
        } else {
            struct cmt_membuf mb = {0};
            rc = cmt_snapshot_import(b, len, "bench", cmt_membuf_sink, &mb, NULL, NULL);
            cmt_membuf_free(&mb);
        }
        double dt = cpu_now() - t;
        if (rc)
            return -1;
        best = dt < best ? dt : best;
    }
    return best;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rounds = 7, opt;
    while ((opt = getopt(argc, argv, "r:")) != -1) {
        if (opt == 'r')
            rounds = atoi(optarg);
        else
            return 2;
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || optind >= argc) {
        fprintf(stderr, "usage: cmt_bench_pickle [-r ROUNDS(1-%d)] FILE...\n", MAX_ROUNDS);
        return 2;
    }
    printf("%-12s %10s %10s %10s %10s %10s %8s\n", "file", "MB", "ours ms", "ours MB/s", "py ms",
           "py MB/s", "py/ours");
    for (int i = optind; i < argc; i++) {
        size_t len;
        unsigned char *b = slurp(argv[i], &len);
        if (!b) {
            fprintf(stderr, "cmt_bench_pickle: cannot read %s\n", argv[i]);
            return 1;
        }
        double ratio[MAX_ROUNDS], best_ours = 9e9, best_py = 9e9;
        uint64_t values = 0;
        for (int r = 0; r < rounds; r++) {
            double py = python_seconds(argv[i]);
            double ours = ours_seconds(b, len, &values);
            if (py <= 0 || ours <= 0) {
                fprintf(stderr, "cmt_bench_pickle: %s: a decode failed\n", argv[i]);
                return 1;
            }
            ratio[r] = py / ours;
            best_ours = ours < best_ours ? ours : best_ours;
            best_py = py < best_py ? py : best_py;
        }
        qsort(ratio, (size_t)rounds, sizeof *ratio, cmp_double);
        const char *name = strrchr(argv[i], '/');
        name = name ? name + 1 : argv[i];
        double mb = (double)len / 1e6;
        printf("%-12.12s %10.2f %10.2f %10.1f %10.2f %10.1f %7.1fx\n", name, mb, best_ours * 1e3,
               mb / best_ours, best_py * 1e3, mb / best_py, ratio[rounds / 2]);
        double parse = pipeline_seconds(b, len, 1), whole = pipeline_seconds(b, len, 2);
        printf("  (%llu values; %d rounds) decode+parse %.2f ms (%.1f MB/s), whole import "
               "%.2f ms (%.1f MB/s)%s\n",
               (unsigned long long)values, rounds, parse * 1e3, mb / parse, whole * 1e3, mb / whole,
               parse < 0 || whole < 0 ? " (not a snapshot)" : "");
        free(b);
    }
    return 0;
}
