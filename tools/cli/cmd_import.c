/* cmd_import.c — `cumemtrace import [-o OUT.cmt] SNAPSHOT`: a PyTorch memory snapshot
 * converted to a trace of allocator-level records (tools/snapshot/snapshot_trace.h says what
 * the trace holds). Every analysis command also reads a snapshot directly; this writes the
 * conversion to a file once. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmt_format.h"
#include "commands.h"
#include "options.h"
#include "output.h"
#include "snapshot.h"
#include "snapshot_trace.h"

static const char usage[] =
    "usage: cumemtrace import [-o OUT.cmt] SNAPSHOT\n\n"
    "Converts a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot(), or a pickle of\n"
    "torch.cuda.memory._snapshot() or torch.cuda.memory_snapshot()) into a trace: the\n"
    "allocator settings, the devices, the segments and blocks that predate the recorded\n"
    "window, every trace entry as an allocator event, and the Python/C++ frames as\n"
    "symbolized stacks. Every analysis command also accepts a snapshot in place of a trace.\n\n"
    "  -o, --output OUT   where to write the trace (default: SNAPSHOT's name with .cmt in\n"
    "                     place of .pickle/.pkl, in the current directory)\n";

/* SNAPSHOT's base name with .pickle/.pkl/.pt replaced by .cmt (or .cmt appended). */
static void default_output(const char *snapshot, char *out, size_t size)
{
    const char *base = strrchr(snapshot, '/');
    base = base ? base + 1 : snapshot;
    size_t n = strlen(base);
    static const char *const exts[] = {".pickle", ".pkl", ".pt"};
    for (size_t k = 0; k < sizeof exts / sizeof *exts; k++) {
        size_t e = strlen(exts[k]);
        if (n > e && strcmp(base + n - e, exts[k]) == 0) {
            n -= e;
            break;
        }
    }
    snprintf(out, size, "%.*s.cmt", (int)n, base);
}

/* What the file is when it is not a snapshot, from its first bytes. @return NULL when it
 * starts like one (a pickle of protocol 2 to 5), else the reason, for one line. */
static const char *not_a_snapshot(const char *path)
{
    unsigned char head[CMT_MAGIC_SIZE] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, head, sizeof head) : -1;
    if (fd >= 0)
        close(fd);
    if (n < 0)
        return NULL; /* unreadable: the conversion says why */
    if (cmt_snapshot_sniff(head, (size_t)n))
        return NULL;
    if ((size_t)n == CMT_MAGIC_SIZE && memcmp(head, CMT_MAGIC, CMT_MAGIC_SIZE) == 0)
        return "already a cumemtrace trace: every command reads it as it is (import converts "
               "PyTorch memory snapshots)";
    if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b)
        return "not a PyTorch memory snapshot: a gzip file (gunzip it first)";
    if (n >= 4 && memcmp(head, "PK\3\4", 4) == 0)
        return "not a PyTorch memory snapshot: a zip archive (torch.save's format, not "
               "torch.cuda.memory._dump_snapshot()'s pickle)";
    if (n >= 1 && (head[0] == '{' || head[0] == '['))
        return "not a PyTorch memory snapshot: text that looks like JSON (the snapshot is the "
               "pickle torch.cuda.memory._dump_snapshot() writes)";
    if (n == 0)
        return "not a PyTorch memory snapshot: the file is empty";
    return "not a PyTorch memory snapshot: it does not start like a pickle (byte 0x80, then the "
           "protocol 2 to 5)";
}

enum { OPT_HELP = 1, OPT_OUTPUT };

const struct cmt__option cmt_cmd_import_options[] = {
    CMT__OPTION_HELP(OPT_HELP),
    {"-o", "--output", 1, OPT_OUTPUT, "a file name"},
    {0},
};

/* -o or the snapshot into files[1] or files[0] (cmt__opts_parse). @return 0, or 2 after a
 * usage error. */
static int import_arg(const struct cmt__opts *p, int opt, void *ctx)
{
    const char **files = ctx;
    if (opt == OPT_OUTPUT)
        files[1] = p->value;
    else if (files[0])
        return cmt__usage_error("import", "one SNAPSHOT at a time ('%s' and '%s')", files[0],
                                p->value);
    else
        files[0] = p->value;
    return 0;
}

int cmt_cmd_import(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL}; /* the snapshot, the output */
    int rc = cmt__opts_parse("import", argc, argv, cmt_cmd_import_options, 0, usage, import_arg,
                             files);
    if (rc)
        return rc < 0 ? 0 : rc;
    const char *in = files[0], *out = files[1];
    if (!in)
        return cmt__usage_error("import", "missing SNAPSHOT");
    const char *why = cmt__is_dir(in) ? "a directory: import converts one snapshot into one "
                                        "trace (every command reads a snapshot, and a "
                                        "directory of traces, as it is)"
                                      : cmt__not_a_file(in);
    if (why) {
        fprintf(stderr, "cumemtrace import: %s: %s\n", in, why);
        return 1;
    }
    if ((why = not_a_snapshot(in)) != NULL) {
        fprintf(stderr, "cumemtrace import: %s: %s\n", in, why);
        return 1;
    }
    char fallback[4096];
    if (!out) {
        default_output(in, fallback, sizeof fallback);
        out = fallback;
    }
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "cumemtrace import: %s: %s\n", out, strerror(errno));
        return 1;
    }
    struct cmt_snapshot_trace_stats st;
    rc = cmt__snapshot_convert("import", in, fd, &st);
    if (close(fd) != 0 && !rc) {
        fprintf(stderr, "cumemtrace import: %s: %s\n", out, strerror(errno));
        rc = -1;
    }
    if (rc) {
        unlink(out);
        return 1;
    }
    printf("cumemtrace: imported %s into %s: %llu allocator events (%llu segment%s and %llu "
           "block%s from before the recorded window), %llu stack frames\n",
           in, out, (unsigned long long)st.events, (unsigned long long)st.before_segments,
           st.before_segments == 1 ? "" : "s", (unsigned long long)st.before_blocks,
           st.before_blocks == 1 ? "" : "s", (unsigned long long)st.stack_nodes);
    return 0;
}
