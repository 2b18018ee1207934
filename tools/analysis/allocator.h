/* allocator.h — the allocator-level view: what a sub-allocator (PyTorch's caching allocator, a
 * pool, an arena) did inside the memory it got from the driver, rebuilt from the trace's
 * ALLOCATOR and ALLOC_EVENT records (docs/trace-format.md, "Allocator-level records").
 *
 * The state is kept per allocator and device: its segments (address, size, stream, pool,
 * expandable, mapped bytes), the blocks handed out inside them (address, size, requested,
 * state), and PyTorch's figures: allocated bytes (blocks the program holds), active bytes
 * (also those freed while a stream may still use them), reserved bytes (segments), inactive
 * split bytes (free ranges inside segments that hold a live block: they cannot be given back),
 * with their peaks, the segment count, the largest free block and the settings (the last
 * ALLOCATOR record's conf). As in PyTorch's memory_stats(), an expandable segment is not
 * counted among the segments (its mapped pages are reserved bytes; each is one contiguous mapped
 * range, as c10 reports them: a map joins the ranges it touches, an unmap may split one), and
 * requested bytes, like
 * active ones, drop when a free completes. It works on traces from the shim (allocator events interleaved with
 * the driver's) and on traces converted from PyTorch snapshots: segments and blocks flagged
 * CMT_AFLAG_BEFORE are the state the window starts from; a free of a block never seen is
 * counted (unknown_frees) and otherwise ignored. docs/analysis.md gives the rules.
 *
 * Free blocks are not recorded: they are the gaps between live blocks inside a segment (as
 * PyTorch merges a freed block with its free neighbours, each gap is one cached block). */
#ifndef CMT_ALLOCATOR_H
#define CMT_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "replay.h"

struct cmt__map;

enum cmt_block_state {
    CMT_BLOCK_ACTIVE,       /* held by the program (PyTorch: active_allocated) */
    CMT_BLOCK_PENDING_FREE, /* freed, a stream may still use it (active_pending_free) */
};

struct cmt_alloc_segment {
    uint64_t addr, size; /* size: the bytes it reserves (for an expandable one: mapped) */
    uint64_t stream, pool, mapped_bytes;
    int expandable, before, small;
    uint32_t stack;
    uint32_t id;                     /* this device's segments are numbered from 1 */
    uint64_t live_bytes, live_count; /* blocks inside it (active or pending free) */
};

struct cmt_alloc_block {
    uint64_t addr, size, requested, segment; /* segment: its segment's address, or 0 */
    int state, before;                       /* enum cmt_block_state; CMT_AFLAG_BEFORE */
    uint32_t stack;
};

/* The figures of one allocator on one device (bytes). */
struct cmt_alloc_figures {
    uint64_t allocated_bytes, active_bytes, requested_bytes, reserved_bytes;
    uint64_t inactive_split_bytes; /* free bytes inside segments holding a live block */
    uint64_t segments, blocks;
};

/* One allocator on one device. */
struct cmt_alloc_device {
    uint32_t allocator; /* ALLOCATOR id */
    int32_t dev;
    struct cmt_alloc_figures now, peak; /* peak: each figure's own maximum */
    uint64_t peak_allocated_t_ns, peak_reserved_t_ns;
    /* segments, sorted by address; live blocks (cmt_alloc_blocks lists them) */
    struct cmt_alloc_segment *segments;
    size_t segment_count, segment_cap;
    size_t block_count;
    struct cmt__map *block_map; /* internal: by address */
    uint32_t next_segment_id;   /* internal */
    uint64_t *unplaced;         /* internal: blocks recorded before any segment held them */
    size_t unplaced_count, unplaced_cap;
    uint64_t alloc_events, free_events, segment_allocs, segment_frees, ooms;
    uint64_t unknown_frees;  /* frees of blocks never seen (a ring-limited snapshot) */
    uint64_t outside_blocks; /* blocks in no known segment */
    uint64_t last_t_ns;
    /* internal: the peaks before a before-block's alloc, restored when its free request
     * follows (a block pending free before the window never counted as allocated) */
    struct cmt_alloc_figures before_peak;
    uint64_t before_peak_t_ns[2], before_addr;
};

