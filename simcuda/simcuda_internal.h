/* simcuda internals: the simulated driver's state, shared by its modules.
 *
 * simcuda is test and demo infrastructure, not a driver: it keeps books on device memory
 * (pages, addresses, handles, pools, contexts) so that a tracer can be tested without a GPU.
 * Everything is guarded by one mutex; it is a simulator, not a performance target.
 */
#ifndef SIMCUDA_INTERNAL_H
#define SIMCUDA_INTERNAL_H

/* Prototypes for every exported variant (legacy, _v2, _ptsz, _ptds), so the compiler checks
 * each definition against the real header. */
#define __CUDA_API_VERSION_INTERNAL
#include <cuda.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The library is built with hidden visibility; only driver entry points are exported. */
#define SIMCUDA_EXPORT __attribute__((visibility("default")))

/* Model constants (documented in README.md). */
#define SIMCUDA__DRIVER_VERSION 13000
#define SIMCUDA__MAX_DEVICES 8
#define SIMCUDA__PAGE_SIZE ((uint64_t)2 << 20)
#define SIMCUDA__DEFAULT_MEMORY ((uint64_t)24 << 30)
#define SIMCUDA__DEFAULT_CONTEXT_OVERHEAD ((uint64_t)256 << 20)
#define SIMCUDA__VA_BASE 0x7f0000000000ull
#define SIMCUDA__VA_STRIDE 0x10000000000ull /* 1 TiB of address space per device */
/* Legacy v1 calls return 32-bit device pointers, so they get a small window below 4 GiB. */
#define SIMCUDA__LEGACY_VA_BASE 0x80000000ull
#define SIMCUDA__LEGACY_VA_STRIDE 0x10000000ull /* 256 MiB per device */
/* Managed memory: its own window per device, backed by host pages where the host allows. */
#define SIMCUDA__MANAGED_VA_BASE 0x600000000000ull
#define SIMCUDA__PITCH_ALIGNMENT 512
#define SIMCUDA__CTX_STACK_MAX 32
#define SIMCUDA__HANDLE_TAG 0x51ca000000000000ull    /* CUmemGenericAllocationHandle = tag | id */
#define SIMCUDA__MULTICAST_TAG 0x51cb000000000000ull /* a multicast object's handle = tag | id */
#define SIMCUDA__MULTICAST_RECOMMENDED ((uint64_t)512 << 20)

enum simcuda__range_kind {
    SIMCUDA__RANGE_ALLOC,       /* struct simcuda__alloc: cuMemAlloc*, managed, IPC opens */
    SIMCUDA__RANGE_POOL_BLOCK,  /* struct simcuda__pool_block: stream-ordered allocations */
    SIMCUDA__RANGE_RESERVATION, /* struct simcuda__reservation: cuMemAddressReserve */
    SIMCUDA__RANGE_GRAPH,       /* struct simcuda__graph_alloc: a graph allocation node */
};

/* One used range of a device's address space; entries are kept sorted by base. */
struct simcuda__va_entry {
    CUdeviceptr base;
    uint64_t size;
    enum simcuda__range_kind kind;
    void *object;
};

struct simcuda__va_space {
    CUdeviceptr start;
    uint64_t size;
    struct simcuda__va_entry *entries;
    size_t count;
    size_t capacity;
    /* SIMCUDA_REUSE_ADDRESSES=0: reservations without a hint start at or above `high_water`,
     * the end of the highest range handed out so far. */
    bool never_reuse;
    CUdeviceptr high_water;
    /* the gaps between entries, for first fit in O(log n) (simcuda_free_ranges.c); built
     * from entries on first use, dropped (and rebuilt) when memory for them runs out */
    struct simcuda__free_range *free_root;
    bool free_built;
    uint64_t free_seed; /* the treap's priorities: a fixed sequence, so runs repeat */
};

/* Physical memory: whole pages of one device. Freed when no handle reference and no mapping
 * is left (cuMemAlloc memory is one mapping and no handle). */
struct simcuda__phys {
    unsigned long long id;
    int device;
    uint64_t size;
    uint64_t pages;
    unsigned handle_refs;
    unsigned map_count;
    bool vmm; /* made by cuMemCreate: reachable through handles, not through IPC */
    CUmemAllocationProp prop;
    /* Imported from another process's shareable handle: that process and its id there
     * (0, 0 for memory made here). */
    long origin_pid;
    unsigned long long origin_id;
};

