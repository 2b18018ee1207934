/* writer_thread.c — the background writer: rings → seq order → format writer → file.
 *
 * It owns every slow thing: opening the file, process metadata, module maps, compression,
 * write(). It wakes when kicked (a ring half full, an OOM, a signal, exit) or every 10 ms,
 * and writes a chunk at least every CUMEMTRACE_FLUSH_MS. */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "recorder.h"
#include "cmt_error.h"
#include "emit.h"
#include "launch.h"
#include "writer.h"
#include "writer_batch.h"

extern char **environ;

/* The writer thread's own state; reset for each trace (a forked child starts afresh). */
static struct {
    cmt_writer *w;
    struct cmt__batch batch;
    uint32_t nodes_written;
    uint32_t notes_written;
    uint32_t allocators_written;
    uint32_t *tids;
    size_t ntids, tid_cap;
    uint64_t modules_adds;
    uint32_t module_count;
    uintptr_t *module_bases;
    size_t module_cap;
    uint64_t emitted;       /* entries with seq below this are in the writer */
    uint64_t bounded;       /* the highest bound a drain (not `all`) wrote below */
    struct cmt__emitter em; /* its TSC scale is measured over the whole run so far */
    uint64_t file_bytes;    /* written to the trace */
    cmt__order disk_order;  /* entries with a lower cmt__queued_order are in those bytes */
    uint64_t last_flush_ns;
    int signal_written;
    int write_errno; /* why the file refused a chunk (ENOSPC, EFBIG, EIO) */
    char path[PATH_MAX];
} ws;

/* Appends a line to the manifest that tells `cumemtrace record` which traces were written:
 * a trace's path, or "!" and what went wrong. Never through a symlink. */
