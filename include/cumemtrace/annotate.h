/* cumemtrace/annotate.h — tell cumemtrace what happens inside your GPU memory allocator.
 *
 * The driver sees only the memory a sub-allocator (a caching allocator, a pool, an arena)
 * gets from it and gives back. A sub-allocator that includes this header reports what it
 * does with that memory: blocks it hands out, frees, segments, out-of-memory failures. Under
 * cumemtrace each report becomes an ALLOC_EVENT record of the trace, in its place among the
 * driver's events and with the caller's stack; without cumemtrace (or with tracing off) every
 * call is a no-op that costs a compare (the counterpart of valgrind's mempool client
 * requests, which heaptrack reads).
 *
 * Self-contained: C99 or C++, no other cumemtrace header, no library to link. The entry points
 * are found once with dlsym(RTLD_DEFAULT, ...): on glibc older than 2.34 link with -ldl
 * (CMake: ${CMAKE_DL_LIBS}). Thread-safe. No call ever changes the program's behaviour.
 * Docs: docs/annotate.md. Format: docs/trace-format.md (ALLOCATOR, ALLOC_EVENT).
 *
 *     static uint32_t pool;
 *     pool = cmt_annotate_allocator("my-pool", "1.0", "block=2MiB");   // 0 without cumemtrace
 *     void *p = pool_get(n, &rounded);
 *     cmt_annotate_alloc(pool, dev, (uintptr_t)p, rounded, n, stream, 0, segment_of(p), 0);
 *     ...
 *     cmt_annotate_free(pool, CMT_ANNOTATE_FREE_REQUESTED, dev, (uintptr_t)p, rounded, stream);
 *
 * A program names its phases with ranges (RANGE records; NVTX ranges land there too):
 *
 *     cmt_annotate_range_push("forward");   ...   cmt_annotate_range_pop();
 *     uint64_t r = cmt_annotate_range_start("epoch 3");   ...   cmt_annotate_range_end(r);
 */
#ifndef CUMEMTRACE_ANNOTATE_H
#define CUMEMTRACE_ANNOTATE_H

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Actions (the trace's CMT_ALLOC_ACTIONS; the names are PyTorch's snapshot action names). */
enum {
    CMT_ANNOTATE_ALLOC = 1,          /* "alloc": a block handed out */
    CMT_ANNOTATE_FREE_REQUESTED = 2, /* "free_requested": the program freed it */
    CMT_ANNOTATE_FREE_COMPLETED = 3, /* "free_completed": the block is back in the cache */
    CMT_ANNOTATE_SEGMENT_ALLOC = 4,  /* "segment_alloc": memory got from the driver */
    CMT_ANNOTATE_SEGMENT_FREE = 5,   /* "segment_free": memory given back to the driver */
    CMT_ANNOTATE_SEGMENT_MAP = 6,    /* "segment_map": pages mapped into a growable segment */
    CMT_ANNOTATE_SEGMENT_UNMAP = 7,  /* "segment_unmap": pages unmapped from one */
    CMT_ANNOTATE_OOM = 8,            /* "oom": a request the allocator could not serve */
    CMT_ANNOTATE_SNAPSHOT = 9        /* "snapshot": the program took a snapshot here */
};

/* Indexes into v[] of cmt_annotate_event, and the bits of its `fields` mask (1 << index). */
enum {
    CMT_ANNOTATE_ADDR = 0,         /* block or segment address */
    CMT_ANNOTATE_SIZE = 1,         /* bytes as the allocator rounded them */
    CMT_ANNOTATE_REQUESTED = 2,    /* bytes the program asked for */
    CMT_ANNOTATE_STREAM = 3,       /* the stream it is for (CUstream as an integer) */
    CMT_ANNOTATE_POOL = 4,         /* pool / private-pool id */
    CMT_ANNOTATE_SEGMENT = 5,      /* base address of the segment the block lies in */
    CMT_ANNOTATE_DEVICE_FREE = 6,  /* OOM: the device's free bytes (cuMemGetInfo) */
    CMT_ANNOTATE_DEVICE_TOTAL = 7, /* OOM: the device's total bytes */
    CMT_ANNOTATE_ALLOCATED = 8,    /* OOM: bytes the allocator has handed out */
    CMT_ANNOTATE_RESERVED = 9,     /* OOM: bytes the allocator holds from the driver */
    CMT_ANNOTATE_FLAGS = 10,       /* CMT_ANNOTATE_FLAG_* bits */
    CMT_ANNOTATE_NFIELDS = 11
};
#define CMT_ANNOTATE_F(index) (UINT32_C(1) << (index))

/* FLAGS bits. */
#define CMT_ANNOTATE_FLAG_BEFORE 1u     /* existed before the program started reporting */
#define CMT_ANNOTATE_FLAG_EXPANDABLE 2u /* an expandable segment, or a block inside one */
#define CMT_ANNOTATE_FLAG_SMALL 4u      /* the small-request pool */

