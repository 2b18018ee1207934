/* snapshot.h — a PyTorch memory snapshot read into plain C structures.
 *
 * A snapshot is what `torch.cuda.memory._dump_snapshot()` (or `pickle.dump(
 * torch.cuda.memory._snapshot())`, or `pickle.dump(torch.cuda.memory_snapshot())`) writes: a
 * pickle of dicts and lists (see ../shared/notes/pytorch-snapshots.md and docs/snapshots.md).
 * The forms are recognised by content, not by version number:
 *   - 2.1 onward: a dict with `segments`, `device_traces` (one list of trace entries per
 *     device), and from 2.2 or so `allocator_settings` and `external_annotations`;
 *   - 2.0: the same dict, or only segments, whose blocks carry a `history` list of
 *     `{addr, real_size, frames}` instead of `frames` (and may lack `address`);
 *   - a bare list of segment dicts (`torch.cuda.memory_snapshot()`).
 * Trace entries may lack `time_us` (early 2.x); the trace is a ring of the last entries, so a
 * free whose alloc fell out of it is normal (cmt_snapshot_to_trace rebuilds the state before
 * the window from the segments). Unknown keys are ignored; unknown trace actions are skipped
 * and counted.
 *
 * Everything the snapshot keeps is its own (strings are copied and interned), so the input
 * buffer may go once cmt_snapshot_parse returns. Frames are interned by content and frame
 * lists by the pickle node they were read from, which is how PyTorch's pickle shares them. */
#ifndef CMT_SNAPSHOT_H
#define CMT_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "pickle.h"

/* Trace-entry actions, with PyTorch's names. FREE is the older viewers' name of a completed
 * free. */
#define CMT_SNAPSHOT_ACTIONS(X)         \
    X(ALLOC, "alloc")                   \
    X(FREE_REQUESTED, "free_requested") \
    X(FREE_COMPLETED, "free_completed") \
    X(SEGMENT_ALLOC, "segment_alloc")   \
    X(SEGMENT_FREE, "segment_free")     \
    X(SEGMENT_MAP, "segment_map")       \
    X(SEGMENT_UNMAP, "segment_unmap")   \
    X(SNAPSHOT, "snapshot")             \
    X(OOM, "oom")                       \
    X(FREE, "free")

enum cmt_snapshot_action {
#define CMT__SNAP_ACTION_ENUM(name, text) CMT_SNAPSHOT_##name,
    CMT_SNAPSHOT_ACTIONS(CMT__SNAP_ACTION_ENUM)
#undef CMT__SNAP_ACTION_ENUM
        CMT_SNAPSHOT_ACTION_COUNT
};

/* Block states. PENDING_FREE is `active_pending_free` (the docs' `active_awaiting_free`). */
enum cmt_snapshot_block_state {
    CMT_SNAPSHOT_INACTIVE,
    CMT_SNAPSHOT_ACTIVE_ALLOCATED,
    CMT_SNAPSHOT_ACTIVE_PENDING_FREE,
};

/* Which parts the file had (cmt_snapshot.flags). */
#define CMT_SNAPSHOT_BARE_LIST 0x01u /* top level is a list of segments */
#define CMT_SNAPSHOT_TRACES 0x02u    /* has device_traces */
#define CMT_SNAPSHOT_HISTORY 0x04u   /* blocks carry 2.0 `history` lists */
#define CMT_SNAPSHOT_SETTINGS 0x08u  /* has allocator_settings */
#define CMT_SNAPSHOT_NO_TIME 0x10u   /* some trace entry lacks time_us */

struct cmt_snapshot_frame {
    const char *name, *file; /* interned, NUL-terminated */
    uint32_t line;
};

/* A frame list: frame_ids[first .. first+count-1], innermost frame first (PyTorch's order).
 * Stack 0 is the empty stack. */
struct cmt_snapshot_stack {
    uint32_t first, count;
};

struct cmt_snapshot_block {
    uint64_t addr, size, requested;
    uint32_t state; /* enum cmt_snapshot_block_state */
    uint32_t stack; /* its allocation's frames (2.0: the last history entry's), 0 = none */
};

