/* replay_ops.c — the replay's table of ops (replay_ops.h): one line per op of CMT_OPS, checked
 * here to be complete and in order, and the handlers of the ops that keep no state of their
 * own or take none of replay.c's inline paths (an IPC open). */
#include "replay_books.h"

/* Each line of CMT_REPLAY_OPS sits at its op's value: the table has every op, once. */
enum cmt__replay_op_line {
#define CMT__REPLAY_OP_LINE(op, handler, kind, attrs) CMT__REPLAY_OP_##op,
    CMT_REPLAY_OPS(CMT__REPLAY_OP_LINE)
#undef CMT__REPLAY_OP_LINE
        CMT__REPLAY_OP_LINES
};
_Static_assert((int)CMT__REPLAY_OP_LINES == (int)CMT_OP_MAX,
               "CMT_REPLAY_OPS: one line per op of CMT_OPS");
#define CMT__REPLAY_OP_CHECK(op, handler, kind, attrs)                        \
    _Static_assert((int)CMT__REPLAY_OP_##op == (int)CMT_OP_##op,              \
                   "CMT_REPLAY_OPS: " #op " not in CMT_OPS order");           \
    _Static_assert(CMT_KIND_##kind >= CMT_KIND_NONE && CMT_KIND_##kind < 127, \
                   "CMT_REPLAY_OPS: " #op "'s kind fits the table");
CMT_REPLAY_OPS(CMT__REPLAY_OP_CHECK)
#undef CMT__REPLAY_OP_CHECK

const struct cmt__op_handler cmt__op_handlers[CMT_OP_MAX] = {
#define CMT__REPLAY_OP_ENTRY(op, handler, kind, attrs) \
    [CMT_OP_##op] = {cmt__apply_##handler, CMT_KIND_##kind, (attrs)},
    CMT_REPLAY_OPS(CMT__REPLAY_OP_ENTRY)
#undef CMT__REPLAY_OP_ENTRY
};

int cmt_op_kind(uint32_t op)
{
    return op < CMT_OP_MAX ? cmt__op_handlers[op].kind : CMT_KIND_NONE;
}

unsigned cmt_op_attrs(uint32_t op)
{
    return op < CMT_OP_MAX ? cmt__op_handlers[op].attrs : 0;
}

/* An op that changes no memory: the call is counted, nothing is applied. */
void cmt__apply_none(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                     int kind)
{
    (void)rp, (void)d, (void)st, (void)kind;
}

/* cuMemGetInfo: the device's free/total, as the program saw them. */
void cmt__apply_mem_info(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                         int kind)
{
    (void)rp, (void)kind;
    const struct cmt_event *e = &st->rec.u.event;
    if (e->result == 0 && (e->fields & CMT_F(FREE))) {
        d->have_sample = 1;
        d->free_bytes = e->v[CMT_FIELD_FREE];
        d->total_bytes = e->v[CMT_FIELD_TOTAL];
        d->sample_t_ns = e->t_ns;
        d->samples++;
    }
}

/* Another process's memory (an IPC handle opened, a pool pointer imported): an object of no
 * bytes. */
void cmt__apply_ipc_open(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                         int kind)
{
    (void)d;
    const struct cmt_event *e = &st->rec.u.event;
    if (e->result == 0 && (e->fields & CMT_F(PTR)))
        cmt__add_object(rp, st, &rp->allocs, e->v[CMT_FIELD_PTR], kind, 0, 0);
}