/* POOL_IMPORT: cuMemPoolImportPointer's view of another process's pool block (no phys: it
 * takes no pages here; host maps the exporter's bytes). */
enum simcuda__alloc_type {
    SIMCUDA__ALLOC_DEVICE,
    SIMCUDA__ALLOC_MANAGED,
    SIMCUDA__ALLOC_IPC,
    SIMCUDA__ALLOC_POOL_IMPORT
};

struct simcuda__alloc {
    struct simcuda__phys *phys; /* NULL for a pool import */
    uint64_t size;              /* as requested; the address range spans whole pages */
    struct CUctx_st *ctx;
    enum simcuda__alloc_type type;
    void *host; /* managed memory: the host pages at the same address, NULL without any; a
                 * pool import: the exporter's bytes (the pool's memfd) */
};

struct simcuda__pool_block {
    struct CUmemPoolHandle_st *pool;
    CUdeviceptr base;
    uint64_t pages;
    uint64_t size; /* as requested by the live allocation */
    bool live;     /* false: freed to the pool and retained */
    struct CUctx_st *ctx;
    void *host;      /* an exportable pool's block: its bytes in the pool's memfd, else NULL */
    uint64_t offset; /* where in the memfd */
};

struct simcuda__mapping {
    CUdeviceptr base;
    uint64_t size;
    uint64_t offset;            /* into the physical allocation (or the multicast object) */
    struct simcuda__phys *phys; /* NULL for a mapping of a multicast object */
    struct simcuda__multicast *multicast; /* the multicast object mapped, or NULL */
};

/* One device's physical memory bound into a multicast object (it holds the memory as a
 * mapping does: phys->map_count). */
struct simcuda__binding {
    int device;
    uint64_t mc_offset;
    uint64_t size;
    struct simcuda__phys *phys;
};

/* A multicast object: a team of devices and their bound memory; no memory of its own. */
struct simcuda__multicast {
    unsigned long long id;
    CUmulticastObjectProp prop;
    int devices[SIMCUDA__MAX_DEVICES]; /* added so far, device_count of prop.numDevices */
    unsigned device_count;
    unsigned refs;      /* create, retain and import minus releases */
    unsigned map_count; /* live cuMemMap mappings of it */
    struct simcuda__binding *bindings;
    size_t binding_count;
    size_t binding_capacity;
    long origin_pid; /* imported: the exporting process and its object's id there (0, 0) */
    unsigned long long origin_id;
};

struct simcuda__reservation {
    int device; /* whose address space it was carved from */
    struct simcuda__mapping *mappings;
    size_t count;
    size_t capacity;
};

#define SIMCUDA__CTX_MAGIC 0x43545831u
#define SIMCUDA__STREAM_MAGIC 0x5354524du
#define SIMCUDA__POOL_MAGIC 0x504f4f4cu
#define SIMCUDA__MODULE_MAGIC 0x4d4f4455u

/* Contexts, streams, pools and modules are never freed, only marked dead, so a stale handle
 * is detected instead of read after free; they stay reachable through the lists. */
struct CUctx_st {
    uint32_t magic;
    int device;
    bool primary;
    bool alive;
    unsigned primary_refs;
    struct CUctx_st *next_all;
};

struct CUstream_st {
    uint32_t magic;
    bool alive;
    struct CUctx_st *ctx;
    unsigned flags;
    int priority;
    struct CUgraph_st *capture; /* the graph it captures into, NULL when not capturing */
    uint64_t capture_id;
    bool capture_invalidated; /* kept on the capture's origin stream */
    /* a stream joined into another's capture: that origin stream (NULL on the origin); its
     * memory nodes captured so far, and how many of them a wait of the capture has joined */
    struct CUstream_st *capture_origin;
    uint64_t capture_nodes;
    uint64_t capture_nodes_joined;
    struct CUstream_st *next_all;
};