static void manifest_line(const char *prefix, const char *text)
{
    if (!cmt__cfg.manifest[0])
        return;
    int m = open(cmt__cfg.manifest, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (m >= 0) {
        cmt__say(m, "%s%s", prefix, text);
        close(m);
    }
}

static int fail(const char *what)
{
    cmt__shared_done(); /* nothing more will reach the file: no salvage either */
    cmt__warn("%s; tracing stopped, the program continues", what);
    manifest_line("!", what);
    atomic_store(&cmt__rec.state, CMT__OFF);
    return -1;
}

/* The pattern with %p (pid), %r (rank), %l (local rank), %h (host) and %% filled in.
 * @return 0, or -1 when it does not fit (never cut: a cut path names another file). */
static int expand_output(char *out, size_t size)
{
    size_t o = 0;
    const char *p;
    for (p = cmt__cfg.output; *p && o + 1 < size; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(out + o, size - o, "%d", (int)getpid());
            p++;
        } else if (p[0] == '%' && (p[1] == 'r' || p[1] == 'l' || p[1] == 'h')) {
            char value[CMT__HOST_MAX];
            cmt__launch_expand(p[1], value, sizeof value);
            o += (size_t)snprintf(out + o, size - o, "%s", value);
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            out[o++] = '%';
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o < size ? o : size - 1] = 0;
    return *p || o >= size ? -1 : 0;
}

/* `path` with ".tag" put before the extension of its last component (r.cmt → r.1.cmt).
 * @return 0, or -1 (errno ENAMETOOLONG) when it does not fit. */
static int tagged_name(const char *path, const char *tag, char *out, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t stem = dot && dot != base ? (size_t)(dot - path) : strlen(path);
    int n = snprintf(out, size, "%.*s.%s%s", (int)stem, path, tag, path + stem);
    if (n >= 0 && (size_t)n < size)
        return 0;
    errno = ENAMETOOLONG;
    return -1;
}

/* A new file only (O_EXCL: a symlink at the path is EEXIST too), never through a symlink,
 * readable by its owner only (a trace holds the command line and environment). */
static int create_new(const char *path)
{
    return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* Opens the trace again where a program closed its descriptor or took the number (own_fd.h):
 * appended to, never through a symlink. */
#define TRACE_REOPEN (O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC)

#define FRESH_NAMES 1000 /* r.1.cmt ... r.999.cmt, then give up */

/* Opens the trace file. An existing file (an earlier trace, another process's, a planted
 * symlink) is never overwritten: a name without %p gets the pid first (r.cmt → r.PID.cmt: a
 * fixed name that several processes share), then the trace goes to the first free r[.PID].N.cmt,
 * and stderr says so once. */
static int open_trace(char *path, size_t size)
{
    if (expand_output(path, size)) {
        char msg[128];
        snprintf(msg, sizeof msg,
                 "the trace path (CUMEMTRACE_OUTPUT with %%p, %%r, %%l, %%h filled in) is "
                 "longer than %zu bytes",
                 size - 1);
        return fail(msg);
    }
    int fd = create_new(path);
    if (fd < 0 && errno == EEXIST) {
        char wanted[PATH_MAX], base[PATH_MAX], tag[16];
        snprintf(wanted, sizeof wanted, "%s", path);
        snprintf(base, sizeof base, "%s", path);
        if (!strstr(cmt__cfg.output, "%p")) { /* (a literal "%%p" skips this step) */
            snprintf(tag, sizeof tag, "%d", (int)getpid());
            if (tagged_name(wanted, tag, base, sizeof base) == 0) {
                snprintf(path, size, "%s", base);
                fd = create_new(path);
            }
        }
        for (int n = 1; fd < 0 && errno == EEXIST && n < FRESH_NAMES; n++) {
            snprintf(tag, sizeof tag, "%d", n);
            if (tagged_name(base, tag, path, size) == 0)
                fd = create_new(path);
        }
        if (fd >= 0)
            cmt__warn("%s exists and is kept; this process's trace is %s", wanted, path);
    }
    if (fd < 0 || cmt__own_fd_take(&cmt__rec.trace, fd, path, TRACE_REOPEN) != 0) {
        char msg[PATH_MAX + 64];
        snprintf(msg, sizeof msg, "cannot write %s: %m", path);
        return fail(msg);
    }
    manifest_line("", path);
    cmt__shared_trace(path, cmt__rec.use_tsc);
    return 0;
}

static size_t read_file(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    n = n < 0 ? 0 : n;
    buf[n] = 0;
    return (size_t)n;
}

#define MAX_CMDLINE 65536
#define MAX_ARGS 1024

/* The command line as /proc/self/cmdline has it, at most MAX_CMDLINE bytes; *whole = its
 * full length (more than what was kept when it was cut). */
static size_t read_cmdline(char *buf, size_t size, size_t *whole)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    size_t len = 0;
    *whole = 0;
    if (fd < 0) {
        buf[0] = 0;
        return 0;
    }
    for (;;) { /* the rest is only counted */
        char rest[4096];
        int full = len + 1 >= size;
        ssize_t n = full ? read(fd, rest, sizeof rest) : read(fd, buf + len, size - 1 - len);
        if (n <= 0)
            break;
        *whole += (size_t)n;
        if (!full)
            len += (size_t)n;
    }
    close(fd);
    buf[len] = 0;
    return len;
}

static int write_process(void)
{
    static char cmdline[MAX_CMDLINE];
    static const char *argv[MAX_ARGS];
    char host[256] = "", exe[PATH_MAX] = "";
    gethostname(host, sizeof host - 1);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    size_t whole, len = read_cmdline(cmdline, sizeof cmdline, &whole);
    uint32_t argc = 0, all_args = 0;
    for (size_t i = 0; i < len; i += strlen(cmdline + i) + 1, all_args++)
        if (argc < MAX_ARGS)
            argv[argc++] = cmdline + i;
    int version = 0;
    if (cmt__real.cuDriverGetVersion)
        cmt__real.cuDriverGetVersion(&version);
    struct cmt_process p = {.pid = (uint64_t)getpid(),
                            .ppid = (uint64_t)getppid(),
                            .start_wall_ns = cmt__rec.start_wall_ns,
                            .start_mono_ns = cmt__rec.start_mono_ns,
                            .driver_version = (uint64_t)version,
                            .hostname = host,
                            .exe = exe,
                            .argc = argc,
                            .argv = argv,
                            .rank = cmt__launch.rank,
                            .local_rank = cmt__launch.local_rank,
                            .world_size = cmt__launch.world_size,
                            .job_id = cmt__launch.job_id[0] ? cmt__launch.job_id : NULL};
    int rc = cmt_writer_process(ws.w, &p);
    if (!rc && (whole > len || all_args > argc)) { /* cut, and marked as such */
        char text[200];
        if (whole > len)
            snprintf(text, sizeof text,
                     "the command line is cut: %zu of its %zu bytes kept "
                     "(%u arguments, the last may be partial)",
                     len, whole, argc);
        else
            snprintf(text, sizeof text, "the command line is cut: %u of its %u arguments kept",
                     argc, all_args);
        rc = cmt_writer_note(ws.w, &(struct cmt_note){CMT_NOTE_WARNING, text});
    }
    for (char **e = environ; !rc && e && *e; e++) {
        if (strncmp(*e, "CUDA_", 5) && strncmp(*e, "PYTORCH_", 8) && strncmp(*e, "CUMEMTRACE_", 11))
            continue;
        char name[256];
        const char *eq = strchr(*e, '=');
        if (!eq || (size_t)(eq - *e) >= sizeof name)
            continue;
        memcpy(name, *e, (size_t)(eq - *e));
        name[eq - *e] = 0;
        rc = cmt_writer_env(ws.w, name, eq + 1);
    }
    for (uint32_t id = 1; !rc && id < CMT__API_COUNT; id++)
        rc = cmt_writer_api(ws.w, &(struct cmt_api){id, cmt__api_op[id], cmt__api_name[id]});
    return rc;
}

/* Writes through a descriptor checked to be the trace's. A program that closed it or took its
 * number (own_fd.h) costs nothing: the trace is opened again, cut back to its whole chunks
 * (a chunk it was in the middle of is written again), and written on; chunks are independent.
 * @return 0, or CMT_ESINK with ws.write_errno (ESTALE: the file was removed or replaced). */
static int write_checked(const void *data, size_t len)
{
    for (int attempt = 0;; attempt++) {
        uint32_t reopens = cmt__rec.trace.reopens;
        errno = 0;
        int fd = cmt__own_fd_get(&cmt__rec.trace);
        struct stat st;
        if (fd >= 0 && cmt__rec.trace.reopens != reopens &&
            (fstat(fd, &st) != 0 || (uint64_t)st.st_size < ws.file_bytes ||
             ftruncate(fd, (off_t)ws.file_bytes) != 0)) {
            errno = errno ? errno : ESTALE; /* shorter than what was written: cut by another */
            fd = -1;
        }
        if (fd >= 0 && cmt_fd_sink(&fd, data, len) == 0)
            return 0;
        if (fd < 0 || errno != EBADF || attempt) { /* EBADF: closed in the middle of it */
            ws.write_errno = errno ? errno : EIO;
            return CMT_ESINK;
        }
    }
}

/* The format writer's sink: write()s to the trace, and keeps the error for the one line.
 * After each whole chunk (also one the writer flushes by itself when full) the salvage
 * state says what the file holds. */
static int file_sink(void *ctx, const void *data, size_t len)
{
    (void)ctx;
    int rc = write_checked(data, len);
    if (rc)
        return rc;
    ws.file_bytes += len;
    ws.disk_order = ws.em.passed;
    cmt__shared_publish(&(struct cmt__on_disk){.order = ws.disk_order,
                                               .offset = ws.file_bytes,
                                               .last_t = ws.em.last_t,
                                               .ns_per_tick = ws.em.ns_per_tick,
                                               .nodes = ws.nodes_written,
                                               .tids = (uint32_t)ws.ntids,
                                               .allocators = ws.allocators_written,
                                               .events = ws.em.events});
    return 0;
}

/* ---- modules ---- */

static const uint8_t *build_id(struct dl_phdr_info *info, uint32_t *len)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const uint8_t *name = p + sizeof *nh;
            const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
                *len = nh->n_descsz;
                return desc;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    *len = 0;
    return NULL;
}

