/* ledger.h — every byte of a device accounted for at a moment: its capacity split into rows
 * that add up exactly (docs/analysis.md, "The ledger").
 *
 * At each moment asked (an out-of-memory failure, the end, any time, the process peak) and for
 * each device, the rows are: live tensors and cached-but-free bytes inside an allocator's
 * segments, by allocator and pool (a pool other than 0, such as a CUDA-graph private pool, is
 * its own row), from the allocator-level view (allocator.h); the other driver allocations of
 * this process by owning library (CMT_LEDGER_OWNER_FRAMES: NCCL, cuBLAS, cuDNN, ...) or, for
 * user code, by call site; CUDA graph memory (the driver's graph pool, live and retained);
 * bytes retained by stream-ordered pools; the rounding of allocations to the driver's
 * granularity; the runtime/context overhead (the device's used memory when the process first
 * used it: its context, and what other processes held then, which one trace cannot tell
 * apart); other processes since (total - free - this process - context, at the last free/total
 * sample);
 * free; and the residual (capacity minus every row), shown, never hidden. On simcuda the
 * residual is 0.
 *
 * Owners come from the allocation's stack: its innermost frame that matches a pattern of
 * CMT_LEDGER_OWNER_FRAMES (function name, source file or module base name, '*' globbing, as
 * frames.h) names the owner; a stack none matches is user code, named by its call site
 * (frames.h). Stacks are classified at finish, once symbols are read. */
#ifndef CMT_LEDGER_H
#define CMT_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#include "allocator.h"
#include "replay.h"

/* The rows: X(name, key, label). */
/* clang-format off */
#define CMT_LEDGER_ROWS(X)                                                                  \
    X(TENSORS, "tensors", "live tensors")            /* an allocator's blocks, per pool */  \
    X(CACHED, "cached", "cached, free in segments")  /* its segments less its blocks */     \
    X(DRIVER, "driver", "driver allocations")        /* outside segments, by owner */       \
    X(GRAPH, "graph", "CUDA graph memory")           /* graph pool: live and retained */    \
    X(POOLS, "pools", "stream-ordered pools, retained")                                     \
    X(ROUNDING, "rounding", "rounding to 2 MiB pages") /* granularity */                    \
    X(CONTEXT, "context", "runtime/context overhead and others at first use")               \
    X(OTHERS, "others", "other processes since")                                            \
    X(FREE, "free", "free")
/* clang-format on */

enum cmt_ledger_row_type {
#define CMT__LEDGER_ROW_ENUM(name, key, label) CMT_LEDGER_##name,
    CMT_LEDGER_ROWS(CMT__LEDGER_ROW_ENUM)
#undef CMT__LEDGER_ROW_ENUM
        CMT_LEDGER_ROW_TYPES
};
/* @return the row type's JSON key ("tensors", ...) or label ("live tensors", ...); "?" when
 * out of range. */
const char *cmt_ledger_row_key(int type);
const char *cmt_ledger_row_label(int type);

/* The owners of driver allocations: X(name, key, label). USER is the default. */
#define CMT_LEDGER_OWNERS(X)              \
    X(NCCL, "nccl", "NCCL")               \
    X(CUBLAS, "cublas", "cuBLAS")         \
    X(CUDNN, "cudnn", "cuDNN")            \
    X(CUFFT, "cufft", "cuFFT")            \
    X(CUSOLVER, "cusolver", "cuSOLVER")   \
    X(CUSPARSE, "cusparse", "cuSPARSE")   \
    X(PYTORCH, "pytorch", "PyTorch")      \
    X(CUDART, "cudart", "CUDA runtime")   \
    X(NO_STACK, "no_stack", "(no stack)") \
    X(USER, "user", "user code")

enum cmt_ledger_owner {
#define CMT__LEDGER_OWNER_ENUM(name, key, label) CMT_OWNER_##name,
    CMT_LEDGER_OWNERS(CMT__LEDGER_OWNER_ENUM)
#undef CMT__LEDGER_OWNER_ENUM
        CMT_OWNER_COUNT
};
const char *cmt_ledger_owner_key(int owner);
const char *cmt_ledger_owner_label(int owner);

/* Frames that name an owner: X(owner, what, pattern), what as frames.h (FUNCTION, SOURCE,
 * MODULE). The innermost matching frame of a stack wins (cuBLAS called by PyTorch is cuBLAS's). */
/* clang-format off */
#define CMT_LEDGER_OWNER_FRAMES(X)                                                   \
    X(NCCL, MODULE, "libnccl*")        X(NCCL, FUNCTION, "nccl*")                    \
    X(NCCL, FUNCTION, "*ncclCuMem*")                                                 \
    X(CUBLAS, MODULE, "libcublas*")    X(CUBLAS, FUNCTION, "cublas*") /* and Lt */   \
    X(CUDNN, MODULE, "libcudnn*")      X(CUDNN, FUNCTION, "cudnn*")                  \
    X(CUFFT, MODULE, "libcufft*")      X(CUFFT, FUNCTION, "cufft*")                  \
    X(CUSOLVER, MODULE, "libcusolver*") X(CUSOLVER, FUNCTION, "cusolver*")           \
    X(CUSPARSE, MODULE, "libcusparse*") X(CUSPARSE, FUNCTION, "cusparse*")           \
    X(PYTORCH, MODULE, "libtorch_cuda*") X(PYTORCH, MODULE, "libc10_cuda*")          \
    X(PYTORCH, FUNCTION, "c10::cuda::*")                                             \
    X(CUDART, FUNCTION, "cudart::*")   X(CUDART, FUNCTION, "__cudart*")
/* clang-format on */

