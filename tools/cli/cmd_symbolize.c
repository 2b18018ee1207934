/* cmd_symbolize.c — `cumemtrace symbolize [--quiet] FILE...`. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "options.h"
#include "output.h"
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
          "  -q, --quiet   print nothing unless something fails\n",
          out);
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

enum { OPT_HELP = 1, OPT_QUIET };

const struct cmt__option cmt_cmd_symbolize_options[] = {
    CMT__OPTION_HELP(OPT_HELP),
    {"-q", "--quiet", 0, OPT_QUIET, NULL},
    {0},
};

int cmt_cmd_symbolize(int argc, char **argv)
{
    int quiet = 0, status = 0, opt;
    struct cmt__opts p; /* the options come before the files */
    cmt__opts_init(&p, "symbolize", argc, argv, cmt_cmd_symbolize_options,
                   CMT__OPTS_IN_ORDER | CMT__OPTS_DASHDASH);
    while ((opt = cmt__opts_next(&p)) > 0) {
        if (opt == OPT_HELP) {
            usage(stdout);
            return 0;
        }
        quiet = 1;
    }
    if (opt == CMT__OPT_ERROR)
        return 2;
    int first = opt == CMT__OPT_ARG ? p.index : argc;
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
        } else if (cmt__is_snapshot(paths[i])) { /* its frames are symbolic */
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
