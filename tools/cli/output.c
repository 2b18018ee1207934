/* output.c — units, JSON, trace opening and stack text for the analysis commands. */
#include "caching_model.h"
#include "oom.h"
#include "output.h"
#include "options.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmt_error.h"
#include "escape.h"
#include "fleet.h"
#include "frames.h"
#include "snapshot_trace.h"

const char *cmt__bytes(uint64_t bytes, char buf[32])
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, 32, "%" PRIu64 " B", bytes);
        return buf;
    }
    double v = (double)bytes / 1024;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    snprintf(buf, 32, "%.2f %s", v, units[u]);
    return buf;
}

const char *cmt__duration(uint64_t ns, char buf[32])
{
    if (ns < 1000)
        snprintf(buf, 32, "%" PRIu64 " ns", ns);
    else if (ns < 1000000)
        snprintf(buf, 32, "%.2f us", ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, 32, "%.2f ms", ns / 1e6);
    else if (ns < UINT64_C(60000000000))
        snprintf(buf, 32, "%.2f s", ns / 1e9);
    else
        snprintf(buf, 32, "%" PRIu64 " min %04.1f s", ns / UINT64_C(60000000000),
                 fmod(ns / 1e9, 60.0));
    return buf;
}

/* ---- JSON ---- */

void cmt__json_init(struct cmt__json *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
    j->first[0] = 1;
}

static void file_sink(void *f, const char *p, size_t n)
{
    fwrite(p, 1, n, f);
}

static void sep(struct cmt__json *j, const char *key)
{
    if (!j->first[j->depth])
        fputc(',', j->f);
    j->first[j->depth] = 0;
    if (key) {
        cmt__json_escape(key, j->escape_flags, file_sink, j->f);
        fputc(':', j->f);
    }
}

static void open_(struct cmt__json *j, const char *key, char c)
{
    sep(j, key);
    fputc(c, j->f);
    if (j->depth < 63)
        j->depth++;
    j->first[j->depth] = 1;
}

void cmt__json_object(struct cmt__json *j, const char *key)
{
    open_(j, key, '{');
}
void cmt__json_array(struct cmt__json *j, const char *key)
{
    open_(j, key, '[');
}

void cmt__json_end_object(struct cmt__json *j)
{
    fputc('}', j->f);
    if (j->depth)
        j->depth--;
}

void cmt__json_end_array(struct cmt__json *j)
{
    fputc(']', j->f);
    if (j->depth)
        j->depth--;
}

void cmt__json_u64(struct cmt__json *j, const char *key, uint64_t v)
{
    sep(j, key);
    fprintf(j->f, "%" PRIu64, v);
}

void cmt__json_i64(struct cmt__json *j, const char *key, int64_t v)
{
    sep(j, key);
    fprintf(j->f, "%" PRId64, v);
}

void cmt__json_double(struct cmt__json *j, const char *key, double v)
{
    sep(j, key);
    if (isfinite(v))
        fprintf(j->f, "%.6g", v);
    else
        fputs("null", j->f);
}

void cmt__json_bool(struct cmt__json *j, const char *key, int v)
{
    sep(j, key);
    fputs(v ? "true" : "false", j->f);
}

void cmt__json_string(struct cmt__json *j, const char *key, const char *s)
{
    sep(j, key);
    cmt__json_escape(s, j->escape_flags, file_sink, j->f);
}

void cmt__json_null(struct cmt__json *j, const char *key)
{
    sep(j, key);
    fputs("null", j->f);
}

void cmt__json_finish(struct cmt__json *j)
{
    fputc('\n', j->f);
}

void cmt__json_string_or_null(struct cmt__json *j, const char *key, const char *s)
{
    if (s)
        cmt__json_string(j, key, s);
    else
        cmt__json_null(j, key);
}

void cmt__json_u64_or_null(struct cmt__json *j, const char *key, uint64_t v)
{
    if (v)
        cmt__json_u64(j, key, v);
    else
        cmt__json_null(j, key);
}

void cmt__json_i64_or_null(struct cmt__json *j, const char *key, int64_t v)
{
    if (v >= 0)
        cmt__json_i64(j, key, v);
    else
        cmt__json_null(j, key);
}

