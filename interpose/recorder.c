/* recorder.c — the application-thread half: begin/finish of every wrapped call.
 *
 * Hot path: no heap allocation, no lock, no syscall but the clock (the first call of a
 * thread maps its ring). Unwinding happens before the seq is taken for ordinary calls, so a
 * thread holds a pending seq only for a few instructions (or across the driver call of a
 * release op). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "recorder.h"
#include "shim_ops.h"

struct cmt__recorder cmt__rec = {.trace = {.fd = -1}, .devices = cmt__private_devices};
struct cmt__note cmt__notes[CMT__MAX_NOTES];
_Atomic uint32_t cmt__note_count;

static __thread struct cmt__thread *self __attribute__((tls_model("initial-exec")));
static __thread int in_shim __attribute__((tls_model("initial-exec")));

uint64_t cmt__mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>

void cmt__clock_init(void)
{
    unsigned a, b, c, d;
    char source[32] = "";
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY);
    if (fd >= 0) {
        ssize_t n = read(fd, source, sizeof source - 1);
        source[n > 0 ? n : 0] = 0;
        close(fd);
    }
    int invariant = __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
    cmt__rec.use_tsc = invariant && !strncmp(source, "tsc", 3) && !cmt__cfg.monotonic_clock;
}

uint64_t cmt__ticks(void)
{
    return cmt__rec.use_tsc ? __rdtsc() : cmt__mono_ns();
}

/* The clock read before any later load (the writer's loads of the pendings). */
static inline uint64_t ticks_before(void)
{
    uint64_t t = cmt__ticks();
    _mm_lfence();
    return t;
}
#else
void cmt__clock_init(void)
{
    cmt__rec.use_tsc = 0;
}

uint64_t cmt__ticks(void)
{
    return cmt__mono_ns();
}

static inline uint64_t ticks_before(void)
{
    uint64_t t = cmt__ticks();
    atomic_thread_fence(memory_order_seq_cst);
    return t;
}
#endif

uint64_t cmt__now_seq(void)
{
    uint64_t t = ticks_before(), start = cmt__rec.start_ticks;
    return t > start ? t - start : 0;
}

/* fmt formatted on the stack after prefix, written to fd with one write(2), errno kept. */
static void write_line(int fd, const char *prefix, const char *fmt, va_list ap)
{
    int saved = errno;
    char line[PATH_MAX + 1024];
    size_t at = (size_t)snprintf(line, sizeof line, "%s", prefix);
    int n = vsnprintf(line + at, sizeof line - at, fmt, ap);
    size_t len = n < 0 ? at : at + (size_t)n;
    if (len > sizeof line - 2) /* cut: room for the newline */
        len = sizeof line - 2;
    line[len++] = '\n';
    if (write(fd, line, len) != (ssize_t)len) {
        /* nowhere else to say it */
    }
    errno = saved;
}

void cmt__say(int fd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    write_line(fd, "", fmt, ap);
    va_end(ap);
}

void cmt__warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    write_line(STDERR_FILENO, "cumemtrace: ", fmt, ap);
    va_end(ap);
}

uint32_t cmt__gettid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

