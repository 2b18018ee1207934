/* replay.h — the replay engine: rebuilds a process's CUDA memory state from its trace.
 *
 * Every analysis (oom, timeline, report, diff, whatif's tensor stream) is an observer of one
 * replay (struct cmt_observer, cmt_replay_run): cmt_replay_next() reads the next record,
 * applies it to the state, and says what it did (struct cmt_replay_step). Between calls the
 * state of every device can be queried. The engine classifies calls by the `op` of
 * their API record, never by name. State is proportional to the live set (allocations, handles,
 * reservations, mappings, pools, call sites), not to the trace: nothing is kept per event.
 *
 * Accounting (docs/analysis.md gives the reasons):
 *  - live bytes of a device = requested bytes of live device, pitched, managed, stream-
 *    ordered and array allocations + physical bytes of live VMM handles (a handle's memory is
 *    freed only after it is released AND its last mapping is unmapped). Host pinned memory is
 *    kept apart.
 *  - VA reservations are address space only; mapped bytes are counted per reservation.
 *  - a multicast object is a handle of no device bytes; memory bound into it stays counted
 *    once, under its physical handle, which the binding holds until unbound (or the object
 *    goes), as a mapping does.
 *  - pools: a stream-ordered free returns its bytes to the pool (retained); an allocation from
 *    the pool reuses retained bytes first; cuMemPoolTrimTo keeps at most its size; a
 *    synchronisation releases what exceeds the pool's release threshold (0 by default); a
 *    default pool's handle is known from the queries that return it.
 *  - an imported pool pointer (cuMemPoolImportPointer), like an IPC open, is another
 *    process's memory: an object of zero bytes.
 *  - graph memory: an allocation node is an address; launching its graph makes it a live
 *    allocation of kind graph, taking from the device's graph pool; a free (a free node at its
 *    graph's launch, cuMemFree, cuMemFreeAsync) gives it back to that pool, which keeps it
 *    until cuDeviceGraphMemTrim (or a reset). An allocation freed in its own graph is never
 *    live: its bytes are retained by the graph pool at the launch.
 *  - a free of an unknown pointer is counted (unknown_frees) and otherwise ignored. */
#ifndef CMT_REPLAY_H
#define CMT_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "reader.h"

/* Kinds of live memory, with their attributes (CMT_KA_*):
 *   DEVICE_MEMORY  counts as this process's device memory (live_bytes)
 *   HOLE           lies in the device's address range beside the others (hole measures)
 *   CHARTED        drawn in the timeline's chart
 *   WASTE          the driver rounds it up to CMT_GRANULARITY (granularity waste) */
#define CMT_KA_DEVICE_MEMORY 1u
#define CMT_KA_HOLE 2u
#define CMT_KA_CHARTED 4u
#define CMT_KA_WASTE 8u
#define CMT__KA_PLAIN (CMT_KA_DEVICE_MEMORY | CMT_KA_HOLE | CMT_KA_CHARTED | CMT_KA_WASTE)
/* clang-format off */
#define CMT_KINDS(X)                                                                        \
    X(DEVICE, "device", CMT__KA_PLAIN)             /* cuMemAlloc */                         \
    X(PITCHED, "pitched", CMT__KA_PLAIN)           /* cuMemAllocPitch */                    \
    X(MANAGED, "managed", CMT__KA_PLAIN & ~CMT_KA_HOLE) /* cuMemAllocManaged: own range */  \
    X(ASYNC, "async", CMT__KA_PLAIN)               /* cuMemAllocAsync / FromPool */         \
    X(VMM, "vmm_physical", CMT_KA_DEVICE_MEMORY | CMT_KA_CHARTED) /* cuMemCreate handles */ \
    X(HOST, "host_pinned", 0)     /* cuMemAllocHost / HostAlloc / HostRegister: not device memory */ \
    X(VA, "va_reserved", 0)       /* cuMemAddressReserve: address space only */             \
    X(MAPPING, "mapping", 0)      /* cuMemMap ranges */                                     \
    X(IPC, "ipc", 0)              /* cuIpcOpenMemHandle, cuMemPoolImportPointer: another process's memory */ \
    X(POOL, "pool", 0)            /* a memory pool (retained bytes) */                      \
    X(ARRAY, "array", CMT_KA_DEVICE_MEMORY) /* cuArrayCreate / 3D / mipmapped (a handle) */ \
    X(MULTICAST, "multicast", 0)  /* cuMulticastCreate: a handle of no device bytes */ \
    X(GRAPH, "graph", CMT__KA_PLAIN & ~CMT_KA_CHARTED) /* a launched graph allocation node */
