/* trace_builder.h — builds small traces in memory for the analysis tests, with the API names
 * and ops the shim records. */
#ifndef CMT_TEST_TRACE_BUILDER_H
#define CMT_TEST_TRACE_BUILDER_H

#include <stdint.h>

#include "writer.h"

/* TB_APIS(X): X(id suffix, op suffix, API name): the APIs every builder trace declares, as the
 * shim records them (ids from 1; tests/recipes checks each against interpose/calls.def). */
#define TB_APIS(X)                                                         \
    X(ALLOC, ALLOC, "cuMemAlloc_v2")                                       \
    X(FREE, FREE, "cuMemFree_v2")                                          \
    X(PITCH, ALLOC_PITCH, "cuMemAllocPitch_v2")                            \
    X(MANAGED, ALLOC_MANAGED, "cuMemAllocManaged")                         \
    X(ALLOC_ASYNC, ALLOC_ASYNC, "cuMemAllocAsync")                         \
    X(FREE_ASYNC, FREE_ASYNC, "cuMemFreeAsync")                            \
    X(HOST, ALLOC_HOST, "cuMemAllocHost_v2")                               \
    X(FREE_HOST, FREE_HOST, "cuMemFreeHost")                               \
    X(INFO, MEM_INFO, "cuMemGetInfo_v2")                                   \
    X(CREATE, VMM_CREATE, "cuMemCreate")                                   \
    X(RELEASE, VMM_RELEASE, "cuMemRelease")                                \
    X(MAP, VMM_MAP, "cuMemMap")                                            \
    X(UNMAP, VMM_UNMAP, "cuMemUnmap")                                      \
    X(RESERVE, VA_RESERVE, "cuMemAddressReserve")                          \
    X(VA_FREE, VA_FREE, "cuMemAddressFree")                                \
    X(POOL_TRIM, POOL_TRIM, "cuMemPoolTrimTo")                             \
    X(SYNC, SYNC, "cuStreamSynchronize")                                   \
    X(POOL_CREATE, POOL_CREATE, "cuMemPoolCreate")                         \
    X(RESET, PRIMARY_RESET, "cuDevicePrimaryCtxReset_v2")                  \
    X(HOST_REGISTER, HOST_REGISTER, "cuMemHostRegister_v2")                \
    X(HOST_UNREGISTER, HOST_UNREGISTER, "cuMemHostUnregister")             \
    X(ARRAY_CREATE, ARRAY_CREATE, "cuArray3DCreate_v2")                    \
    X(ARRAY_DESTROY, ARRAY_DESTROY, "cuArrayDestroy")                      \
    X(POOL_ATTR, POOL_ATTR, "cuMemPoolSetAttribute")                       \
    X(GRAPH_ALLOC_NODE, GRAPH_ALLOC_NODE, "cuGraphAddMemAllocNode")        \
    X(GRAPH_FREE_NODE, GRAPH_FREE_NODE, "cuGraphAddMemFreeNode")           \
    X(GRAPH_INSTANTIATE, GRAPH_INSTANTIATE, "cuGraphInstantiateWithFlags") \
    X(GRAPH_LAUNCH, GRAPH_LAUNCH, "cuGraphLaunch")                         \
    X(GRAPH_EXEC_DESTROY, GRAPH_EXEC_DESTROY, "cuGraphExecDestroy")        \
    X(GRAPH_DESTROY, GRAPH_DESTROY, "cuGraphDestroy")                      \
    X(GRAPH_MEM_TRIM, GRAPH_MEM_TRIM, "cuDeviceGraphMemTrim")              \
    X(POOL_IMPORT_PTR, POOL_IMPORT_PTR, "cuMemPoolImportPointer")          \
    X(POOL_DEFAULT, POOL_DEFAULT, "cuDeviceGetDefaultMemPool")             \
    X(POOL_CURRENT, POOL_CURRENT, "cuDeviceGetMemPool")                    \
    X(MC_CREATE, MULTICAST_CREATE, "cuMulticastCreate")                    \
    X(MC_BIND_MEM, MULTICAST_BIND_MEM, "cuMulticastBindMem")               \
    X(MC_BIND_ADDR, MULTICAST_BIND_ADDR, "cuMulticastBindAddr")            \
    X(MC_UNBIND, MULTICAST_UNBIND, "cuMulticastUnbind")                    \
    X(IPC_OPEN, IPC_OPEN, "cuIpcOpenMemHandle_v2")                         \
    X(IPC_CLOSE, IPC_CLOSE, "cuIpcCloseMemHandle")                         \
    X(POOL_DESTROY, POOL_DESTROY, "cuMemPoolDestroy")                      \
    X(POOL_SET, POOL_SET, "cuDeviceSetMemPool")                            \
    X(VMM_RETAIN, VMM_RETAIN, "cuMemRetainAllocationHandle")               \
    X(VMM_IMPORT, VMM_IMPORT, "cuMemImportFromShareableHandle")            \
    X(CTX_DESTROY, CTX_DESTROY, "cuCtxDestroy_v2")

