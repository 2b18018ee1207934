/* torch_capture.c — `record --torch` (torch_capture.h). */
#include "torch/torch_capture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmt_error.h"
#include "cmt_grow.h"
#include "output.h"
#include "reader.h"
#include "replay.h" /* cmt_op_attrs: which ops give memory back */
#include "snapshot_trace.h"
#include "writer.h"
#include "torch_sitecustomize.h" /* generated: cmt__torch_hook[], the hook's bytes */

int cmt__torch_setup(const char *dir)
{
    char hook_dir[PATH_MAX], path[PATH_MAX + 32], pythonpath[3 * PATH_MAX];
    snprintf(hook_dir, sizeof hook_dir, "%s/torch", dir);
    snprintf(path, sizeof path, "%s/sitecustomize.py", hook_dir);
    int fd = -1;
    if (mkdir(hook_dir, 0700) != 0 ||
        (fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0 ||
        cmt_fd_sink(&fd, cmt__torch_hook, sizeof cmt__torch_hook) != 0) {
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
        while ((n = read(in, buf, sizeof buf)) > 0 && cmt_fd_sink(&out, buf, (size_t)n) == 0)
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

/* A record of the driver trace that has a time, before which the snapshot's records due by
 * then are written. */
static int timed(const struct cmt_record *rec, uint64_t *t)
{
    switch (rec->type) {
    case CMT_REC_EVENT: *t = rec->u.event.t_ns; return 1;
    case CMT_REC_MEMINFO: *t = rec->u.meminfo.t_ns; return 1;
    case CMT_REC_SIGNAL: *t = rec->u.signal.t_ns; return 1;
    case CMT_REC_ALLOC_EVENT: *t = rec->u.alloc_event.t_ns; return 1;
    case CMT_REC_RANGE: *t = rec->u.range.t_ns; return 1;
    case CMT_REC_END: *t = UINT64_MAX; return 1; /* everything left goes before END */
    default: return 0;
    }
}

#define CMT_MERGE_CALIBRATION 256        /* segment_allocs that refine the shift */
#define CMT_MERGE_CALIBRATION_NS 1000000 /* the most the refinement moves it (1 ms) */

struct merge {
    cmt_reader *drv, *snap;
    cmt_writer *w;
    uint32_t string_off, node_off, allocator_off; /* the driver trace's highest ids */
    int64_t shift_ns;  /* snapshot t + shift = driver t (wall clocks of both starts) */
    int timeless;      /* the snapshot has no time_us: its records go before END */
    uint64_t last_t;   /* the last time written: times never go back */
    uint64_t last_seq; /* the last driver EVENT's seq */
    int have_seq, have_pending, snap_done;
    struct cmt_record pending; /* the snapshot's next ALLOC_EVENT (or ALLOCATOR), read ahead */
    uint64_t due;              /* ... its time in the driver trace's clock */
    char version[64];          /* torch.__version__ as the hook noted it; "" unknown */
    size_t seg_count;          /* the snapshot's first segment_allocs (calibrate_shift) */
    struct {
        uint64_t addr, t_ns;
    } segs[CMT_MERGE_CALIBRATION];
};

static uint64_t snap_time(const struct merge *m, uint64_t t)
{
    if (m->timeless)
        return UINT64_MAX - 1;
    int64_t d = (int64_t)t + m->shift_ns;
    return d < 0 ? 0 : (uint64_t)d;
}

/* Writes the snapshot's records up to (not including) its next timed one, which it leaves
 * in m->pending with its time in m->due. Ids are moved past the driver trace's. */
static int snap_advance(struct merge *m)
{
    struct cmt_record rec;
    int rc;
    while ((rc = cmt_reader_next(m->snap, &rec)) > 0) {
        switch (rec.type) {
        case CMT_REC_STRING: rec.u.string.id += m->string_off; break;
        case CMT_REC_STACK_NODE:
            rec.u.stack_node.id += m->node_off;
            rec.u.stack_node.ip = (uint64_t)rec.u.stack_node.id * 16; /* synthetic, as before */
            if (rec.u.stack_node.parent)
                rec.u.stack_node.parent += m->node_off;
            break;
        case CMT_REC_SYMBOL:
            rec.u.symbol.node += m->node_off;
            rec.u.symbol.function += rec.u.symbol.function ? m->string_off : 0;
            rec.u.symbol.file += rec.u.symbol.file ? m->string_off : 0;
            rec.u.symbol.module = 0;
            break;
        case CMT_REC_ALLOCATOR: /* a snapshot does not say the version: the hook does */
            rec.u.alloc_info.id += m->allocator_off;
            if (m->version[0] && !(rec.u.alloc_info.version && rec.u.alloc_info.version[0]))
                rec.u.alloc_info.version = m->version;
            m->pending = rec;
            m->due = snap_time(m, rec.u.alloc_info.t_ns);
            m->have_pending = 1;
            return 0;
        case CMT_REC_ALLOC_EVENT: {
            struct cmt_alloc_event *e = &rec.u.alloc_event;
            e->allocator += m->allocator_off;
            e->stack += e->stack ? m->node_off : 0;
            int before = (e->fields & CMT_AF(FLAGS)) && (e->v[CMT_AFIELD_FLAGS] & CMT_AFLAG_BEFORE);
            m->pending = rec;
            m->due = before ? 0 : snap_time(m, e->t_ns);
            m->have_pending = 1;
            return 0;
        }
        case CMT_REC_RANGE: /* external_annotations, on the snapshot's clock */
            m->pending = rec;
            m->due = snap_time(m, rec.u.range.t_ns);
            m->have_pending = 1;
            return 0;
        default: /* its PROCESS, DEVICE (sizes unknown) and END: the driver trace has its own */
            continue;
        }
        if ((rc = cmt_writer_record(m->w, &rec)))
            return rc;
    }
    m->snap_done = 1;
    return rc; /* 0 at its end; the converted trace is ours, so damage is a bug */
}

/* Writes the snapshot's records due at or before driver time t. */
static int snap_until(struct merge *m, uint64_t t)
{
    int rc = 0;
    while (!rc && !m->snap_done) {
        if (!m->have_pending && (rc = snap_advance(m)))
            break;
        if (!m->have_pending || m->due > t)
            break;
        uint64_t when = m->due > m->last_t ? m->due : m->last_t;
        if (when == UINT64_MAX - 1) /* timeless: at the last driver time */
            when = m->last_t;
        if (m->pending.type == CMT_REC_ALLOCATOR) {
            m->pending.u.alloc_info.t_ns = when;
        } else if (m->pending.type == CMT_REC_RANGE) {
            m->pending.u.range.t_ns = when;
            m->pending.u.range.have_seq = m->have_seq;
            m->pending.u.range.seq = m->last_seq;
        } else {
            struct cmt_alloc_event *e = &m->pending.u.alloc_event;
            e->t_ns = when;
            e->fields &= ~CMT_AF(SEQ);
            if (m->have_seq) {
                e->fields |= CMT_AF(SEQ);
                e->v[CMT_AFIELD_SEQ] = m->last_seq;
            }
        }
        m->last_t = when;
        m->have_pending = 0;
        rc = cmt_writer_record(m->w, &m->pending);
    }
    return rc;
}

/* The driver trace's highest STRING, STACK_NODE and ALLOCATOR ids; fails on damage (a
 * rewritten trace would lose what lies after it). */
static int scan_ids(struct merge *m, struct cmt_err *why)
{
    struct cmt_record rec;
    int rc;
    while ((rc = cmt_reader_next(m->drv, &rec)) > 0) {
        uint32_t id = rec.type == CMT_REC_STRING       ? rec.u.string.id
                      : rec.type == CMT_REC_STACK_NODE ? rec.u.stack_node.id
                                                       : 0;
        if (rec.type == CMT_REC_STRING && id > m->string_off)
            m->string_off = id;
        if (rec.type == CMT_REC_STACK_NODE && id > m->node_off)
            m->node_off = id;
        if (rec.type == CMT_REC_ALLOCATOR && rec.u.alloc_info.id > m->allocator_off)
            m->allocator_off = rec.u.alloc_info.id;
    }
    if (rc < 0)
        cmt_err_set(why, rc, "the trace is damaged (%s): it is left as recorded",
                    cmt_reader_damage(m->drv)[0] ? cmt_reader_damage(m->drv) : cmt_strerror(rc));
    else if (m->string_off > UINT32_MAX / 2 || m->node_off > UINT32_MAX / 2)
        rc = cmt_err_set(why, CMT_EUNSUPPORTED, "the trace's ids leave no room for the snapshot's");
    cmt_reader_rewind(m->drv);
    return rc < 0 ? rc : 0;
}

/* The snapshot's first segment_allocs (its own clock), to refine the shift; rewinds it. */
static int scan_segments(struct merge *m)
{
    struct cmt_record rec;
    int rc;
    while ((rc = cmt_reader_next(m->snap, &rec)) > 0 && m->seg_count < CMT_MERGE_CALIBRATION) {
        const struct cmt_alloc_event *e = &rec.u.alloc_event;
        if (rec.type == CMT_REC_ALLOC_EVENT && e->action == CMT_AA_SEGMENT_ALLOC &&
            (e->fields & CMT_AF(ADDR)) &&
            !((e->fields & CMT_AF(FLAGS)) && (e->v[CMT_AFIELD_FLAGS] & CMT_AFLAG_BEFORE))) {
            m->segs[m->seg_count].addr = e->v[CMT_AFIELD_ADDR];
            m->segs[m->seg_count++].t_ns = e->t_ns;
        }
    }
    cmt_reader_rewind(m->snap);
    return rc < 0 ? rc : 0;
}

/* The wall clocks of both starts place the snapshot's entries some microseconds off (torch's
 * time_us comes through an approximate clock): an entry could land after an NVTX pop that
 * followed it, in the wrong phase. Torch notes a segment_alloc after the driver call that
 * got it returns, so the shift is refined to put the earliest of them (against the driver's
 * successful allocation of the same address nearest it, within 1 ms) at its call. */
static void calibrate_shift(struct merge *m)
{
    struct cmt_record rec;
    int64_t best = INT64_MAX;
    while (m->seg_count && cmt_reader_next(m->drv, &rec) > 0) {
        const struct cmt_event *e = &rec.u.event;
        if (rec.type != CMT_REC_EVENT || e->result != 0 || !(e->fields & CMT_F(PTR)))
            continue;
        const struct cmt_api *api = cmt_reader_api(m->drv, e->api);
        if (!api || (cmt_op_attrs(api->op) & CMT_OPA_RELEASES) || !(e->fields & CMT_F(SIZE)))
            continue; /* a free names the address too */
        for (size_t i = 0; i < m->seg_count; i++) {
            if (m->segs[i].addr != e->v[CMT_FIELD_PTR])
                continue;
            int64_t d = (int64_t)snap_time(m, m->segs[i].t_ns) - (int64_t)e->t_ns;
            if (d > -CMT_MERGE_CALIBRATION_NS && d < CMT_MERGE_CALIBRATION_NS && d < best)
                best = d;
        }
    }
    cmt_reader_rewind(m->drv);
    if (best != INT64_MAX)
        m->shift_ns -= best;
}

static int merge_records(struct merge *m)
{
    const struct cmt_process *dp = cmt_reader_process(m->drv);
    struct cmt_record rec;
    int rc = 0;
    /* the converted snapshot's PROCESS (its first record) gives its start, time_us x 1000 */
    if ((rc = snap_advance(m)) != 0)
        return rc;
    const struct cmt_process *sp = cmt_reader_process(m->snap);
    m->timeless = !sp || !sp->start_wall_ns || !dp || !dp->start_wall_ns;
    if (!m->timeless)
        m->shift_ns = (int64_t)(sp->start_wall_ns - dp->start_wall_ns), calibrate_shift(m);
    if (m->have_pending) /* read before the shift was known */
        m->due = m->pending.type == CMT_REC_ALLOCATOR ? snap_time(m, m->pending.u.alloc_info.t_ns)
                 : (m->pending.u.alloc_event.fields & CMT_AF(FLAGS)) &&
                         (m->pending.u.alloc_event.v[CMT_AFIELD_FLAGS] & CMT_AFLAG_BEFORE)
                     ? 0
                     : snap_time(m, m->pending.u.alloc_event.t_ns);
    int ended = 0;
    while (!rc && (rc = cmt_reader_next(m->drv, &rec)) > 0) {
        uint64_t t;
        rc = 0;
        if (timed(&rec, &t)) {
            if (t == UINT64_MAX)
                ended = 1, rc = snap_until(m, UINT64_MAX);
            else if (t > 0)
                rc = snap_until(m, t - 1); /* an entry at the driver call's time goes after */
            if (rec.type == CMT_REC_END && rec.u.end.t_ns < m->last_t)
                rec.u.end.t_ns = m->last_t;
            else if (t != UINT64_MAX && t > m->last_t)
                m->last_t = t;
        }
        if (!rc && rec.type == CMT_REC_EVENT) {
            m->last_seq = rec.u.event.seq;
            m->have_seq = 1;
        }
        if (!rc)
            rc = cmt_writer_record(m->w, &rec);
    }
    if (!rc && !ended) /* a trace without END (the process was killed): the rest at its end */
        rc = snap_until(m, UINT64_MAX);
    return rc;
}

/* Merges the snapshot into the trace: the snapshot is converted into a trace in memory
 * (cmt_snapshot_import), and a new trace is written beside the old one with the driver
 * trace's records as they were and the snapshot's interleaved by wall time (the trace's
 * start_wall_ns + t_ns against time_us x 1000; the window's before-state before the first
 * driver event; a snapshot without time_us before END), each ALLOC_EVENT's SEQ the seq of the
 * last driver EVENT before it, STRING, STACK_NODE and ALLOCATOR ids moved past the driver
 * trace's, the snapshot's ALLOCATOR given `version` (torch.__version__, "" unknown). It is
 * renamed over the trace only once complete. @return 0; a CMT_E* code, also in `why` with the
 * reason in its text (the trace is then as it was). */
static int merge_snapshot(const char *trace, const char *snapshot, const char *version,
                          struct cmt_err *why)
{
    struct merge m = {0};
    snprintf(m.version, sizeof m.version, "%s", version);
    int rc, snap_fd = -1, out_fd = -1, conv_fd = -1;
    struct cmt_err err = {0};
    char tmp[PATH_MAX + 16];
    void *map = MAP_FAILED;
    struct stat st, tst;
    cmt_err_sys(why, 0, 0);
    if ((rc = cmt_reader_open_file(&m.drv, trace, &err)))
        return cmt_err_set(why, rc, "the trace: %s", cmt_err_message(&err));
    if ((rc = scan_ids(&m, why)))
        goto out;
    rc = CMT_EIO;
    if ((snap_fd = open(snapshot, O_RDONLY | O_CLOEXEC)) < 0 || fstat(snap_fd, &st) != 0 ||
        (st.st_size && (map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, snap_fd, 0)) ==
                           MAP_FAILED)) {
        cmt_err_set(why, rc, "the snapshot: %s", strerror(errno));
        goto out;
    }
    if ((conv_fd = memfd_create("cumemtrace-torch-merge", MFD_CLOEXEC)) < 0) {
        cmt_err_set(why, rc, "cannot convert the snapshot in memory: %s", strerror(errno));
        goto out;
    }
    struct cmt_err serr = {0};
    const char *name = strrchr(snapshot, '/');
    rc = cmt_snapshot_import(map != MAP_FAILED ? map : "", (size_t)st.st_size,
                             name ? name + 1 : snapshot, cmt_fd_sink, &conv_fd, &serr, NULL);
    if (rc) {
        char where[1024]; /* may quote the pickle */
        cmt_err_set(why, rc, "the snapshot: %s%s%s", cmt_strerror(rc), serr.text[0] ? ": " : "",
                    cmt__text(serr.text, where, sizeof where));
        goto out;
    }
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", conv_fd);
    if ((rc = cmt_reader_open_file(&m.snap, proc, &err))) {
        cmt_err_set(why, rc, "the converted snapshot: %s", cmt_err_message(&err));
        goto out;
    }
    if ((rc = scan_segments(&m))) {
        cmt_err_set(why, rc, "the converted snapshot: %s", cmt_strerror(rc));
        goto out;
    }
    int n = snprintf(tmp, sizeof tmp, "%s.merge.XXXXXX", trace);
    rc = CMT_EIO;
    if (n < 0 || (size_t)n >= sizeof tmp || (out_fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
        cmt_err_set(why, rc, "cannot create a file beside the trace: %s",
                    n < 0 || (size_t)n >= sizeof tmp ? strerror(ENAMETOOLONG) : strerror(errno));
        goto out;
    }
    if (stat(trace, &tst) == 0)
        fchmod(out_fd, tst.st_mode & 07777);
    if ((rc = cmt_writer_create(&m.w, cmt_fd_sink, &out_fd, NULL)) == 0 &&
        (rc = merge_records(&m)) == 0 && (rc = cmt_writer_flush(m.w)) == 0) {
        int synced = fsync(out_fd) == 0, closed = close(out_fd) == 0;
        out_fd = -1;
        if (!synced || !closed || rename(tmp, trace) != 0)
            rc = CMT_EIO;
    }
    if (rc) {
        if (!why->text[0])
            cmt_err_set(why, rc, "writing the merged trace: %s",
                        rc == CMT_EIO ? strerror(errno) : cmt_strerror(rc));
        unlink(tmp);
    }
out:
    cmt_writer_destroy(m.w);
    if (out_fd >= 0)
        close(out_fd);
    cmt_reader_close(m.snap);
    cmt_reader_close(m.drv);
    if (conv_fd >= 0)
        close(conv_fd);
    if (map != MAP_FAILED)
        munmap(map, (size_t)st.st_size);
    if (snap_fd >= 0)
        close(snap_fd);
    return rc;
}

/* torch.__version__ of process pid as the hook noted it (torch-PID.version: "2.1.0+cu121"),
 * "" when there is none or it is not one line of printable text. */
static void read_version(const char *hook_dir, long pid, char *out, size_t size)
{
    char path[PATH_MAX + 64], text[64];
    snprintf(path, sizeof path, "%s/torch-%ld.version", hook_dir, pid);
    out[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0 || n >= (ssize_t)(sizeof text - 1)) /* nothing, or longer than any version */
        return;
    text[n] = 0;
    for (ssize_t i = 0; i < n; i++)
        if ((unsigned char)text[i] <= 0x20 || (unsigned char)text[i] >= 0x7f)
            return;
    snprintf(out, size, "%s", text);
}

/* The dumps of one process, its last first. */
static int collect_process(const char *hook_dir, struct dump *dumps, size_t count,
                           const char *manifest, const char *pattern, int quiet)
{
    char trace[PATH_MAX], stem[PATH_MAX], from[PATH_MAX + NAME_MAX + 2], kept[PATH_MAX + 32];
    trace_of(manifest, dumps[0].pid, trace, sizeof trace);
    stem_for(trace, pattern, dumps[0].pid, stem, sizeof stem);
    int failures = 0;
    struct cmt_err why = {0};
    char version[64];
    read_version(hook_dir, dumps[0].pid, version, sizeof version);
    for (size_t i = 0; i < count; i++) {
        snprintf(from, sizeof from, "%s/%s", hook_dir, dumps[i].name);
        char suffix[64];
        if (i == 0 && trace[0] && merge_snapshot(trace, from, version, &why) == 0) {
            unlink(from);
            if (!quiet)
                fprintf(stderr, "cumemtrace: %s: PyTorch's memory snapshot merged\n",
                        cmt__display_path(trace));
            continue;
        }
        if (i == 0)
            snprintf(suffix, sizeof suffix, ".torch.pickle");
        else /* an earlier dump (an out-of-memory one the program survived) */
            snprintf(suffix, sizeof suffix, ".torch-%ld.pickle", dumps[i].n);
        if (keep(from, stem, suffix, kept, sizeof kept) != 0) {
            fprintf(stderr, "cumemtrace record: cannot keep PyTorch's snapshot as %s: %s\n",
                    cmt__display_path(kept), strerror(errno));
            failures++;
        } else if (i == 0 && why.text[0]) { /* shown even when quiet: something went wrong */
            fprintf(stderr,
                    "cumemtrace record: %s: PyTorch's memory snapshot not merged (%s); trace left "
                    "as recorded, snapshot kept as %s\n",
                    cmt__display_path(trace), why.text, cmt__display_path(kept));
        } else if (!quiet && i == 0) {
            fprintf(stderr,
                    "cumemtrace: no trace of process %ld: PyTorch's memory snapshot kept as %s\n",
                    dumps[i].pid, cmt__display_path(kept));
        } else if (!quiet) {
            fprintf(stderr, "cumemtrace: an earlier PyTorch snapshot of process %ld kept as %s\n",
                    dumps[i].pid, cmt__display_path(kept));
        }
    }
    return failures;
}

/* Why processes left no snapshot, from the hook's notes (torch-PID.note): the most telling
 * one, and how many Python processes left a note. */
struct notes {
    char text[320];
    int rank; /* of text: 0 none */
    unsigned processes;
};

static int note_rank(const char *text)
{
    static const char *const order[] = {"Python ran but never imported torch",
                                        "memory history was on", "torch ", /* imported, no CUDA */
                                        "the hook failed", "import torch failed"};
    for (int i = (int)(sizeof order / sizeof *order) - 1; i >= 0; i--)
        if (!strncmp(text, order[i], strlen(order[i])))
            return i + 1;
    return 1;
}

static void read_note(const char *hook_dir, const char *name, struct notes *n)
{
    long pid;
    int end = 0;
    size_t len = strlen(name);
    if (sscanf(name, "torch-%ld.note%n", &pid, &end) != 1 || (size_t)end != len)
        return;
    char path[PATH_MAX + NAME_MAX + 2], text[sizeof n->text];
    snprintf(path, sizeof path, "%s/%s", hook_dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    ssize_t got = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (got <= 0)
        return;
    text[got] = 0;
    for (ssize_t i = 0; i < got; i++) /* one line of text */
        if ((unsigned char)text[i] < 0x20 || (unsigned char)text[i] == 0x7f)
            text[i] = ' ';
    n->processes++;
    int rank = note_rank(text);
    if (rank > n->rank) {
        n->rank = rank;
        snprintf(n->text, sizeof n->text, "%s", text);
    }
}

/* One line when no process left a snapshot, saying why (shown even when quiet). */
static void say_no_snapshot(const struct notes *n)
{
    if (!n->processes)
        fprintf(stderr, "cumemtrace record: --torch: no PyTorch memory snapshot was taken: no "
                        "Python process loaded the hook (the program ran no Python, or "
                        "python -S / -I / a cleared PYTHONPATH kept it out)\n");
    else
        fprintf(stderr,
                "cumemtrace record: --torch: no PyTorch memory snapshot was taken: %s (%u "
                "Python process%s)\n",
                n->text, n->processes, n->processes == 1 ? "" : "es");
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
    struct notes notes = {0};
    int failures = 0;
    while (d && (de = readdir(d)))
        if (!parse_dump(de->d_name, &one))
            read_note(hook_dir, de->d_name, &notes);
        else {
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
    else
        say_no_snapshot(&notes);
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
