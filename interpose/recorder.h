/* recorder.h — state shared by the recorder's three parts (internal).
 *
 * recorder.c   the application-thread side: per-thread rings, seq/time, devices, OOM.
 * writer_thread.c the background writer thread: drains rings in seq order, writes the file.
 * lifecycle.c  start, fork, fatal signals and exit.
 *
 * Ordering: every queued entry carries a seq, the time it was taken in ticks since start
 * (one clock across cores), strictly increasing along a thread; ties between threads are
 * broken by tid (cmt__queued_order). Ops that release memory take theirs before calling the
 * driver, all others after, so a free precedes any allocation that could reuse its memory.
 * While a thread holds a seq it has not queued yet, its ring's `pending` is a lower bound of
 * that seq; the writer emits only entries below every pending bound and below its own clock
 * less CMT__SEQ_SLACK (recorder.c's take_seq_at says why that is enough). */
#ifndef CMT__RECORDER_H
#define CMT__RECORDER_H

#include <pthread.h>

#include "own_fd.h"
#include "shim.h"
#include "shared.h"

#define CMT__MAX_NOTES 16
#define CMT__NO_PENDING UINT64_MAX

enum cmt__state { CMT__IDLE = 0, CMT__RUNNING = 1, CMT__OFF = 2 };

struct cmt__recorder {
    _Atomic int state;
    uint64_t start_mono_ns, start_wall_ns;
    uint64_t start_ticks; /* cmt__ticks() at start */
    int use_tsc;          /* ticks are TSC cycles (converted by the writer), else ns */
    _Atomic(struct cmt__thread *) threads;
    struct cmt__device_info *devices; /* private, or in the salvage state file */
    /* Written while tracing (kicks, flushes): off the line above, which every call reads. */
    _Alignas(CMT__CACHE_LINE) _Atomic uint32_t kick; /* futex word: wakes the writer */
    _Atomic uint64_t flush_want; /* a thread waits until entries below this are on disk */
    _Atomic uint64_t flushed;    /* entries below this seq are on disk */
    _Atomic int stop;
    _Atomic int fatal_signo;
    _Atomic uint32_t fatal_tid;
    pthread_t writer;
    _Atomic uint32_t writer_tid;
    struct cmt__own_fd trace; /* the trace file, written by the writer thread */
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

/* Sub-allocators declared through annotate.h (annotate.c): slots [0, count) claimed, each
 * usable once `ready`. Kept across fork and exec (a new trace names them again); mirrored
 * into the salvage state file. */
extern struct cmt__allocator_decl cmt__allocators[CMT__MAX_ALLOCATORS];
extern _Atomic uint32_t cmt__allocator_count;
/* Queues an ALLOC_EVENT (annotate.h's cumemtrace_annotate_event_v1): allocator id, action,
 * device, CMT_AF() mask of v[CMT_NAFIELDS] (SEQ is the writer's). Lock- and allocation-free. */
void cmt__alloc_event(uint32_t allocator, uint32_t action, int32_t dev, uint32_t fields,
                      const uint64_t *v);
/* Queues a RANGE (nvtx.c, annotate.c): action (CMT_RA_*), domain, category, id, the message's
 * first `len` bytes (cut at CMT__RANGE_TEXT). Lock- and allocation-free, no stack. */
void cmt__range_event(uint32_t action, uint32_t domain, uint32_t category, uint32_t id,
                      const char *text, size_t len);
/* Starts tracing if it is not running (a declaration before any driver call).
 * @return 1 when running. */
int cmt__ensure_running(void);

uint64_t cmt__mono_ns(void);
/* The hot path's clock: the invariant TSC where the kernel itself trusts it (about half the
 * cost of clock_gettime here), else CLOCK_MONOTONIC ns. Events carry ticks since start; the
 * writer converts them to ns. */
uint64_t cmt__ticks(void);
/* Ticks since start, read before any later load (the writer's of the pendings). A call that
 * takes its seq after it gets at least this less CMT__SEQ_SLACK (recorder.c's take_seq_at). */
uint64_t cmt__now_seq(void);
#define CMT__SEQ_SLACK (1ull << 21)
/* Entries for a new ring: `most`, or fewer (a power of two, at least CMT__RING_MIN) where the
 * address-space limit (RLIMIT_AS, `ulimit -v`) leaves little room: a ring takes at most
 * 1/256 of what is left, so a program that fits untraced fits traced. */
uint32_t cmt__ring_entries(uint32_t most);
/* Decides the clock source (at start). */
void cmt__clock_init(void);
uint32_t cmt__gettid(void);
void cmt__kick(void);
/* Blocks (bounded) until every entry below `seq` is on disk. Safe in a signal handler. */
void cmt__wait_flushed(uint64_t seq, int timeout_ms);

/* shared.c — the state file `cumemtrace record` salvages (shared.h). */
extern struct cmt__shared_header *cmt__shared; /* NULL: none (bare LD_PRELOAD, or it failed) */
/* At a trace's start, when CUMEMTRACE_SALVAGE_DIR is set: creates the file and moves the
 * device table, stack nodes and rings into it. @return 0, -1 (then tracing goes on without). */
int cmt__shared_start(void);
/* Copies declaration `slot` (once ready) into the file. */
void cmt__shared_allocator(uint32_t slot);
/* A new ring in the file (its `mask` set), NULL when there is none (then a private one). */
struct cmt__thread *cmt__shared_ring(void);
/* Stack node chunk k mapped from the file, NULL when there is none. */
void *cmt__shared_chunk(uint32_t k);
void cmt__shared_node_count(uint32_t n);
/* The trace file is open at `path`. */
void cmt__shared_trace(const char *path, int use_tsc);
/* The writer wrote a chunk: what the file now holds. */
void cmt__shared_publish(const struct cmt__on_disk *d);
/* The trace is whole (END) or failed: nothing to salvage, the file is removed. */
void cmt__shared_done(void);
/* The writer: prefaults the next pages of t's ring in the state file past `head`, so its owner's
 * stores seldom fault (madvise MADV_POPULATE_WRITE where the kernel has it). */
void cmt__shared_populate_ahead(struct cmt__thread *t, uint64_t head);
/* Waits (at most 2 s) until the trace is open and its first chunk (header, process, modules)
 * is on disk: a process that dies right after its first call still leaves a trace that
 * salvage can complete. Once per trace, on the thread that started it. */
void cmt__shared_wait_open(void);
/* A forked child lets go of its parent's file. */
void cmt__shared_forget(void);
void cmt__shared_close(void);
/* The device table when there is no state file. */
extern struct cmt__device_info cmt__private_devices[CMT_MAX_DEVICES];

/* stack.c, for shared.c */
void *cmt__stack_chunk(uint32_t k);
void cmt__stack_disable(void);

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
