/* cmt_format.h — constants and record structures of the cumemtrace trace format v3.2.
 *
 * docs/trace-format.md is the contract; every name here is the spec's name.
 * This header needs nothing but the C library: the format knows no CUDA. */
#ifndef CMT_FORMAT_H
#define CMT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* File header: 8 magic bytes, u16 major, u16 minor, u32 flags (little-endian). */
#define CMT_MAGIC \
    "\x89"        \
    "CMT\r\n\x1a\n"
#define CMT_MAGIC_SIZE 8
#define CMT_FILE_HEADER_SIZE 16
#define CMT_VERSION_MAJOR 3 /* readers also read majors 1 and 2 (docs/trace-format.md) */
#define CMT_VERSION_MINOR 3

/* Chunk header: u32 chunk magic, u32 compressed size, u32 raw size, u32 record count. */
#define CMT_CHUNK_MAGIC 0x4b544d43u /* "CMTK" read as a little-endian u32 */
#define CMT_CHUNK_HEADER_SIZE 16
#define CMT_CHUNK_RAW_MAX (64u << 20) /* readers refuse larger chunks */
/* Device ordinals 0 .. CMT_MAX_DEVICES - 1 are tracked as devices by the shim, the reader and
 * the analyses; an event naming another ordinal counts as device -1 (unknown). */
#define CMT_MAX_DEVICES 1024
/* Frames per stack: the shim records at most this many (CUMEMTRACE_STACK_DEPTH and `record
 * --stack-depth` are capped to it), so a tool that walks a whole stack needs no more. */
#define CMT_MAX_STACK_DEPTH 256

/* Record types (varint type, varint length, payload). Unknown types are skipped. */
#define CMT_RECORD_TYPES(X) \
    X(PROCESS, 1)           \
    X(ENV, 2)               \
    X(API, 3)               \
    X(STRING, 4)            \
    X(MODULE, 5)            \
    X(STACK_NODE, 6)        \
    X(THREAD, 7)            \
    X(DEVICE, 8)            \
    X(EVENT, 9)             \
    X(MEMINFO, 10)          \
    X(NOTE, 11)             \
    X(SIGNAL, 12)           \
    X(END, 13)              \
    X(SYMBOL, 14)           \
    X(EVENTS, 15)           \
    X(ALLOCATOR, 16)        \
    X(ALLOC_EVENT, 17)      \
    X(RANGE, 18)            \
    X(ALLOC_EVENTS, 19)

enum cmt_record_type {
#define CMT__REC_ENUM(name, value) CMT_REC_##name = value,
    CMT_RECORD_TYPES(CMT__REC_ENUM)
#undef CMT__REC_ENUM
        CMT_REC_MAX
};

/* What an intercepted entry point does: stored per API in the trace (API record), so the
 * tools classify calls without knowing the shim's table. Values are part of the format.
 *
 * name, value, text: the op (the value is in the trace; the text in dumps), and in the comment
 * the fields its events carry. That is all the format says of an op: what each layer does
 * with it is that layer's own table, keyed by op and checked at compile time to have one line
 * per op here (the replay's CMT_REPLAY_OPS, tools/analysis/replay_ops.h; the shim's
 * CMT_SHIM_OPS, interpose/shim_ops.h). */
