/* interpose/shim_ops.h against tools/analysis/replay_ops.h: each layer keeps its own table of
 * the ops, and where both say something of an op they must agree. A release is ordered before
 * the allocations that may reuse its memory (the shim takes its seq first) and is what the
 * analyses treat as memory given back, so the two "releases" columns are one fact. */
#include <criterion/criterion.h>

#include "replay.h"
#include "shim_ops.h"

Test(shim_ops, a_release_for_the_shim_is_one_for_the_replay)
{
    for (uint32_t op = 0; op < CMT_OP_MAX; op++) {
        int shim = (cmt__op_flags(op) & CMT__OPF_REL) != 0;
        int replay = (cmt_op_attrs(op) & CMT_OPA_RELEASES) != 0;
        cr_expect_eq(shim, replay, "op %s: releases for the shim %d, for the replay %d",
                     cmt_op_name(op), shim, replay);
    }
}

Test(shim_ops, a_free_releases_and_an_oom_names_its_device)
{
    for (uint32_t op = 0; op < CMT_OP_MAX; op++) {
        if (cmt_op_attrs(op) & CMT_OPA_FREE)
            cr_expect(cmt__op_flags(op) & CMT__OPF_REL, "op %s frees but is no release",
                      cmt_op_name(op));
        if (cmt__op_flags(op) & CMT__OPF_OOM)
            cr_expect(cmt__op_flags(op) & CMT__OPF_CUR, "op %s may fail with OOM on no device",
                      cmt_op_name(op));
    }
}

Test(shim_ops, an_unknown_op_has_no_flags)
{
    cr_expect_eq(cmt__op_flags(CMT_OP_MAX), 0u);
    cr_expect_eq(cmt_op_attrs(CMT_OP_MAX), 0u);
    cr_expect_eq(cmt_op_kind(CMT_OP_MAX), CMT_KIND_NONE);
}