/* clang-format on */

enum cmt_kind {
    CMT_KIND_NONE = -1, /* an op's kind column when it touches no memory */
#define CMT__KIND_ENUM(name, text, attrs) CMT_KIND_##name,
    CMT_KINDS(CMT__KIND_ENUM)
#undef CMT__KIND_ENUM
        CMT_KIND_COUNT
};

/* @return the kind's name ("device", "pitched", ...), or "?" when out of range. */
const char *cmt_kind_name(int kind);

/* The kinds with attribute a, as a bit mask by kind (a constant). */
#define CMT_KIND_MASK(a) (0u CMT_KINDS(CMT__KIND_BIT_##a))
#define CMT__KIND_BIT_DEVICE_MEMORY(n, t, at) \
    | (((at)&CMT_KA_DEVICE_MEMORY) ? 1u << CMT_KIND_##n : 0u)
#define CMT__KIND_BIT_HOLE(n, t, at) | (((at)&CMT_KA_HOLE) ? 1u << CMT_KIND_##n : 0u)
#define CMT__KIND_BIT_CHARTED(n, t, at) | (((at)&CMT_KA_CHARTED) ? 1u << CMT_KIND_##n : 0u)
#define CMT__KIND_BIT_WASTE(n, t, at) | (((at)&CMT_KA_WASTE) ? 1u << CMT_KIND_##n : 0u)
/* @return whether kind k (any int) has attribute a (DEVICE_MEMORY, HOLE, CHARTED, WASTE). */
#define CMT_KIND_HAS(k, a) ((unsigned)(k) < CMT_KIND_COUNT && ((CMT_KIND_MASK(a) >> (k)) & 1u))

/* Kinds that count as this process's device memory (live_bytes). */
#define CMT_KIND_IS_DEVICE_MEMORY(k) CMT_KIND_HAS(k, DEVICE_MEMORY)

/* What the replay makes of each op (its table, CMT_REPLAY_OPS in replay_ops.h, gives every op
 * of format/cmt_format.h's CMT_OPS its handler, its kind and these attributes). */
#define CMT_OPA_FREE 1u     /* ends the allocation at ptr, whatever its kind (a free) */
#define CMT_OPA_SAMPLE 2u   /* a free/total sample of the event's device */
#define CMT_OPA_RELEASES 4u /* gives memory back (a free, release, unmap, trim, destroy, sync) */

/* @return the op's kind column (CMT_KIND_NONE when it has none, or the op is unknown). */
int cmt_op_kind(uint32_t op);
/* @return the op's CMT_OPA_* attributes (0 for an unknown op). */
unsigned cmt_op_attrs(uint32_t op);

#define CMT_GRANULARITY (UINT64_C(2) << 20) /* the driver's allocation granularity */

/* State of one device. Byte counts are requested bytes unless said otherwise. */
struct cmt_replay_device {
    int32_t dev;
    int seen;                            /* any record named this device */
    uint64_t kind_bytes[CMT_KIND_COUNT]; /* live bytes per kind (POOL: retained bytes) */
    uint64_t kind_count[CMT_KIND_COUNT]; /* live objects per kind */
    uint64_t live_bytes;                 /* device memory in use (CMT_KIND_IS_DEVICE_MEMORY) */
    uint64_t allocations;                /* live objects counted in live_bytes */
    uint64_t mapped_bytes;               /* bytes of live cuMemMap ranges */
    uint64_t waste_bytes;                /* rounding of live allocations up to CMT_GRANULARITY */
    uint64_t peak_live_bytes, peak_t_ns, peak_seq;
    /* last recorded free/total (DEVICE, MEMINFO, or a program's cuMemGetInfo) */
    int have_sample;
    uint64_t free_bytes, total_bytes, sample_t_ns;
    uint64_t samples; /* samples taken: another one since a look changed it */
    const char *name; /* from the DEVICE record, or NULL */
    /* the first free/total recorded (DEVICE record or baseline sample): the device as the
     * process found it */
    int have_baseline;
    uint64_t baseline_free_bytes, baseline_total_bytes;
    uint64_t alloc_calls, free_calls, failures, oom_failures;
};

/* What the last cmt_replay_next() did. */
struct cmt_replay_step {
    struct cmt_record rec; /* the record (rec.type says which) */
    int op;                /* enum cmt_op of an EVENT, -1 for other records */
    const char *api;       /* exact entry point of an EVENT ("?" when its API is unknown) */
    int kind;              /* kind created or destroyed, -1 when none */
    int is_alloc;      /* an allocation attempt (alloc, pitch, managed, async, host, vmm_create) */
    int failed;        /* the call returned an error */
    int oom;           /* an allocation failed with CUDA_ERROR_OUT_OF_MEMORY */
    uint64_t request;  /* bytes asked for by an allocation attempt */
    uint64_t released; /* device bytes a free gave back (0 for unknown pointers) */
    int64_t delta;     /* change of live_bytes on the event's device */
    uint32_t site;     /* call-site index of the allocation created or freed (0 = none) */
    int unknown_free;  /* a free or unmap named something not live */
    int sample;        /* the op takes a free/total sample of the event's device (CMT_OPA_SAMPLE) */
    /* the object created or destroyed (kind >= 0): its key (address; handle for VMM), its
     * bytes, and for a device or host allocation its object id (dense from 1, reused after
     * the object is gone; CMT_NO_OBJECT for other kinds) */
    uint64_t key, bytes;
    uint32_t object;
    /* an allocation at a key still live: the old object was dropped (its free was never
     * recorded); its object id, or CMT_NO_OBJECT */
    uint32_t replaced;
    /* an EVENT's device after the event (what cmt_replay_device(rp, rec.u.event.dev) gives),
     * NULL when no record has named it; valid until the next cmt_replay_next() */
    const struct cmt_replay_device *device;
    /* the device of the object released, when it is not the event's: a release recorded with
     * dev -1 (cuMemUnmap, cuMemRelease need no current context) or a free from another
     * device's context lowers that device; NULL otherwise. Valid as `device`. */
    const struct cmt_replay_device *owner;
    int all_devices; /* the event changed every device (cuCtxDestroy: pools release) */
};

#define CMT_NO_OBJECT 0u

/* A call site: the allocations made from one stack. Index 0 is "no stack". Its figures are
 * device memory (CMT_KIND_IS_DEVICE_MEMORY) only; pinned host memory allocated from it has its
 * own (host_*). failures counts every failed allocation attempt, device or host. */
struct cmt_replay_site {
    uint32_t stack; /* leaf STACK_NODE id */
    uint64_t live_bytes, live_count;
    uint64_t peak_bytes;                   /* this site's own maximum */
    uint64_t at_peak_bytes, at_peak_count; /* at the process-wide peak (cmt_replay_finish) */
    uint64_t alloc_count, alloc_bytes, free_count, failures;
    /* pinned host memory (CMT_KIND_HOST) */
    uint64_t host_live_bytes, host_live_count, host_peak_bytes;
    uint64_t host_alloc_count, host_alloc_bytes, host_free_count;
    /* internal: lazy copy at the process peak */
    uint64_t last_mod_seq, saved_bytes, saved_count, saved_peak;
};

struct cmt_replay_thread {
    uint32_t tid;
    uint64_t alloc_count, alloc_bytes, free_count, freed_bytes, failures;
};

typedef struct cmt_replay cmt_replay;

/* Creates a replay over an open reader (not owned). @return 0 or CMT_ENOMEM. */
CMT_MUST_USE int cmt_replay_create(cmt_replay **out, cmt_reader *r);
void cmt_replay_destroy(cmt_replay *rp);

/* Reads and applies the next record. @return 1 with *step filled; 0 at the end; a negative
 * CMT_E* code at damage (the state holds everything before it) or when memory runs out. */
CMT_MUST_USE int cmt_replay_next(cmt_replay *rp, struct cmt_replay_step *step);

/* An analysis fed by a replay: one pass over a trace drives any number of them.
 *
 * `wants` says which steps the observer is shown (a mask of CMT_OBSERVE_*); step() sees them
 * with the state already updated and returns the mask for the steps after it, so an observer
 * that waits for something rare (oom waits for an out-of-memory failure, the ledger for them
 * and for free/total samples) costs nothing between. finish() runs once at the end, after
 * cmt_replay_finish(), when symbols are known; it returns 0 or a negative CMT_E* code. Either function may be NULL (a NULL step needs
 * wants 0); both get the observer itself (its ctx, its quiet window).
 *
 * A quiet window, which step() may set, spares an observer the events that cannot change
 * what it keeps: events on device `quiet.dev` with quiet.from <= t < quiet.until that leave
 * that device's live bytes at or below quiet.live_max, are not out-of-memory failures and
 * release nothing of another device are not shown; the runner counts them in quiet.skipped
 * and keeps the last one's time in quiet.last_t. When an event outside the span ends a window
 * that skipped events, the runner first calls quiet_end() (when set), before applying that
 * event: the state is still that of the window's last event; the runner then sets
 * quiet.skipped to 0. Otherwise the observer takes the count when it is next shown a step,
 * and at finish, and sets quiet.skipped to 0 when it sets a new window (the runner watches a
 * window's end from its first skipped event on). quiet.until == 0: no window. Records are
 * unaffected.
 *
 * A moment, set before the run and then by before() itself: before the first event with
 * t_ns > before_t is applied, the runner calls before() (when set), the state still that of
 * the moment before_t (every event at or before it applied): how an observer takes the state
 * at a time asked. before() sets the next before_t (a later one; UINT64_MAX or not later: no
 * more); step() may set an earlier one too (the ledger: the time of a new peak). Moments
 * past the last event are the observer's to take at finish. */
enum {
    CMT_OBSERVE_RECORD = 1u, /* records other than events (API, DEVICE, MEMINFO, END, ...) */
    CMT_OBSERVE_EVENT = 2u,  /* every event */
    CMT_OBSERVE_OOM = 4u,    /* only events that failed with out-of-memory */
    CMT_OBSERVE_SAMPLE = 8u, /* only events that took a free/total sample (CMT_OPA_SAMPLE) */
    CMT_OBSERVE_ALL = 3u,
};
struct cmt_observe_quiet {
    int32_t dev;
    uint64_t from, until, live_max;
    uint64_t skipped, last_t;
};
struct cmt_observer {
    unsigned wants;
    unsigned (*step)(struct cmt_observer *self, const cmt_replay *rp,
                     const struct cmt_replay_step *st);
    int (*finish)(struct cmt_observer *self, const cmt_replay *rp);
    void *ctx;
    struct cmt_observe_quiet quiet;
    void (*quiet_end)(struct cmt_observer *self, const cmt_replay *rp);
    uint64_t before_t; /* with before set; UINT64_MAX: no moment (the runner sets it so without) */
    void (*before)(struct cmt_observer *self, const cmt_replay *rp);
};

/* Runs to the end, showing each step to the observers (n may be 0), then settles the state
 * (cmt_replay_finish) and calls each observer's finish. @return 0, or the code that stopped
 * the replay (damage: the state and the observers hold everything before it), or the first
 * observer's finish error. */
CMT_MUST_USE int cmt_replay_run(cmt_replay *rp, struct cmt_observer *observers, size_t n);

/* Settles the values that are computed lazily (each site's bytes at the process peak).
 * Call once after the last cmt_replay_next() (cmt_replay_run does). */
void cmt_replay_finish(cmt_replay *rp);

cmt_reader *cmt_replay_reader(const cmt_replay *rp);

/* Devices are numbered 0..count-1 as slots; slot 0 is dev -1 (unknown), slot i is dev i-1. */
uint32_t cmt_replay_device_count(const cmt_replay *rp);
const struct cmt_replay_device *cmt_replay_device_slot(const cmt_replay *rp, uint32_t slot);
/* @return the device's state, or NULL when no record named it. */
const struct cmt_replay_device *cmt_replay_device(const cmt_replay *rp, int32_t dev);

/* Process-wide figures. */
struct cmt_replay_totals {
    uint64_t events, records;
    uint64_t live_bytes, host_bytes, pool_retained_bytes;
    uint64_t host_peak_bytes; /* the most pinned host memory live at once */
    uint64_t peak_live_bytes, peak_t_ns, peak_seq;
    uint64_t alloc_calls, free_calls, failures, oom_failures, unknown_frees;
    uint64_t temporary_count, temporary_bytes; /* freed before the next allocation */
    uint64_t size_histogram[65];               /* successful allocations by bit length of size */
    uint64_t last_t_ns;
    uint64_t last_seq; /* seq of the last event applied (0: none yet) */
    /* events on a device ordinal outside -1..CMT_MAX_DEVICES - 1 (a damaged or hostile trace):
     * their bytes are counted with those of no device (slot 0); the first such ordinal */
    uint64_t odd_device_events;
    int32_t odd_device_first;
    int ended, signaled; /* END seen; SIGNAL seen */
    uint32_t signo;
};
const struct cmt_replay_totals *cmt_replay_totals(const cmt_replay *rp);

uint32_t cmt_replay_site_count(const cmt_replay *rp); /* including index 0 */
const struct cmt_replay_site *cmt_replay_site(const cmt_replay *rp, uint32_t index);

/* Calls made to API id `api` (events whose API record came first). */
uint64_t cmt_replay_api_calls(const cmt_replay *rp, uint32_t api);

uint32_t cmt_replay_thread_count(const cmt_replay *rp);
const struct cmt_replay_thread *cmt_replay_thread(const cmt_replay *rp, uint32_t i);

/* A live object, as visited by cmt_replay_foreach_live. */
struct cmt_replay_object {
    int kind;
    int32_t dev;
    uint64_t addr; /* address, or handle for VMM, or pool handle for POOL */
    uint64_t size; /* bytes (POOL: retained bytes; VA: reserved bytes) */
    uint64_t aux;  /* MAPPING: handle; VA: mapped bytes */
    uint64_t seq;
    uint32_t site;
};
/* Calls fn for every live object (any order). */
void cmt_replay_foreach_live(const cmt_replay *rp,
                             void (*fn)(void *ctx, const struct cmt_replay_object *o), void *ctx);
/* The same for the live mappings (CMT_KIND_MAPPING) alone: their number, not every object's. */
void cmt_replay_foreach_mapping(const cmt_replay *rp,
                                void (*fn)(void *ctx, const struct cmt_replay_object *o),
                                void *ctx);

/* Fragmentation of one device's state (docs/analysis.md defines each). */
struct cmt_fragmentation {
    uint64_t hole_bytes; /* gaps between live device allocations in address order */
    uint64_t largest_hole;
    double hole_fragmentation; /* 1 - largest_hole / hole_bytes (0 without holes) */
    uint64_t reserved_va_bytes, mapped_in_va_bytes;
    uint64_t largest_unmapped; /* largest unmapped extent inside a reservation */
    uint64_t waste_bytes;      /* granularity rounding */
    uint64_t pool_retained_bytes;
};
/* Measures the current state of device dev. @return 0 or CMT_ENOMEM. */
CMT_MUST_USE int cmt_replay_fragmentation(const cmt_replay *rp, int32_t dev,
                                          struct cmt_fragmentation *out);
/* The same at the process-wide peak (exact; valid after cmt_replay_finish). */
CMT_MUST_USE int cmt_replay_peak_fragmentation(const cmt_replay *rp, int32_t dev,
                                               struct cmt_fragmentation *out);

#endif