/* Why a moment was taken (a mask: one moment may be several). */
enum {
    CMT_LEDGER_AT_OOM = 1u,  /* an out-of-memory failure (the state at the failed call) */
    CMT_LEDGER_AT_END = 2u,  /* the end of the trace */
    CMT_LEDGER_AT_TIME = 4u, /* a time asked (cmt_ledger_options.times) */
    /* the process peak (cmt_replay_totals' peak_t_ns): the state after every event at or
     * before its time, as CMT_LEDGER_AT_TIME at that time gives it. Kept during the replay
     * when it can be (see cmt_ledger_options.peak_budget); else no moment has it and a
     * second replay to the peak's time must take it. */
    CMT_LEDGER_AT_PEAK = 8u,
};

#define CMT_LEDGER_USER_SITES 8 /* user-code call sites shown; the rest are one row */

struct cmt_ledger_row {
    int type;              /* enum cmt_ledger_row_type */
    uint32_t allocator;    /* TENSORS, CACHED: the ALLOCATOR id */
    uint64_t pool;         /* TENSORS, CACHED: the pool (0 the default; else a private pool) */
    int owner;             /* DRIVER: enum cmt_ledger_owner */
    uint32_t stack;        /* DRIVER of user code: the call site's largest stack (0: the rest) */
    uint64_t bytes, count; /* count: allocations (DRIVER), blocks (TENSORS) */
};

/* One device at one moment. The rows (every type but FREE may have several, in the order of
 * CMT_LEDGER_ROWS; zero rows are left out, except FREE when the capacity is known) sum with residual_bytes to
 * total_bytes. When the capacity was never measured (total_bytes 0: a snapshot without device
 * figures) the rows are this process's alone (no FREE row), others and residual 0. */
struct cmt_ledger_moment {
    unsigned why;       /* CMT_LEDGER_AT_* */
    uint64_t t_ns, seq; /* t: the moment; seq: the last event applied (0: none yet) */
    size_t time_index;  /* CMT_LEDGER_AT_TIME: which options.times[] */
    int32_t dev;
    uint64_t total_bytes;   /* capacity: the last sample's total (0: never measured) */
    int free_measured;      /* free is a sample taken at this moment (else derived) */
    uint64_t process_bytes; /* this process: every row above CONTEXT */
    uint64_t context_bytes, others_bytes, free_bytes;
    int64_t residual_bytes; /* total - the rows: 0 when everything is accounted */
    struct cmt_ledger_row *rows;
    size_t row_count;
};

struct cmt_ledger_options {
    unsigned at; /* CMT_LEDGER_AT_OOM | CMT_LEDGER_AT_END */
    /* times to take (ns from the trace's start, ascending): the state after every event at or
     * before each; each device seen by then */
    const uint64_t *times;
    size_t time_count;
    /* CMT_LEDGER_AT_PEAK: the most (device, call site) sums kept for it (0: 1M, 24 MiB); past
     * them, or when the clock goes backwards, an event changes the live set other than object
     * by object (a reset, a graph launch, an address reused without its free), or the trace
     * has allocator records, the peak is not kept */
    size_t peak_budget;
    /* also the times of the trace's own moments, taken as times are: the first out-of-memory
     * failure of each device (a driver's failure or an allocator's OOM record, at its t_ns) and
     * the last event's time; they join times in order (cmt_ledger_times). So a caller that
     * needs the state at one of them (report DIR: a GPU's moment is a member's first failure on
     * it, else its end) takes it in the same replay */
    int own_times;
};

typedef struct cmt_ledger cmt_ledger;

/* a: the allocator-level view (not owned; its observer runs before the ledger's), NULL when
 * none. @return 0 or CMT_ENOMEM. */
int cmt_ledger_create(cmt_ledger **out, const cmt_alloc *a, const struct cmt_ledger_options *o);
void cmt_ledger_destroy(cmt_ledger *l);
/* The ledger as a replay observer (records, OOM failures and samples, every event when it keeps
 * the peak; moments by before_t). */
struct cmt_observer cmt_ledger_observer(cmt_ledger *l);

/* The moments taken, in time order, then the peak's (CMT_LEDGER_AT_PEAK, one per device seen
 * by then) when kept (valid after the replay's finish). */
size_t cmt_ledger_count(const cmt_ledger *l);
/* The times taken (options.times and, with own_times, the trace's own, ascending; valid after
 * the replay's finish): a CMT_LEDGER_AT_TIME moment's time_index is its index here. */
const uint64_t *cmt_ledger_times(const cmt_ledger *l, size_t *count);
const struct cmt_ledger_moment *cmt_ledger_moment(const cmt_ledger *l, size_t i);
/* @return the first moment of device dev taken for `why` (and, for CMT_LEDGER_AT_TIME, of
 * times[time_index]), or NULL. */
const struct cmt_ledger_moment *cmt_ledger_find(const cmt_ledger *l, unsigned why, int32_t dev,
                                                size_t time_index);

/* Several processes on one GPU at one moment (their moments of that GPU's device): their
 * bytes, what the GPU held beyond them (contexts and untraced processes: total - free - the
 * processes), free (a member's measured free, else what the processes leave: total - the processes) and
 * the residual. */
struct cmt_ledger_combined {
    uint64_t total_bytes, processes_bytes, shared_bytes, free_bytes;
    int64_t residual_bytes;
    int free_measured;
};
void cmt_ledger_combine(const struct cmt_ledger_moment *const *m, size_t n,
                        struct cmt_ledger_combined *out);

/* The owner of allocation stack `stack` (CMT_OWNER_USER when no frame names one). */
int cmt_ledger_owner_of(const cmt_reader *r, uint32_t stack);

#endif