/* clang-format off */
#define CMT_OPS(X)                                                                               \
    X(OTHER, 0, "other")                                                                       \
    X(ALLOC, 1, "alloc")                             /* ptr, size */                           \
    X(ALLOC_PITCH, 2, "alloc_pitch")                 /* ptr, size, pitch, width */             \
    X(ALLOC_MANAGED, 3, "alloc_managed")             /* ptr, size, flags */                    \
    X(FREE, 4, "free")                               /* ptr */                                 \
    X(ALLOC_ASYNC, 5, "alloc_async")                 /* ptr, size, stream, [pool], [handle = graph captured into] */ \
    X(FREE_ASYNC, 6, "free_async")                   /* ptr, stream, [handle = graph captured into] */ \
    X(ALLOC_HOST, 7, "alloc_host")                   /* ptr, size, flags */                    \
    X(FREE_HOST, 8, "free_host")                     /* ptr */                                 \
    X(MEM_INFO, 9, "mem_info")                       /* free, total */                         \
    X(POOL_CREATE, 10, "pool_create")                /* pool, dev */                           \
    X(POOL_DESTROY, 11, "pool_destroy")              /* pool */                                \
    X(POOL_TRIM, 12, "pool_trim")                    /* pool, size = bytes kept */             \
    X(POOL_SET, 13, "pool_set")                      /* dev, pool */                           \
    X(VMM_CREATE, 14, "vmm_create")                  /* handle, size, dev */                   \
    X(VMM_RELEASE, 15, "vmm_release")                /* handle */                              \
    X(VMM_MAP, 16, "vmm_map")                        /* ptr, size, offset, handle */           \
    X(VMM_UNMAP, 17, "vmm_unmap")                    /* ptr, size */                           \
    X(VA_RESERVE, 18, "va_reserve")                  /* ptr, size, align */                    \
    X(VA_FREE, 19, "va_free")                        /* ptr, size */                           \
    X(VMM_SET_ACCESS, 20, "vmm_set_access")          /* ptr, size, count */                    \
    X(VMM_RETAIN, 21, "vmm_retain")                  /* handle, ptr */                         \
    X(VMM_IMPORT, 22, "vmm_import")                  /* handle, flags */                       \
    X(VMM_EXPORT, 23, "vmm_export")                  /* handle, flags */                       \
    X(IPC_OPEN, 24, "ipc_open")                      /* ptr, flags */                          \
    X(IPC_CLOSE, 25, "ipc_close")                    /* ptr */                                 \
    X(CTX_CREATE, 26, "ctx_create")                  /* ctx, dev, flags */                     \
    X(CTX_DESTROY, 27, "ctx_destroy")                /* ctx */                                 \
    X(PRIMARY_RETAIN, 28, "primary_retain")          /* ctx, dev */                            \
    X(PRIMARY_RELEASE, 29, "primary_release")        /* dev */                                 \
    X(PRIMARY_RESET, 30, "primary_reset")            /* dev */                                 \
    X(GET_PROC, 31, "get_proc")                      /* version, flags, target */              \
    X(SYNC, 32, "sync")                              /* stream (pools trim here) */            \
    X(HOST_REGISTER, 33, "host_register")            /* ptr, size, flags */                    \
    X(HOST_UNREGISTER, 34, "host_unregister")        /* ptr */                                 \
    X(ARRAY_CREATE, 35, "array_create")              /* ptr = handle, size, width, height, count */ \
    X(ARRAY_DESTROY, 36, "array_destroy")            /* ptr = handle */                        \
    X(POOL_ATTR, 37, "pool_attr")                    /* pool, flags = attr, [size = release threshold] */ \
    X(GRAPH_ALLOC_NODE, 38, "graph_alloc_node")      /* ptr, size, handle = graph */           \
    X(GRAPH_FREE_NODE, 39, "graph_free_node")        /* ptr, handle = graph */                 \
    X(GRAPH_INSTANTIATE, 40, "graph_instantiate")    /* ptr = exec, handle = graph, flags */   \
    X(GRAPH_LAUNCH, 41, "graph_launch")              /* ptr = exec, stream */                  \
    X(GRAPH_EXEC_DESTROY, 42, "graph_exec_destroy")  /* ptr = exec */                          \
    X(GRAPH_DESTROY, 43, "graph_destroy")            /* handle = graph */                      \
    X(GRAPH_MEM_TRIM, 44, "graph_mem_trim")          /* dev */                                 \
    X(GRAPH_MEM_ATTR, 45, "graph_mem_attr")          /* dev, flags = attr, size = value */     \
    X(POOL_EXPORT, 46, "pool_export")                /* pool, flags = handle type, [handle = fd] */ \
    X(POOL_IMPORT, 47, "pool_import")                /* pool = the imported pool, flags = handle type */ \
    X(POOL_EXPORT_PTR, 48, "pool_export_ptr")        /* ptr */                                 \
    X(POOL_IMPORT_PTR, 49, "pool_import_ptr")        /* ptr, pool (another process's memory) */ \
    X(POOL_DEFAULT, 50, "pool_default")              /* dev, pool = its default pool */        \
    X(POOL_CURRENT, 51, "pool_current")              /* dev, pool = its current pool */        \
    X(MEM_RANGE_HANDLE, 52, "mem_range_handle")      /* ptr, size, flags = handle type, [handle = fd] */ \
    X(MULTICAST_CREATE, 53, "multicast_create")      /* handle, size, count = devices, flags = handle types */ \
    X(MULTICAST_ADD_DEVICE, 54, "multicast_add_device") /* handle, dev = the device added */   \
    X(MULTICAST_BIND_MEM, 55, "multicast_bind_mem")  /* handle, ptr = the physical handle, offset, size */ \
    X(MULTICAST_BIND_ADDR, 56, "multicast_bind_addr") /* handle, ptr = the memory's address, offset, size */ \
    X(MULTICAST_UNBIND, 57, "multicast_unbind")      /* handle, dev, offset, size */           \
    X(CAPTURE_BEGIN, 58, "capture_begin")            /* stream, [flags = mode] */              \
    X(CAPTURE_END, 59, "capture_end")                /* stream, [handle = graph] */
