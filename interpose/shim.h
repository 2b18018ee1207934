/* shim.h — internal interfaces of libcumemtrace.so (nothing here is exported).
 *
 * Split: wrappers.c (generated from calls.def) only wrap and call the recorder, after the
 * recording function of the call (rec_*.c, record.h);
 * recorder.c owns the per-thread rings, writer_thread.c the background writer and the trace
 * file, lifecycle.c start, fork, signals and exit; exec.c the exec family;
 * stack.c unwinds and interns stacks; real.c finds the real driver; routes.c handles
 * dlopen/dlsym; getproc.c handles cuGetProcAddress. */
#ifndef CMT__SHIM_H
#define CMT__SHIM_H

#define __CUDA_API_VERSION_INTERNAL 1 /* prototypes for every exact exported name */
#include <cuda.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cmt_format.h"

#define CMT_EXPORT __attribute__((visibility("default")))

/* API ids: 1..CMT__API_COUNT-1, in calls.def order (0 = none). Stable within a build; the
 * trace names every id in an API record, so readers never depend on this numbering. */
enum cmt__api_id {
    CMT__API_NONE = 0,
#define X(name, op, params, args) CMT__API_##name,
#define XP X
#include "calls.def"
#undef X
#undef XP
    CMT__API_COUNT
};

/* Typed pointers to the real driver's functions, plus the few the shim queries itself. */
struct cmt__real {
#define X(name, op, params, args) CUresult(*name) params;
#define XP X
#include "calls.def"
#undef X
#undef XP
    CUresult (*cuCtxGetCurrent)(CUcontext *);
    CUresult (*cuCtxGetDevice)(CUdevice *);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDeviceTotalMem_v2)(size_t *, CUdevice);
    CUresult (*cuDriverGetVersion)(int *);
    CUresult (*cuStreamGetCaptureInfo_v2)(CUstream, CUstreamCaptureStatus *, cuuint64_t *,
                                          CUgraph *, const CUgraphNode **, size_t *);
    CUresult (*cuStreamGetCaptureInfo_v3)(CUstream, CUstreamCaptureStatus *, cuuint64_t *,
                                          CUgraph *, const CUgraphNode **, const CUgraphEdgeData **,
                                          size_t *);
};
extern struct cmt__real cmt__real;

/* Name, op and wrapper of each API id (index 0 unused). */
extern const char *const cmt__api_name[CMT__API_COUNT];
extern const uint8_t cmt__api_op[CMT__API_COUNT];
extern void *const cmt__api_wrapper[CMT__API_COUNT];

/* real.c — finding the real driver. */
/* Resolves every real function once (thread-safe, cheap after the first call).
 * @return 1 when the real libcuda was found. */
int cmt__resolve(void);
/* Exact exported name → API id, 0 when not wrapped. Lock- and allocation-free. */
uint32_t cmt__api_by_name(const char *name);
/* A real driver function pointer → the API id of its exact name, 0 when not wrapped. */
uint32_t cmt__api_by_real(const void *fn);
/* The real dlsym/dlopen (resolved in the constructor via dlvsym, or by cmt__resolve_dl() when
 * a constructor that runs before ours, such as a later LD_PRELOAD library's or a sanitizer
 * runtime's, already calls dlsym or dlopen). */
extern void *(*cmt__real_dlsym)(void *, const char *);
extern void *(*cmt__real_dlopen)(const char *, int);
void cmt__resolve_dl(void);
/* Is this address inside libcumemtrace.so? (used to drop our own frames) */
int cmt__is_own_address(uintptr_t ip);

/* config.c — environment. */
struct cmt__config {
    char output[4096];   /* CUMEMTRACE_OUTPUT pattern: %p pid, %r rank, %l local rank, %h host */
    char manifest[4096]; /* CUMEMTRACE_MANIFEST: file that lists every trace written */
    int stack_depth;     /* CUMEMTRACE_STACK_DEPTH, 0 = no stacks */
    int free_stacks;     /* CUMEMTRACE_FREE_STACKS=1: unwind frees and other releases too */
    int flush_ms;        /* CUMEMTRACE_FLUSH_MS */
    int monotonic_clock; /* CUMEMTRACE_CLOCK=monotonic: never the TSC */
    int disabled;        /* CUMEMTRACE_DISABLE=1 */
};
extern struct cmt__config cmt__cfg;
void cmt__config_load(void);

/* recorder.c — the recording half of every wrapper. */
struct cmt__call {
    struct cmt_event ev;
    struct cmt__thread *thread; /* NULL: not recording this call */
    int errno_saved;
    int new_device;      /* first use of the current device (begin): queue its DEVICE record */
    int32_t current_dev; /* the current device at begin, with new_device */
};
/* Starts a call: returns 0 when it must not be recorded (tracing off, recursion). Ops that
 * release memory take their seq and time here, before the driver runs. */
int cmt__begin(struct cmt__call *c, uint32_t api);
/* Ends a call: takes seq/time for the others, unwinds, queues the event, and handles
 * first use of a device and out-of-memory failures. Restores errno. */
void cmt__finish(struct cmt__call *c, CUresult rc);
/* The shim's one way to warn: "cumemtrace: " and fmt, formatted on the stack, and a newline,
 * written to stderr with one write(2) (errno kept). Never stdio's fprintf or dprintf: they
 * may malloc a buffer, and glibc gives a thread's first malloc an arena of its own (64 MiB of
 * address space, 128 MiB while it is set up) that a program under `ulimit -v` may need. */
void cmt__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same line without the prefix to a file of the shim's own (the manifest), never stderr. */
void cmt__say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records a note once per `key` (a static string), on stderr too when `warn`. */
void cmt__note_once(const char *key, int warn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Current context's device (cached per thread), -1 when none. */
int32_t cmt__current_device(void);
/* Stream captures begun and not yet ended (rec_graph.c), so that a stream-ordered allocation
 * asks the driver whether its stream captures only while some capture may be open. */
extern atomic_int cmt__open_captures;

/* stack.c — unwinding and the stack trie. */
/* Unwinds the caller's stack (our own frames dropped) and interns it.
 * @return the leaf node id, 0 when stacks are off or unavailable. */
uint32_t cmt__stack_capture(int max_depth);
/* Nodes created so far (ids 1..count). A node's fields are valid once `published`. */
uint32_t cmt__stack_node_count(void);
int cmt__stack_node_get(uint32_t id, uint32_t *parent, uint64_t *ip);
void cmt__stack_atfork_prepare(void);
void cmt__stack_atfork_release(void);

/* lifecycle.c — sections that take the dynamic loader's lock (dl_iterate_phdr, which the
 * writer's module scan and libunwind call). glibc's fork() does not take that lock: a child
 * forked while another thread held it inherits it held, and deadlocks the first time it
 * walks the loaded objects (an unwind of ours, a C++ exception of its own).
 * So fork waits until no thread is inside such a section, and none enters one while a fork
 * is under way. Not for signal handlers. */
extern atomic_int cmt__dl_users, cmt__dl_forking;
void cmt__dl_wait_fork(void);

static inline void cmt__dl_enter(void)
{
    for (;;) {
        atomic_fetch_add(&cmt__dl_users, 1);
        if (__builtin_expect(!atomic_load(&cmt__dl_forking), 1))
            return;
        atomic_fetch_sub(&cmt__dl_users, 1);
        cmt__dl_wait_fork();
    }
}

static inline void cmt__dl_leave(void)
{
    atomic_fetch_sub(&cmt__dl_users, 1);
}

#endif
