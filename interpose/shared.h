/* shared.h — the memory a traced process shares with `cumemtrace record` (internal).
 *
 * Under `record` (CUMEMTRACE_SALVAGE_DIR names a directory it created) each trace has a state
 * file there, mapped MAP_SHARED: a header, the device table, the stack nodes and every
 * thread's ring. An entry stays in its ring until the chunk holding it is on disk, so when the
 * process dies without writing it (SIGKILL, the OOM killer, the loader's _exit) `record`,
 * which outlives it, appends what is missing (salvage.c). Without the directory (a bare
 * LD_PRELOAD) the same structures live in private memory. Needs no CUDA header: the CLI's
 * salvage reads this layout too. Docs: docs/capture.md. */
#ifndef CMT__SHARED_H
#define CMT__SHARED_H

#include <stdatomic.h>
#include <stdint.h>

#include "cmt_format.h"

/* No entry point records more fields than this; an allocator event (annotate.h) keeps the
 * first 8 of the fields it reports, in bit order (the helpers report at most 7). */
#define CMT__ENTRY_VALUES 8

/* Entry kinds, in the order a thread's entries with the same seq are written. */
enum cmt__queued_kind {
    CMT__ENTRY_DEVICE = 0,   /* ev.dev: first use of a device (devices[] holds the details) */
    CMT__ENTRY_BASELINE = 1, /* ev.dev, v[FREE], v[TOTAL]: MEMINFO at first use */
    CMT__ENTRY_EVENT = 2,
    CMT__ENTRY_OOM = 3, /* ev.dev, v[FREE], v[TOTAL]: MEMINFO after an OOM failure */
    /* An ALLOC_EVENT (annotate.h): api = allocator id, result = action, fields/v = its
     * CMT_AF() fields. It takes a seq of its own, so it has its exact place among the events;
     * records leave numbered by the writer (emit.c): EVENT seqs count driver events only. */
    CMT__ENTRY_ALLOC = 4,
    /* A RANGE (NVTX, annotate.h's ranges; nvtx.c): api = action, result = domain, dev =
     * category, stack = range id, fields = the message's length, v = its bytes (at most
     * CMT__RANGE_TEXT: copied into the ring, no allocation). A seq of its own, like an
     * ALLOC entry's. */
    CMT__ENTRY_RANGE = 5,
};
#define CMT__RANGE_TEXT 64 /* bytes of a range's message kept (sizeof the entry's v) */
#define CMT__ENTRY_KINDS 8 /* kinds take the low 3 bits of cmt__queued_order */

/* A queued event, packed: only the values named by `fields` are stored, in bit order. Its seq
 * is when the call happened, in ticks since start (recorder.c), strictly increasing along a
 * thread's entries but for the entries of one call (they share it); t_ns is the same value. */
struct cmt__queued {
    uint64_t seq, t_ns;
    uint32_t tid, fields, stack;
    int32_t result, dev;
    uint16_t api;
    uint8_t kind;
    uint64_t v[CMT__ENTRY_VALUES];
};

/* Entries are written in (seq, tid, kind) order, a total order of every entry of a trace
 * (two threads may take the same seq); cmt__queued_order is an entry's place in it. */
__extension__ typedef unsigned __int128 cmt__order;
#define CMT__ORDER_MAX (~(cmt__order)0)
/* The place of the first entry with a seq of at least `seq`. */
static inline cmt__order cmt__order_of_seq(uint64_t seq)
{
    return (cmt__order)seq << 64;
}
static inline cmt__order cmt__queued_order(const struct cmt__queued *e)
{
    return cmt__order_of_seq(e->seq) | (uint64_t)e->tid * CMT__ENTRY_KINDS |
           (e->kind & (CMT__ENTRY_KINDS - 1));
}

