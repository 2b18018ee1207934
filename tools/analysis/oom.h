/* oom.h — out-of-memory episodes: which request failed, why, and who held the memory.
 *
 * Feed every replay step to cmt_oom_observe() and call cmt_oom_finish() at the end.
 * An episode starts at an allocation that fails with CUDA_ERROR_OUT_OF_MEMORY and groups the
 * retries of the same request (same size and device) that follow, with the frees between
 * them; it ends at a successful retry (fatal = 0), at another allocation request, or at the
 * end of the trace (fatal = 1). docs/analysis.md defines every figure and verdict. */
#ifndef CMT_OOM_H
#define CMT_OOM_H

#include <stdint.h>

#include "allocator.h"
#include "replay.h"

#define CMT_VERDICTS(X)                             \
    X(OVER_CAPACITY, "over_capacity")               \
    X(FRAGMENTATION, "fragmentation")               \
    X(HELD_BY_OTHERS, "held_by_others")             \
    X(EXHAUSTED_BY_PROCESS, "exhausted_by_process") \
    X(TOTAL_UNKNOWN, "total_unknown")

enum cmt_verdict {
#define CMT__VERDICT_ENUM(name, text) CMT_VERDICT_##name,
    CMT_VERDICTS(CMT__VERDICT_ENUM)
#undef CMT__VERDICT_ENUM
};
const char *cmt_verdict_name(int verdict);

#define CMT_OOM_HOLDERS 10 /* call sites kept per episode */

struct cmt_oom_holder {
    uint32_t stack; /* leaf STACK_NODE id */
    uint32_t site;  /* replay site index */
    uint64_t bytes, count;
};

struct cmt_oom_episode {
    uint64_t request_bytes;
    const char *api;
    int op;
    int32_t dev;
    uint64_t t_ns, seq;
    uint32_t tid, stack;
    uint64_t attempts, frees_between, released_bytes;
    int fatal;
    int have_meminfo; /* free/total come from the OOM sample (else the last sample) */
    uint64_t free_bytes, total_bytes; /* total_bytes 0: the trace gives none */
    int total_given;                  /* total_bytes from cmt_oom_set_capacity */
    uint64_t process_bytes;           /* live bytes + pool retention of this process on dev */
    uint64_t pool_retained_bytes;
    uint64_t others_bytes; /* total - free - process (0 when negative) */
    uint64_t shortfall_bytes;
    int verdict;
    int hint_retention, hint_leak; /* hint_leak: holders[] index + 1 of the growing site */
    struct cmt_fragmentation frag;
    struct cmt_oom_holder holders[CMT_OOM_HOLDERS];
    uint32_t holder_count;
    /* the allocator's state at its out-of-memory event (an ALLOC_EVENT `oom`), NULL when the
     * trace has none for this episode (cmt_oom_set_allocator) */
    struct cmt_alloc_view *alloc;
};

typedef struct cmt_oom cmt_oom;

/* @return 0 or CMT_ENOMEM. */
int cmt_oom_create(cmt_oom **out);
void cmt_oom_destroy(cmt_oom *o);
/* Feeds one step. @return 1 while an episode is open; 0 when only a step with st->oom set
 * can matter next (a caller may skip the others: the replay loop of tools/cli/pass.c does). */
int cmt_oom_observe(cmt_oom *o, const cmt_replay *rp, const struct cmt_replay_step *st);
void cmt_oom_finish(cmt_oom *o, const cmt_replay *rp);
/* Gives the analysis the allocator-level view (not owned; its observer must come before this
 * one). An allocator's `oom` event joins the episode open on its device, or starts one (a trace
 * converted from a snapshot has no driver failure): the episode gets its cmt_alloc_view, and
 * the verdict is `fragmentation` when the reserved-but-unallocated bytes cover the request yet
 * no cached block is large enough. */
void cmt_oom_set_allocator(cmt_oom *o, const cmt_alloc *a);
/* The analysis as a replay observer (cmt_replay_run): observe and finish as above. */
struct cmt_observer cmt_oom_observer(cmt_oom *o);

/* The device's total (the card's size, bytes) for the episodes whose trace gives none (a
 * snapshot): their verdict is `total_unknown` until then, since over capacity, held by others
 * and exhausted by the process differ only by it. Call after the run; total_given is set. */
void cmt_oom_set_capacity(cmt_oom *o, uint64_t total_bytes);

/* The device memory c10 asks for to serve the episode's request the cache cannot: a new
 * segment (get_allocation_size), or with expandable segments the pages (2 MiB small, 20 MiB
 * large). */
uint64_t cmt_oom_device_bytes_needed(const struct cmt_oom_episode *e);

uint32_t cmt_oom_count(const cmt_oom *o);
const struct cmt_oom_episode *cmt_oom_episode(const cmt_oom *o, uint32_t i);

#endif
