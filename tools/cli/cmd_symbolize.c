/* cmd_symbolize.c — `cumemtrace symbolize [--quiet] FILE...`. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "output.h"
#include "snapshot.h"
#include "symbolize.h"

static void usage(FILE *out)
{
    fputs("usage: cumemtrace symbolize [--quiet] FILE... | DIR\n"
          "Adds function names and file:line to the stacks of each trace, in place (appended\n"
          "records; nothing already in the file changes). Run it on the machine that has the\n"
          "traced binaries; the result reads the same anywhere. Running it again adds only what\n"
          "was missing. A damaged trace is refused and left as it is. A PyTorch memory snapshot\n"
          "needs nothing (its frames are Python and C++ names with file:line): it is left as it\n"
          "is, with a line that says so, and counts as done.\n"
          "  --quiet   print nothing unless something fails\n",
          out);
}

/* A PyTorch memory snapshot (a pickle, by its first bytes), whose frames are symbolic. */
static int is_snapshot(const char *path)
{
    unsigned char head[2];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int yes = fd >= 0 && read(fd, head, 2) == 2 && cmt_snapshot_sniff(head, 2);
    if (fd >= 0)
        close(fd);
    return yes;
}

static void report(const char *path, const struct cmt_symbolize_stats *s)
{
    printf("cumemtrace: symbolized %s: %llu frames, %llu named, %llu with file:line", path,
           (unsigned long long)s->nodes, (unsigned long long)s->named,
           (unsigned long long)s->with_line);
    if (s->modules_missing)
        printf(", %u module%s not found", s->modules_missing, s->modules_missing == 1 ? "" : "s");
    if (s->modules_changed)
        printf(", %u module%s changed since the trace (skipped)", s->modules_changed,
               s->modules_changed == 1 ? "" : "s");
    putchar('\n');
}

int cmt_cmd_symbolize(int argc, char **argv)
{
    int quiet = 0, first = 1, status = 0;
    for (; first < argc && argv[first][0] == '-' && argv[first][1]; first++) {
        if (strcmp(argv[first], "--") == 0) {
            first++;
            break;
        }
        if (strcmp(argv[first], "--help") == 0 || strcmp(argv[first], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[first], "--quiet") == 0 || strcmp(argv[first], "-q") == 0) {
            quiet = 1;
            continue;
        }
        return cmt__usage_error("symbolize", "unknown option '%s'", argv[first]);
    }
    if (first == argc) {
        return cmt__usage_error("symbolize", "missing trace FILE");
    }
    char **paths; /* a directory: its *.cmt, in name order */
    size_t n;
    if (cmt__trace_paths("symbolize", (const char *const *)argv + first, (size_t)(argc - first),
                         &paths, &n) != 0)
        return 1;
    for (size_t i = 0; i < n; i++) {
        struct cmt_symbolize_stats stats;
        struct cmt_err err = {0};
        const char *why = cmt__not_a_file(paths[i]);
        if (why) {
            fprintf(stderr, "cumemtrace symbolize: %s: %s\n", paths[i], why);
            status = 1;
        } else if (is_snapshot(paths[i])) {
            if (!quiet)
                printf("cumemtrace: %s is a PyTorch memory snapshot: its frames are already "
                       "symbolic (Python file:line); nothing to do\n",
                       paths[i]);
        } else if (cmt_symbolize_file(paths[i], &stats, &err) != 0) {
            fprintf(stderr, "cumemtrace symbolize: %s\n", cmt_err_message(&err));
            status = 1;
        } else if (!quiet) {
            report(paths[i], &stats);
        }
    }
    cmt__trace_paths_free(paths, n);
    return status;
}
