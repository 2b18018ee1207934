/*
 * caching_model.h — a model of PyTorch's CUDA caching allocator.
 *
 * The model replays a tensor-level stream of allocations and frees (what a
 * program asks of torch.cuda) through the same algorithm PyTorch's native
 * allocator (c10/cuda/CUDACachingAllocator.cpp, ~2.0 to late-2025 main) runs,
 * against a simulated device that can hold `capacity` bytes. It answers "does
 * this setting of PYTORCH_CUDA_ALLOC_CONF avoid the OOM, and what would the
 * memory stats be".
 *
 * Modelled: round_size (incl. roundup_power2_divisions), small (<= 1 MiB) and
 * large pools, segment sizes (2 MiB / 20 MiB / round up to 2 MiB), best fit by
 * (stream, size, address), the max_split_size refusal and split rules,
 * merging, the OOM path (cudaMalloc -> release_available_cached_blocks ->
 * cudaMalloc -> release_cached_blocks -> cudaMalloc (a retry) -> OOM),
 * garbage_collection_threshold with a memory fraction cap, expandable
 * segments, empty_cache, and PyTorch's statistics. Not modelled: CUDA graph
 * private pools, record_stream/event-deferred frees (so active == allocated),
 * free-memory callbacks, IPC, other devices. release_available_cached_blocks
 * passes over expandable-segment blocks, as PyTorch 2.x does (checked against
 * c10 2.6 by tests/oracle).
 *
 * Not thread-safe: one model per thread. No CUDA headers are needed.
 */
#ifndef CMT_CACHING_MODEL_H
#define CMT_CACHING_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model_settings.h"
#include "cmt_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CMT_MODEL_MIB ((uint64_t)1 << 20)
#define CMT_MODEL_GIB ((uint64_t)1 << 30)
/* Device page granularity; expandable segments map 1 (small pool) or 10
 * (large pool) such pages at a time. */
#define CMT_MODEL_PAGE_SIZE (2 * CMT_MODEL_MIB)
/* c10's size intervals for roundup_power2_divisions: 1 MiB up to 64 GiB. */
#define CMT_MODEL_ROUNDUP_INTERVALS 16

/* Errors are CMT_E* codes from the one list in cmt_error.h (cmt_strerror): CMT_EINVALID and the
 * CMT_EMODEL_* codes. */

/* Where the model's device allocations lie: a modelling choice, since PyTorch orders free
 * blocks of equal size by address and a real driver's address reuse is not documented. */
enum cmt_model_address_policy {
    /* Every segment (and expandable-segment reservation) lies above all earlier ones; what
     * simcuda does with SIMCUDA_REUSE_ADDRESSES=0. The default. */
    CMT_MODEL_ADDRESSES_NEVER_REUSE = 0,
    /* The lowest freed range that holds it, else above everything: simcuda's address space
     * (SIMCUDA_REUSE_ADDRESSES=1, its default). */
    CMT_MODEL_ADDRESSES_FIRST_FIT = 1,
    CMT_MODEL_ADDRESS_POLICY_COUNT
};

/* Settings of one replay. Start from cmt_model_config_default(). */
struct cmt_model_config {
    /* The PYTORCH_CUDA_ALLOC_CONF settings of CMT_MODEL_SETTINGS
   * (model_settings.h, which says what each one means): max_split_size,
   * expandable_segments, roundup_power2_divisions,
   * garbage_collection_threshold, max_non_split_rounding. */
    CMT_MODEL_SETTING_FIELDS
    /* roundup_power2_divisions per size interval, c10's list form
   * ("[256:1,512:2,1024:4,>:8]"): when roundup_power2_per_interval, interval k
   * holds the divisions for sizes in [2^(20+k), 2^(21+k)) (interval 0: below
   * 2 MiB, the last: 32 GiB and up) and roundup_power2_divisions is 0. The
   * parser stores a list whose intervals are all equal as the single value. */
    unsigned roundup_power2_intervals[CMT_MODEL_ROUNDUP_INTERVALS];
    bool roundup_power2_per_interval;
    /* torch.cuda.set_per_process_memory_fraction; 0: no cap. The cap is
   * fraction x device_total bytes. */
    double memory_fraction;
    /* Bytes the allocator can obtain from the device: a segment allocation of
   * s bytes fails when reserved + s > capacity. Required (> 0). */
    size_t capacity;
    /* Device memory reported as "total capacity" in the OOM message and used
   * to size expandable-segment reservations (1.125 x). 0: same as capacity.
   * device_total - capacity is what the driver and other processes hold. */
    size_t device_total;
    /* GPU index printed in the OOM message. */
    int device_index;
    /* Where device allocations lie (default: never reuse). */
    enum cmt_model_address_policy address_policy;
};

