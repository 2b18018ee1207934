/* trace_builder.h — builds small traces in memory for the analysis tests, with the API names
 * and ops the shim records. */
#ifndef CMT_TEST_TRACE_BUILDER_H
#define CMT_TEST_TRACE_BUILDER_H

#include <stdint.h>

#include "writer.h"

enum tb_api {
    TB_ALLOC = 1,
    TB_FREE,
    TB_PITCH,
    TB_MANAGED,
    TB_ALLOC_ASYNC,
    TB_FREE_ASYNC,
    TB_HOST,
    TB_FREE_HOST,
    TB_INFO,
    TB_CREATE,
    TB_RELEASE,
    TB_MAP,
    TB_UNMAP,
    TB_RESERVE,
    TB_VA_FREE,
    TB_POOL_TRIM,
    TB_SYNC,
    TB_POOL_CREATE,
    TB_RESET,
    TB_HOST_REGISTER,
    TB_HOST_UNREGISTER,
    TB_ARRAY_CREATE,
    TB_ARRAY_DESTROY,
    TB_POOL_ATTR,
    TB_GRAPH_ALLOC_NODE,
    TB_GRAPH_FREE_NODE,
    TB_GRAPH_INSTANTIATE,
    TB_GRAPH_LAUNCH,
    TB_GRAPH_EXEC_DESTROY,
    TB_GRAPH_DESTROY,
    TB_GRAPH_MEM_TRIM,
    TB_POOL_IMPORT_PTR,
    TB_POOL_DEFAULT,
    TB_POOL_CURRENT,
    TB_MC_CREATE,
    TB_MC_BIND_MEM,
    TB_MC_BIND_ADDR,
    TB_MC_UNBIND,
    TB_API_COUNT
};

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
void tb_meminfo(struct tb *b, uint32_t reason, uint64_t free_bytes, uint64_t total, uint64_t seq);
/* END (when clean) and SYMBOL records, then flush. The trace is in b->buf. */
void tb_finish(struct tb *b, int clean);
/* Writes b->buf to path. @return 0. */
int tb_save(const struct tb *b, const char *path);
void tb_free_builder(struct tb *b);

#endif
