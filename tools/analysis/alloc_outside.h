/* alloc_outside.h — device memory outside the allocator over the run: the driver-level
 * allocations (cuMemAlloc and the other kinds that count as device memory, replay.h) that no
 * allocator segment covers (NCCL buffers, cuBLAS workspaces, a library's or ctypes'
 * cuMemAlloc_v2), each with its life on the allocator's time axis, grouped by the driver call's
 * top frame. It feeds the page's band "outside the allocator" beside the tensors (the active
 * memory timeline, alloc_history.h) and the segment view's list of them.
 *
 * Moments are the allocator's event ordinals, as alloc_history.h numbers them (every
 * ALLOC_EVENT record from 0, in file order; "at k" is the state after event k). A driver
 * allocation made after event k-1 and before event k is live from k; freed after event j-1 and
 * before j, it is live until j (to = j): so at an allocator OOM the figure is the driver's
 * state at that moment. A driver allocation is inside the allocator when, during its life, an
 * allocator segment on its device covers its address (the allocator's segment events and the
 * driver calls under them need not come in either order); with expandable segments on the
 * device every VMM handle is the allocator's (handles have no address), as `oom` counts them.
 * One that lives at no ordinal (allocated and freed between two allocator events) is left
 * out: no moment of the axis shows it. */
#ifndef CMT_ALLOC_OUTSIDE_H
#define CMT_ALLOC_OUTSIDE_H

#include <stddef.h>
#include <stdint.h>

#include "alloc_history.h"

struct cmt_alloc_outside_life {
    uint64_t addr, size;         /* address (VMM: handle), bytes */
    uint64_t from_seq, to_seq;   /* live at ordinals [from, to); to CMT_ALLOC_NEVER: at the end */
    uint64_t from_t_ns, to_t_ns; /* the driver calls' times (to: CMT_ALLOC_NEVER) */
    uint32_t stack;              /* leaf STACK_NODE id of the driver call, 0 when none */
    uint32_t site;               /* index into cmt_alloc_outside_sites */
    int32_t dev;
    int kind; /* enum cmt_kind */
};

/* A driver call site of memory outside the allocator: the frame its stacks are named by
 * (cmt_alloc_site_node: the first Python frame, else the first outside allocator internals). */
struct cmt_alloc_outside_site {
    uint32_t node;  /* STACK_NODE id of that frame, 0 for allocations without a stack */
    uint64_t lives; /* allocations outside from it */
    uint64_t bytes; /* their bytes, summed */
};

typedef struct cmt_alloc_outside cmt_alloc_outside;

/* history: the allocator's history (its segments, read at the end of the replay; not owned),
 * whose observer runs in the same replay. @return 0 or CMT_ENOMEM. */
int cmt_alloc_outside_create(cmt_alloc_outside **out, const cmt_alloc_history *history);
void cmt_alloc_outside_destroy(cmt_alloc_outside *o);
/* The analysis as a replay observer (events and records); its finish classifies the driver's
 * allocations against the history's segments and groups them by site. */
struct cmt_observer cmt_alloc_outside_observer(cmt_alloc_outside *o);

/* @return 1 when the trace has driver-level events (else memory outside the allocator is not
 * known: a snapshot alone), 0 otherwise. */
int cmt_alloc_outside_known(const cmt_alloc_outside *o);
/* @return 1 when allocations were left out (more than kept), 2 when memory ran out, else 0. */
int cmt_alloc_outside_truncated(const cmt_alloc_outside *o);
/* The allocations outside the allocator, by from_seq (after the replay). */
const struct cmt_alloc_outside_life *cmt_alloc_outside_lives(const cmt_alloc_outside *o,
                                                             size_t *count);
/* The allocations of dev outside the allocator, the largest `max` of them (ties: the earlier
 * first), in order of allocation: their indexes into cmt_alloc_outside_lives() in *out
 * (malloc'ed; the caller frees it), how many dev has in all in *total. @return how many are
 * in *out, or (size_t)-1 when out of memory. */
size_t cmt_alloc_outside_largest(const cmt_alloc_outside *o, int32_t dev, size_t max, size_t *total,
                                 size_t **out);
/* Their sites, the most bytes first (after the replay). */
const struct cmt_alloc_outside_site *cmt_alloc_outside_sites(const cmt_alloc_outside *o,
                                                             size_t *count);
/* @return the bytes outside the allocator live on dev at ordinal seq. */
uint64_t cmt_alloc_outside_at(const cmt_alloc_outside *o, int32_t dev, uint64_t seq);

#endif