/* clang-format on */

enum cmt_op {
#define CMT__OP_ENUM(name, value, text) CMT_OP_##name = value,
    CMT_OPS(CMT__OP_ENUM)
#undef CMT__OP_ENUM
        CMT_OP_MAX
};

/* Optional event fields, in bit order: an event's field mask says which follow. */
#define CMT_FIELDS(X)       \
    X(PTR, 0, ptr)          \
    X(SIZE, 1, size)        \
    X(STREAM, 2, stream)    \
    X(POOL, 3, pool)        \
    X(HANDLE, 4, handle)    \
    X(OFFSET, 5, offset)    \
    X(FLAGS, 6, flags)      \
    X(CTX, 7, ctx)          \
    X(PITCH, 8, pitch)      \
    X(WIDTH, 9, width)      \
    X(HEIGHT, 10, height)   \
    X(FREE, 11, free)       \
    X(TOTAL, 12, total)     \
    X(ALIGN, 13, align)     \
    X(COUNT, 14, count)     \
    X(VERSION, 15, version) \
    X(TARGET, 16, target)

enum cmt_field {
#define CMT__FIELD_ENUM(name, bit, member) CMT_FIELD_##name = bit,
    CMT_FIELDS(CMT__FIELD_ENUM)
#undef CMT__FIELD_ENUM
        CMT_NFIELDS
};
#define CMT_F(name) (UINT32_C(1) << CMT_FIELD_##name)

/* Fields stored as zigzag deltas from the previous EVENT's value in the chunk (v2; in v1 only
 * ptr): addresses cluster, and handles (pointers or ids) repeat from call to call. */
#define CMT_DELTA_FIELDS (CMT_F(PTR) | CMT_F(STREAM) | CMT_F(POOL) | CMT_F(HANDLE) | CMT_F(CTX))

/* EVENTS (v3): consecutive events stored column by column, each column a run of varints. The
 * head column holds each event's flags, api, optional parts and fields mask (as a v2 EVENT,
 * without t and values); the time column its t delta; column CMT_COL_VALUES + f the values of
 * field f of the events that carry it. Random addresses and sizes then sit together apart
 * from the regular parts, which zstd compresses and decompresses much faster. */
#define CMT_COL_HEAD 0
#define CMT_COL_TIME 1
#define CMT_COL_VALUES 2
#define CMT_NCOLS (CMT_COL_VALUES + CMT_NFIELDS)

