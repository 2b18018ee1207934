/* snapshot_trace.h — a PyTorch memory snapshot written as a cumemtrace trace.
 *
 * The trace holds no driver events (a snapshot has none); it holds the allocator-level
 * records of trace format 3.1 (docs/trace-format.md), in this order:
 *   PROCESS   pid 0, exe "pytorch-snapshot:<name>", start = the first entry's time_us
 *   ALLOCATOR id 1, "pytorch-cuda-caching", version "" (a snapshot does not say), conf = the
 *             recorded PYTORCH_CUDA_ALLOC_CONF, or one rebuilt from allocator_settings
 *             (max_split_size, roundup_power2_divisions, garbage_collection_threshold,
 *             expandable_segments) when that is absent, "" when the file has no settings
 *   DEVICE    one per device ordinal below cmt_snapshot.ndevices (name "cuda:N", sizes 0:
 *             unknown)
 *   ALLOC_EVENT, first the state before the recorded window, flagged CMT_AFLAG_BEFORE at
 *             t 0: segments that exist at dump time or are freed in the window without being
 *             allocated in it (expandable ones as segment_map of their mapped bytes), then
 *             blocks freed in the window without an alloc in it and blocks active at dump
 *             time that the window did not allocate; then one event per trace entry, in
 *             order (devices merged by time_us when every entry has one, else device by
 *             device). t_ns = time_us - the first time_us, in ns, kept monotonic; an entry
 *             without time_us gets the previous t + 1 us.
 *   STRING, STACK_NODE, SYMBOL for every frame list an event uses, before that event: a trie
 *             from the outermost frame, synthetic ips (node id x 16), SYMBOL function = the
 *             frame's name, file = its filename (0 for PyTorch's "??"), line
 *   END       t = the last event's
 * Sizes: PyTorch's trace entries carry requested bytes. An alloc's `size` (the block's
 * rounded bytes) is the block's size in the dump-time segments when that allocation is still
 * live there, otherwise round_size(requested) under the recorded settings (tools/model);
 * a free carries its alloc's size. oom events carry the allocator's allocated and reserved
 * bytes as the events so far add up (allocated drops at free_requested, as PyTorch's
 * allocated_bytes does). */
#ifndef CMT_SNAPSHOT_TRACE_H
#define CMT_SNAPSHOT_TRACE_H

#include "snapshot.h"
#include "writer.h"

#define CMT_SNAPSHOT_ALLOCATOR_ID 1
#define CMT_SNAPSHOT_ALLOCATOR_NAME "pytorch-cuda-caching"

struct cmt_snapshot_trace_stats {
    uint64_t events;          /* ALLOC_EVENT records written */
    uint64_t before_segments; /* ... of them, segments flagged before */
    uint64_t before_blocks;   /* ... blocks flagged before */
    uint64_t stack_nodes;     /* STACK_NODE records */
};

/* Writes `snap` through `w` (created by the caller, which flushes and destroys it). `name`
 * is the snapshot's file name for the PROCESS record. `stats` may be NULL.
 * @return 0; CMT_ENOMEM; a writer error (CMT_ESINK, CMT_ECOMPRESS). */
int cmt_snapshot_to_trace(const struct cmt_snapshot *snap, cmt_writer *w, const char *name,
                          struct cmt_snapshot_trace_stats *stats);

/* Parses the snapshot in data[0 .. len-1] and writes it as a whole trace (header, records,
 * flush) to `sink`. `err` (may be NULL) says what was wrong with the snapshot ("" when the
 * snapshot was sound and writing failed).
 * @return 0; what cmt_snapshot_parse or cmt_snapshot_to_trace returns. */
int cmt_snapshot_import(const void *data, size_t len, const char *name, cmt_sink_fn sink, void *ctx,
                        struct cmt_err *err, struct cmt_snapshot_trace_stats *stats);

#endif
