/* whatif_blocks.h — whatif's tensor stream from allocator-level records, and the model's
 * check of itself against the run.
 *
 * With allocator-level records (ALLOC_EVENT, docs/trace-format.md) an ordinary run (caching
 * on) or a converted PyTorch snapshot holds the tensor-level stream itself: each `alloc` is a
 * tensor of `requested` bytes on its stream, its `free_requested` (or a `free_completed`
 * without one) its free, each `oom` a request that failed (replayed like the others). Blocks
 * flagged CMT_AFLAG_BEFORE (a ring-limited snapshot's initial state) are tensors allocated at
 * the start. The collector is a replay observer, as cmt_whatif_collector is for driver events;
 * it fills the same struct cmt_whatif_stream, so the sweep (cmt_whatif_run) is unchanged.
 *
 * The self-check replays the stream once with the settings the run used (the ALLOCATOR
 * record's conf) and compares the segments the model asks the device for with the
 * `segment_alloc` events the allocator recorded: in order, a segment agrees when it has the
 * same size and is made for the same request; and the segments it gives back with the
 * recorded `segment_free` events, the same way. */
#ifndef CMT_WHATIF_BLOCKS_H
#define CMT_WHATIF_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "whatif.h"

#define CMT_WHATIF_CHECK_DIFFS 16 /* disagreements kept */

/* A segment allocation, recorded or modelled. */
struct cmt_whatif_segment {
    uint64_t size;
    size_t request; /* index in the stream of the allocation it was made for */
};

/* One disagreement: the index-th segment allocation (or free) differs (size 0: there is
 * none). */
struct cmt_whatif_check_diff {
    size_t index;
    bool is_free; /* a segment free (cudaFree), not an allocation */
    struct cmt_whatif_segment recorded, model;
    uint64_t request_bytes; /* the recorded segment's request (or the model's) */
    uint64_t t_ns;          /* of that request */
    uint32_t site;          /* its call site (stream sites) */
};

struct cmt_whatif_selfcheck {
    bool present;             /* the stream came from allocator-level records */
    bool ran;                 /* cmt_whatif_selfcheck_run replayed it */
    char conf[256];           /* the settings the run used ("" = PyTorch's defaults) */
    char error[256];          /* why the conf could not be replayed ("" when it could) */
    bool expandable;          /* the run used expandable segments: segments are not compared */
    uint64_t before_segments; /* segments that predate the window: not compared */
    /* The state at the window's start (a ring-limited snapshot's): its segments, and the
     * blocks held in them, are rebuilt in c10's own layout under the run's settings (each
     * segment carved in address order into its blocks and free gaps), exactly unless
     * before_inexact counts blocks or gaps that could not be placed so (outside the held
     * segments, overlapping, a gap no free block can be, or sizes the settings round to
     * other blocks). Expandable segments are
     * rebuilt as tensors placed where the model puts them (not counted here). */
    uint64_t before_blocks, before_inexact;
    size_t prelude_events; /* stream events that rebuild that state (their segments are the
                                 model's, not compared) */
    uint64_t recorded_segments, model_segments, agreeing;
    /* segment frees (cudaFree of a whole segment: empty_cache(), an OOM retry, garbage
     * collection), compared as the allocations are, those of the same request by size */
    uint64_t recorded_frees, model_frees, agreeing_frees;
    uint64_t recorded_ooms, model_ooms;
    uint64_t recorded_peak_reserved, model_peak_reserved;
    uint64_t recorded_end_reserved, model_end_reserved; /* at the end (a snapshot's dump) */
    /* 0, or the most the allocator could reserve, as the run's out-of-memory retries prove
     * (releases, then a new segment for the request they were made for: its first device
     * allocation had failed) and its out-of-memory failures (what it held then and the
     * request's segment did not fit); the replay's capacity is at most this */
    uint64_t capacity_bound;
    bool capacity_bounded; /* the replay ran with capacity_bound (below the capacity given) */
    struct cmt_whatif_check_diff diffs[CMT_WHATIF_CHECK_DIFFS];
    size_t diff_count; /* kept; disagreements = recorded/model segments - agreeing */
    /* the recorded segment allocations and frees, in order */
    struct cmt_whatif_segment *recorded, *recorded_free;
    size_t recorded_cap, recorded_free_cap;
};

struct cmt_whatif_block_collector;

/* A collector over an (uninitialised) stream and check; add cmt_whatif_block_observer(c) to the
 * observers of cmt_replay_run, then call cmt_whatif_block_collector_end with the run's result.
 * @return (create) 0, CMT_EINVALID, CMT_EMODEL_NOMEM;
 *         (end) 0; CMT_ENOT_FOUND when the trace has no allocator-level block events (use the
 *         driver-level stream); CMT_EWHATIF_EMPTY; CMT_EMODEL_NOMEM, with a one-line reason in
 *         *err (may be NULL; CMT_ENOT_FOUND carries its code alone). The stream is freed on error; the check is kept until
 *         cmt_whatif_selfcheck_free. */
int cmt_whatif_block_collector_create(struct cmt_whatif_block_collector **out,
                                      struct cmt_whatif_stream *stream,
                                      struct cmt_whatif_selfcheck *check);
struct cmt_observer cmt_whatif_block_observer(struct cmt_whatif_block_collector *c);
int cmt_whatif_block_collector_end(struct cmt_whatif_block_collector *c, int replay_rc,
                                   struct cmt_err *err);
void cmt_whatif_block_collector_destroy(struct cmt_whatif_block_collector *c);

/* The same in one call over an open reader (rewound first, and after).
 * @return as cmt_whatif_block_collector_end. */
int cmt_whatif_blocks_load(cmt_reader *reader, struct cmt_whatif_stream *stream,
                           struct cmt_whatif_selfcheck *check, struct cmt_err *err);

/* One pass for `whatif`: the stream from allocator-level records when the trace has them
 * (check->present), else the driver-level stream (as cmt_whatif_stream_load). The allocator's
 * stream takes the PyTorch version from the first ALLOCATOR record that gives one (`record
 * --torch` writes torch.__version__ there; torch_version_source "the ALLOCATOR record"), else
 * the trace's (whatif.h). @return 0, or the error of the stream used (err says why). */
int cmt_whatif_load_any(cmt_reader *reader, struct cmt_whatif_stream *stream,
                        struct cmt_whatif_selfcheck *check, struct cmt_err *err);

/* The same with more observers (at most 6) run in the same pass before the streams' own (a
 * progress line, say). @return as cmt_whatif_load_any; CMT_EINVALID for too many. */
int cmt_whatif_load_any_observed(cmt_reader *reader, struct cmt_whatif_stream *stream,
                                 struct cmt_whatif_selfcheck *check, struct cmt_observer *extra,
                                 size_t extra_count, struct cmt_err *err);

/* Replays the stream with check->conf against a device that lets the allocator reserve
 * `capacity` of `device_total` bytes, past out-of-memory failures (the program may go on), and
 * fills the comparison. @return 0; CMT_EMODEL_PARSE (check->error says why); CMT_EINVALID;
 * CMT_EMODEL_NOMEM. */
int cmt_whatif_selfcheck_run(const struct cmt_whatif_stream *stream, uint64_t capacity,
                             uint64_t device_total, struct cmt_whatif_selfcheck *check);

void cmt_whatif_selfcheck_free(struct cmt_whatif_selfcheck *check);

#endif