struct CUmemPoolHandle_st {
    uint32_t magic;
    bool alive;
    bool is_default;
    int device;
    uint64_t release_threshold;
    uint64_t reserved_pages; /* live + retained */
    uint64_t used_pages;     /* live */
    uint64_t reserved_high_pages;
    uint64_t used_high_pages;
    int reuse_flags[3];
    /* pool IPC (simcuda_pool_ipc.c): an exportable pool (handle type POSIX fd) keeps its
     * blocks' bytes in one memfd, which an importing process maps too; -1 for other pools */
    int backing_fd;
    uint64_t backing_end; /* the memfd's next unused offset */
    bool imported;        /* cuMemPoolImportFromShareableHandle: pointers only, no allocations */
    int64_t origin_pid;   /* an imported pool: the exporting process and its pool there */
    uint64_t origin_pool;
    struct CUmemPoolHandle_st *next_all;
};

struct CUfunc_st {
    struct CUmod_st *module;
};

struct CUmod_st {
    uint32_t magic;
    bool alive;
    struct CUfunc_st function;
    struct CUmod_st *next_all;
};

struct simcuda__host_block {
    void *pointer;
    size_t size;
    unsigned flags; /* as given to cuMemHostAlloc or cuMemHostRegister */
    int registered; /* cuMemHostRegister: the program's own memory, pinned (never freed here) */
    struct simcuda__host_block *next;
};

struct simcuda__device {
    uint64_t capacity;
    uint64_t used_by_others;
    uint64_t pages_in_use; /* every page held: allocations, handles, pool-retained blocks */
    unsigned contexts_alive;
    struct simcuda__va_space va;
    struct simcuda__va_space legacy_va;
    struct simcuda__va_space managed_va;
    struct CUctx_st primary;
    struct CUmemPoolHandle_st default_pool;
    struct CUmemPoolHandle_st *current_pool;
};

struct simcuda__state {
    pthread_mutex_t lock;
    bool initialized;
    int device_count;
    uint64_t context_overhead;
    struct simcuda__device devices[SIMCUDA__MAX_DEVICES];
    struct simcuda__phys **phys; /* index id - 1; NULL once freed */
    size_t phys_count;
    size_t phys_capacity;
    struct CUctx_st *contexts;
    struct CUstream_st *streams;
    struct CUmemPoolHandle_st *pools;
    struct CUmod_st *modules;
    struct simcuda__host_block *host_blocks;
};

extern struct simcuda__state simcuda__state;

void simcuda__lock(void);
void simcuda__unlock(void);

/* simcuda_device.c */
CUresult simcuda__require_init(void);
CUresult simcuda__check_device(CUdevice device);
uint64_t simcuda__free_bytes(int device);

/* simcuda_free_ranges.c: an address space's free ranges, a treap keyed by address with the
 * longest range of each subtree (lock held). ready builds them from the entries once; fit
 * finds the lowest aligned address at or above floor where size fits; holds says whether
 * [base, base + size) is free; use and give_back take a range out and put it back (merging
 * with its neighbours). The bool calls return false when out of memory: then clear them, and
 * ready rebuilds them from the entries. */
bool simcuda__free_ranges_ready(struct simcuda__va_space *space);
bool simcuda__free_ranges_fit(const struct simcuda__va_space *space, uint64_t size,
                              uint64_t alignment, uint64_t floor, CUdeviceptr *out);
bool simcuda__free_ranges_holds(const struct simcuda__va_space *space, uint64_t base,
                                uint64_t size);
bool simcuda__free_ranges_use(struct simcuda__va_space *space, uint64_t base, uint64_t size);
bool simcuda__free_ranges_give_back(struct simcuda__va_space *space, uint64_t base, uint64_t size);
void simcuda__free_ranges_clear(struct simcuda__va_space *space);

/* simcuda_space.c: address spaces and physical pages (lock held). */
CUresult simcuda__va_reserve(struct simcuda__va_space *space, uint64_t size, uint64_t alignment,
                             CUdeviceptr hint, enum simcuda__range_kind kind, void *object,
                             CUdeviceptr *out);
void simcuda__va_release(struct simcuda__va_space *space, CUdeviceptr base);
struct simcuda__va_entry *simcuda__va_find(struct simcuda__va_space *space, CUdeviceptr address);
/* A device's address spaces: va, legacy_va, managed_va. */
#define SIMCUDA__SPACES 3
void simcuda__device_spaces(struct simcuda__device *dev,
                            struct simcuda__va_space *spaces[SIMCUDA__SPACES]);
