/* replay_internal.h — internal: the replay engine's state, shared by replay.c (events),
 * replay_tables.c (lifetime and queries) and frag.c. */
#ifndef CMT__REPLAY_INTERNAL_H
#define CMT__REPLAY_INTERNAL_H

#include "replay.h"
#include "replay_map.h"
#include "replay_ops.h"

#define MAX_DEVICE_SLOTS (CMT_MAX_DEVICES + 1) /* dev -1 .. max - 1; others fold into slot 0 */

/* An object freed after the process peak that was alive at it (for exact peak measures). */
struct cmt__logged {
    uint64_t addr, size, aux;
    int32_t dev;
    uint8_t kind;
};

/* The handlers apply_event calls inline (most events are allocations and frees): an API's
 * cmt__replay_api.path, from its handler (cmt__replay_path). */
enum cmt__replay_path {
    CMT__PATH_CALL,        /* any other handler: called through cmt__replay_api.apply */
    CMT__PATH_ALLOC,       /* cmt__apply_alloc */
    CMT__PATH_FREE,        /* cmt__apply_free */
    CMT__PATH_ALLOC_ASYNC, /* cmt__apply_alloc_async */
    CMT__PATH_FREE_ASYNC,  /* cmt__apply_free_async */
};

/* What the replay knows of one API id (from its API record). */
struct cmt__replay_api {
    const char *name; /* NULL until the API record is replayed */
    uint64_t calls;
    int16_t op;           /* the step's op: enum cmt_op, CMT_OP_OTHER when unknown */
    int8_t kind;          /* the op's kind column */
    uint8_t sample;       /* the op's CMT_OPA_SAMPLE */
    uint8_t path;         /* enum cmt__replay_path of apply */
    cmt__apply_fn *apply; /* the op's handler (OTHER's when unknown) */
};

/* @return the path of handler apply (enum cmt__replay_path). */
static inline uint8_t cmt__replay_path(cmt__apply_fn *apply)
{
    return apply == cmt__apply_alloc         ? CMT__PATH_ALLOC
           : apply == cmt__apply_free        ? CMT__PATH_FREE
           : apply == cmt__apply_alloc_async ? CMT__PATH_ALLOC_ASYNC
           : apply == cmt__apply_free_async  ? CMT__PATH_FREE_ASYNC
                                             : CMT__PATH_CALL;
}

struct cmt_replay {
    cmt_reader *reader;

    struct cmt__map allocs; /* address -> allocation (device, pitched, managed, async, host, ipc) */
    struct cmt__map handles;     /* VMM handle -> physical allocation */
    struct cmt__map vas;         /* address -> reservation */
    struct cmt__map mappings;    /* address -> mapped range */
    struct cmt__map pools;       /* pool handle -> retained bytes (in size) */
    struct cmt__entry *pool_hit; /* the pool entry used last (checked by key before use) */
    uint64_t *pool_keys;         /* the pools' keys, dense, so a sync visits only real pools */
    size_t pool_count, pool_cap;
    struct cmt__threshold {
        uint64_t pool, bytes;
    } * thresholds; /* pools given a release threshold (cuMemPoolSetAttribute): rare, scanned */
    size_t threshold_count, threshold_cap;
    /* graph memory nodes (replay_graph.c): of graphs, and copied into each exec instantiated
     * from one; rare, scanned */
    struct cmt__graph_node {
        uint64_t owner; /* the graph's handle, or the exec's */
        uint64_t ptr, size;
        uint32_t stack; /* of the allocation node: the site its launched memory gets */
        int32_t dev;
        uint8_t in_exec; /* owner is an exec */
        uint8_t is_free; /* a free node (ptr is what it frees) */
    } * graph_nodes;
    size_t graph_node_count, graph_node_cap;
    struct cmt__pool_alias {
        uint64_t handle;
        uint32_t slot;
    } * default_pools; /* handles the queries returned for a device's default pool: rare */
    size_t default_pool_count, default_pool_cap;
    struct cmt__bind {
        uint64_t multicast, offset, size;
        uint64_t handle; /* the physical handle bound (0: memory the replay holds no handle of) */
        int32_t dev;
    } * binds; /* memory bound into multicast objects: rare, scanned */
    size_t bind_count, bind_cap;
    uint32_t *stack_sites; /* stack id -> site index (0 = none yet), for ids below its cap */
    uint32_t stack_site_cap;
    struct cmt__map site_ids; /* stack id -> index (aux), for ids too large for stack_sites */
    struct cmt__map tids;     /* tid + 1 -> index (aux) */
    struct {
        uint64_t key; /* tid + 1, 0 = empty */
        uint32_t index;
    } thread_cache[64]; /* direct-mapped by tid: most lookups never reach tids */

    struct cmt_replay_device *devices; /* slot = dev + 1 */
    uint32_t device_count, device_cap;
    uint64_t *current_pool; /* per slot: pool set by cuDeviceSetMemPool, 0 = default */

    struct cmt_replay_site *sites;
    uint32_t site_count, site_cap;
    struct cmt_replay_thread *threads;
    uint32_t thread_count;
    size_t thread_cap;

    struct cmt__replay_api *apis; /* by API id, up to the highest id an API record named */
    uint32_t api_cap;
    struct cmt_replay_totals totals;
    uint64_t tick;          /* events applied so far (replay order) */
    uint64_t peak_tick;     /* tick of the process-wide peak */
    uint32_t last_object;   /* object id of the last device or host allocation (temporary test) */
    uint32_t *free_objects; /* object ids free for reuse (a stack; room for every id issued) */
    uint32_t free_object_count, object_count, free_object_cap;

    /* the process peak: devices as they were, and objects freed since that were alive then */
    struct cmt_replay_device *peak_devices;
    uint32_t peak_device_count;
    struct cmt__logged *log;
    size_t log_count, log_cap;
    int32_t owner_dev; /* the device of an object the event released, if not the event's */
    int failed;        /* out of memory inside the engine */
};

/* Default pool of a device slot (a key no real handle takes). */
#define CMT__DEFAULT_POOL(slot) (UINT64_C(0xFFFFFFFF00000000) | (slot))
/* The graph memory pool of a device slot (keys no real handle takes either). */
#define CMT__GRAPH_POOL(slot) (UINT64_C(0xFFFFFFFE00000000) | (slot))
#define CMT__IS_GRAPH_POOL(key) ((key) >> 32 == UINT64_C(0xFFFFFFFE))

#endif