/* The shim's entry points (libcumemtrace.so exports them; version 1 of this interface). */
typedef uint32_t (*cmt_annotate_allocator_fn)(const char *name, const char *version,
                                              const char *conf);
typedef void (*cmt_annotate_event_fn)(uint32_t allocator, uint32_t action, int32_t dev,
                                      uint32_t fields, const uint64_t *v);

#ifndef RTLD_DEFAULT
#define CMT_ANNOTATE__DEFAULT ((void *)0) /* glibc's and musl's value without _GNU_SOURCE */
#else
#define CMT_ANNOTATE__DEFAULT RTLD_DEFAULT
#endif

/* The shim's entry point `name` (NULL when it is absent), looked up once per translation
 * unit: looked_ is 1 once cached_ is final. A race between two first calls is harmless (both
 * store the same pointer). memcpy: ISO C has no cast from void * to a function pointer. */
#define CMT_ANNOTATE__RESOLVE(type, name)                                   \
    static type cached_;                                                    \
    static int looked_;                                                     \
    type fn_;                                                               \
    if (__builtin_expect(__atomic_load_n(&looked_, __ATOMIC_ACQUIRE), 1)) { \
        fn_ = __atomic_load_n(&cached_, __ATOMIC_RELAXED);                  \
    } else {                                                                \
        void *sym_ = dlsym(CMT_ANNOTATE__DEFAULT, name);                    \
        memcpy(&fn_, &sym_, sizeof fn_);                                    \
        __atomic_store_n(&cached_, fn_, __ATOMIC_RELAXED);                  \
        __atomic_store_n(&looked_, 1, __ATOMIC_RELEASE);                    \
    }

/* Declares a sub-allocator: its name ("pytorch-cuda-caching"), its version ("2.6.0", "" when
 * unknown) and its settings as the user wrote them (e.g. PYTORCH_CUDA_ALLOC_CONF's value, ""
 * for none). Each call declares a new allocator (declare again when the settings change).
 * NULL strings are "". Strings longer than 63 (name, version) or 1023 (conf) bytes are cut.
 * @return its id (>= 1) for the other calls; 0 when cumemtrace is absent, tracing is off or
 * the shim's table of 64 allocators is full (then the other calls with 0 do nothing). */
static inline uint32_t cmt_annotate_allocator(const char *name, const char *version,
                                              const char *conf)
{
    CMT_ANNOTATE__RESOLVE(cmt_annotate_allocator_fn, "cumemtrace_annotate_allocator_v1")
    return fn_ ? fn_(name, version, conf) : 0;
}

/* The event entry point, NULL when cumemtrace is absent. */
static inline cmt_annotate_event_fn cmt_annotate__event_fn(void)
{
    CMT_ANNOTATE__RESOLVE(cmt_annotate_event_fn, "cumemtrace_annotate_event_v1")
    return fn_;
}

/* The reporting calls below are macros, so that the call into the shim is made from the
 * caller's own code: the recorded stack's first frame is the allocator's line, whatever the
 * optimisation level and the symbolizer (an inline function's frame would name this header).
 * Every argument is evaluated exactly once, with or without cumemtrace. Statements (no
 * value). Allocator 0 (cumemtrace absent) reports nothing. */
#define CMT_ANNOTATE__CALL(allocator, action, dev, fields, v)                                \
    do {                                                                                     \
        cmt_annotate_event_fn cmt_fn_;                                                       \
        if ((allocator) && (cmt_fn_ = cmt_annotate__event_fn()) != (cmt_annotate_event_fn)0) \
            cmt_fn_((allocator), (action), (dev), (fields), (v));                            \
    } while (0)

/* Reports one action (CMT_ANNOTATE_ALLOC ...) of allocator `allocator` (uint32_t) on device
 * `dev` (int32_t, -1: unknown). v (const uint64_t *) has CMT_ANNOTATE_NFIELDS elements;
 * `fields` (CMT_ANNOTATE_F bits) says which are meaningful, the others are ignored. Report an
 * action when it happens: a segment_alloc after the driver call that got the memory, a
 * segment_free before the one that gives it back, so that the trace's order is true. */
#define cmt_annotate_event(allocator, action, dev, fields, v)                  \
    do {                                                                       \
        uint32_t cmt_a_ = (allocator), cmt_act_ = (action), cmt_f_ = (fields); \
        int32_t cmt_d_ = (dev);                                                \
        const uint64_t *cmt_v_ = (v);                                          \
        CMT_ANNOTATE__CALL(cmt_a_, cmt_act_, cmt_d_, cmt_f_, cmt_v_);          \
    } while (0)