/* A writer ends a zstd block after the EVENTS record that holds each CMT_GROUP_EVENTS_MAX-th
 * event of a chunk (closing the EVENTS block there), so that a reader of a file cut inside a
 * chunk decodes every group of events before the cut and loses at most this many. */
#define CMT_GROUP_EVENTS_MAX 4096

/* The first byte of a v2 EVENT payload: which of the rarely changing parts follow. A part
 * whose bit is clear takes its usual value: the next seq, the previous EVENT's tid, device and
 * stack in the chunk (0 at a chunk's start), a result of 0. */
#define CMT_EV_SEQ 0x01u    /* varint seq delta follows (else the step is 1) */
#define CMT_EV_TID 0x02u    /* zigzag tid delta follows */
#define CMT_EV_RESULT 0x04u /* varint result follows */
#define CMT_EV_DEV 0x08u    /* zigzag dev follows */
#define CMT_EV_STACK 0x10u  /* zigzag stack delta follows */
#define CMT_EV_ALL 0x1fu    /* other bits are malformed */

/* One intercepted call. `t_ns` counts from the trace's start (PROCESS.start_mono_ns). */
struct cmt_event {
    uint64_t seq; /* global call order; consecutive in a complete trace */
    uint64_t t_ns;
    uint32_t tid;    /* OS thread id */
    uint32_t api;    /* API id, named by an API record */
    int32_t result;  /* CUresult */
    int32_t dev;     /* device ordinal, -1 when unknown */
    uint32_t stack;  /* leaf STACK_NODE id, 0 = no stack */
    uint32_t fields; /* mask of CMT_F() bits: which of v[] are meaningful */
    uint64_t v[CMT_NFIELDS];
};

struct cmt_process {
    uint64_t pid, ppid;
    uint64_t start_wall_ns;  /* Unix epoch */
    uint64_t start_mono_ns;  /* CLOCK_MONOTONIC */
    uint64_t driver_version; /* 1000*major + 10*minor, 0 unknown */
    const char *hostname;
    const char *exe;
    uint32_t argc;
    const char *const *argv;
    /* 3.1: where the process stood in a parallel job, from its launcher's environment
     * (interpose/launch.h lists the variables); -1 / NULL when unknown. A writer MUST set
     * them (-1 / NULL when it does not know): 0 is rank 0. */
    int32_t rank;       /* global rank (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID) */
    int32_t local_rank; /* rank on its host (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, ...) */
    int32_t world_size; /* processes in the job (WORLD_SIZE, OMPI_COMM_WORLD_SIZE, ...) */
    const char *job_id; /* SLURM_JOB_ID, TORCHELASTIC_RUN_ID, ... */
};

struct cmt_module {
    uint32_t id;
    const char *path;
    uint64_t base, size; /* load address and mapped extent */
    const uint8_t *build_id;
    uint32_t build_id_len;
};

struct cmt_device {
    int32_t dev;
    const char *name;
    uint64_t total_bytes;
    uint64_t free_bytes; /* at first use */
    uint64_t t_ns;
};

enum cmt_meminfo_reason {
    CMT_MEMINFO_BASELINE = 0, /* first use of the device */
    CMT_MEMINFO_OOM = 1,      /* right after a failed allocation */
    CMT_MEMINFO_EXIT = 2,     /* at the end of tracing */
};

struct cmt_meminfo {
    uint64_t t_ns;
    int32_t dev;
    uint32_t reason; /* enum cmt_meminfo_reason */
    uint64_t free_bytes, total_bytes;
    uint64_t seq; /* the event it follows (for OOM samples) */
};

enum cmt_note_level { CMT_NOTE_INFO = 0, CMT_NOTE_WARNING = 1, CMT_NOTE_ERROR = 2 };

struct cmt_note {
    uint32_t level;
    const char *text;
};

struct cmt_signal {
    uint64_t t_ns;
    uint32_t signo;
    uint32_t tid;
};