void cmt__kick(void)
{
    atomic_fetch_add_explicit(&cmt__rec.kick, 1, memory_order_release);
    syscall(SYS_futex, &cmt__rec.kick, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void cmt__wait_flushed(uint64_t seq, int timeout_ms)
{
    uint64_t want = atomic_load(&cmt__rec.flush_want);
    while (want < seq && !atomic_compare_exchange_weak(&cmt__rec.flush_want, &want, seq))
        ;
    cmt__kick();
    struct timespec nap = {0, 200000};
    for (int waited = 0; waited < timeout_ms * 5; waited++) {
        if (atomic_load(&cmt__rec.flushed) >= seq || atomic_load(&cmt__rec.state) != CMT__RUNNING)
            return;
        nanosleep(&nap, NULL);
    }
}

void cmt__drop_pending(void)
{
    if (self)
        atomic_store(&self->pending, CMT__NO_PENDING);
}

void cmt__forget_self(void)
{
    self = NULL;
    in_shim = 0;
}

static void thread_gone(void *arg)
{
    struct cmt__thread *t = arg;
    atomic_store_explicit(&t->alive, 0, memory_order_release);
}

static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void make_key(void)
{
    pthread_key_create(&thread_key, thread_gone);
}

#define RING_SHARE 256 /* a new ring takes at most this fraction of the room RLIMIT_AS leaves */

uint32_t cmt__ring_entries(uint32_t most)
{
    struct rlimit as;
    if (getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY)
        return most;
    char statm[128] = "";
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, statm, sizeof statm - 1) : -1;
    if (fd >= 0)
        close(fd);
    statm[n > 0 ? n : 0] = 0;
    uint64_t used = strtoull(statm, NULL, 10) * (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t room = as.rlim_cur > used ? (as.rlim_cur - used) / RING_SHARE : 0;
    uint32_t entries = most;
    while (entries > CMT__RING_MIN && CMT__RING_BYTES(entries) > room)
        entries /= 2;
    return entries;
}

/* This thread's ring: a drained ring of an exited thread, or a fresh mapping. */
static struct cmt__thread *thread_state(void)
{
    if (__builtin_expect(self != NULL, 1))
        return self;
    pthread_once(&key_once, make_key);
    struct cmt__thread *t;
    for (t = atomic_load(&cmt__rec.threads); t; t = t->next) {
        int dead = 0;
        if (atomic_load(&t->head) == atomic_load(&t->released) &&
            atomic_compare_exchange_strong(&t->alive, &dead, 1))
            break;
    }
    if (!t && !(t = cmt__shared_ring())) { /* in the salvage file under record, else private */
        uint32_t entries = cmt__ring_entries(CMT__RING_SIZE);
        t = mmap(NULL, CMT__RING_BYTES(entries), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (t == MAP_FAILED)
            return NULL;
        t->mask = entries - 1;
    }
    if (!atomic_load(&t->alive)) { /* new */
        atomic_store(&t->alive, 1);
        atomic_store(&t->pending, CMT__NO_PENDING);
        t->next = atomic_load(&cmt__rec.threads);
        while (!atomic_compare_exchange_weak(&cmt__rec.threads, &t->next, t))
            ;
    }
    memset(t->name, 0, sizeof t->name);
    prctl(PR_GET_NAME, t->name, 0, 0, 0);
    t->tid = cmt__gettid();
    t->ctx = NULL;
    t->dev = -1;
    atomic_store(&t->pending, CMT__NO_PENDING);
    pthread_setspecific(thread_key, t);
    self = t;
    cmt__kick(); /* the writer prefaults the first pages of the ring */
    return t;
}

int32_t cmt__current_device(void)
{
    CUcontext ctx = NULL;
    if (!cmt__real.cuCtxGetCurrent || cmt__real.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx)
        return -1;
    struct cmt__thread *t = self;
    if (t && t->ctx == ctx)
        return t->dev;
    CUdevice dev;
    if (!cmt__real.cuCtxGetDevice || cmt__real.cuCtxGetDevice(&dev) != CUDA_SUCCESS)
        return -1;
    if (t) {
        t->ctx = ctx;
        t->dev = dev;
    }
    return dev;
}

/* Takes this call's seq: the clock (ticks since start), or one past the thread's last seq
 * where the clock did not move on (or a core's clock lags), so that a thread's seqs strictly
 * increase. No counter shared by the threads (its locked add, one cache line passed from core
 * to core on every call, was ~13 ns a call at 8 threads), and no fence: ordering the clock
 * after the store of `pending` (lfence or rdtscp) cost ~20 ns a call (docs/capture.md).
 *
 * Why the writer does not pass a seq unwritten (its drain(): now = cmt__now_seq(), then loads
 * of every `pending`, then of every `head`; it writes entries below min(now - CMT__SEQ_SLACK,
 * pendings)): the store of pending = floor <= seq (since start) comes before the clock's
 * reading in program order. If the writer's load sees it, or a later value up to this entry's
 * publication (NO_PENDING after its head), the bound is <= seq. If it sees an earlier value,
 * the store was not yet visible when the writer read its clock; the clock read here, out of
 * order, can run ahead of the store's visibility only by as long as a store waits in the
 * store buffer (its line's fetch; any interrupt, exception or VM exit drains the buffer):
 * microseconds at most, against a slack of 2^21 ticks (0.7 ms and more, or 2 ms of ns),
 * so now - slack <= seq (the invariant TSC the kernel trusts, or CLOCK_MONOTONIC, is one clock
 * across cores). Should an entry ever arrive below what was written, the writer says so in a
 * NOTE (writer_thread.c) rather than misplace it silently. */
static inline uint64_t take_seq_at(struct cmt__thread *t, uint64_t *t_ns)
{
    uint64_t start = cmt__rec.start_ticks, floor = t->last_ticks + 1;
    atomic_store_explicit(&t->pending, floor > start ? floor - start : 0, memory_order_release);
    uint64_t ticks = cmt__ticks();
    ticks = ticks > floor ? ticks : floor;
    t->last_ticks = ticks;
    uint64_t seq = ticks > start ? ticks - start : 0;
    *t_ns = seq; /* converted to ns by the writer */
    return seq;
}

static void take_seq(struct cmt__thread *t, struct cmt_event *ev)
{
    ev->seq = take_seq_at(t, &ev->t_ns);
}

/* Sleeps until the writer releases entries of t's full ring (never drops). @return 0, or -1
 * when tracing stopped. */
static __attribute__((noinline)) int ring_wait(struct cmt__thread *t, uint64_t head)
{
    uint64_t tail = atomic_load_explicit(&t->released, memory_order_acquire);
    while (head - tail > t->mask) {
        if (atomic_load(&cmt__rec.state) != CMT__RUNNING)
            return -1;
        uint32_t drained = atomic_load(&t->drained);
        atomic_store(&t->waiting, 1);
        cmt__kick();
        if (atomic_load_explicit(&t->released, memory_order_acquire) == tail) {
            struct timespec ms = {0, 1000000};
            syscall(SYS_futex, &t->drained, FUTEX_WAIT_PRIVATE, drained, &ms, NULL, 0);
        }
        tail = atomic_load_explicit(&t->released, memory_order_acquire);
    }
    t->released_seen = tail;
    return 0;
}

/* This thread's next ring slot, once it is free: sleeps while the ring is full. The ring
 * looks full by released_seen first; only then is `released` read again (its acquire load
 * orders the slot's reuse after the writer's reads of it, for every slot below it).
 * The entry is written there in place, then ring_publish. @return NULL when tracing stopped. */
static inline struct cmt__queued *ring_slot(struct cmt__thread *t)
{
    uint64_t head = atomic_load_explicit(&t->head, memory_order_relaxed);
    if (__builtin_expect(head - t->released_seen > t->mask, 0) && ring_wait(t, head))
        return NULL;
    return &t->ring[head & t->mask];
}

/* Entries between two kicks of the writer by a ring's owner (a futex wake each): it drains,
 * and prefaults the ring's next pages (cmt__shared_populate_ahead) by the owner's pace. */
#define KICK_EVERY 16384

/* The entry in the slot ring_slot gave is whole: the writer may take it. The next slot's
 * lines are asked for now (a ring under `record` is far larger than the caches, so each
 * entry's stores miss), so the next call's locked add does not wait for them to arrive.
 * Once the ring looks half full (by released_seen) `released` is read again, and the writer
 * is woken when it still is. */
static inline void ring_publish(struct cmt__thread *t)
{
    uint64_t head = atomic_load_explicit(&t->head, memory_order_relaxed), half = (t->mask + 1) / 2;
    atomic_store_explicit(&t->head, head + 1, memory_order_release);
    const char *next = (const char *)&t->ring[(head + 1) & t->mask];
    __builtin_prefetch(next, 1);
    __builtin_prefetch(next + sizeof(struct cmt__queued) - 1, 1);
    if (__builtin_expect(head - t->released_seen == half, 0)) {
        t->released_seen = atomic_load_explicit(&t->released, memory_order_acquire);
        if (head - t->released_seen >= half)
            cmt__kick();
    } else if (__builtin_expect(((head + 1) & (KICK_EVERY - 1)) == 0, 0)) {
        cmt__kick(); /* the writer prefaults the pages ahead by how far the owner went */
    }
}

/* Queues a packed entry. */
static void push_entry(struct cmt__thread *t, const struct cmt__queued *e)
{
    struct cmt__queued *slot = ring_slot(t);
    if (!slot)
        return;
    *slot = *e;
    ring_publish(t);
}

static void push(struct cmt__thread *t, uint32_t kind, const struct cmt_event *ev)
{
    struct cmt__queued e;
    cmt__queued_pack(&e, kind, ev);
    push_entry(t, &e);
}

/* Claims the first use of device dev and names it (cuDeviceGetName and cuDeviceTotalMem need no
 * context). @return the device's slot, or NULL when it was seen before or is out of range. */
static struct cmt__device_info *device_claim(int32_t dev)
{
    if (dev < 0 || dev >= CMT_MAX_DEVICES)
        return NULL;
    struct cmt__device_info *d = &cmt__rec.devices[dev];
    int unseen = 0;
    if (atomic_load_explicit(&d->state, memory_order_acquire) != 0 ||
        !atomic_compare_exchange_strong(&d->state, &unseen, 1))
        return NULL;
    size_t total = 0;
    if (!cmt__real.cuDeviceGetName || cmt__real.cuDeviceGetName(d->name, sizeof d->name, dev))
        snprintf(d->name, sizeof d->name, "device %d", dev);
    if (cmt__real.cuDeviceTotalMem_v2)
        cmt__real.cuDeviceTotalMem_v2(&total, dev);
    d->total = total;
    d->free = 0;
    return d;
}

/* First use of the current device: name, total and a free/total baseline, taken before the call. */
static int device_first_use(int32_t dev)
{
    struct cmt__device_info *d = device_claim(dev);
    if (!d)
        return 0;
    size_t total = d->total, free = 0;
    if (cmt__real.cuMemGetInfo_v2 && cmt__real.cuMemGetInfo_v2(&free, &total) != CUDA_SUCCESS)
        free = 0;
    d->total = total;
    d->free = free;
    atomic_store(&d->state, 2);
    return 1;
}

/* First use of a device that a call names by argument rather than by its current context
 * (cuMemCreate's prop.location with no context current, a pool's location, cuCtxCreate's
 * device), after the call. Free is measured only when a context of that device is current,
 * with what a successful cuMemCreate itself took added back; otherwise it stays 0 (not
 * measured: cuMemGetInfo needs a context, and making one would change the program). */
static int device_named_by_call(const struct cmt_event *ev, CUresult rc)
{
    if (ev->dev < 0 || ev->dev >= CMT_MAX_DEVICES ||
        atomic_load_explicit(&cmt__rec.devices[ev->dev].state, memory_order_acquire) != 0)
        return 0;
    int current = cmt__current_device() == ev->dev;
    /* A call that allocates nothing there (cuDevicePrimaryCtxRetain) leaves an unmeasured device
     * to the first call made in its context, which measures free before it runs. */
    if (!current && !(cmt__op_flags(cmt__api_op[ev->api]) & CMT__OPF_OOM))
        return 0;
    struct cmt__device_info *d = device_claim(ev->dev);
    if (!d)
        return 0;
    size_t free = 0, total = d->total;
    if (current && cmt__real.cuMemGetInfo_v2 &&
        cmt__real.cuMemGetInfo_v2(&free, &total) == CUDA_SUCCESS) {
        if (rc == CUDA_SUCCESS && cmt__api_op[ev->api] == CMT_OP_VMM_CREATE &&
            (ev->fields & CMT_F(SIZE)) && ev->v[CMT_FIELD_SIZE] <= total - free)
            free += ev->v[CMT_FIELD_SIZE];
        d->total = total;
        d->free = free;
    }
    atomic_store(&d->state, 2);
    return 1;
}

static void push_info(struct cmt__thread *t, uint32_t kind, const struct cmt_event *ev,
                      uint64_t free, uint64_t total)
{
    struct cmt_event info = {.seq = ev->seq,
                             .t_ns = ev->t_ns,
                             .tid = ev->tid,
                             .dev = ev->dev,
                             .fields = CMT_F(FREE) | CMT_F(TOTAL)};
    info.v[CMT_FIELD_FREE] = free;
    info.v[CMT_FIELD_TOTAL] = total;
    push(t, kind, &info);
}

/* The DEVICE record of device dev and, where free was measured, its baseline. */
static void push_device(struct cmt__thread *t, const struct cmt_event *ev, int32_t dev)
{
    const struct cmt__device_info *d = &cmt__rec.devices[dev];
    struct cmt_event at = *ev;
    at.dev = dev;
    push_info(t, CMT__ENTRY_DEVICE, &at, d->free, d->total);
    if (d->free)
        push_info(t, CMT__ENTRY_BASELINE, &at, d->free, d->total);
}

int cmt__begin(struct cmt__call *c, uint32_t api)
{
    c->thread = NULL;
    if (in_shim || cmt__cfg.disabled)
        return 0;
    int state = atomic_load_explicit(&cmt__rec.state, memory_order_acquire);
    if (state != CMT__RUNNING && (state == CMT__OFF || !cmt__start()))
        return 0;
    struct cmt__thread *t = thread_state();
    if (!t)
        return 0;
    in_shim = 1;
    c->thread = t;
    struct cmt_event *ev = &c->ev;
    ev->api = api;
    ev->tid = t->tid;
    ev->dev = -1;
    ev->stack = 0;
    ev->fields = 0;
    ev->result = 0;
    unsigned flags = cmt__op_flags(cmt__api_op[api]);
    c->new_device = 0;
    if (flags & CMT__OPF_CUR) {
        ev->dev = cmt__current_device();
        c->new_device = device_first_use(ev->dev);
        c->current_dev = ev->dev;
    }
    if (flags & CMT__OPF_REL)
        take_seq(t, ev);
    return 1;
}

void cmt__finish(struct cmt__call *c, CUresult rc)
{
    struct cmt__thread *t = c->thread;
    struct cmt_event *ev = &c->ev;
    unsigned flags = cmt__op_flags(cmt__api_op[ev->api]);
    ev->result = (int32_t)rc;
    if (flags & CMT__OPF_REL) { /* like heaptrack, frees are not unwound unless asked for */
        ev->stack = cmt__cfg.free_stacks ? cmt__stack_capture(cmt__cfg.stack_depth) : 0;
    } else {
        ev->stack = cmt__stack_capture(cmt__cfg.stack_depth);
        take_seq(t, ev);
    }
    if (c->new_device) /* the current device, first used by this call */
        push_device(t, ev, c->current_dev);
    if (ev->dev >= 0 && device_named_by_call(ev, rc)) /* by an argument: prop.location, dev */
        push_device(t, ev, ev->dev);
    push(t, CMT__ENTRY_EVENT, ev);
    int oom = rc == CUDA_ERROR_OUT_OF_MEMORY && (flags & CMT__OPF_OOM);
    if (oom) { /* the process may be about to die: keep free/total and flush now */
        size_t free = 0, total = 0;
        if (cmt__real.cuMemGetInfo_v2 && cmt__real.cuMemGetInfo_v2(&free, &total) == CUDA_SUCCESS)
            push_info(t, CMT__ENTRY_OOM, ev, free, total);
    }
    atomic_store_explicit(&t->pending, CMT__NO_PENDING, memory_order_release);
    if (oom)
        cmt__wait_flushed(ev->seq + 1, 2000);
    in_shim = 0;
    errno = c->errno_saved;
}

int cmt__ensure_running(void)
{
    if (in_shim || cmt__cfg.disabled)
        return 0;
    int state = atomic_load_explicit(&cmt__rec.state, memory_order_acquire);
    return state == CMT__RUNNING || (state != CMT__OFF && cmt__start());
}

/* The fields of an ALLOC or RANGE entry but its values, stack and seq, in its ring slot (no
 * memset of the 104-byte entry: only what the writer reads is written). */
static void queued_header(struct cmt__queued *e, const struct cmt__thread *t, uint8_t kind,
                          uint16_t api, int32_t result, int32_t dev)
{
    e->tid = t->tid;
    e->dev = dev;
    e->api = api;
    e->result = result;
    e->kind = kind;
    e->stack = 0;
}

/* An ALLOC or RANGE entry takes a seq of its own, and its time with it, in its ring slot
 * before the rest of it is written: the seq's locked add then waits for none of the entry's
 * stores (they miss the caches). The thread holds the seq pending until publish_own_seq. */
static inline void take_own_seq(struct cmt__thread *t, struct cmt__queued *e)
{
    e->seq = take_seq_at(t, &e->t_ns);
}

/* The entry is whole: the writer may take it, and the thread holds no seq any more. */
static inline void publish_own_seq(struct cmt__thread *t)
{
    ring_publish(t);
    atomic_store_explicit(&t->pending, CMT__NO_PENDING, memory_order_release);
}

/* Actions whose stack is taken only with CUMEMTRACE_FREE_STACKS=1, like the driver's frees. */
static int releases(uint32_t action)
{
    return action == CMT_AA_FREE_REQUESTED || action == CMT_AA_FREE_COMPLETED ||
           action == CMT_AA_SEGMENT_FREE || action == CMT_AA_SEGMENT_UNMAP;
}

void cmt__alloc_event(uint32_t allocator, uint32_t action, int32_t dev, uint32_t fields,
                      const uint64_t *v)
{
    if (allocator == 0 || allocator > CMT__MAX_ALLOCATORS || allocator > UINT16_MAX ||
        action == 0 || action >= CMT_AA_MAX || !cmt__ensure_running())
        return;
    if (!atomic_load_explicit(&cmt__allocators[allocator - 1].ready, memory_order_acquire))
        return; /* never declared (or a declaration of a trace that is gone) */
    struct cmt__thread *t = thread_state();
    if (!t)
        return;
    in_shim = 1;
    struct cmt__queued *e = ring_slot(t); /* written in place; v[] past the values is not */
    if (e) {
        uint32_t stack = 0;
        if (!releases(action) || cmt__cfg.free_stacks)
            stack = cmt__stack_capture(cmt__cfg.stack_depth);
        take_own_seq(t, e);        /* after the stack, before the rest */
        fields &= CMT_AF(SEQ) - 1; /* SEQ is the writer's */
        queued_header(e, t, CMT__ENTRY_ALLOC, (uint16_t)allocator, (int32_t)action, dev);
        e->stack = stack;
        e->fields = v ? cmt__queued_pack_values(e, fields, v) : 0;
        publish_own_seq(t);
        if (action == CMT_AA_OOM) /* the process may be about to die: on disk now */
            cmt__wait_flushed(e->seq + 1, 2000);
    }
    in_shim = 0;
}

void cmt__range_event(uint32_t action, uint32_t domain, uint32_t category, uint32_t id,
                      const char *text, size_t len)
{
    if (action == 0 || action >= CMT_RA_MAX || !cmt__ensure_running())
        return;
    struct cmt__thread *t = thread_state();
    if (!t)
        return;
    in_shim = 1;
    struct cmt__queued *e = ring_slot(t); /* v[] past the message's bytes is never read */
    if (e) {
        take_own_seq(t, e);
        queued_header(e, t, CMT__ENTRY_RANGE, (uint16_t)action, (int32_t)domain, (int32_t)category);
        e->stack = id;
        e->fields = text ? (uint32_t)(len < CMT__RANGE_TEXT ? len : CMT__RANGE_TEXT) : 0;
        memcpy(e->v, text ? text : "", e->fields);
        publish_own_seq(t);
    }
    in_shim = 0;
}

void cmt__note_once(const char *key, int warn, const char *fmt, ...)
{
    uint32_t n = atomic_load(&cmt__note_count);
    for (uint32_t i = 0; i < n && i < CMT__MAX_NOTES; i++)
        if (__atomic_load_n(&cmt__notes[i].key, __ATOMIC_ACQUIRE) == key)
            return;
    if (n >= CMT__MAX_NOTES)
        return;
    /* Claim a slot; a racing duplicate of the same key is harmless. */
    uint32_t slot = atomic_fetch_add(&cmt__note_count, 1);
    if (slot >= CMT__MAX_NOTES)
        return;
    struct cmt__note *note = &cmt__notes[slot];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note->text, sizeof note->text, fmt, ap);
    va_end(ap);
    note->level = warn ? CMT_NOTE_WARNING : CMT_NOTE_INFO;
    __atomic_store_n(&note->key, key, __ATOMIC_RELEASE); /* published last */
    if (warn)
        cmt__warn("%s", note->text);
}