/* A block handed out: its address, size as rounded, the bytes asked for, the stream, the pool
 * (0: the default one) and the base of the segment it lies in; flags CMT_ANNOTATE_FLAG_*. */
#define cmt_annotate_alloc(allocator, dev, addr, size, requested, stream, pool, segment, flags) \
    do {                                                                                        \
        uint32_t cmt_a_ = (allocator);                                                          \
        int32_t cmt_d_ = (dev);                                                                 \
        uint64_t cmt_v_[CMT_ANNOTATE_NFIELDS] = {0};                                            \
        cmt_v_[CMT_ANNOTATE_ADDR] = (uint64_t)(addr);                                           \
        cmt_v_[CMT_ANNOTATE_SIZE] = (uint64_t)(size);                                           \
        cmt_v_[CMT_ANNOTATE_REQUESTED] = (uint64_t)(requested);                                 \
        cmt_v_[CMT_ANNOTATE_STREAM] = (uint64_t)(stream);                                       \
        cmt_v_[CMT_ANNOTATE_POOL] = (uint64_t)(pool);                                           \
        cmt_v_[CMT_ANNOTATE_SEGMENT] = (uint64_t)(segment);                                     \
        cmt_v_[CMT_ANNOTATE_FLAGS] = (uint64_t)(flags);                                         \
        CMT_ANNOTATE__CALL(                                                                     \
            cmt_a_, (uint32_t)CMT_ANNOTATE_ALLOC, cmt_d_,                                       \
            CMT_ANNOTATE__BLOCK_FIELDS |                                                        \
                (cmt_v_[CMT_ANNOTATE_FLAGS] ? CMT_ANNOTATE_F(CMT_ANNOTATE_FLAGS) : 0),          \
            cmt_v_);                                                                            \
    } while (0)
#define CMT_ANNOTATE__BLOCK_FIELDS                                                  \
    (CMT_ANNOTATE_F(CMT_ANNOTATE_ADDR) | CMT_ANNOTATE_F(CMT_ANNOTATE_SIZE) |        \
     CMT_ANNOTATE_F(CMT_ANNOTATE_REQUESTED) | CMT_ANNOTATE_F(CMT_ANNOTATE_STREAM) | \
     CMT_ANNOTATE_F(CMT_ANNOTATE_POOL) | CMT_ANNOTATE_F(CMT_ANNOTATE_SEGMENT))

/* The program freed the block at addr (size as rounded); `action` is
 * CMT_ANNOTATE_FREE_REQUESTED or CMT_ANNOTATE_FREE_COMPLETED. */
#define cmt_annotate_free(allocator, action, dev, addr, size, stream)                              \
    do {                                                                                           \
        uint32_t cmt_a_ = (allocator), cmt_act_ = (action);                                        \
        int32_t cmt_d_ = (dev);                                                                    \
        uint64_t cmt_v_[CMT_ANNOTATE_NFIELDS] = {0};                                               \
        cmt_v_[CMT_ANNOTATE_ADDR] = (uint64_t)(addr);                                              \
        cmt_v_[CMT_ANNOTATE_SIZE] = (uint64_t)(size);                                              \
        cmt_v_[CMT_ANNOTATE_STREAM] = (uint64_t)(stream);                                          \
        CMT_ANNOTATE__CALL(cmt_a_, cmt_act_, cmt_d_,                                               \
                           CMT_ANNOTATE_F(CMT_ANNOTATE_ADDR) | CMT_ANNOTATE_F(CMT_ANNOTATE_SIZE) | \
                               CMT_ANNOTATE_F(CMT_ANNOTATE_STREAM),                                \
                           cmt_v_);                                                                \
    } while (0)

/* A segment event (`action` CMT_ANNOTATE_SEGMENT_ALLOC, _FREE, _MAP or _UNMAP): the segment's
 * address (for a map/unmap, the address of the range) and bytes, stream, pool, flags. */
#define cmt_annotate_segment(allocator, action, dev, addr, size, stream, pool, flags)     \
    do {                                                                                  \
        uint32_t cmt_a_ = (allocator), cmt_act_ = (action);                               \
        int32_t cmt_d_ = (dev);                                                           \
        uint64_t cmt_v_[CMT_ANNOTATE_NFIELDS] = {0};                                      \
        cmt_v_[CMT_ANNOTATE_ADDR] = (uint64_t)(addr);                                     \
        cmt_v_[CMT_ANNOTATE_SIZE] = (uint64_t)(size);                                     \
        cmt_v_[CMT_ANNOTATE_STREAM] = (uint64_t)(stream);                                 \
        cmt_v_[CMT_ANNOTATE_POOL] = (uint64_t)(pool);                                     \
        cmt_v_[CMT_ANNOTATE_FLAGS] = (uint64_t)(flags);                                   \
        CMT_ANNOTATE__CALL(                                                               \
            cmt_a_, cmt_act_, cmt_d_,                                                     \
            CMT_ANNOTATE_F(CMT_ANNOTATE_ADDR) | CMT_ANNOTATE_F(CMT_ANNOTATE_SIZE) |       \
                CMT_ANNOTATE_F(CMT_ANNOTATE_STREAM) | CMT_ANNOTATE_F(CMT_ANNOTATE_POOL) | \
                (cmt_v_[CMT_ANNOTATE_FLAGS] ? CMT_ANNOTATE_F(CMT_ANNOTATE_FLAGS) : 0),    \
            cmt_v_);                                                                      \
    } while (0)