enum tb_api {
    TB__NONE, /* ids start at 1 */
#define TB__ENUM(id, op, name) TB_##id,
    TB_APIS(TB__ENUM)
#undef TB__ENUM
        TB_API_COUNT
};

/* @return the builder's API table (*n entries, in id order). */
const struct cmt_api *tb_apis(size_t *n);
/* @return the name of an id ("TB_ALLOC"), NULL for none. */
const char *tb_api_id_name(enum tb_api api);

struct tb {
    struct cmt_membuf buf;
    cmt_writer *w;
    uint64_t seq, t_ns;
    uint32_t next_node;
    uint32_t tid; /* of the events that follow: 77 ("main", from tb_begin) unless changed */
};

#define TB_GIB (UINT64_C(1) << 30)
#define TB_MIB (UINT64_C(1) << 20)

/* Header records: PROCESS, every API, and device 0 of `total` bytes with `free` free. */
void tb_begin(struct tb *b, uint64_t total, uint64_t free_bytes);
/* The same with the caller's PROCESS record (pid, rank, host, start time). */
void tb_begin_process(struct tb *b, const struct cmt_process *p, uint64_t total,
                      uint64_t free_bytes);
/* A stack of `depth` frames; functions named "<name>_<level>" via SYMBOL records written at
 * tb_finish. @return the leaf node id. */
uint32_t tb_stack(struct tb *b, const char *name, int depth);
/* One frame named `function` called from `parent` (0: the root). @return its node id. */
uint32_t tb_frame(struct tb *b, uint32_t parent, const char *function);
/* One event with the given fields; values come in field-bit order (ptr, size, stream, pool,
 * handle, offset, flags, ...), whatever the call's argument order. @return its seq. */
uint64_t tb_event(struct tb *b, enum tb_api api, int result, int32_t dev, uint32_t stack,
                  uint32_t fields, const uint64_t *values);
/* One frame with a source file and line (a Python frame of a snapshot: "train.py", 42). */
uint32_t tb_source_frame(struct tb *b, uint32_t parent, const char *function, const char *file,
                         uint32_t line);
/* Allocator-level records of allocator 1 ("pytorch-cuda-caching", settings conf). Values of
 * tb_alloc_event come in field-bit order; each event also carries SEQ (the last event's seq). */
void tb_allocator(struct tb *b, uint32_t id, const char *conf);
void tb_alloc_event(struct tb *b, uint32_t action, int32_t dev, uint32_t stack, uint32_t fields,
                    const uint64_t *values);
/* Shorthands on device 0: segment_alloc; alloc of a block; free_requested + free_completed. */
void tb_segment(struct tb *b, uint64_t addr, uint64_t size, uint32_t flags);
void tb_block(struct tb *b, uint64_t addr, uint64_t size, uint64_t requested, uint32_t stack,
              uint32_t flags);
void tb_block_free(struct tb *b, uint64_t addr, uint64_t size);
uint64_t tb_alloc(struct tb *b, uint64_t ptr, uint64_t size, uint32_t stack);
uint64_t tb_alloc_fail(struct tb *b, uint64_t size, uint32_t stack);
uint64_t tb_free(struct tb *b, uint64_t ptr);
/* A rank's run: `peak` bytes held from 1 ms to 10 ms (at 0x7f0000000000), and a 30 GiB request
 * that fails at fail_t when it is not 0. */
void tb_hold(struct tb *b, uint64_t peak, uint64_t fail_t);
void tb_meminfo(struct tb *b, uint32_t reason, uint64_t free_bytes, uint64_t total, uint64_t seq);
/* END (when clean) and SYMBOL records, then flush. The trace is in b->buf. */
void tb_finish(struct tb *b, int clean);
/* Writes b->buf to path. @return 0. */
int tb_save(const struct tb *b, const char *path);
void tb_free_builder(struct tb *b);

#endif