struct cmt_end {
    uint64_t t_ns;
    uint64_t events;  /* events the shim recorded */
    uint64_t dropped; /* events it could not keep (0 unless tracing was shut off) */
};

struct cmt_symbol {
    uint32_t node;     /* STACK_NODE id */
    uint32_t function; /* STRING id, 0 = unknown */
    uint32_t file;     /* STRING id, 0 = unknown */
    uint32_t line;     /* 0 = unknown */
    uint32_t module;   /* MODULE id, 0 = unknown */
};

struct cmt_api {
    uint32_t id;
    uint32_t op; /* enum cmt_op */
    const char *name;
};

struct cmt_stack_node {
    uint32_t id, parent;
    uint64_t ip;
};

struct cmt_thread {
    uint32_t tid;
    const char *name;
};

/* Allocator-level records (3.1): what happens inside a sub-allocator that serves the program
 * from memory it got from the driver (PyTorch's caching allocator, a pool, an arena). The
 * driver sees only segments; these say which blocks the program holds inside them.
 *
 * Actions: name, value, text (the text is PyTorch's memory-snapshot action name). */
#define CMT_ALLOC_ACTIONS(X)                                                                       \
    X(ALLOC, 1, "alloc")                   /* block handed out: addr, size, requested */           \
    X(FREE_REQUESTED, 2, "free_requested") /* the program freed it; the stream may still use it */ \
    X(FREE_COMPLETED, 3, "free_completed") /* the block is back in the cache */                    \
    X(SEGMENT_ALLOC, 4, "segment_alloc")   /* memory got from the driver: addr, size */            \
    X(SEGMENT_FREE, 5, "segment_free")     /* memory given back to the driver */                   \
    X(SEGMENT_MAP, 6, "segment_map")       /* pages mapped into an expandable segment */           \
    X(SEGMENT_UNMAP, 7, "segment_unmap")   /* pages unmapped from one */                           \
    X(OOM, 8, "oom")                       /* a request failed: size = rounded request */          \
    X(SNAPSHOT, 9, "snapshot")             /* the program took a memory snapshot here */

enum cmt_alloc_action {
#define CMT__AA_ENUM(name, value, text) CMT_AA_##name = value,
    CMT_ALLOC_ACTIONS(CMT__AA_ENUM)
#undef CMT__AA_ENUM
        CMT_AA_MAX
};

/* Optional fields of an ALLOC_EVENT, in bit order (its field mask says which follow). */
#define CMT_ALLOC_FIELDS(X)          \
    X(ADDR, 0, addr)                 \
    X(SIZE, 1, size)                 \
    X(REQUESTED, 2, requested)       \
    X(STREAM, 3, stream)             \
    X(POOL, 4, pool)                 \
    X(SEGMENT, 5, segment)           \
    X(DEVICE_FREE, 6, device_free)   \
    X(DEVICE_TOTAL, 7, device_total) \
    X(ALLOCATED, 8, allocated)       \
    X(RESERVED, 9, reserved)         \
    X(FLAGS, 10, flags)              \
    X(SEQ, 11, seq)

enum cmt_alloc_field {
#define CMT__AFIELD_ENUM(name, bit, member) CMT_AFIELD_##name = bit,
    CMT_ALLOC_FIELDS(CMT__AFIELD_ENUM)
#undef CMT__AFIELD_ENUM
        CMT_NAFIELDS
};
#define CMT_AF(name) (UINT32_C(1) << CMT_AFIELD_##name)

/* ALLOC_EVENTS (3.3): consecutive ALLOC_EVENTs column by column, as EVENTS holds EVENTs. The
 * head column holds each one's allocator, action, tid, zigzag dev, stack and fields mask; the
 * time column its t_ns as a zigzag delta from the previous one's in the chunk; column
 * CMT_ACOL_VALUES + f the values of field f, each a zigzag delta from the previous value of f in
 * the chunk. A sub-allocator's reports repeat their shape and their blocks' sizes, so all but
 * the time column compress to almost nothing. */