typedef struct cmt_alloc cmt_alloc;

/* @return 0 or CMT_ENOMEM. */
int cmt_alloc_create(cmt_alloc **out);
void cmt_alloc_destroy(cmt_alloc *a);

/* Feeds one replay step (only ALLOCATOR and ALLOC_EVENT records change anything).
 * @return 0, or CMT_ENOMEM (the state misses that event). */
int cmt_alloc_observe(cmt_alloc *a, const struct cmt_replay_step *st);
/* The view as a replay observer (records only). Place it before the observers that query it:
 * they are then shown each step with the allocator state already updated. */
struct cmt_observer cmt_alloc_observer(cmt_alloc *a);

/* @return whether any ALLOCATOR or ALLOC_EVENT record was seen. */
int cmt_alloc_present(const cmt_alloc *a);

/* The (allocator, device) states, in order of first appearance. */
size_t cmt_alloc_device_count(const cmt_alloc *a);
const struct cmt_alloc_device *cmt_alloc_device_at(const cmt_alloc *a, size_t i);
/* @return the state of `allocator` on dev, or NULL. allocator 0: the first one seen on dev. */
const struct cmt_alloc_device *cmt_alloc_device(const cmt_alloc *a, uint32_t allocator,
                                                int32_t dev);
/* The live blocks of d sorted by address, in a malloc'ed array (*out, NULL when none) the caller
 * frees. @return how many, or (size_t)-1 when out of memory. */
size_t cmt_alloc_blocks(const struct cmt_alloc_device *d, struct cmt_alloc_block **out);

/* @return 1 when a segment of an allocator on dev holds address addr (an expandable segment,
 * whose reservation may be larger than what is mapped: also at its base), else 0. */
int cmt_alloc_holds(const cmt_alloc *a, int32_t dev, uint64_t addr);

/* The figures of every allocator on dev summed (all zero when none). */
struct cmt_alloc_figures cmt_alloc_device_figures(const cmt_alloc *a, int32_t dev);

/* The allocator figures of a whole trace, for a headline or a row: the device whose allocated
 * peak (every allocator on it summed) is the largest, with its allocated and reserved peaks and
 * when allocated peaked; the bytes allocated and reserved at the end over every device; the
 * allocator's block and segment actions. */
struct cmt_alloc_summary {
    int32_t dev;      /* the device the peaks are of */
    uint32_t devices; /* devices with allocator state */
    uint64_t peak_allocated_bytes, peak_reserved_bytes;
    uint64_t peak_allocated_t_ns, peak_reserved_t_ns; /* when each peak was reached (the latest
                                                       * of the device's allocators) */
    uint64_t allocated_bytes_at_end, reserved_bytes_at_end, events;
};
/* @return 0 when a has no allocator state (*out zeroed), else 1. */
int cmt_alloc_summarize(const cmt_alloc *a, struct cmt_alloc_summary *out);

/* An allocator's declaration, as its ALLOCATOR records say. */
struct cmt_alloc_settings {
    uint32_t id;
    int32_t dev;
    const char *name, *version, *conf; /* the last record's (strings live with the reader) */
    uint32_t changes;                  /* how many ALLOCATOR records declared it */
};
size_t cmt_alloc_settings_count(const cmt_alloc *a);
const struct cmt_alloc_settings *cmt_alloc_settings_at(const cmt_alloc *a, size_t i);
/* @return the settings of allocator id, or NULL when it was never declared. */
const struct cmt_alloc_settings *cmt_alloc_settings(const cmt_alloc *a, uint32_t id);

/* max_split_size_mb of a PYTORCH_CUDA_ALLOC_CONF string, in bytes. @return 0 when it is not set
 * (PyTorch's default: unlimited) or conf is NULL. */
uint64_t cmt_alloc_conf_max_split(const char *conf);
/* max_non_split_rounding_mb of a conf, in bytes. @return PyTorch's default, 20 MiB, when it is
 * not set. */