struct cmt_snapshot_segment {
    int32_t dev;
    uint8_t small;      /* segment_type "small" */
    uint8_t expandable; /* is_expandable */
    uint64_t addr, total_size, allocated_size, active_size, requested_size, stream;
    int64_t pool_id[2];            /* segment_pool_id, (0, 0) when absent */
    uint32_t stack;                /* frames of the segment's allocation */
    uint32_t first_block, nblocks; /* blocks[first_block ..], in address order */
};

struct cmt_snapshot_entry {
    uint32_t action; /* enum cmt_snapshot_action */
    int32_t dev;
    uint8_t has_time;
    uint64_t addr; /* 0 for oom */
    uint64_t size, stream;
    uint64_t time_us;     /* when has_time */
    uint64_t device_free; /* oom only */
    uint32_t stack;
};

/* allocator_settings. Absent fields keep PyTorch's defaults (max_split_size -1: unlimited). */
struct cmt_snapshot_settings {
    const char *conf; /* PYTORCH_CUDA_ALLOC_CONF as recorded; NULL when absent */
    int64_t max_split_size;
    double garbage_collection_threshold;
    uint8_t expandable_segments, release_lock_on_cudamalloc;
    /* roundup_power2_divisions per bucket: bucket k covers requests from 2^k MiB (k < 15),
     * the last everything above; 0 = no rounding */
    uint32_t roundup_power2_divisions[16];
};

#define CMT_SNAPSHOT_ROUNDUP_BUCKETS 16

/* external_annotations (record_function ranges, e.g. "Optimizer.step#AdamW.step"): the
 * START and END of each, in file order. */
struct cmt_snapshot_annotation {
    const char *name; /* interned */
    int start;        /* 1 START, 0 END */
    int32_t dev;      /* -1 when absent */
    int has_time;
    uint64_t time_us;
};

struct cmt_snapshot {
    uint32_t flags; /* CMT_SNAPSHOT_* */
    int protocol;   /* the pickle's */
    struct cmt_snapshot_segment *segments;
    size_t nsegments;
    struct cmt_snapshot_block *blocks;
    size_t nblocks;
    /* trace entries of every device, device by device, each device's in its file order */
    struct cmt_snapshot_entry *entries;
    size_t nentries;
    uint64_t skipped_entries; /* entries whose action is not in CMT_SNAPSHOT_ACTIONS */
    /* devices: 1 + the highest ordinal named by a segment or device_traces' length */
    uint32_t ndevices;
    struct cmt_snapshot_frame *frames;
    size_t nframes;
    uint32_t *frame_ids;
    size_t nframe_ids;
    struct cmt_snapshot_stack *stacks; /* stacks[0] is the empty stack */
    size_t nstacks;
    struct cmt_snapshot_settings settings;
    struct cmt_snapshot_annotation *annotations;
    size_t nannotations;
    struct cmt__snapshot_strings *strings; /* the parser's string pool */
};

/* @return 1 when the bytes start like a pickle of protocol 2 to 5 (0x80, then 2..5): the test
 * the CLI applies before calling a file a snapshot rather than a trace. */
int cmt_snapshot_sniff(const void *data, size_t len);

/* Parses a snapshot from data[0 .. len-1] into *snap (zeroed first). `err` may be NULL.
 * @return 0; a CMT_EPICKLE_* code when the pickle does not decode; CMT_ESNAPSHOT_FORM when it
 * holds something other than a snapshot; CMT_ESNAPSHOT_FIELD when a field has the wrong type
 * or an impossible value; CMT_ENOMEM. On failure *snap holds nothing to free and err's text is
 * one line naming the place (under 256 bytes: "device_traces[0][12].size: a str where a
 * non-negative int belongs", "pickle byte 4096: opcode 0x63 (GLOBAL) would import ..."). */
int cmt_snapshot_parse(struct cmt_snapshot *snap, const void *data, size_t len,
                       struct cmt_err *err);

/* Frees what cmt_snapshot_parse filled in and zeroes it. */
void cmt_snapshot_free(struct cmt_snapshot *snap);

/* @return PyTorch's name of an action ("alloc", ...), NULL when out of range. */
const char *cmt_snapshot_action_name(uint32_t action);

/* The frame ids of a stack (innermost first); *count receives their number.
 * @return NULL (count 0) for stack 0 or an unknown stack. */
const uint32_t *cmt_snapshot_stack_frames(const struct cmt_snapshot *snap, uint32_t stack,
                                          uint32_t *count);

#endif