void cmt__json_u64s(struct cmt__json *j, const struct cmt__json_u64_member *members, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cmt__json_u64(j, members[i].key, members[i].value);
}

/* ---- traces ---- */

const char *cmt__not_a_file(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
        return NULL;                       /* the open says why */
    return cmt_strerror(CMT_ENOT_REGULAR); /* the reader's own words */
}

int cmt__snapshot_convert(const char *cmd, const char *path, int out_fd,
                          struct cmt_snapshot_trace_stats *stats)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "cumemtrace %s: %s: %s\n", cmd, path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return CMT_EIO;
    }
    size_t len = (size_t)st.st_size;
    void *map = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (map == MAP_FAILED) {
        fprintf(stderr, "cumemtrace %s: %s: %s\n", cmd, path, strerror(errno));
        return CMT_EIO;
    }
    const char *name = strrchr(path, '/');
    struct cmt_err err = {0};
    int rc = cmt_snapshot_import(map ? map : "", len, name ? name + 1 : path, cmt_fd_sink, &out_fd,
                                 &err, stats);
    if (map)
        munmap(map, len);
    char where[1024]; /* may quote the pickle */
    if (rc)
        fprintf(stderr, "cumemtrace %s: %s: %s%s%s\n", cmd, path, cmt_strerror(rc),
                *err.text ? ": " : "", cmt__text(err.text, where, sizeof where));
    return rc;
}

/* A PyTorch memory snapshot where a trace is expected, recognised by its pickle header: it is
 * converted into a memfd, and the reader maps that, so that the converted bytes live exactly
 * as long as the reader (cmt_reader_close unmaps them) without a file on disk. */
static int open_snapshot(const char *cmd, const char *path, cmt_reader **out)
{
    int fd = memfd_create("cumemtrace-snapshot", MFD_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "cumemtrace %s: %s: cannot convert the snapshot in memory: %s\n", cmd, path,
                strerror(errno));
        return CMT_EIO;
    }
    int rc = cmt__snapshot_convert(cmd, path, fd, NULL);
    if (!rc) {
        char proc[64];
        struct cmt_err err = {0};
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        if ((rc = cmt_reader_open_file(out, proc, &err)))
            fprintf(stderr, "cumemtrace %s: %s: the converted snapshot: %s\n", cmd, path,
                    cmt_err_message(&err));
    }
    close(fd);
    return rc;
}

int cmt__is_snapshot(const char *path)
{
    unsigned char head[2];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int ok = fd >= 0 && read(fd, head, 2) == 2 && cmt_snapshot_sniff(head, 2);
    if (fd >= 0)
        close(fd);
    return ok;
}

int cmt__open_trace(const char *cmd, const char *path, cmt_reader **out)
{
    struct cmt_err err = {0};
    int rc = cmt_reader_open_file(out, path, &err);
    if (rc == CMT_EBAD_MAGIC && cmt__is_snapshot(path))
        return open_snapshot(cmd, path, out);
    if (rc)
        fprintf(stderr, "cumemtrace %s: %s: %s\n", cmd, path, cmt_err_message(&err));
    return rc;
}

/* A trace that ends cleanly at a chunk boundary with neither an event nor an end marker nor a
 * PROCESS record: cut right after its file header (the process died before its first write). */
static int nothing_written(const cmt_reader *r, int rc)
{
    return rc == 0 && !cmt_reader_event_count(r) && !cmt_reader_clean_exit(r) &&
           !cmt_reader_process(r);
}

int cmt__is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *cmt__one_trace(const char *cmd, const char *path, const char *why, char *buf,
                           size_t size)
{
    if (!cmt__is_dir(path))
        return path;
    char **paths;
    size_t n;
    if (cmt__trace_paths(cmd, &path, 1, &paths, &n) != 0)
        return NULL;
    const char *one = NULL;
    if (n == 1 && strlen(paths[0]) < size)
        one = strcpy(buf, paths[0]);
    else
        fprintf(stderr, "cumemtrace %s: %s holds %zu traces: %s\n", cmd, path, n, why);
    cmt__trace_paths_free(paths, n);
    return one;
}

