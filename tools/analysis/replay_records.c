/* replay_records.c — the records other than events, as the replay applies them: an API
 * record gives its id the op's line of the replay's table (replay_ops.h), which every later
 * event of that API is applied by; DEVICE and MEMINFO samples; END and SIGNAL. */
#include <stdlib.h>

#include "replay_books.h"

static void baseline(struct cmt_replay_device *d, uint64_t free_bytes, uint64_t total_bytes)
{
    if (d->have_baseline)
        return;
    d->have_baseline = 1;
    d->baseline_free_bytes = free_bytes;
    d->baseline_total_bytes = total_bytes;
}

__attribute__((noinline)) void cmt__apply_record(cmt_replay *rp, struct cmt_replay_step *st)
{
    struct cmt_record *rec = &st->rec;
    switch (rec->type) {
    case CMT_REC_API:
        if (rec->u.api.id >= 65536)
            break;
        if (rec->u.api.id >= rp->api_cap) {
            uint32_t cap = rec->u.api.id + 64;
            struct cmt__replay_api *a = realloc(rp->apis, cap * sizeof *a);
            if (!a) {
                rp->failed = 1;
                break;
            }
            for (uint32_t i = rp->api_cap; i < cap; i++) /* no API record yet: OTHER */
                a[i] = (struct cmt__replay_api){
                    .op = CMT_OP_OTHER, .kind = CMT_KIND_NONE, .apply = cmt__apply_none};
            rp->apis = a;
            rp->api_cap = cap;
        }
        struct cmt__replay_api *ra = &rp->apis[rec->u.api.id];
        ra->name = rec->u.api.name;
        ra->op = rec->u.api.op < CMT_OP_MAX ? (int16_t)rec->u.api.op : CMT_OP_OTHER;
        const struct cmt__op_handler *h = cmt__op_handler(rec->u.api.op);
        ra->apply = h->apply;
        ra->path = cmt__replay_path(h->apply);
        ra->kind = h->kind;
        ra->sample = (cmt_op_attrs(rec->u.api.op) & CMT_OPA_SAMPLE) != 0;
        break;
    case CMT_REC_DEVICE: {
        struct cmt_replay_device *d = cmt__device_slot(rp, rec->u.device.dev);
        d->name = rec->u.device.name;
        d->have_sample = 1;
        d->total_bytes = rec->u.device.total_bytes;
        d->free_bytes = rec->u.device.free_bytes;
        d->sample_t_ns = rec->u.device.t_ns;
        d->samples++;
        baseline(d, d->free_bytes, d->total_bytes);
        break;
    }
    case CMT_REC_MEMINFO: {
        struct cmt_replay_device *d = cmt__device_slot(rp, rec->u.meminfo.dev);
        d->have_sample = 1;
        d->total_bytes = rec->u.meminfo.total_bytes;
        d->free_bytes = rec->u.meminfo.free_bytes;
        d->sample_t_ns = rec->u.meminfo.t_ns;
        d->samples++;
        if (rec->u.meminfo.reason == CMT_MEMINFO_BASELINE)
            baseline(d, d->free_bytes, d->total_bytes);
        break;
    }
    case CMT_REC_END:
        rp->totals.ended = 1;
        if (rec->u.end.t_ns > rp->totals.last_t_ns)
            rp->totals.last_t_ns = rec->u.end.t_ns;
        break;
    case CMT_REC_SIGNAL:
        rp->totals.signaled = 1;
        rp->totals.signo = rec->u.signal.signo;
        break;
    }
}