/* A request of `size` bytes (as rounded) that the allocator could not serve, with the
 * device's free and total bytes and the allocator's allocated and reserved bytes then. The
 * trace is on disk when this returns (the process may be about to die). */
#define cmt_annotate_oom(allocator, dev, size, stream, device_free, device_total, allocated,    \
                         reserved)                                                              \
    do {                                                                                        \
        uint32_t cmt_a_ = (allocator);                                                          \
        int32_t cmt_d_ = (dev);                                                                 \
        uint64_t cmt_v_[CMT_ANNOTATE_NFIELDS] = {0};                                            \
        cmt_v_[CMT_ANNOTATE_SIZE] = (uint64_t)(size);                                           \
        cmt_v_[CMT_ANNOTATE_STREAM] = (uint64_t)(stream);                                       \
        cmt_v_[CMT_ANNOTATE_DEVICE_FREE] = (uint64_t)(device_free);                             \
        cmt_v_[CMT_ANNOTATE_DEVICE_TOTAL] = (uint64_t)(device_total);                           \
        cmt_v_[CMT_ANNOTATE_ALLOCATED] = (uint64_t)(allocated);                                 \
        cmt_v_[CMT_ANNOTATE_RESERVED] = (uint64_t)(reserved);                                   \
        CMT_ANNOTATE__CALL(                                                                     \
            cmt_a_, (uint32_t)CMT_ANNOTATE_OOM, cmt_d_,                                         \
            CMT_ANNOTATE_F(CMT_ANNOTATE_SIZE) | CMT_ANNOTATE_F(CMT_ANNOTATE_STREAM) |           \
                CMT_ANNOTATE_F(CMT_ANNOTATE_DEVICE_FREE) |                                      \
                CMT_ANNOTATE_F(CMT_ANNOTATE_DEVICE_TOTAL) |                                     \
                CMT_ANNOTATE_F(CMT_ANNOTATE_ALLOCATED) | CMT_ANNOTATE_F(CMT_ANNOTATE_RESERVED), \
            cmt_v_);                                                                            \
    } while (0)

/* Range actions (the trace's CMT_RANGE_ACTIONS). */
enum {
    CMT_ANNOTATE_RANGE_PUSH = 1,  /* a range opens on this thread, inside the ones open here */
    CMT_ANNOTATE_RANGE_POP = 2,   /* this thread's innermost open range closes */
    CMT_ANNOTATE_RANGE_START = 3, /* a range opens that may end on another thread */
    CMT_ANNOTATE_RANGE_END = 4,   /* the range a START returned closes */
    CMT_ANNOTATE_RANGE_MARK = 5   /* an instant */
};

typedef uint64_t (*cmt_annotate_range_fn)(uint32_t action, uint64_t id, const char *message);

/* Reports a range action: `message` names a PUSH, START or MARK (cut at 64 bytes; NULL is "")
 * and `id` is the one a START returned, for its END. The same as NVTX's nvtxRangePushA,
 * nvtxRangePop, nvtxRangeStartA, nvtxRangeEnd and nvtxMarkA (which cumemtrace records too).
 * @return START: the range's id (non-zero under cumemtrace); otherwise 0. */
static inline uint64_t cmt_annotate_range(uint32_t action, uint64_t id, const char *message)
{
    CMT_ANNOTATE__RESOLVE(cmt_annotate_range_fn, "cumemtrace_annotate_range_v1")
    return fn_ ? fn_(action, id, message) : 0;
}
#define cmt_annotate_range_push(message) \
    ((void)cmt_annotate_range(CMT_ANNOTATE_RANGE_PUSH, 0, (message)))
#define cmt_annotate_range_pop() ((void)cmt_annotate_range(CMT_ANNOTATE_RANGE_POP, 0, NULL))
#define cmt_annotate_range_start(message) cmt_annotate_range(CMT_ANNOTATE_RANGE_START, 0, (message))
#define cmt_annotate_range_end(id) ((void)cmt_annotate_range(CMT_ANNOTATE_RANGE_END, (id), NULL))
#define cmt_annotate_range_mark(message) \
    ((void)cmt_annotate_range(CMT_ANNOTATE_RANGE_MARK, 0, (message)))

#ifdef __cplusplus
}
#endif

#endif