int cmt__trace_paths(const char *cmd, const char *const *inputs, size_t n, char ***paths,
                     size_t *count)
{
    const char *bad = NULL;
    int rc = cmt_fleet_paths(inputs, n, paths, count, &bad);
    if (rc == 0 && *count)
        return 0;
    if (rc == CMT_EIO)
        fprintf(stderr, "cumemtrace %s: %s: cannot list the directory: %s\n", cmd, bad,
                strerror(errno));
    else if (rc)
        fprintf(stderr, "cumemtrace %s: out of memory\n", cmd);
    else
        fprintf(stderr, "cumemtrace %s: no trace (*.cmt) in %s\n", cmd, n ? inputs[0] : "");
    if (rc == 0)
        cmt__trace_paths_free(*paths, *count);
    *paths = NULL;
    *count = 0;
    return 1;
}

void cmt__trace_paths_free(char **paths, size_t count)
{
    for (size_t i = 0; paths && i < count; i++)
        free(paths[i]);
    free(paths);
}

int cmt__damage_status(const cmt_reader *r, int rc)
{
    if (rc == CMT_ETRUNCATED || rc == CMT_ECORRUPT)
        return cmt_reader_event_count(r) == 0; /* nothing salvaged: an error, not a warning */
    return rc < 0 || nothing_written(r, rc);
}

int cmt__warn_damage(const char *cmd, const char *path, const cmt_reader *r, int rc)
{
    uint64_t folded = cmt_reader_folded(r);
    if (folded)
        fprintf(stderr,
                "cumemtrace %s: warning: %s: %" PRIu64
                " repeated THREAD, NOTE and ENV records folded (each kept once)\n",
                cmd, path, folded);
    char sequence[512];
    if (cmt_reader_sequence_note(r, sequence, sizeof sequence))
        fprintf(stderr, "cumemtrace %s: warning: %s: %s\n", cmd, path, sequence);
    int status = cmt__damage_status(r, rc);
    if (nothing_written(r, rc))
        fprintf(stderr,
                "cumemtrace %s: %s: the trace ends after its file header: no event salvaged (the "
                "process died before its first write; `cumemtrace record` recovers such deaths)\n",
                cmd, path);
    else if ((rc == CMT_ETRUNCATED || rc == CMT_ECORRUPT) && status)
        fprintf(stderr, "cumemtrace %s: %s: %s; no event before it\n", cmd, path,
                cmt_reader_damage(r));
    else if (rc == CMT_ETRUNCATED || rc == CMT_ECORRUPT)
        fprintf(stderr,
                "cumemtrace %s: warning: %s: %s; analysing the %" PRIu64 " events before it\n", cmd,
                path, cmt_reader_damage(r), cmt_reader_event_count(r));
    else if (rc < 0) /* the reader's own failure (out of memory) names where it stopped */
        fprintf(stderr, "cumemtrace %s: %s: %s; results are partial\n", cmd, path,
                rc == CMT_ENOMEM && cmt_reader_damage(r)[0] ? cmt_reader_damage(r)
                                                            : cmt_strerror(rc));
    return status;
}

int cmt__site_is_raw(const cmt_reader *r, uint32_t leaf)
{
    uint32_t node = leaf ? cmt_call_site_node(r, leaf) : 0;
    const struct cmt_symbol *s = node ? cmt_reader_symbol(r, node) : NULL;
    const char *fn = s ? cmt_reader_string(r, s->function) : NULL;
    return node && !(fn && *fn);
}

void cmt__hint_symbolize(const char *cmd, const char *path, int raw)
{
    if (raw)
        fprintf(stderr,
                "cumemtrace %s: hint: frames without names (module+0xoffset): run `cumemtrace "
                "symbolize %s` where the program ran\n",
                cmd, path);
}

static void json_frame(void *ctx, const char *frame)
{
    cmt__json_string(ctx, NULL, frame);
}

void cmt__json_stack(struct cmt__json *j, const char *key, const cmt_reader *r, uint32_t leaf)
{
    cmt__json_array(j, key);
    cmt_stack_frames(r, leaf, 128, json_frame, j);
    cmt__json_end_array(j);
}

int cmt__usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "cumemtrace %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'cumemtrace %s --help')\n", cmd);
    return 2;
}

struct json_file {
    int *json;
    const char **path;
};

