/* torch_capture.c — `record --torch` (torch_capture.h). */
#include "torch_capture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmt_error.h"
#include "cmt_grow.h"
#include "reader.h"
#include "torch_sitecustomize.h" /* generated: cmt__torch_hook[], the hook's bytes */

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int cmt__torch_setup(const char *dir)
{
    char hook_dir[PATH_MAX], path[PATH_MAX + 32], pythonpath[3 * PATH_MAX];
    snprintf(hook_dir, sizeof hook_dir, "%s/torch", dir);
    snprintf(path, sizeof path, "%s/sitecustomize.py", hook_dir);
    int fd = -1;
    if (mkdir(hook_dir, 0700) != 0 ||
        (fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0 ||
        write_all(fd, cmt__torch_hook, sizeof cmt__torch_hook) != 0) {
        fprintf(stderr, "cumemtrace record: cannot write the PyTorch hook %s: %s\n", path,
                strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    const char *old = getenv("PYTHONPATH");
    int n = snprintf(pythonpath, sizeof pythonpath, "%s%s%s", hook_dir, old && *old ? ":" : "",
                     old ? old : "");
    if (n < 0 || (size_t)n >= sizeof pythonpath || setenv("PYTHONPATH", pythonpath, 1) ||
        setenv("CUMEMTRACE_TORCH_DIR", hook_dir, 1)) {
        fprintf(stderr, "cumemtrace record: cannot set PYTHONPATH for the PyTorch hook\n");
        return -1;
    }
    return 0;
}

/* One dump: torch-PID-N-WHY.pickle. */
struct dump {
    long pid, n;
    char name[NAME_MAX + 1];
};

static int parse_dump(const char *name, struct dump *d)
{
    int end = 0;
    char why[32];
    size_t len = strlen(name);
    if (len < 8 || strcmp(name + len - 7, ".pickle") ||
        sscanf(name, "torch-%ld-%ld-%31[a-z]%n", &d->pid, &d->n, why, &end) != 3 ||
        (size_t)end != len - 7)
        return 0;
    snprintf(d->name, sizeof d->name, "%s", name);
    return 1;
}

/* The trace of process pid among those the manifest lists, "" when none. */
static void trace_of(const char *manifest, long pid, char *out, size_t size)
{
    out[0] = 0;
    FILE *f = fopen(manifest, "r");
    char line[PATH_MAX];
    while (f && !out[0] && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        cmt_reader *r;
        if (line[0] == '!' || !line[0] || cmt_reader_open_file(&r, line, NULL) != 0)
            continue;
        struct cmt_record rec; /* PROCESS is among the first chunk's records */
        for (int k = 0; k < 256 && !cmt_reader_process(r) && cmt_reader_next(r, &rec) > 0; k++)
            ;
        const struct cmt_process *p = cmt_reader_process(r);
        if (p && (long)p->pid == pid)
            snprintf(out, size, "%s", line);
        cmt_reader_close(r);
    }
    if (f)
        fclose(f);
}

/* `path` without its extension (r.cmt → r), or the pattern with %p = pid when no trace. */
static void stem_for(const char *trace, const char *pattern, long pid, char *out, size_t size)
{
    size_t o = 0;
    if (trace[0]) {
        snprintf(out, size, "%s", trace);
    } else {
        for (const char *p = pattern; *p && o + 24 < size; p++) {
            if (p[0] == '%' && p[1] == 'p') {
                o += (size_t)snprintf(out + o, size - o, "%ld", pid);
                p++;
            } else {
                out[o++] = (p[0] == '%' && p[1] == '%') ? *++p : *p;
            }
        }
        out[o] = 0;
    }
    char *slash = strrchr(out, '/'), *dot = strrchr(out, '.');
    if (dot && dot > (slash ? slash : out))
        *dot = 0;
}

static int copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_CLOEXEC), rc = -1;
    int out = in < 0 ? -1 : open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    char buf[1 << 16];
    ssize_t n;
    if (out >= 0) {
        while ((n = read(in, buf, sizeof buf)) > 0 && write_all(out, buf, (size_t)n) == 0)
            ;
        rc = n == 0 ? 0 : -1;
        if (close(out) != 0 || rc)
            rc = -1, unlink(to);
    }
    if (in >= 0)
        close(in);
    return rc;
}

/* Moves `from` to stem + suffix, never over an existing file (stem.suffix, stem.1.suffix ...).
 * @return 0 with the name in out, -1 (errno). */
static int keep(const char *from, const char *stem, const char *suffix, char *out, size_t size)
{
    for (int k = 0; k < 1000; k++) {
        int n = k ? snprintf(out, size, "%s.%d%s", stem, k, suffix)
                  : snprintf(out, size, "%s%s", stem, suffix);
        if (n < 0 || (size_t)n >= size) { /* a cut name would be another file's */
            errno = ENAMETOOLONG;
            return -1;
        }
        if (link(from, out) == 0)
            return unlink(from), 0;
        if (errno == EXDEV && copy_file(from, out) == 0)
            return unlink(from), 0;
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

/* Merges the snapshot into the trace. This build has no snapshot importer (tools/snapshot):
 * @return CMT_EUNSUPPORTED, and the caller keeps the snapshot beside the trace.
 * With it: parse the file (cmt_snapshot_parse), convert its entries to ALLOC_EVENT records
 * (cmt_snapshot_to_trace, without its PROCESS and END), and write a new trace beside the old
 * one that interleaves them with the driver trace's records by wall time (the trace's
 * start_wall_ns + t_ns against time_us x 1000; the window's before-state first), each alloc
 * event's SEQ the seq of the last driver EVENT before it, so that file order stays event
 * order; then rename it over the trace. Appending at the end would put every tensor event
 * after every driver event. */
static int merge_snapshot(const char *trace, const char *snapshot)
{
    (void)trace;
    (void)snapshot;
    return CMT_EUNSUPPORTED;
}

static const char *shown(const char *path)
{
    char cwd[PATH_MAX];
    size_t n;
    if (getcwd(cwd, sizeof cwd) && (n = strlen(cwd)) > 1 && !strncmp(path, cwd, n) &&
        path[n] == '/')
        return path + n + 1;
    return path;
}

/* The dumps of one process, its last first. */
static int collect_process(const char *hook_dir, struct dump *dumps, size_t count,
                           const char *manifest, const char *pattern, int quiet)
{
    char trace[PATH_MAX], stem[PATH_MAX], from[PATH_MAX + NAME_MAX + 2], kept[PATH_MAX + 32];
    trace_of(manifest, dumps[0].pid, trace, sizeof trace);
    stem_for(trace, pattern, dumps[0].pid, stem, sizeof stem);
    int failures = 0;
    for (size_t i = 0; i < count; i++) {
        snprintf(from, sizeof from, "%s/%s", hook_dir, dumps[i].name);
        char suffix[64];
        if (i == 0 && trace[0] && merge_snapshot(trace, from) == 0) {
            if (!quiet)
                fprintf(stderr, "cumemtrace: %s: PyTorch's memory snapshot merged\n", shown(trace));
            continue;
        }
        if (i == 0)
            snprintf(suffix, sizeof suffix, ".torch.pickle");
        else /* an earlier dump (an out-of-memory one the program survived) */
            snprintf(suffix, sizeof suffix, ".torch-%ld.pickle", dumps[i].n);
        if (keep(from, stem, suffix, kept, sizeof kept) != 0) {
            fprintf(stderr, "cumemtrace record: cannot keep PyTorch's snapshot as %s: %s\n",
                    shown(kept), strerror(errno));
            failures++;
        } else if (!quiet && i == 0) {
            fprintf(stderr,
                    "cumemtrace: %s: PyTorch's memory snapshot kept as %s (not merged into the "
                    "trace: this build has no snapshot importer)\n",
                    trace[0] ? shown(trace) : "no trace", shown(kept));
        } else if (!quiet) {
            fprintf(stderr, "cumemtrace: an earlier PyTorch snapshot of process %ld kept as %s\n",
                    dumps[i].pid, shown(kept));
        }
    }
    return failures;
}

static int by_pid_then_last(const void *a, const void *b)
{
    const struct dump *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->n > y->n ? -1 : x->n < y->n;
}

int cmt__torch_collect(const char *dir, const char *manifest, const char *pattern, int quiet)
{
    char hook_dir[PATH_MAX];
    snprintf(hook_dir, sizeof hook_dir, "%s/torch", dir);
    DIR *d = opendir(hook_dir);
    struct dump *dumps = NULL, one;
    size_t count = 0, cap = 0;
    struct dirent *de;
    int failures = 0;
    while (d && (de = readdir(d)))
        if (parse_dump(de->d_name, &one)) {
            if (CMT_GROW(dumps, cap, count + 1, 16) != 0) {
                failures++;
                break;
            }
            dumps[count++] = one;
        }
    if (d)
        closedir(d);
    if (count)
        qsort(dumps, count, sizeof *dumps, by_pid_then_last);
    for (size_t i = 0, j; i < count; i = j) {
        for (j = i + 1; j < count && dumps[j].pid == dumps[i].pid; j++)
            ;
        failures += collect_process(hook_dir, dumps + i, j - i, manifest, pattern, quiet);
    }
    free(dumps);
    return failures;
}

/* Removes the regular files of dir, then dir. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            unlinkat(dirfd(d), de->d_name, 0);
    if (d)
        closedir(d);
    rmdir(dir);
}

void cmt__torch_cleanup(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/torch/__pycache__", dir); /* Python's bytecode of the hook */
    remove_dir(path);
    snprintf(path, sizeof path, "%s/torch", dir);
    remove_dir(path);
}
