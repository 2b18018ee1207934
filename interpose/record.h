/* record.h — internal: the recording functions the wrappers call (wrappers.c generates one
 * wrapper per calls.def line; after the real call it calls cmt__rec_<name>(event, ok, the
 * call's arguments), ok when the call succeeded). Each sets the event's fields from the
 * arguments: inputs always, outputs only when ok. They tolerate NULL arguments and never call
 * the driver, except that a stream-ordered allocation or free asks for its stream's capture
 * while a capture is open.
 *
 * They live by what the calls do: rec_memory.c (device memory, IPC, pinned host memory,
 * arrays, the legacy ABI), rec_pools.c (stream-ordered allocation and pools), rec_vmm.c
 * (virtual memory management, multicast), rec_graph.c (graphs and stream capture),
 * rec_context.c (contexts and synchronisations). Their prototypes come from calls.def, so a
 * recording function whose parameters differ from its entry point's does not compile, and
 * one that is missing does not link. */
#ifndef CMT__RECORD_H
#define CMT__RECORD_H

#include "shim.h"

/* Sets an event field (CMT_F(field)) to value. */
#define CMT__SET(e, field, value) \
    ((e)->fields |= CMT_F(field), (e)->v[CMT_FIELD_##field] = (uint64_t)(value))
/* Sets an event field to what an output parameter points to, when the call succeeded. */
#define CMT__OUT(e, ok, field, ptr)     \
    do {                                \
        if ((ok) && (ptr))              \
            CMT__SET(e, field, *(ptr)); \
    } while (0)

/* The recording function's parameters: the event, ok, then the entry point's own; an entry
 * point that takes none has (void) in calls.def, and its recording function the first two
 * only. (CMT__REC_PROBE pastes the first parameter's first token onto CMT__REC_VOID_: only
 * `void` makes it empty.) */
#define CMT__REC_PARAMS(params) CMT__REC_PARAMS_I(CMT__REC_PROBE params, params)
#define CMT__REC_PARAMS_I(probe, params) \
    (struct cmt_event * e, int ok CMT__REC_CAT(CMT__REC_TAIL_, CMT__REC_ANY probe) params)
#define CMT__REC_PROBE(...) (CMT__REC_PASTE(CMT__REC_VOID_, __VA_ARGS__))
#define CMT__REC_PASTE(a, ...) a##__VA_ARGS__
#define CMT__REC_VOID_void
#define CMT__REC_ANY(...) __VA_OPT__(1)
#define CMT__REC_CAT(a, b) CMT__REC_CAT_I(a, b)
#define CMT__REC_CAT_I(a, b) a##b
#define CMT__REC_TAIL_(...)
#define CMT__REC_TAIL_1(...) , __VA_ARGS__

#define X(name, op, params, args) \
    __attribute__((visibility("hidden"))) void cmt__rec_##name CMT__REC_PARAMS(params);
#define XP(name, op, params, args) /* hand-written in getproc.c */
#include "calls.def"
#undef X
#undef XP

/* An entry point recorded as another one of the same parameters is (an alias of) it. */
#define CMT__REC_SAME(name, as) \
    __typeof__(cmt__rec_##as) cmt__rec_##name __attribute__((alias("cmt__rec_" #as)))

/* rec_graph.c: a successful stream-ordered call on a capturing stream made a node of the
 * capture's graph, not memory: sets the event's handle to that graph. per_thread: the
 * per-thread variants, whose stream 0 is the per-thread default stream. */
void cmt__mark_captured_slow(struct cmt_event *e, CUstream stream, int per_thread);
static inline void cmt__mark_captured(struct cmt_event *e, int ok, CUstream stream, int per_thread)
{
    if (__builtin_expect(atomic_load_explicit(&cmt__open_captures, memory_order_relaxed) != 0, 0) &&
        ok)
        cmt__mark_captured_slow(e, stream, per_thread);
}

#endif
