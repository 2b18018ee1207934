/* shim_ops.h — internal: what the shim does around a call of each op (CMT_OPS in
 * format/cmt_format.h names the ops; this is the shim's own table of them, checked below to
 * have one line per op, in the format's order).
 *
 *   CMT__OPF_REL  gives memory back: its seq and time are taken before the driver runs (the
 *                 free is ordered before any allocation that reuses the memory), and it is
 *                 not unwound unless CUMEMTRACE_FREE_STACKS asks
 *   CMT__OPF_CUR  acts on the calling thread's current device: the event names it
 *   CMT__OPF_OOM  may fail with out-of-memory: a failure samples free/total and is flushed at
 *                 once; a device it names is measured at its first use */
#ifndef CMT__SHIM_OPS_H
#define CMT__SHIM_OPS_H

#include <stdint.h>

#include "cmt_format.h"

#define CMT__OPF_REL 1u
#define CMT__OPF_CUR 2u
#define CMT__OPF_OOM 4u

/* clang-format off */
#define CMT_SHIM_OPS(X)                           \
    X(OTHER, 0)                                   \
    X(ALLOC, CMT__OPF_CUR | CMT__OPF_OOM)         \
    X(ALLOC_PITCH, CMT__OPF_CUR | CMT__OPF_OOM)   \
    X(ALLOC_MANAGED, CMT__OPF_CUR | CMT__OPF_OOM) \
    X(FREE, CMT__OPF_REL | CMT__OPF_CUR)          \
    X(ALLOC_ASYNC, CMT__OPF_CUR | CMT__OPF_OOM)   \
    X(FREE_ASYNC, CMT__OPF_REL | CMT__OPF_CUR)    \
    X(ALLOC_HOST, 0)                              \
    X(FREE_HOST, CMT__OPF_REL)                    \
    X(MEM_INFO, CMT__OPF_CUR)                     \
    X(POOL_CREATE, 0)                             \
    X(POOL_DESTROY, CMT__OPF_REL)                 \
    X(POOL_TRIM, CMT__OPF_REL)                    \
    X(POOL_SET, 0)                                \
    X(VMM_CREATE, CMT__OPF_CUR | CMT__OPF_OOM)    \
    X(VMM_RELEASE, CMT__OPF_REL)                  \
    X(VMM_MAP, 0)                                 \
    X(VMM_UNMAP, CMT__OPF_REL)                    \
    X(VA_RESERVE, 0)                              \
    X(VA_FREE, CMT__OPF_REL)                      \
    X(VMM_SET_ACCESS, 0)                          \
    X(VMM_RETAIN, 0)                              \
    X(VMM_IMPORT, 0)                              \
    X(VMM_EXPORT, 0)                              \
    X(IPC_OPEN, CMT__OPF_CUR)                     \
    X(IPC_CLOSE, CMT__OPF_REL | CMT__OPF_CUR)     \
    X(CTX_CREATE, 0)                              \
    X(CTX_DESTROY, CMT__OPF_REL)                  \
    X(PRIMARY_RETAIN, 0)                          \
    X(PRIMARY_RELEASE, CMT__OPF_REL)              \
    X(PRIMARY_RESET, CMT__OPF_REL)                \
    X(GET_PROC, 0)                                \
    X(SYNC, CMT__OPF_REL | CMT__OPF_CUR)          \
    X(HOST_REGISTER, 0)                           \
    X(HOST_UNREGISTER, CMT__OPF_REL)              \
    X(ARRAY_CREATE, CMT__OPF_CUR | CMT__OPF_OOM)  \
    X(ARRAY_DESTROY, CMT__OPF_REL | CMT__OPF_CUR) \
    X(POOL_ATTR, 0)                               \
    X(GRAPH_ALLOC_NODE, CMT__OPF_CUR)             \
    X(GRAPH_FREE_NODE, CMT__OPF_CUR)              \
    X(GRAPH_INSTANTIATE, CMT__OPF_CUR)            \
    X(GRAPH_LAUNCH, CMT__OPF_CUR | CMT__OPF_OOM)  \
    X(GRAPH_EXEC_DESTROY, CMT__OPF_REL)           \
    X(GRAPH_DESTROY, CMT__OPF_REL)                \
    X(GRAPH_MEM_TRIM, CMT__OPF_REL)               \
    X(GRAPH_MEM_ATTR, 0)                          \
    X(POOL_EXPORT, 0)                             \
    X(POOL_IMPORT, 0)                             \
    X(POOL_EXPORT_PTR, 0)                         \
    X(POOL_IMPORT_PTR, CMT__OPF_CUR)              \
    X(POOL_DEFAULT, 0)                            \
    X(POOL_CURRENT, 0)                            \
    X(MEM_RANGE_HANDLE, 0)                        \
    X(MULTICAST_CREATE, CMT__OPF_CUR)             \
    X(MULTICAST_ADD_DEVICE, 0)                    \
    X(MULTICAST_BIND_MEM, CMT__OPF_CUR)           \
    X(MULTICAST_BIND_ADDR, CMT__OPF_CUR)          \
    X(MULTICAST_UNBIND, CMT__OPF_REL)             \
    X(CAPTURE_BEGIN, 0)                           \
    X(CAPTURE_END, 0)
/* clang-format on */

enum cmt__shim_op_line {
#define CMT__SHIM_OP_LINE(name, flags) CMT__SHIM_OP_##name,
    CMT_SHIM_OPS(CMT__SHIM_OP_LINE)
#undef CMT__SHIM_OP_LINE
        CMT__SHIM_OP_LINES
};
_Static_assert((int)CMT__SHIM_OP_LINES == (int)CMT_OP_MAX,
               "CMT_SHIM_OPS: one line per op of CMT_OPS");
#define CMT__SHIM_OP_CHECK(name, flags)                            \
    _Static_assert((int)CMT__SHIM_OP_##name == (int)CMT_OP_##name, \
                   "CMT_SHIM_OPS: " #name " not in CMT_OPS order");
CMT_SHIM_OPS(CMT__SHIM_OP_CHECK)
#undef CMT__SHIM_OP_CHECK

/* @return the op's CMT__OPF_* flags (0 for an op this build does not know). */
static inline unsigned cmt__op_flags(uint32_t op)
{
    static const unsigned char flags[CMT_OP_MAX] = {
#define CMT__SHIM_OP_FLAGS(name, fl) [CMT_OP_##name] = (fl),
        CMT_SHIM_OPS(CMT__SHIM_OP_FLAGS)
#undef CMT__SHIM_OP_FLAGS
    };
    return op < CMT_OP_MAX ? flags[op] : 0;
}

#endif