/**
 * The policy's name: "never-reuse" or "first-fit".
 * @return the name; NULL for a value outside the enum.
 */
const char *cmt_model_address_policy_name(enum cmt_model_address_policy policy);

/**
 * Read a policy's name (as cmt_model_address_policy_name writes it).
 * @return CMT_EOK and *out; CMT_EINVALID for another name or NULL arguments.
 */
int cmt_model_address_policy_parse(const char *name, enum cmt_model_address_policy *out);

/**
 * Fill *config with PyTorch's defaults (unlimited split size, 20 MiB
 * non-split rounding, no power-2 rounding, no GC, no fraction cap, no
 * expandable segments) and the given device capacity.
 * @return nothing; config must not be NULL.
 */
void cmt_model_config_default(struct cmt_model_config *config, size_t capacity);

/**
 * Apply a PYTORCH_CUDA_ALLOC_CONF string (e.g.
 * "max_split_size_mb:6144,expandable_segments:True") to *config. Only the
 * keys named are changed. The rules and the error texts are c10 2.6's
 * (CUDAAllocatorConfig::parseArgs): max_split_size_mb and
 * max_non_split_rounding_mb (> 20, "must be > 20"), roundup_power2_divisions
 * (a power of two, or the per-interval list "[256:1,512:2,1024:4,>:8]" as c10
 * reads it), garbage_collection_threshold (0 < t < 1), expandable_segments
 * (True/False), backend:native; numbers are read as std::stoi reads them
 * ("64MB" is 64); a trailing comma is accepted; unknown keys are refused
 * ("Unrecognized CachingAllocator option: KEY"). Accepted, checked as c10
 * checks them, and ignored (no effect on the model): release_lock_on_cudamalloc,
 * pinned_use_cuda_host_register, pinned_num_register_threads,
 * pinned_use_background_threads. Spaces are dropped, as c10's lexer does.
 * Texts of our own: a number std::stoi would throw on, a negative size, and
 * backend:cudaMallocAsync (not the caching allocator).
 * @return CMT_EOK; CMT_EMODEL_PARSE with a one-line reason in *err (which
 *         may be NULL) and *config unchanged; CMT_EINVALID for NULL config or
 *         conf, CMT_EMODEL_NOMEM (the code alone in *err).
 */
int cmt_model_config_parse(struct cmt_model_config *config, const char *conf, struct cmt_err *err);

/**
 * The allocator config string c10 2.6 parses, given the values of the
 * environment variables PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF (NULL:
 * unset). c10 2.6 reads PYTORCH_CUDA_ALLOC_CONF only (CUDAAllocatorConfig::
 * instance()); PYTORCH_ALLOC_CONF, which later PyTorch prefers, is ignored
 * (tests/oracle shows both).
 * @return cuda_alloc_conf (NULL when it is unset: the defaults).
 */
const char *cmt_model_config_env(const char *cuda_alloc_conf, const char *alloc_conf);

/**
 * Write the allocator settings of *config as a PYTORCH_CUDA_ALLOC_CONF
 * string, naming only settings that differ from the default, in the order
 * max_split_size_mb, max_non_split_rounding_mb, roundup_power2_divisions,
 * garbage_collection_threshold, expandable_segments. "" for all defaults.
 * capacity, device_total and memory_fraction are not part of that string.
 * @return the length of the full string (as snprintf; truncated output if it
 *         is >= len); CMT_EINVALID for NULL config, or for a split
 *         size or rounding that is not a whole number of MiB > 20 MiB.
 */
int cmt_model_config_format(const struct cmt_model_config *config, char *buf, size_t len);

/**
 * PyTorch's round_size(): the block size a request of `size` bytes uses.
 * @return the rounded size (512 for sizes below 512).
 */
size_t cmt_model_round_size(const struct cmt_model_config *config, size_t size);

/**
 * PyTorch's get_allocation_size(): the segment size cudaMalloc'd for a
 * rounded request under `config` (NULL: the defaults; no setting changes it
 * today, a setting that does is read here): <= 1 MiB -> 2 MiB; < 10 MiB ->
 * 20 MiB; else rounded up to a multiple of 2 MiB.
 * @return the segment size.
 */
size_t cmt_model_segment_size(const struct cmt_model_config *config, size_t rounded_size);