struct simcuda__va_space *simcuda__space_of(CUdeviceptr address, int *device);
struct simcuda__va_entry *simcuda__find_range(CUdeviceptr address, int *device);
uint64_t simcuda__pages_for(uint64_t size);
CUresult simcuda__phys_create(int device, uint64_t size, struct simcuda__phys **out);
struct simcuda__phys *simcuda__phys_lookup(unsigned long long id);
void simcuda__phys_maybe_free(struct simcuda__phys *phys);
CUresult simcuda__check_device_range(CUdeviceptr address, uint64_t size);

/* simcuda_shared.c: SIMCUDA_SHARED=NAME, device memory shared across processes through
 * /dev/shm/simcuda-NAME (README.md). Each is a no-op when it is not set. */
void simcuda__shared_setup(void); /* at cuInit's setup: open the file, claim a slot */
void simcuda__shared_lock(void);  /* with simcuda's mutex: the cross-process lock */
void simcuda__shared_unlock(void);
void simcuda__shared_publish(void);          /* file lock held: this process's bytes per device */
uint64_t simcuda__shared_others(int device); /* bytes the other live processes hold */

/* simcuda_context.c */
struct CUctx_st *simcuda__current_context(void);
CUresult simcuda__require_context(struct CUctx_st **out);
CUresult simcuda__stream_context(CUstream stream, struct CUctx_st **out);
void simcuda__context_went_away(struct CUctx_st *ctx);

/* simcuda_memory.c */
void simcuda__free_context_memory(struct CUctx_st *ctx);
void simcuda__alloc_release(struct simcuda__va_space *space, struct simcuda__va_entry *entry);
/* Frees what starts at dptr: a cuMemAlloc allocation, a pool block (back to its pool) or graph
 * memory (to the graph pool); the lock held. @return CUDA_SUCCESS, what freeing it returned, or
 * CUDA_ERROR_INVALID_VALUE when nothing freeable starts there (an IPC mapping included). */
CUresult simcuda__free_at(CUdeviceptr dptr);

/* simcuda_host.c: whether [address, address + size) lies in one pinned host block (allocated
 * or registered), which under unified addressing is also a device address (lock held). */
bool simcuda__host_range_pinned(uint64_t address, uint64_t size);

/* simcuda_array.c: frees the arrays the context made (lock held). */
void simcuda__free_context_arrays(struct CUctx_st *ctx);

/* simcuda_vmm.c (lock held): the physical memory of a live cuMemCreate handle, the mapping
 * that contains address, or NULL. */
struct simcuda__phys *simcuda__vmm_handle_phys(CUmemGenericAllocationHandle handle);
const struct simcuda__mapping *simcuda__vmm_mapping_at(CUdeviceptr address);

/* simcuda_multicast.c (lock held, except the checks of arguments). */
bool simcuda__is_multicast_handle(CUmemGenericAllocationHandle handle);
CUmemGenericAllocationHandle simcuda__multicast_handle(const struct simcuda__multicast *mc);
/* The live object behind handle (one reference at least), or NULL. */
struct simcuda__multicast *simcuda__multicast_lookup(CUmemGenericAllocationHandle handle);
/* Whether every device of the team was added. */
bool simcuda__multicast_complete(const struct simcuda__multicast *mc);
/* Whether [offset, offset + size) of the object is bound (on some device). */
bool simcuda__multicast_bound(const struct simcuda__multicast *mc, uint64_t offset, uint64_t size);
/* Frees the object and its bindings once no reference and no mapping is left. */
void simcuda__multicast_maybe_free(struct simcuda__multicast *mc);
/* CUDA_SUCCESS, or the error cuMulticastCreate gives for these properties. */
CUresult simcuda__multicast_prop_check(const CUmulticastObjectProp *prop);
/* A new object with one reference (origin: 0, 0, or an imported object's). */
CUresult simcuda__multicast_create(const CUmulticastObjectProp *prop, long origin_pid,
                                   unsigned long long origin_id, struct simcuda__multicast **out);
/* This process's record of another process's object, or NULL. */
struct simcuda__multicast *simcuda__multicast_imported(long origin_pid,
                                                       unsigned long long origin_id);
