/* emit.h — queued entries → trace records (internal), shared by the shim's writer thread and
 * the salvage that `cumemtrace record` runs after a process died (salvage.c). */
#ifndef CMT__EMIT_H
#define CMT__EMIT_H

#include <stddef.h>

#include "shared.h"
#include "writer.h"

struct cmt__emitter {
    cmt_writer *w;
    const struct cmt__device_info *devices; /* CMT_MAX_DEVICES of them */
    int use_tsc;                            /* entry times are TSC ticks, else ns */
    double ns_per_tick;
    uint64_t last_t;   /* timestamps leave in non-decreasing order */
    cmt__order passed; /* entries with a lower cmt__queued_order are in the writer */
    uint64_t events;   /* EVENT records written: the next one's seq (EVENT seqs count driver
                        * events only, from 0, gap-free) */
    /* Writes a THREAD record for a tid not named yet (0, or a writer error). */
    int (*thread)(void *ctx, uint32_t tid);
    void *thread_ctx;
    uint32_t named_tid; /* the last tid `thread` was called for (0: none) */
};

/* Ticks since start → ns at the emitter's scale (no clamping). */
uint64_t cmt__ticks_ns(const struct cmt__emitter *em, uint64_t ticks);
/* Ticks since start → ns, never before the previous time. */
uint64_t cmt__emit_ns(struct cmt__emitter *em, uint64_t ticks);

/* Writes one entry (its DEVICE, MEMINFO, EVENT or ALLOC_EVENT record, and a THREAD record first when its
 * tid is new). @return 0 or a writer error. */
int cmt__emit_entry(struct cmt__emitter *em, const struct cmt__queued *e);

/* The ALLOCATOR record of allocator `id` (its declaration d, made `ticks` after the trace's
 * start). @return 0 or a writer error. */
int cmt__emit_allocator(struct cmt__emitter *em, uint32_t id, const struct cmt__allocator_decl *d,
                        uint64_t ticks);

/* cmt__queued_order, for qsort-like use. */
int cmt__queued_cmp(const void *a, const void *b);

/* Sorts in place by cmt__queued_order without allocating (qsort may malloc). */
void cmt__queued_sort(struct cmt__queued *a, size_t n);

#endif
