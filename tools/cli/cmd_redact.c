/* cmd_redact.c — `cumemtrace redact [-o OUT] [--quiet] TRACE|DIR...`: a copy made for sharing
 * (tools/analysis/redact.h says what goes and what stays). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmt_error.h"
#include "commands.h"
#include "fleet.h"
#include "options.h"
#include "output.h"
#include "redact.h"
#include "writer.h"

static void usage(FILE *out)
{
    fputs("usage: cumemtrace redact [-o OUT] [--quiet] TRACE|DIR...\n"
          "Writes a copy of each trace (or PyTorch memory snapshot) that is safe to attach to a\n"
          "bug report: host names become host1, host2, ... (the same host, the same name, over\n"
          "all the traces given), the program's arguments after argv[0] and the environment go\n"
          "(except the variables an analysis reads: PYTORCH_CUDA_ALLOC_CONF, PYTORCH_ALLOC_CONF,\n"
          "PYTORCH_NO_CUDA_MEMORY_CACHING, PYTORCH_VERSION, PYTORCH_BUILD_VERSION,\n"
          "CUDA_VISIBLE_DEVICES), and home-directory paths (/home/NAME, /Users/NAME, /root) are\n"
          "shortened to ~ in module paths, file names, notes and range names. Events, stacks,\n"
          "devices, allocator records and phases are kept: every command reads the copy as it\n"
          "read the original. A line per trace says what was removed.\n"
          "  -o, --output OUT  one input: the copy's path (default: the input's name with\n"
          "                    .redacted.cmt for its extension); several or a directory: a\n"
          "                    directory for the copies (made if absent), each named as its\n"
          "                    input. An existing file is never overwritten.\n"
          "  -q, --quiet       print nothing unless something fails\n",
          out);
}

/* OUT for `in`: dir/<in's name> when dir is set, else `out` or in's name with .redacted.cmt. */
static int out_path(char *buf, size_t size, const char *in, const char *out, int is_dir)
{
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", in);
    const char *base = basename(copy);
    int n;
    if (is_dir) {
        n = snprintf(buf, size, "%s/%s", out, base);
    } else if (out) {
        n = snprintf(buf, size, "%s", out);
    } else {
        const char *dot = strrchr(in, '.'), *slash = strrchr(in, '/');
        int stem = dot && (!slash || dot > slash) ? (int)(dot - in) : (int)strlen(in);
        n = snprintf(buf, size, "%.*s.redacted.cmt", stem, in);
    }
    return n > 0 && (size_t)n < size ? 0 : -1;
}

static void say(const char *in, const char *out, const struct cmt_redact_counts *before,
                const struct cmt_redact_counts *now)
{
    printf("cumemtrace: redacted %s -> %s: ", in, out);
    printf("%s, %llu argument%s dropped, %llu environment variable%s dropped (%llu kept), "
           "%llu home-directory path%s shortened to ~\n",
           now->hosts_replaced > before->hosts_replaced ? "host name replaced" : "no host name",
           (unsigned long long)(now->args_dropped - before->args_dropped),
           now->args_dropped - before->args_dropped == 1 ? "" : "s",
           (unsigned long long)(now->env_dropped - before->env_dropped),
           now->env_dropped - before->env_dropped == 1 ? "" : "s",
           (unsigned long long)(now->env_kept - before->env_kept),
           (unsigned long long)(now->home_paths - before->home_paths),
           now->home_paths - before->home_paths == 1 ? "" : "s");
}