#define CMT_ACOL_HEAD 0
#define CMT_ACOL_TIME 1
#define CMT_ACOL_VALUES 2
#define CMT_NACOLS (CMT_ACOL_VALUES + CMT_NAFIELDS)

/* Bits of the FLAGS field. */
#define CMT_AFLAG_BEFORE 1u     /* existed before the recorded window (time unknown) */
#define CMT_AFLAG_EXPANDABLE 2u /* an expandable segment, or a block inside one */
#define CMT_AFLAG_SMALL 4u      /* the small-request pool */

/* ALLOCATOR: declares sub-allocator `id` (>= 1) and the settings it runs with; repeated when
 * they change (the last one before an event applies). */
struct cmt_alloc_info {
    uint32_t id;
    uint64_t t_ns;
    int32_t dev;         /* -1: every device */
    const char *name;    /* e.g. "pytorch-cuda-caching" */
    const char *version; /* the allocator's (e.g. PyTorch's) version, "" unknown */
    const char *conf;    /* its settings as the user wrote them (PYTORCH_CUDA_ALLOC_CONF) */
};

/* ALLOC_EVENT: one action of sub-allocator `allocator`. File order is event order. */
struct cmt_alloc_event {
    uint32_t allocator, action; /* ALLOCATOR id; enum cmt_alloc_action */
    uint64_t t_ns;              /* from the trace's start, as EVENT's */
    uint32_t tid;
    int32_t dev;
    uint32_t stack;  /* leaf STACK_NODE id, 0 = none */
    uint32_t fields; /* mask of CMT_AF() bits: which of v[] are meaningful */
    uint64_t v[CMT_NAFIELDS];
};

/* Ranges (3.2): the program's own phases, named by NVTX (push/pop, start/end, domains,
 * categories; the shim is an NVTX injection library), annotate.h's cmt_annotate_range or a
 * PyTorch snapshot's external_annotations. Actions: name, value, text. */
#define CMT_RANGE_ACTIONS(X)                                                                   \
    X(PUSH, 1, "push")         /* a range opens on its thread, inside the ones open there */   \
    X(POP, 2, "pop")           /* the thread's innermost open push range of `domain` closes */ \
    X(START, 3, "start")       /* range `id` opens; it may end on another thread */            \
    X(END, 4, "end")           /* range `id` closes */                                         \
    X(MARK, 5, "mark")         /* an instant */                                                \
    X(DOMAIN, 6, "domain")     /* names domain `domain` (message = its name) */                \
    X(CATEGORY, 7, "category") /* names `category` of `domain` (message = its name) */

enum cmt_range_action {
#define CMT__RA_ENUM(name, value, text) CMT_RA_##name = value,
    CMT_RANGE_ACTIONS(CMT__RA_ENUM)
#undef CMT__RA_ENUM
        CMT_RA_MAX
};

/* RANGE: one range action. File order is the order they happened in. */
struct cmt_range {
    uint32_t action;     /* enum cmt_range_action */
    uint64_t t_ns;       /* from the trace's start, as EVENT's */
    uint32_t tid;        /* the thread that made the call */
    uint32_t domain;     /* 0: the default domain; others named by a DOMAIN action */
    uint32_t category;   /* 0: none */
    uint64_t id;         /* START/END: the range's id (unique in the trace); 0 otherwise */
    const char *message; /* PUSH, START, MARK: the range's name; DOMAIN, CATEGORY: the name */
    int have_seq;        /* seq is set: the range follows that driver EVENT */
    uint64_t seq;
};

/* Names of ops, fields, record types, allocator actions and allocator fields, from the tables
 * above (NULL when out of range). */
const char *cmt_op_name(uint32_t op);
const char *cmt_field_name(uint32_t field);
const char *cmt_record_name(uint32_t type);
const char *cmt_alloc_action_name(uint32_t action);
const char *cmt_alloc_field_name(uint32_t field);
const char *cmt_range_action_name(uint32_t action);

#endif
