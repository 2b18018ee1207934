/* alloc_history.h — the allocator-level view over the whole run: every block's life (handed
 * out, freed by the program, back in the cache) and every segment's (got from the driver, given
 * back; an expandable segment's mapped range starts a new life each time it changes), numbered
 * by the trace's allocator events. It feeds memory_viz's views on the page: the active memory
 * timeline (a band per block), the segments at any moment, and the bytes live at the allocated
 * peak by stack (an icicle).
 *
 * Moments are event ordinals: ALLOC_EVENT records numbered from 0 in file order; "at k" is the
 * state after event k is applied. A life [from, to) is live at k when from <= k < to; to is
 * CMT_ALLOC_NEVER when it never ends. The lives are rebuilt beside an allocator view
 * (allocator.h) that the history reads for the segments, so the same rules apply: a block is
 * allocated from its alloc to its free request (a block pending free before the window never
 * is), and occupies its segment until the free completes. */
#ifndef CMT_ALLOC_HISTORY_H
#define CMT_ALLOC_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "allocator.h"

#define CMT_ALLOC_NEVER UINT64_MAX

struct cmt_alloc_life {
    uint64_t addr, size, requested;
    uint64_t alloc_seq, free_seq, done_seq; /* allocated in [alloc, free), held until done */
    uint64_t alloc_t_ns, free_t_ns, done_t_ns;
    uint32_t stack, allocator;
    int32_t dev;
    int before; /* it existed before the recorded window */
};

struct cmt_alloc_segment_life {
    uint64_t addr, size, stream;
    uint64_t from_seq, to_seq, from_t_ns, to_t_ns;
    uint32_t allocator;
    int32_t dev;
    int expandable, small, before;
};

/* An allocator OOM event. */
struct cmt_alloc_history_oom {
    uint64_t seq, t_ns, request_bytes;
    uint32_t allocator;
    int32_t dev;
};

/* A device's figures over a range of ordinals starting at seq: each figure's maximum there
 * (every allocator on the device summed), so that peaks stay exact however many events. */
struct cmt_alloc_history_point {
    uint64_t seq, allocated, reserved, inactive_split;
};

/* A moment at which a device's allocated (or reserved) bytes peaked: the first one. */
struct cmt_alloc_moment {
    uint64_t seq, t_ns, bytes;
};

typedef struct cmt_alloc_history cmt_alloc_history;

/* state: the allocator view the history reads after each event (its observer must come before
 * the history's). points: at most that many series points per device (>= 2).
 * @return 0 or CMT_ENOMEM. */
int cmt_alloc_history_create(cmt_alloc_history **out, const cmt_alloc *state, uint32_t points);
void cmt_alloc_history_destroy(cmt_alloc_history *h);
/* The history as a replay observer (records only). */
struct cmt_observer cmt_alloc_history_observer(cmt_alloc_history *h);

/* @return the allocator events numbered. */
uint64_t cmt_alloc_history_events(const cmt_alloc_history *h);
/* @return 1 when lives were left out (more than the history keeps), 2 when memory ran out,
 * else 0. */
int cmt_alloc_history_truncated(const cmt_alloc_history *h);
const struct cmt_alloc_life *cmt_alloc_history_blocks(const cmt_alloc_history *h, size_t *count);
const struct cmt_alloc_segment_life *cmt_alloc_history_segments(const cmt_alloc_history *h,
                                                                size_t *count);
const struct cmt_alloc_history_oom *cmt_alloc_history_ooms(const cmt_alloc_history *h,
                                                           size_t *count);
/* The devices with allocator events, in order of first appearance. */
size_t cmt_alloc_history_device_count(const cmt_alloc_history *h);
int32_t cmt_alloc_history_device(const cmt_alloc_history *h, size_t i);
/* The series of dev, in ordinal order. @return the points (NULL when none), *count set. */
const struct cmt_alloc_history_point *cmt_alloc_history_series(const cmt_alloc_history *h,
                                                               int32_t dev, size_t *count);

/* The first moment dev's allocated bytes (reserved: its reserved bytes) were at their maximum.
 * @return 0, or CMT_ENOT_FOUND when dev has no lives, CMT_ENOMEM. */
int cmt_alloc_history_peak(const cmt_alloc_history *h, int32_t dev, int reserved,
                           struct cmt_alloc_moment *out);

/* The indices of dev's blocks, largest first (earlier first among equals), at most max, in a
 * malloc'ed array the caller frees. @return how many, or (size_t)-1 when out of memory. */
size_t cmt_alloc_history_largest(const cmt_alloc_history *h, int32_t dev, size_t max, size_t **out);
/* The allocated bytes of dev's blocks that chosen[] (indexed like the blocks) does not mark,
 * as at most `points` points (each the maximum from its seq to the next's). @return how many
 * points in *out (malloc'ed, the caller frees), or (size_t)-1 when out of memory. */
size_t cmt_alloc_history_rest(const cmt_alloc_history *h, int32_t dev, const unsigned char *chosen,
                              size_t points, struct cmt_alloc_history_point **out);

/* The bytes allocated at moment seq on dev by stack, as a tree of stack frames from the
 * outermost caller (the stacks' own trie: a node is a STACK_NODE id): node 0 is the root (all
 * of them), a block without a stack counts under node 0 itself. */
struct cmt_alloc_tree_node {
    uint32_t node;   /* STACK_NODE id, 0 for the root */
    long parent;     /* index of the parent in the tree, -1 for the root */
    uint64_t bytes;  /* blocks whose stack passes through this frame */
    uint64_t blocks; /* how many */
};
/* At most max nodes, the largest (a parent always before its children: its bytes are at least
 * theirs); nodes[0] is the root. @return how many in *out (malloc'ed), or (size_t)-1. */
size_t cmt_alloc_history_tree(const cmt_alloc_history *h, const cmt_reader *r, int32_t dev,
                              uint64_t seq, size_t max, struct cmt_alloc_tree_node **out);

#endif