/* --json or the trace (cmt__opts_parse). @return 0, or 2 after a usage error. */
static int json_file_arg(const struct cmt__opts *p, int opt, void *ctx)
{
    struct json_file *a = ctx;
    if (opt != CMT__OPT_ARG)
        *a->json = 1; /* the one option but --help */
    else if (*a->path)
        return cmt__usage_error(p->cmd, "one trace file expected, got '%s' too", p->value);
    else
        *a->path = p->value;
    return 0;
}

int cmt__parse_json_file(int argc, char **argv, const char *cmd, const char *usage, int *json,
                         const char **path)
{
    enum { OPT_HELP = 1, OPT_JSON };
    static const struct cmt__option options[] = {
        CMT__OPTION_HELP(OPT_HELP), {NULL, "--json", 0, OPT_JSON, NULL}, {0}};
    struct json_file a = {json, path};
    *json = 0;
    *path = NULL;
    int rc = cmt__opts_parse(cmd, argc, argv, options, 0, usage, json_file_arg, &a);
    if (rc)
        return rc;
    return *path ? 0 : cmt__usage_error(cmd, "missing trace FILE");
}

void cmt__oom_sentence(const struct cmt_oom_episode *e, char *buf, size_t size)
{
    char req[32], proc[32], tot[32], fr[32], oth[32];
    cmt__bytes(e->request_bytes, req);
    cmt__bytes(e->process_bytes, proc);
    cmt__bytes(e->total_bytes, tot);
    cmt__bytes(e->free_bytes, fr);
    cmt__bytes(e->others_bytes, oth);
    switch (e->verdict) {
    case CMT_VERDICT_OVER_CAPACITY:
        snprintf(buf, size,
                 "the request for %s is larger than the whole device (%s): no amount "
                 "of freeing can satisfy it",
                 req, tot);
        break;
    case CMT_VERDICT_FRAGMENTATION:
        if (e->alloc && e->alloc->unallocated_bytes >= e->alloc->request_bytes) {
            char un[32], big[32];
            cmt__bytes(e->alloc->unallocated_bytes, un);
            cmt__bytes(e->alloc->request_bytes, req);
            cmt__bytes(e->alloc->largest_free_block, big);
            if (e->alloc->largest_free_block >= e->alloc->request_bytes)
                snprintf(
                    buf, size,
                    "the allocator held %s reserved but unallocated, more than the %s "
                    "request, yet none of its cached blocks could serve it (the largest, %s, is "
                    "oversize, kept for larger requests, or in the other pool): its cache is "
                    "fragmented",
                    un, req, big);
            else
                snprintf(buf, size,
                         "the allocator held %s reserved but unallocated, more than the %s "
                         "request, yet its largest free block was %s: its cache is fragmented",
                         un, req, big);
            break;
        }
        snprintf(buf, size,
                 "%s was free, enough for the %s request, yet it failed: the free "
                 "memory is fragmented (no contiguous range large enough)",
                 fr, req);
        break;
    case CMT_VERDICT_TOTAL_UNKNOWN:
        snprintf(buf, size,
                 "this process held %s and the device had %s free, but the trace does not "
                 "give the device's total, so whether the request exceeds the device, others "
                 "held the memory or this process exhausted it cannot be told (give the card's "
                 "size with `cumemtrace oom --capacity SIZE`)",
                 proc, fr);
        break;
    case CMT_VERDICT_HELD_BY_OTHERS:
        snprintf(buf, size,
                 "other processes or contexts held %s of the %s device, more than "
                 "this process's %s: the device is shared",
                 oth, tot, proc);
        break;
    default:
        if (e->alloc && e->op < 0 && cmt_oom_device_bytes_needed(e) <= e->free_bytes)
            snprintf(buf, size,
                     "the allocator refused the %s request although the device had %s free: "
                     "a cap of its own (torch.cuda.set_per_process_memory_fraction) stopped it, "
                     "and this process's %s exhausted what it may use",
                     req, fr, proc);
        else
            snprintf(buf, size,
                     "this process itself held %s of the %s device (others %s, free %s): "
                     "its own allocations exhausted the memory",
                     proc, tot, oth, fr);
    }
}

const char *cmt__display_path(const char *path)
{
    char cwd[PATH_MAX];
    size_t n;
    if (getcwd(cwd, sizeof cwd) && (n = strlen(cwd)) > 1 && !strncmp(path, cwd, n) &&
        path[n] == '/')
        return path + n + 1;
    return path;
}