/* Copies `in` to `out` through the redactor. @return the exit status (0, 1). */
static int redact_one(cmt_redact *x, const char *in, const char *out, int quiet)
{
    cmt_reader *r;
    if (cmt__open_trace("redact", in, &r) != 0)
        return 1;
    int fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "cumemtrace redact: %s: %s%s\n", out, strerror(errno),
                errno == EEXIST ? " (never overwritten: remove it or name another with -o)" : "");
        cmt_reader_close(r);
        return 1;
    }
    struct cmt_redact_counts before = *cmt_redact_counts(x);
    cmt_writer *w = NULL;
    int rc = cmt_writer_create(&w, cmt_fd_sink, &fd, NULL), read_rc = 0, wrc = rc;
    struct cmt_record rec;
    while (!wrc && (read_rc = cmt_reader_next(r, &rec)) == 1) {
        int keep = cmt_redact_record(x, &rec);
        wrc = keep < 0 ? keep : keep ? cmt_writer_record(w, &rec) : 0;
    }
    if (!wrc)
        wrc = cmt_writer_flush(w);
    cmt_writer_destroy(w);
    int status = 0;
    if (close(fd) != 0 && !wrc)
        wrc = CMT_EIO;
    if (wrc) {
        fprintf(stderr, "cumemtrace redact: %s: %s (the copy is incomplete: removed)\n", out,
                cmt_strerror(wrc));
        unlink(out);
        status = 1;
    } else {
        status = cmt__warn_damage("redact", in, r, read_rc < 0 ? read_rc : 0);
        if (status)
            unlink(out);
        else if (!quiet)
            say(in, out, &before, cmt_redact_counts(x));
    }
    cmt_reader_close(r);
    return status;
}

enum { OPT_HELP = 1, OPT_QUIET, OPT_OUTPUT };

const struct cmt__option cmt_cmd_redact_options[] = {
    CMT__OPTION_HELP(OPT_HELP),
    {"-q", "--quiet", 0, OPT_QUIET, NULL},
    {"-o", "--output", 1, OPT_OUTPUT, "a path"},
    {0},
};

int cmt_cmd_redact(int argc, char **argv)
{
    const char *out = NULL;
    int quiet = 0, n = 0, opt;
    char **inputs = calloc((size_t)argc, sizeof *inputs);
    if (!inputs) {
        fprintf(stderr, "cumemtrace redact: %s\n", cmt_strerror(CMT_ENOMEM));
        return 1;
    }
    struct cmt__opts p; /* options before or after the inputs, up to "--" */
    cmt__opts_init(&p, "redact", argc, argv, cmt_cmd_redact_options, CMT__OPTS_DASHDASH);
    while ((opt = cmt__opts_next(&p)) != CMT__OPT_END) {
        if (opt == CMT__OPT_ARG) {
            inputs[n++] = argv[p.index];
        } else if (opt == OPT_QUIET) {
            quiet = 1;
        } else if (opt == OPT_OUTPUT) {
            out = p.value;
        } else {
            if (opt == OPT_HELP)
                usage(stdout);
            free(inputs);
            return opt == OPT_HELP ? 0 : 2;
        }
    }
    if (!n) {
        free(inputs);
        return cmt__usage_error("redact", "missing TRACE or DIR");
    }
    char **paths;
    size_t count;
    const char *bad;
    int rc = cmt_fleet_paths((const char *const *)inputs, (size_t)n, &paths, &count, &bad);
    if (rc) {
        fprintf(stderr, "cumemtrace redact: %s: %s\n", rc == CMT_EIO ? bad : inputs[0],
                rc == CMT_EIO ? strerror(errno) : cmt_strerror(rc));
        free(inputs);
        return 1;
    }
    struct stat st;
    int several = count != 1 || (n == 1 && stat(inputs[0], &st) == 0 && S_ISDIR(st.st_mode));
    int status = 0;
    if (!count) {
        fprintf(stderr, "cumemtrace redact: %s: no traces (*.cmt) in it\n", inputs[0]);
        status = 1;
    } else if (several && !out) {
        status = cmt__usage_error("redact", "several traces need -o DIR for the copies");
    } else if (several && mkdir(out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "cumemtrace redact: %s: %s\n", out, strerror(errno));
        status = 1;
    }
    cmt_redact *x = NULL;
    if (!status && cmt_redact_create(&x) != 0) {
        fprintf(stderr, "cumemtrace redact: %s\n", cmt_strerror(CMT_ENOMEM));
        status = 1;
    }
    for (size_t i = 0; x && i < count; i++) {
        char target[PATH_MAX];
        if (out_path(target, sizeof target, paths[i], out, several) != 0) {
            fprintf(stderr, "cumemtrace redact: %s: the copy's path is too long\n", paths[i]);
            status = 1;
        } else if (redact_one(x, paths[i], target, quiet) != 0) {
            status = 1;
        }
    }
    cmt_redact_destroy(x);
    for (size_t i = 0; i < count; i++)
        free(paths[i]);
    free(paths);
    free(inputs);
    return status;
}