uint64_t cmt_alloc_conf_non_split_rounding(const char *conf);

/* A cached (free) block: a gap between live blocks of a segment. */
struct cmt_alloc_free_block {
    uint64_t addr, size, segment, segment_size, stream;
    int split;    /* its segment holds a live block: it is a split block, it cannot be freed */
    int oversize; /* size >= max_split_size (only with max_split_size_mb set) */
};

#define CMT_ALLOC_FREE_BLOCKS 8 /* largest cached blocks kept in a view */
#define CMT_ALLOC_HOLDERS 10    /* allocation sites kept in a view */
#define CMT_ALLOC_CANDIDATES 64 /* largest stacks kept, grouped into holders at the end */

struct cmt_alloc_holder {
    uint32_t stack; /* a stack of the group (the largest member's) */
    uint32_t node;  /* the frame the site is named by: its first Python frame, else its call
                       site (frames.h) */
    uint64_t bytes, count;
};

/* The allocator's state on one device at one moment (an out-of-memory failure), for oom. */
struct cmt_alloc_view {
    uint32_t allocator;
    int32_t dev;
    const char *name, *conf;
    uint64_t request_bytes; /* the allocator's rounded request (0: not known) */
    struct cmt_alloc_figures fig;
    uint64_t unallocated_bytes; /* reserved - allocated */
    int have_recorded;          /* the allocator's own figures came with its OOM event */
    uint64_t recorded_allocated, recorded_reserved;
    uint64_t largest_free_block; /* 0 when none */
    uint64_t max_split_size;     /* from conf, 0 unlimited */
    /* cached blocks PyTorch's best fit may hand out for the request (any stream): at least its
     * size, in the pool of its size (small: <= 1 MiB, when segments say their pool), and under
     * max_split_size a block below it, at or above it one below request + max_non_split_rounding */
    uint64_t servable_blocks;
    uint64_t non_split_rounding; /* from conf (20 MiB by default) */
    int pools_known;             /* a segment is flagged small: pools are told apart */
    int expandable; /* expandable segments: a segment of dev is one, or conf turns them on */
    uint64_t free_block_count, split_free_bytes, split_free_count;
    uint64_t oversize_free_bytes, oversize_free_count;
    struct cmt_alloc_free_block free_blocks[CMT_ALLOC_FREE_BLOCKS]; /* largest first */
    uint32_t free_shown;
    /* device memory of this process outside the allocator: driver-level live bytes minus
     * reserved bytes (NCCL, cuBLAS workspaces, other libraries), and its driver call sites */
    uint64_t driver_live_bytes, outside_bytes;
    struct cmt_alloc_holder outside[CMT_ALLOC_HOLDERS];
    uint32_t outside_count;
    /* live blocks by allocation site, largest first (grouped by cmt_alloc_view_group) */
    struct cmt_alloc_holder holders[CMT_ALLOC_HOLDERS];
    uint32_t holder_count;
    /* internal: candidates until grouped */
    struct cmt_alloc_holder cand[CMT_ALLOC_CANDIDATES], outside_cand[CMT_ALLOC_CANDIDATES];
    uint32_t cand_count, outside_cand_count;
};

/* Measures allocator `allocator` (0: the first on dev) on dev now, with the driver-level state
 * of rp (the objects outside its segments). request_bytes is kept in the view.
 * @return 0, or CMT_ENOT_FOUND when that allocator has no state on dev. */
int cmt_alloc_view(const cmt_alloc *a, const cmt_replay *rp, uint32_t allocator, int32_t dev,
                   uint64_t request_bytes, struct cmt_alloc_view *out);
/* Groups the view's holders and outside sites by the frame they are named by, once the
 * symbols are known (after the replay). */
void cmt_alloc_view_group(const cmt_reader *r, struct cmt_alloc_view *v);
/* The frame an allocation stack is named by: its first frame, from the leaf, whose source
 * file ends in ".py"; else its call site (cmt_call_site_node). @return 0 when none. */
uint32_t cmt_alloc_site_node(const cmt_reader *r, uint32_t stack);

#endif
