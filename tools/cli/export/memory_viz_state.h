/* memory_viz_state.h — internal to export/: the memory-viz export's entries and the
 * allocator's state at the end (its live segments and blocks), rebuilt from the allocator's
 * own actions while the replay streams them, in memory bounded by what is live rather than by
 * the number of actions (memory_viz_state.c). */
#ifndef CMT__MEMORY_VIZ_STATE_H
#define CMT__MEMORY_VIZ_STATE_H

#include <stddef.h>
#include <stdint.h>

/* ACT_ALLOCATOR: an ALLOC_EVENT record, action `aa` (enum cmt_alloc_action) */
enum { CMT__MEMVIZ_ALLOC, CMT__MEMVIZ_FREE, CMT__MEMVIZ_OOM, CMT__MEMVIZ_ALLOCATOR };

struct cmt__memviz_entry {
    uint64_t addr, size, stream, t_ns, device_free;
    uint64_t requested, pool; /* ACT_ALLOCATOR */
    uint32_t stack, flags;
    int32_t dev;
    uint8_t action, aa;
    uint8_t shown; /* the trace entry's action string (export_memory_viz.c's S_*) */
};

/* The allocator's segment, block and map actions that can still matter at the end, in file
 * order. */
struct cmt__memviz_actions {
    struct cmt__memviz_entry *e;
    size_t count, cap, settled; /* settled: count after the last compaction */
};

/* Keeps e (an allocator action: segment alloc/free/map/unmap or block alloc/free) for the end
 * state; when the kept actions have doubled since the last compaction, drops those that no
 * longer change it (a freed block's, a freed segment's; maps and unmaps become the mapped
 * ranges), so memory follows what is live. @return 0, or -1 when out of memory. */
int cmt__memviz_actions_add(struct cmt__memviz_actions *a, const struct cmt__memviz_entry *e);
void cmt__memviz_actions_free(struct cmt__memviz_actions *a);
/* @return whether action aa (enum cmt_alloc_action) is one the end state needs. */
int cmt__memviz_state_action(unsigned aa);
/* @return whether aa is a block's action (alloc, free requested, free completed). */
int cmt__memviz_block_action(unsigned aa);

struct cmt__memviz_block {
    const struct cmt__memviz_entry *e; /* its ALLOC */
    int pending;                       /* free requested, not completed */
};

struct cmt__memviz_segment {
    const struct cmt__memviz_entry *e; /* its SEGMENT_ALLOC or first SEGMENT_MAP */
    int32_t dev;
    uint64_t addr, size;
};

/* The live segments (sorted by device and address; an expandable segment: each contiguous
 * mapped range of one stream) and live blocks (likewise sorted) the actions leave. */
struct cmt__memviz_state {
    struct cmt__memviz_segment *segs;
    struct cmt__memviz_block *blocks;
    size_t nsegs, nblocks;
};
/* @return 0, or -1 when out of memory (cmt__memviz_state_free in either case). The state
 * points into a's entries. */
int cmt__memviz_state(struct cmt__memviz_state *s, const struct cmt__memviz_actions *a);
void cmt__memviz_state_free(struct cmt__memviz_state *s);

#endif