/* PyTorch's DeviceStats (aggregate pool), current values unless "peak". */
struct cmt_model_stats {
    uint64_t allocated_bytes;      /* sizes of allocated blocks */
    uint64_t reserved_bytes;       /* memory held from the device */
    uint64_t active_bytes;         /* = allocated (no record_stream here) */
    uint64_t inactive_split_bytes; /* free blocks inside split segments */
    uint64_t requested_bytes;      /* sizes the caller asked for */
    uint64_t allocation;           /* number of allocated blocks */
    uint64_t active;               /* number of active blocks */
    uint64_t inactive_split;       /* number of inactive split blocks */
    uint64_t segment;              /* cudaMalloc'd segments held */
    uint64_t num_alloc_retries;    /* cudaMalloc retried after releasing all */
    uint64_t num_ooms;             /* OOM errors raised */
    uint64_t oversize_allocations; /* allocated blocks >= max_split_size */
    uint64_t oversize_segments;    /* segments >= max_split_size */
    uint64_t peak_allocated;       /* peak of allocated_bytes */
    uint64_t peak_reserved;        /* peak of reserved_bytes */
    /* Device allocation attempts, failed ones included: one per segment
   * cudaMalloc, one per expandable-segment map (of one or more pages). */
    uint64_t device_alloc_calls;
    /* Device releases: one per segment cudaFree, one per expandable-segment
   * unmap (of one or more pages). */
    uint64_t device_free_calls;
    /* PyTorch's num_device_alloc: successful device allocations (segments, and maps of
   * expandable segments). num_device_free is device_free_calls. */
    uint64_t num_device_alloc;
};

/* What PyTorch puts in its OOM message, captured after the release paths. */
struct cmt_model_oom {
    uint64_t requested;  /* the caller's size */
    uint64_t rounded;    /* round_size(requested) */
    uint64_t alloc_size; /* segment size tried: PyTorch's "Tried to allocate" */
    uint64_t stream;
    uint64_t allocated;    /* allocated_bytes */
    uint64_t reserved;     /* reserved_bytes */
    uint64_t device_free;  /* capacity - reserved (cudaMemGetInfo's free) */
    uint64_t device_total; /* "total capacity" */
    uint64_t capacity;     /* what the allocator could have reserved */
    uint64_t allowed;      /* fraction cap in bytes; 0 without a cap */
    int device;
};

struct cmt_model;

/* An allocation: nonzero while live; 0 is the null allocation (size 0). */
typedef uint64_t cmt_model_handle;

/**
 * Create a model with the given settings (copied).
 * @return CMT_EOK and *out; CMT_EINVALID for NULL arguments,
 *         capacity 0, a threshold outside [0, 1), a fraction outside [0, 1];
 *         CMT_EMODEL_NOMEM.
 */
int cmt_model_create(const struct cmt_model_config *config, struct cmt_model **out);

/**
 * Destroy a model and everything it holds. NULL is allowed.
 */
void cmt_model_destroy(struct cmt_model *model);

/**
 * The settings the model runs with (max_split_size 0 reads back as
 * SIZE_MAX, device_total 0 as capacity).
 * @return a pointer valid until cmt_model_destroy.
 */
const struct cmt_model_config *cmt_model_get_config(const struct cmt_model *model);

/**
 * Allocate `size` bytes on `stream`, as torch would for a tensor. Size 0
 * gives the null handle 0 and touches nothing.
 * @return CMT_EOK and *handle; CMT_EMODEL_OOM (num_ooms counted; the
 *         details are in cmt_model_last_oom); CMT_EINVALID for NULL
 *         arguments or a size of 1 EiB or more (PyTorch refuses those before
 *         the allocator); CMT_EMODEL_NOMEM (host), model unchanged.
 */
int cmt_model_alloc(struct cmt_model *model, size_t size, uint64_t stream,
                    cmt_model_handle *handle);

/**
 * Free an allocation; the block returns to its pool (merged with free
 * neighbours) and is reused only by its own stream. Handle 0 is a no-op.
 * @return CMT_EOK; CMT_EMODEL_BAD_HANDLE for a handle that is not
 *         live (double free); CMT_EINVALID for NULL model.
 */
int cmt_model_free(struct cmt_model *model, cmt_model_handle handle);

/**
 * torch.cuda.empty_cache(): release every free whole segment (both pools,
 * all streams) and unmap free pages of expandable segments.
 * @return CMT_EOK; CMT_EINVALID; CMT_EMODEL_NOMEM.
 */
int cmt_model_empty_cache(struct cmt_model *model);

/**
 * Copy the current statistics.
 * @return nothing; both pointers must be valid.
 */
void cmt_model_get_stats(const struct cmt_model *model, struct cmt_model_stats *stats);

/**
 * Whether the other address policy would have placed some device allocation elsewhere
 * (under never-reuse: a freed range first fit would have taken; under first-fit: a range
 * handed out below the highest address used so far). Until the first such allocation, a
 * replay under either policy is the same; after it, ties between equal-size free blocks may
 * break differently.
 * @return true once that happened; false for NULL.
 */
bool cmt_model_addresses_diverged(const struct cmt_model *model);

/**
 * The current statistics in place (what cmt_model_get_stats copies), for a replay loop that
 * looks at them after every call.
 * @return a pointer valid until cmt_model_destroy.
 */