/* The number of bits set in x (no popcnt instruction assumed: libgcc's is a call). */
static inline uint32_t cmt__bits_set(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    return (((x + (x >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24;
}

/* The bits of `fields` an entry keeps values of: the first CMT__ENTRY_VALUES of them. */
static inline uint32_t cmt__queued_kept_fields(uint32_t fields)
{
    if (__builtin_expect(cmt__bits_set(fields) <= CMT__ENTRY_VALUES, 1))
        return fields;
    uint32_t kept = 0, m = fields;
    for (int i = 0; i < CMT__ENTRY_VALUES; i++, m &= m - 1)
        kept |= m & -m;
    return kept;
}

/* Stores values v[bit] of the bits of `fields`, the first CMT__ENTRY_VALUES of them.
 * @return the bits kept. */
static inline uint32_t cmt__queued_pack_values(struct cmt__queued *e, uint32_t fields,
                                               const uint64_t *v)
{
    fields = cmt__queued_kept_fields(fields);
    uint32_t n = 0;
    for (uint32_t m = fields; m; m &= m - 1)
        e->v[n++] = v[__builtin_ctz(m)];
    return fields;
}

static inline void cmt__queued_pack(struct cmt__queued *e, uint32_t kind,
                                    const struct cmt_event *ev)
{
    e->seq = ev->seq;
    e->t_ns = ev->t_ns;
    e->tid = ev->tid;
    e->stack = ev->stack;
    e->result = ev->result;
    e->dev = ev->dev;
    e->api = (uint16_t)ev->api;
    e->kind = (uint8_t)kind;
    e->fields = cmt__queued_pack_values(e, ev->fields, ev->v);
}

static inline void cmt__queued_unpack(const struct cmt__queued *e, struct cmt_event *ev)
{
    ev->seq = e->seq;
    ev->t_ns = e->t_ns;
    ev->tid = e->tid;
    ev->stack = e->stack;
    ev->result = e->result;
    ev->dev = e->dev;
    ev->api = e->api;
    ev->fields = e->fields;
    uint32_t n = 0;
    for (uint32_t m = e->fields; m; m &= m - 1)
        ev->v[__builtin_ctz(m)] = e->v[n++];
}

#define CMT__RING_SIZE 8192 /* entries per thread, bare LD_PRELOAD (~830 KiB) */
#define CMT__SHARED_RING_SIZE \
    (1 << 17) /* under record (13 MiB of a sparse file, touched as used) */
/* Under an address-space limit a ring has fewer entries (cmt__ring_entries), never fewer than
 * this; in the state file it still takes a slot of CMT__SHARED_RING_SIZE, the rest a hole. */
#define CMT__RING_MIN 256

/* A thread's ring. The owner writes [head]; the writer copies out up to `head` (then `tail`),
 * and once those entries are on disk advances `released`; the owner may reuse a slot below
 * `released` only. Without salvage `released` follows `tail`. The fields the owner writes on
 * every call and those the writer writes on each drain are on cache lines of their own, so
 * that neither side's stores take the other's line away from it (false sharing: 8 threads on
 * 2 cores paid for it on every call). */
#define CMT__CACHE_LINE 64
struct cmt__thread {
    /* the owner's line: written on every call */
    _Alignas(CMT__CACHE_LINE) _Atomic uint64_t head; /* written by the owning thread */
    _Atomic uint64_t pending;
    uint64_t last_ticks; /* cmt__ticks() of its last seq (0: none); owner only, kept across
                          * traces (a new trace's seqs start at its own start_ticks) */
    void *ctx;           /* cache of the current context's device */
    int32_t dev;         /* (ctx and next mean nothing outside the process) */
    uint32_t mask;       /* entries - 1 (never written once the ring is in use) */
    /* the owner's last read of `released` (a lower bound of it: released only grows), read
     * again only when the ring looks full or half full, so that a call does not fetch the
     * writer's line after each of its drains */
    uint64_t released_seen;
    /* the writer's line: written on each drain */
    _Alignas(CMT__CACHE_LINE) _Atomic uint64_t tail; /* entries below it are copied out */
    _Atomic uint64_t released;                       /* entries below it are on disk */
    uint64_t populated;       /* ring pages are prefaulted up to this entry (a hint) */
    uint64_t populate_head;   /* `head` at the writer's last prefault (the window's size) */
    _Atomic uint32_t drained; /* futex word: bumped by the writer after releasing entries */
    /* seldom written */
    _Alignas(CMT__CACHE_LINE) _Atomic uint32_t waiting; /* the owner sleeps on `drained` */
    _Atomic int alive;
    uint32_t tid;
    char name[16]; /* the thread's name at its first call (for salvage) */
    struct cmt__thread *next;
    _Alignas(CMT__CACHE_LINE) struct cmt__queued ring[];
};

/* A sub-allocator declared through annotate.h (ALLOCATOR record); id = index + 1. */
#define CMT__MAX_ALLOCATORS 64
struct cmt__allocator_decl {
    _Atomic uint32_t ready; /* 1: filled in */
    int32_t dev;
    uint64_t t_ticks; /* when it was declared: cmt__ticks() (the state file's: since start) */
    char name[64], version[64], conf[1024];
};

struct cmt__device_info {
    _Atomic int state; /* 0 unseen, 1 being queried, 2 known */
    char name[256];
    uint64_t total, free;
};

/* Stack nodes, in chunks (stack.c): node n is chunk[n >> BITS], slot n & (NODES - 1). */
#define CMT__NODE_CHUNK_BITS 16
#define CMT__NODE_CHUNK_NODES (1u << CMT__NODE_CHUNK_BITS)
#define CMT__MAX_NODES (1u << 21)
#define CMT__NODE_CHUNKS (CMT__MAX_NODES / CMT__NODE_CHUNK_NODES + 1)
struct cmt__node_chunk {
    uint32_t parent[CMT__NODE_CHUNK_NODES];
    uint64_t ip[CMT__NODE_CHUNK_NODES];
};

/* What the trace file holds, published by the writer after each chunk it writes. */
struct cmt__on_disk {
    cmt__order order; /* entries whose cmt__queued_order is below this are in them */
    uint64_t offset;  /* bytes of the trace that are whole chunks */
    uint64_t last_t;  /* the last timestamp written (salvaged ones never go back) */
    double ns_per_tick;
    uint32_t nodes;      /* stack nodes 1..nodes are in them */
    uint32_t tids;       /* the first `tids` of tid[] have THREAD records in them */
    uint32_t allocators; /* ALLOCATOR records of allocators[0 .. allocators-1] are in them */
    uint64_t events;     /* EVENT records are in them (the next one's seq) */
};

#define CMT__SHARED_MAGIC "CMTSHM5" /* 5: seqs are ticks, the writer numbers events */
#define CMT__SHARED_TIDS 4096

struct cmt__shared_header {
    char magic[8];
    uint32_t header_bytes, ring_entries;
    int32_t pid, use_tsc;
    _Atomic uint32_t rings;      /* ring slots in use */
    _Atomic uint32_t nodes;      /* stack nodes created (their contents stored first) */
    _Atomic uint32_t done;       /* 1: the trace was written whole (nothing to salvage) */
    uint32_t tid_count;          /* tid[] entries, written by the writer */
    _Atomic uint64_t generation; /* on_disk[generation & 1] is whole */
    struct cmt__on_disk on_disk[2];
    char trace[4096]; /* the trace's path; empty until it is open */
    uint32_t tid[CMT__SHARED_TIDS];
    struct cmt__allocator_decl allocators[CMT__MAX_ALLOCATORS]; /* a copy of the shim's */
};

/* The state file's layout: header, devices, node chunks, then the rings. */
#define CMT__SHARED_PAGE 4096u
#define CMT__SHARED_ROUND(n) (((n) + CMT__SHARED_PAGE - 1) / CMT__SHARED_PAGE * CMT__SHARED_PAGE)
#define CMT__SHARED_DEVICES_AT CMT__SHARED_ROUND(sizeof(struct cmt__shared_header))
#define CMT__SHARED_NODES_AT \
    (CMT__SHARED_DEVICES_AT + CMT__SHARED_ROUND(sizeof(struct cmt__device_info) * CMT_MAX_DEVICES))
#define CMT__SHARED_CHUNK_BYTES CMT__SHARED_ROUND(sizeof(struct cmt__node_chunk))
#define CMT__SHARED_RINGS_AT \
    (CMT__SHARED_NODES_AT + (uint64_t)CMT__SHARED_CHUNK_BYTES * CMT__NODE_CHUNKS)
#define CMT__RING_BYTES(entries) \
    CMT__SHARED_ROUND(sizeof(struct cmt__thread) + sizeof(struct cmt__queued) * (uint64_t)(entries))

#endif
