/*
 * whatif_capacity.h — the one choice of the memory a what-if sweep may reserve, and the device
 * every default sweep replays on. `cumemtrace whatif` and `cumemtrace html` both call it, so
 * the same trace gets the same capacity, the same rows and the same "capacity unknown" in both.
 */
#ifndef CMT_WHATIF_CAPACITY_H
#define CMT_WHATIF_CAPACITY_H

#include <stdint.h>

#include "whatif.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The capacity of a replay whose trace does not say what was free: 1 PiB, which no run
 * reaches, so no setting runs out of memory and the settings compare by what they reserve. */
#define CMT_WHATIF_NO_LIMIT ((uint64_t)1 << 50)

/* Where a sweep's capacity came from. X(name, json): the value, and its name in JSON output
 * ("capacity_source"). */
#define CMT_WHATIF_CAPACITY_SOURCES(X)                                                    \
    X(GIVEN, "option")    /* the caller's (--capacity) */                                 \
    X(TRACE, "trace")     /* what the trace says was free before the first allocation */  \
    X(OOM, "oom")         /* other processes held the memory at a failure: what it had */ \
    X(UNKNOWN, "unknown") /* neither: replayed with CMT_WHATIF_NO_LIMIT */

enum cmt_whatif_capacity_source {
#define CMT__CAPACITY_SOURCE_ENUM(name, json) CMT_WHATIF_CAPACITY_##name,
    CMT_WHATIF_CAPACITY_SOURCES(CMT__CAPACITY_SOURCE_ENUM)
#undef CMT__CAPACITY_SOURCE_ENUM
};

struct cmt_whatif_capacity {
    uint64_t capacity;     /* bytes the allocator may reserve (> 0) */
    uint64_t device_total; /* the device's memory: the trace's, at least capacity */
    enum cmt_whatif_capacity_source source;
    /* source OOM: the process's own bytes and the free bytes at that failure */
    uint64_t oom_own_bytes, oom_free_bytes;
};

/**
 * Choose the capacity of a sweep over `stream`: `given` when it is not 0, else what the trace
 * says was free at first use (stream->has_capacity), else CMT_WHATIF_NO_LIMIT with source
 * UNKNOWN. device_total is the stream's device_total, raised to the capacity when smaller.
 * @return 0, or CMT_EINVALID when stream or out is NULL.
 */
int cmt_whatif_capacity_choose(const struct cmt_whatif_stream *stream, uint64_t given,
                               struct cmt_whatif_capacity *out);

/**
 * The capacity of a trace whose failure came from memory other processes held (the OOM
 * verdict held_by_others): what the process could have had then, its own bytes and the free
 * bytes measured at the failure, not the card's free memory at first use (which the others
 * took later). Sets out's capacity and source (OOM) and keeps both figures; device_total is
 * kept (raised to the capacity when smaller).
 */
void cmt_whatif_capacity_held(struct cmt_whatif_capacity *out, uint64_t own_bytes,
                              uint64_t free_bytes);

/**
 * The device a sweep replays on when the caller sets nothing else: the chosen capacity, no
 * memory fraction, the default address policy, and the other policy checked where addresses
 * diverge (so results carry `borderline`).
 * @return the device (its fields may be changed before cmt_whatif_run_on).
 */
struct cmt_whatif_device cmt_whatif_capacity_device(const struct cmt_whatif_capacity *capacity);

/**
 * The JSON name of a source ("option", "trace", "unknown").
 * @return a static string; "unknown" for a value outside the list.
 */
const char *cmt_whatif_capacity_source_name(enum cmt_whatif_capacity_source source);

#ifdef __cplusplus
}
#endif

#endif /* CMT_WHATIF_CAPACITY_H */
