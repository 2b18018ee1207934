/* replay_ops.h — internal: how the replay applies each op, the one table of its handlers.
 *
 * CMT_REPLAY_OPS(X): X(op, handler, kind, attrs), one line per op of CMT_OPS
 * (format/cmt_format.h), in its order (replay_ops.c checks both at compile time):
 *   handler  cmt__apply_<handler> applies each event of the op, failed calls too (a handler
 *            reads the event's result itself)
 *   kind     the kind of memory it creates or gives back (CMT_KIND_*, NONE for none), given
 *            to the handler
 *   attrs    CMT_OPA_* (replay.h), what the analyses ask of an op
 * An op whose semantics an existing handler covers needs no code: its line names that handler.
 * A new handler is a function of this type in the file of its idea: replay.c (allocations and
 * frees), replay_pools.c (pools, synchronisations, contexts), replay_vmm.c (handles, mappings,
 * reservations), replay_multicast.c, replay_graph.c (graph memory nodes), replay_ops.c (the
 * rest). */
#ifndef CMT__REPLAY_OPS_H
#define CMT__REPLAY_OPS_H

#include "replay.h"

/* clang-format off */
#define CMT_REPLAY_OPS(X)                                              \
    X(OTHER, none, NONE, 0)                                            \
    X(ALLOC, alloc, DEVICE, 0)                                         \
    X(ALLOC_PITCH, alloc, PITCHED, 0)                                  \
    X(ALLOC_MANAGED, alloc, MANAGED, 0)                                \
    X(FREE, free, DEVICE, CMT_OPA_FREE | CMT_OPA_RELEASES)             \
    X(ALLOC_ASYNC, alloc_async, ASYNC, 0)                              \
    X(FREE_ASYNC, free_async, ASYNC, CMT_OPA_FREE | CMT_OPA_RELEASES)  \
    X(ALLOC_HOST, alloc, HOST, 0)                                      \
    X(FREE_HOST, free, HOST, CMT_OPA_FREE | CMT_OPA_RELEASES)          \
    X(MEM_INFO, mem_info, NONE, CMT_OPA_SAMPLE)                        \
    X(POOL_CREATE, pool_create, POOL, 0)                               \
    X(POOL_DESTROY, pool_destroy, POOL, CMT_OPA_RELEASES)              \
    X(POOL_TRIM, pool_trim, POOL, CMT_OPA_RELEASES)                    \
    X(POOL_SET, pool_set, NONE, 0)                                     \
    X(VMM_CREATE, alloc, VMM, 0)                                       \
    X(VMM_RELEASE, vmm_release, VMM, CMT_OPA_RELEASES)                 \
    X(VMM_MAP, vmm_map, MAPPING, 0)                                    \
    X(VMM_UNMAP, vmm_unmap, MAPPING, CMT_OPA_RELEASES)                 \
    X(VA_RESERVE, va_reserve, VA, 0)                                   \
    X(VA_FREE, va_free, VA, CMT_OPA_RELEASES)                          \
    X(VMM_SET_ACCESS, none, NONE, 0)                                   \
    X(VMM_RETAIN, vmm_retain, VMM, 0)                                  \
    X(VMM_IMPORT, vmm_import, VMM, 0)                                  \
    X(VMM_EXPORT, none, NONE, 0)                                       \
    X(IPC_OPEN, ipc_open, IPC, 0)                                      \
    X(IPC_CLOSE, free, IPC, CMT_OPA_FREE | CMT_OPA_RELEASES)           \
    X(CTX_CREATE, none, NONE, 0)                                       \
    X(CTX_DESTROY, sync_all, NONE, CMT_OPA_RELEASES)                   \
    X(PRIMARY_RETAIN, none, NONE, 0)                                   \
    X(PRIMARY_RELEASE, none, NONE, CMT_OPA_RELEASES)                   \
    X(PRIMARY_RESET, reset, NONE, CMT_OPA_RELEASES)                    \
    X(GET_PROC, none, NONE, 0)                                         \
    X(SYNC, sync, NONE, CMT_OPA_RELEASES)                              \
    X(HOST_REGISTER, alloc, HOST, 0)                                   \
    X(HOST_UNREGISTER, free, HOST, CMT_OPA_FREE | CMT_OPA_RELEASES)    \
    X(ARRAY_CREATE, alloc, ARRAY, 0)                                   \
    X(ARRAY_DESTROY, free, ARRAY, CMT_OPA_FREE | CMT_OPA_RELEASES)     \
    X(POOL_ATTR, pool_attr, NONE, 0)                                   \
    X(GRAPH_ALLOC_NODE, graph_alloc_node, GRAPH, 0)                    \
    X(GRAPH_FREE_NODE, graph_free_node, GRAPH, 0)                      \
    X(GRAPH_INSTANTIATE, graph_instantiate, NONE, 0)                   \
    X(GRAPH_LAUNCH, graph_launch, GRAPH, 0)                            \
    X(GRAPH_EXEC_DESTROY, graph_exec_destroy, NONE, CMT_OPA_RELEASES)  \
    X(GRAPH_DESTROY, graph_destroy, NONE, CMT_OPA_RELEASES)            \
    X(GRAPH_MEM_TRIM, graph_mem_trim, POOL, CMT_OPA_RELEASES)          \
    X(GRAPH_MEM_ATTR, none, NONE, 0)                                   \
    X(POOL_EXPORT, none, NONE, 0)                                      \
    X(POOL_IMPORT, none, NONE, 0)                                      \
    X(POOL_EXPORT_PTR, none, NONE, 0)                                  \
    X(POOL_IMPORT_PTR, ipc_open, IPC, 0)                               \
    X(POOL_DEFAULT, pool_default, NONE, 0)                             \
    X(POOL_CURRENT, pool_current, NONE, 0)                             \
    X(MEM_RANGE_HANDLE, none, NONE, 0)                                 \
    X(MULTICAST_CREATE, multicast_create, MULTICAST, 0)                \
    X(MULTICAST_ADD_DEVICE, none, NONE, 0)                             \
    X(MULTICAST_BIND_MEM, multicast_bind, MULTICAST, 0)                \
    X(MULTICAST_BIND_ADDR, multicast_bind, MULTICAST, 0)               \
    X(MULTICAST_UNBIND, multicast_unbind, MULTICAST, CMT_OPA_RELEASES) \
    X(CAPTURE_BEGIN, none, NONE, 0)                                    \
    X(CAPTURE_END, none, NONE, 0)
/* clang-format on */

/* Applies one event of an op to the replay: d is the event's device, kind the op's kind. */
typedef void cmt__apply_fn(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                           int kind);

/* The handlers named by the table (a handler several ops share is declared once per line). */
#define CMT__REPLAY_OP_HANDLER(op, handler, kind, attrs) cmt__apply_fn cmt__apply_##handler;
CMT_REPLAY_OPS(CMT__REPLAY_OP_HANDLER)
#undef CMT__REPLAY_OP_HANDLER

/* An op's line of the table; unknown ops (and APIs no record named) get OTHER's. */
struct cmt__op_handler {
    cmt__apply_fn *apply;
    signed char kind;
    unsigned char attrs;
};
extern const struct cmt__op_handler cmt__op_handlers[CMT_OP_MAX];

/* @return the op's line (OTHER's for an op this build does not know). */
static inline const struct cmt__op_handler *cmt__op_handler(uint32_t op)
{
    return &cmt__op_handlers[op < CMT_OP_MAX ? op : CMT_OP_OTHER];
}

#endif