static int known_module(uintptr_t base)
{
    for (size_t i = 0; i < ws.module_count; i++)
        if (ws.module_bases[i] == base)
            return 1;
    return 0;
}

static int module_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    const char *path = info->dlpi_name;
    char exe[PATH_MAX];
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        lo = a < lo ? a : lo;
        hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
    }
    if (hi == 0 || known_module(lo))
        return 0;
    if (!path || !*path) { /* the main program */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        path = exe;
    }
    void *bases = ws.module_bases;
    int grown = cmt__map_grow(&bases, &ws.module_cap, ws.module_count + 1, sizeof *ws.module_bases,
                              64);
    ws.module_bases = bases;
    if (grown)
        return 1;
    ws.module_bases[ws.module_count++] = lo;
    struct cmt_module m = {.id = ws.module_count, .path = path, .base = lo, .size = hi - lo};
    m.build_id = build_id(info, &m.build_id_len);
    *(int *)data |= cmt_writer_module(ws.w, &m);
    return 0;
}

static int adds_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    *(uint64_t *)data = info->dlpi_adds;
    return 1;
}

/* dl_iterate_phdr inside a section fork waits for (shim.h, cmt__dl_enter). */
static void walk_objects(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
    cmt__dl_enter();
    dl_iterate_phdr(cb, data);
    cmt__dl_leave();
}

