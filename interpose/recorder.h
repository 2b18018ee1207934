/* recorder.h — state shared by the recorder's three parts (internal).
 *
 * recorder.c   the application-thread side: per-thread rings, seq/time, devices, OOM.
 * writer_thread.c the background writer thread: drains rings in seq order, writes the file.
 * lifecycle.c  start, fork, fatal signals and exit.
 *
 * Ordering: every queued entry carries a global seq. Ops that release memory take theirs
 * before calling the driver, all others after, so a free precedes any allocation that could
 * reuse its memory. While a thread holds a seq it has not queued yet, its ring's `pending`
 * is a lower bound of that seq; the writer emits only entries below every pending bound. */
#ifndef CMT__RECORDER_H
#define CMT__RECORDER_H

#include <pthread.h>

#include "shim.h"

#define CMT__RING_SIZE 8192 /* entries per thread (~700 KiB, touched as used); a power of two */
#define CMT__ENTRY_VALUES 6 /* no entry point records more fields than this */
#define CMT__MAX_NOTES 16
#define CMT__NO_PENDING UINT64_MAX

/* Entry kinds, in the order entries with the same seq are written. */
enum cmt__queued_kind {
    CMT__ENTRY_DEVICE = 0,   /* ev.dev: first use of a device (devices[] holds the details) */
    CMT__ENTRY_BASELINE = 1, /* ev.dev, v[FREE], v[TOTAL]: MEMINFO at first use */
    CMT__ENTRY_EVENT = 2,
    CMT__ENTRY_OOM = 3, /* ev.dev, v[FREE], v[TOTAL]: MEMINFO after an OOM failure */
};

/* A queued event, packed: only the values named by `fields` are stored, in bit order. */
struct cmt__queued {
    uint64_t seq, t_ns;
    uint32_t tid, fields, stack;
    int32_t result, dev;
    uint16_t api;
    uint8_t kind;
    uint64_t v[CMT__ENTRY_VALUES];
};

static inline void cmt__queued_pack(struct cmt__queued *e, uint32_t kind,
                                    const struct cmt_event *ev)
{
    e->seq = ev->seq;
    e->t_ns = ev->t_ns;
    e->tid = ev->tid;
    e->stack = ev->stack;
    e->result = ev->result;
    e->dev = ev->dev;
    e->api = (uint16_t)ev->api;
    e->kind = (uint8_t)kind;
    uint32_t n = 0, kept = 0;
    for (uint32_t m = ev->fields; m && n < CMT__ENTRY_VALUES; m &= m - 1, n++) {
        e->v[n] = ev->v[__builtin_ctz(m)];
        kept |= m & -m;
    }
    e->fields = kept;
}

static inline void cmt__queued_unpack(const struct cmt__queued *e, struct cmt_event *ev)
{
    ev->seq = e->seq;
    ev->t_ns = e->t_ns;
    ev->tid = e->tid;
    ev->stack = e->stack;
    ev->result = e->result;
    ev->dev = e->dev;
    ev->api = e->api;
    ev->fields = e->fields;
    uint32_t n = 0;
    for (uint32_t m = e->fields; m; m &= m - 1)
        ev->v[__builtin_ctz(m)] = e->v[n++];
}

struct cmt__thread {
    _Atomic uint64_t head; /* written by the owning thread */
    _Atomic uint64_t tail; /* written by the writer */
    _Atomic uint64_t pending;
    _Atomic uint32_t drained; /* futex word: bumped by the writer after draining this ring */
    _Atomic uint32_t waiting; /* the owner sleeps on `drained` (its ring is full) */
    _Atomic int alive;
    uint32_t tid;
    CUcontext ctx; /* cache of the current context's device */
    int32_t dev;
    struct cmt__thread *next;
    struct cmt__queued ring[CMT__RING_SIZE];
};

struct cmt__device_info {
    _Atomic int state; /* 0 unseen, 1 being queried, 2 known */
    char name[256];
    uint64_t total, free;
};

enum cmt__state { CMT__IDLE = 0, CMT__RUNNING = 1, CMT__OFF = 2 };

struct cmt__recorder {
    _Atomic int state;
    _Atomic uint64_t seq;
    uint64_t start_mono_ns, start_wall_ns;
    uint64_t start_ticks; /* cmt__ticks() at start */
    int use_tsc;          /* ticks are TSC cycles (converted by the writer), else ns */
    _Atomic(struct cmt__thread *) threads;
    struct cmt__device_info devices[CMT_MAX_DEVICES];
    _Atomic uint32_t kick;       /* futex word: wakes the writer */
    _Atomic uint64_t flush_want; /* a thread waits until entries below this are on disk */
    _Atomic uint64_t flushed;    /* entries below this seq are on disk */
    _Atomic int stop;
    _Atomic int fatal_signo;
    _Atomic uint32_t fatal_tid;
    pthread_t writer;
    _Atomic uint32_t writer_tid;
    int fd;
    int pid; /* the process whose trace this is (a vfork child shares the memory) */
};
extern struct cmt__recorder cmt__rec;

/* Notes gathered before or while tracing; the writer emits them in order. */
struct cmt__note {
    const char *key;
    int level;
    char text[240];
};
extern struct cmt__note cmt__notes[CMT__MAX_NOTES];
extern _Atomic uint32_t cmt__note_count;

uint64_t cmt__mono_ns(void);
/* The hot path's clock: the invariant TSC where the kernel itself trusts it (about half the
 * cost of clock_gettime here), else CLOCK_MONOTONIC ns. Events carry ticks since start; the
 * writer converts them to ns. */
uint64_t cmt__ticks(void);
/* Decides the clock source (at start). */
void cmt__clock_init(void);
uint32_t cmt__gettid(void);
void cmt__kick(void);
/* Blocks (bounded) until every entry below `seq` is on disk. Safe in a signal handler. */
void cmt__wait_flushed(uint64_t seq, int timeout_ms);

/* writer_thread.c */
void *cmt__writer_main(void *arg);

/* lifecycle.c */
/* Starts tracing on the first intercepted call. @return 1 when running. */
int cmt__start(void);
/* This thread gives up its pending seq (a fatal signal: its call will never be queued). */
void cmt__drop_pending(void);
/* Drops the per-thread pointer of a forked child's other threads. */
void cmt__forget_self(void);
/* Before an exec in this process: the trace so far is written whole (END) and closed.
 * @return 1 when it was, then cmt__after_failed_exec must follow an exec that returns. */
int cmt__before_exec(void);
/* An exec failed: the next intercepted call starts a new trace. */
void cmt__after_failed_exec(void);

#endif