/* simcuda_graph.c (lock held): a graph allocation freed outside its graph (cuMemFree,
 * cuMemFreeAsync): its pages go back to the graph pool; INVALID_VALUE when it is not live.
 * Whether [offset, offset + size) lies in one (backed or not). The graph memory a context's
 * launches backed, freed with it, and the device's unused graph reserve released. */
struct simcuda__graph_alloc;
CUresult simcuda__graph_free(struct simcuda__graph_alloc *alloc);
bool simcuda__graph_range_valid(const struct simcuda__graph_alloc *alloc, uint64_t offset,
                                uint64_t size);
void simcuda__free_context_graph_memory(struct CUctx_st *ctx);
/* simcuda_graph.c (lock held), for stream capture: a new empty graph (NULL when out of
 * memory); a graph destroyed as cuGraphDestroy does (INVALID_VALUE when not a graph); an
 * allocation node (pinned memory of device, no dependencies) or a free node added to a graph,
 * with cuGraphAddMemAllocNode's and cuGraphAddMemFreeNode's checks and errors. */
struct CUgraph_st *simcuda__graph_new(void);
CUresult simcuda__graph_discard(CUgraph graph);
CUresult simcuda__graph_capture_alloc(CUgraph graph, int device, size_t bytesize,
                                      CUdeviceptr *dptr);
CUresult simcuda__graph_capture_free(CUgraph graph, CUdeviceptr dptr);

/* simcuda_capture.c (lock held): the graph a stream is capturing into (*graph NULL when it
 * is not capturing; CUDA_ERROR_STREAM_CAPTURE_INVALIDATED when its capture was invalidated).
 * A synchronisation of a capturing stream: invalidates its capture and returns
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (CUDA_SUCCESS when the stream is not capturing). */
CUresult simcuda__capture_of(CUstream stream, struct CUgraph_st **graph);
CUresult simcuda__capture_forbids_sync(CUstream stream);

/* What an event recorded on a capturing stream remembers (all zero otherwise). */
struct simcuda__capture_mark {
    struct CUstream_st *origin; /* the capture's origin stream */
    uint64_t id;                /* the capture's id: the mark is stale once it ends */
    struct CUstream_st *source; /* the stream recorded on */
    uint64_t nodes;             /* source's memory nodes at the record */
};
/* simcuda_capture.c (takes the lock): an event record on stream, the mark it leaves (zero
 * when stream does not capture); a wait of stream on an event with mark: joins stream into an
 * active capture of the mark (cross-stream capture), or counts the source's nodes as joined
 * when stream already captures into it. CUDA_ERROR_STREAM_CAPTURE_ISOLATION when stream
 * captures into another capture, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED when it is a default
 * stream, CUDA_SUCCESS otherwise (also for a stale or empty mark). */
void simcuda__capture_record(CUstream stream, struct simcuda__capture_mark *mark);
CUresult simcuda__capture_wait(CUstream stream, const struct simcuda__capture_mark *mark);
/* simcuda_capture.c (lock held): counts a memory node captured on stream (for
 * CUDA_ERROR_STREAM_CAPTURE_UNJOINED). */
void simcuda__capture_node_added(CUstream stream);

/* simcuda_pool.c */
void simcuda__pool_init(struct CUmemPoolHandle_st *pool, int device, bool is_default);
bool simcuda__pool_valid(const struct CUmemPoolHandle_st *pool);
void simcuda__pool_link(struct CUmemPoolHandle_st *pool); /* lock held: into the list of pools */
void simcuda__pool_block_release(struct simcuda__va_space *space, struct simcuda__va_entry *entry);
CUresult simcuda__pool_free_block(struct simcuda__pool_block *block);
void simcuda__pools_synchronize(int device);

/* simcuda_pool_ipc.c (lock held): an exportable pool's memfd and its blocks' bytes in it. */
CUresult simcuda__pool_backing_create(struct CUmemPoolHandle_st *pool);
void simcuda__pool_backing_close(struct CUmemPoolHandle_st *pool);
CUresult simcuda__pool_block_back(struct CUmemPoolHandle_st *pool,
                                  struct simcuda__pool_block *block);
void simcuda__pool_block_unback(struct CUmemPoolHandle_st *pool, struct simcuda__pool_block *block);

#endif