static int scan_modules(void)
{
    uint64_t adds = 0;
    walk_objects(adds_cb, &adds);
    if (adds == ws.modules_adds && ws.module_count)
        return 0;
    ws.modules_adds = adds;
    int rc = 0;
    walk_objects(module_cb, &rc);
    return rc;
}

/* ---- draining ---- */

static int emit_thread(void *ctx, uint32_t tid)
{
    (void)ctx;
    for (size_t i = 0; i < ws.ntids; i++)
        if (ws.tids[i] == tid)
            return 0;
    void *tids = ws.tids;
    int grown = cmt__map_grow(&tids, &ws.tid_cap, ws.ntids + 1, sizeof *ws.tids, 64);
    ws.tids = tids;
    if (grown)
        return -1;
    if (cmt__shared && ws.ntids < CMT__SHARED_TIDS) /* its THREAD record is in the writer */
        cmt__shared->tid[ws.ntids] = tid;
    ws.tids[ws.ntids++] = tid;
    char path[64], name[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
    size_t n = read_file(path, name, sizeof name);
    if (n && name[n - 1] == '\n')
        name[n - 1] = 0;
    return cmt_writer_thread(ws.w, &(struct cmt_thread){tid, name});
}

/* Re-measures the TSC scale against CLOCK_MONOTONIC over everything since start: the longer
 * the baseline, the smaller the error (clock jitter / elapsed time). */
static void calibrate(void)
{
    if (!cmt__rec.use_tsc)
        return;
    uint64_t ns;
    while ((ns = cmt__mono_ns() - cmt__rec.start_mono_ns) < 200000)
        ; /* at least 200 µs of baseline (once, on the writer thread) */
    uint64_t ticks = cmt__ticks() - cmt__rec.start_ticks;
    if (ticks > 0)
        ws.em.ns_per_tick = (double)ns / (double)ticks;
}

static int emit_tables(void)
{
    int rc = 0;
    uint32_t n = atomic_load_explicit(&cmt__note_count, memory_order_acquire);
    while (!rc && ws.notes_written < n && ws.notes_written < CMT__MAX_NOTES) {
        struct cmt__note *note = &cmt__notes[ws.notes_written];
        if (!__atomic_load_n(&note->key, __ATOMIC_ACQUIRE))
            break; /* still being written */
        rc = cmt_writer_note(ws.w, &(struct cmt_note){(uint32_t)note->level, note->text});
        ws.notes_written++;
    }
    uint32_t declared = atomic_load_explicit(&cmt__allocator_count, memory_order_acquire);
    while (!rc && ws.allocators_written < declared && ws.allocators_written < CMT__MAX_ALLOCATORS) {
        const struct cmt__allocator_decl *d = &cmt__allocators[ws.allocators_written];
        if (!atomic_load_explicit(&d->ready, memory_order_acquire))
            break;               /* still being filled in */
        ws.allocators_written++; /* first: a chunk flushed inside the call holds it */
        uint64_t start = cmt__rec.start_ticks;
        rc = cmt__emit_allocator(&ws.em, ws.allocators_written, d,
                                 d->t_ticks > start ? d->t_ticks - start : 0);
    }
    uint32_t nodes = cmt__stack_node_count();
    for (uint32_t id = ws.nodes_written + 1; !rc && id <= nodes; id++) {
        struct cmt_stack_node node = {.id = id};
        ws.nodes_written = id; /* first: a chunk flushed inside the call holds it */
        if (cmt__stack_node_get(id, &node.parent, &node.ip) == 0)
            rc = cmt_writer_stack_node(ws.w, &node);
    }
    return rc ? rc : scan_modules();
}

/* Lets the ring's owner reuse its entries below `upto`. */
static void release(struct cmt__thread *t, uint64_t upto)
{
    atomic_store_explicit(&t->released, upto, memory_order_release);
    atomic_fetch_add(&t->drained, 1);
    if (atomic_exchange(&t->waiting, 0)) /* its owner sleeps on a full ring */
        syscall(SYS_futex, &t->drained, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Under record: entries stay in their ring until the chunk holding them is on disk. */
static void release_written(void)
{
    if (!cmt__shared)
        return;
    for (struct cmt__thread *t = atomic_load(&cmt__rec.threads); t; t = t->next) {
        uint64_t from = atomic_load_explicit(&t->released, memory_order_relaxed);
        uint64_t lo = from, hi = atomic_load_explicit(&t->tail, memory_order_relaxed);
        /* a thread queues in order: the first entry not on disk by bisection, not by a walk
         * over every entry of the chunk */
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (cmt__queued_order(&t->ring[mid & t->mask]) < ws.disk_order)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo != from)
            release(t, lo);
    }
}

/* A ring half full of entries not on disk, or an owner waiting: time for a chunk. */
static int rings_pressed(void)
{
    if (!cmt__shared)
        return 0;
    for (struct cmt__thread *t = atomic_load(&cmt__rec.threads); t; t = t->next)
        if (atomic_load(&t->waiting) ||
            atomic_load(&t->head) - atomic_load(&t->released) >= (t->mask + 1) / 2)
            return 1;
    return 0;
}

static int emit_one(void *ctx, const struct cmt__queued *e)
{
    (void)ctx;
    return cmt__emit_entry(&ws.em, e);
}

/* Writes the queued entries that no thread can precede any more (all of them when `all`),
 * straight from the rings; the rest stay there for the next drain. @return 0 or a writer
 * error. */
static int drain(int all)
{
    uint64_t now = cmt__now_seq(), bound = now > CMT__SEQ_SLACK ? now - CMT__SEQ_SLACK : 0;
    for (struct cmt__thread *t = atomic_load(&cmt__rec.threads); t; t = t->next) {
        uint64_t p = atomic_load(&t->pending);
        if (p < bound)
            bound = p;
    }
    cmt__batch_begin(&ws.batch);
    for (struct cmt__thread *t = atomic_load(&cmt__rec.threads); t; t = t->next) {
        uint64_t head = atomic_load_explicit(&t->head, memory_order_acquire);
        uint64_t tail = atomic_load_explicit(&t->tail, memory_order_relaxed);
        cmt__shared_populate_ahead(t, head);
        if (tail == head)
            continue;
        if (cmt__batch_add_run(&ws.batch, t, tail, head))
            return CMT_ENOMEM;
        if (t->ring[tail & t->mask].seq < ws.bounded) /* take_seq_at's slack fell short */
            cmt__note_once("late", 1,
                           "a call reached the writer after later ones were written: the "
                           "order of calls near %.3f s may be wrong (a clock out of step "
                           "across cores?)",
                           (double)cmt__ticks_ns(&ws.em, ws.bounded) / 1e9);
    }
    calibrate(); /* before emit_tables: an ALLOCATOR record's time uses the scale */
    int rc = emit_tables();
    uint64_t next = 0;
    if (!rc)
        rc = cmt__batch_emit(&ws.batch, all ? UINT64_MAX : bound, emit_one, NULL, &next);
    for (size_t r = 0; r < ws.batch.nruns; r++) {
        struct cmt__thread *t = ws.batch.runs[r].t;
        atomic_store_explicit(&t->tail, ws.batch.runs[r].pos, memory_order_release);
        if (!cmt__shared) /* nobody salvages: the entries can go */
            release(t, ws.batch.runs[r].pos);
    }
    if (next > ws.emitted)
        ws.emitted = next;
    if (bound > ws.emitted) /* below it, everything queued is written */
        ws.emitted = bound;
    if (!all && bound > ws.bounded)
        ws.bounded = bound;
    if (all && now > ws.emitted) /* a seq taken but never queued will not come */
        ws.emitted = now;
    if (cmt__order_of_seq(ws.emitted) > ws.em.passed) /* every entry below it is written */
        ws.em.passed = cmt__order_of_seq(ws.emitted);
    return rc;
}

static int flush_to_disk(void)
{
    int rc = cmt_writer_flush(ws.w);
    ws.last_flush_ns = cmt__mono_ns();
    release_written();
    if (!rc)
        atomic_store(&cmt__rec.flushed, ws.emitted);
    return rc;
}

static int write_signal(void)
{
    int signo = atomic_load(&cmt__rec.fatal_signo);
    if (!signo || ws.signal_written)
        return 0;
    ws.signal_written = 1;
    return cmt_writer_signal(ws.w, &(struct cmt_signal){cmt__mono_ns() - cmt__rec.start_mono_ns,
                                                        (uint32_t)signo,
                                                        atomic_load(&cmt__rec.fatal_tid)});
}

static int finish(void)
{
    int rc = drain(1);
    if (!rc)
        rc = write_signal();
    if (!rc && !atomic_load(&cmt__rec.fatal_signo))
        rc = cmt_writer_end(ws.w, &(struct cmt_end){cmt__mono_ns() - cmt__rec.start_mono_ns,
                                                    cmt_writer_event_count(ws.w), 0});
    rc = rc ? rc : flush_to_disk();
    if (!rc)
        cmt__shared_done();
    return rc;
}

static void wait_for_kick(uint32_t seen, long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    syscall(SYS_futex, &cmt__rec.kick, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}

void *cmt__writer_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all); /* fatal signals go to the program's threads, never to this one */
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    atomic_store(&cmt__rec.writer_tid, cmt__gettid());
    prctl(PR_SET_NAME, "cmt-writer", 0, 0, 0); /* in top, perf and bench/capture/pinned.sh */
    /* A forked child inherits the parent writer's buffers in whatever state the fork caught
     * them (even halfway through swapping two of them): drop them, never free them. Their
     * pages are the parent's, shared copy-on-write, so they cost the child nothing. */
    memset(&ws, 0, sizeof ws);
    ws.em = (struct cmt__emitter){
        .devices = cmt__rec.devices, .use_tsc = cmt__rec.use_tsc, .thread = emit_thread};
    if (open_trace(ws.path, sizeof ws.path))
        return NULL;
    /* zstd level 1 and raw literals: the writer shares the machine with the program, and a
     * trace is read faster (traces stay ~2 B/event for a loop, ~6.5 for random sizes) */
    struct cmt_writer_options options = {
        .level = 1, .raw_literals = 1, .allocator = &cmt__map_allocator};
    int rc = cmt_writer_create(&ws.w, file_sink, NULL, &options);
    ws.em.w = ws.w;
    if (!rc)
        rc = write_process();
    if (!rc)
        rc = scan_modules();
    /* On disk at once: a process killed (or a disk full) before the first flush interval
     * still leaves a readable trace that names the program. */
    if (!rc)
        rc = flush_to_disk();
    uint64_t flush_ns = (uint64_t)cmt__cfg.flush_ms * 1000000ull;
    while (!rc && !atomic_load(&cmt__rec.stop)) {
        uint32_t seen = atomic_load(&cmt__rec.kick);
        /* A waiting thread (OOM, signal, _exit) shortens the nap, never to a busy loop: a
         * thread inside a slow driver call can hold the bound back for a while. */
        int wanted = atomic_load(&cmt__rec.flush_want) > atomic_load(&cmt__rec.flushed);
        wait_for_kick(seen, wanted ? 1 : 10);
        rc = drain(atomic_load(&cmt__rec.fatal_signo) != 0);
        if (!rc)
            rc = write_signal();
        if (!rc &&
            (cmt__mono_ns() - ws.last_flush_ns >= flush_ns ||
             atomic_load(&cmt__rec.flush_want) > atomic_load(&cmt__rec.flushed) || rings_pressed()))
            rc = flush_to_disk();
        else
            release_written(); /* the writer may have written a full chunk by itself */
    }
    if (!rc && atomic_load(&cmt__rec.stop))
        rc = finish();
    if (rc) {
        char msg[PATH_MAX + 128];
        if (rc == CMT_ESINK && ws.write_errno == ESTALE)
            snprintf(msg, sizeof msg, "writing %s failed: the file was removed or replaced",
                     ws.path);
        else if (rc == CMT_ESINK && ws.write_errno)
            snprintf(msg, sizeof msg, "writing %s failed: %s", ws.path, strerror(ws.write_errno));
        else
            snprintf(msg, sizeof msg, "writing %s failed (%s)", ws.path, cmt_strerror(rc));
        fail(msg);
    }
    cmt_writer_destroy(ws.w);
    ws.w = NULL;
    cmt__own_fd_close(&cmt__rec.trace);
    return NULL;
}