const struct cmt_model_stats *cmt_model_stats_view(const struct cmt_model *model);

/**
 * The details of the most recent OOM.
 * @return a pointer valid until the next cmt_model_alloc or destroy; NULL if
 *         the model has never run out of memory.
 */
const struct cmt_model_oom *cmt_model_last_oom(const struct cmt_model *model);

/* Where a live allocation sits. */
struct cmt_model_block {
    uint64_t address;   /* model virtual address */
    uint64_t size;      /* block size (>= rounded request) */
    uint64_t requested; /* the caller's size */
    uint64_t stream;
    uint64_t segment_offset; /* address - start of its segment/reservation */
    bool expandable;         /* lives in an expandable segment */
    bool small_pool;
};

/**
 * Describe a live allocation.
 * @return CMT_EOK; CMT_EMODEL_BAD_HANDLE; CMT_EINVALID.
 */
int cmt_model_block_info(const struct cmt_model *model, cmt_model_handle handle,
                         struct cmt_model_block *out);

/* Device callbacks: let a program use the model as its real allocator. The
 * model calls `alloc` for every device allocation it decides to make (after
 * its own capacity and fraction checks pass) and `free` for every release, so
 * a program can back segments with cuMemAlloc/cuMemFree. Addresses are the
 * model's (block addresses as cmt_model_block_info reports them); keep a map
 * from them to device pointers. Classic segments: one call per segment.
 * Expandable segments: one call per page (2 MiB small pool, 20 MiB large
 * pool) mapped or unmapped. A nonzero return from `alloc` is a failed device
 * allocation (cudaMalloc returning out of memory): the model takes its OOM
 * path exactly as for a full device. */
struct cmt_model_device_hooks {
    int (*alloc)(void *ctx, uint64_t address, uint64_t size);
    void (*free)(void *ctx, uint64_t address, uint64_t size);
    void *ctx;
};

/**
 * Install device callbacks (copied); NULL removes them. Install them before
 * the first allocation.
 * @return CMT_EOK; CMT_EINVALID for a NULL model.
 */
int cmt_model_set_device_hooks(struct cmt_model *model, const struct cmt_model_device_hooks *hooks);

/**
 * Check the model's internal invariants (block chains, free trees, stats
 * against a recount). O(number of blocks); for tests and fuzzers.
 * @return CMT_EOK or CMT_EMODEL_CORRUPT.
 */
int cmt_model_check(const struct cmt_model *model);

/**
 * PyTorch's format_size(): "512 bytes", "1.50 KiB", "20.00 MiB",
 * "6.18 GiB" (two decimals; a unit is used up to and including its bound).
 * @return the length of the full string (as snprintf).
 */
int cmt_model_format_size(uint64_t bytes, char *buf, size_t len);

/* The wording of PyTorch's OOM message. */
enum cmt_model_oom_style {
    /* PyTorch 2.x (byte for byte as c10 2.6 prints it; tests/oracle compares):
   * "CUDA out of memory. Tried to allocate 6.18 GiB. GPU 0 has a total
   * capacity of 24.00 GiB of which 3.43 GiB is free. Of the allocated memory
   * 11.39 GiB is allocated by PyTorch, and 6.23 GiB is reserved by PyTorch but
   * unallocated. If reserved but unallocated memory is large try setting
   * PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.
   * See documentation for Memory Management  (https://pytorch.org/docs/
   * stable/notes/cuda.html#environment-variables)"; with a fraction cap
   * "X allowed; " precedes "Of the allocated memory". */
    CMT_MODEL_OOM_2X = 0,
    /* The older (1.x to ≈2.0) wording of the write-ups: "CUDA out of memory.
   * Tried to allocate 6.18 GiB (GPU 0; 24.00 GiB total capacity; 11.39 GiB
   * already allocated; 3.43 GiB free; 17.62 GiB reserved in total by PyTorch)
   * If reserved memory is >> allocated memory try setting max_split_size_mb
   * to avoid fragmentation.  See documentation for Memory Management and
   * PYTORCH_CUDA_ALLOC_CONF"; with a fraction cap "X allowed; " precedes the
   * reserved figure. */
    CMT_MODEL_OOM_1X = 1
};

/**
 * PyTorch's OOM message for the figures of an OOM, in the given wording.
 * @return the length of the full message (as snprintf);
 *         CMT_EINVALID for NULL oom.
 */
int cmt_model_format_oom_as(const struct cmt_model_oom *oom, enum cmt_model_oom_style style,
                            char *buf, size_t len);

/**
 * The same in PyTorch 2.x's wording (CMT_MODEL_OOM_2X).
 * @return as cmt_model_format_oom_as.
 */
int cmt_model_format_oom(const struct cmt_model_oom *oom, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* CMT_CACHING_MODEL_H */
