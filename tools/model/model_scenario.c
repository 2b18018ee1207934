/* model_scenario.c — hand-built allocation streams and their replayer. */
#include "model_scenario.h"

#define MIB CMT_MODEL_MIB
#define KIB ((uint64_t)1024)
#define A(id, bytes)                         \
    {                                        \
        CMT_MODEL_OP_ALLOC, (id), (bytes), 0 \
    }
#define F(id)                         \
    {                                 \
        CMT_MODEL_OP_FREE, (id), 0, 0 \
    }

/* See model_scenario.h for the story; x is 6330 MiB - 768 KiB, so its segment
 * is exactly 6330 MiB and the 768 KiB tail (< 1 MiB) is never split off. */
static const struct cmt_model_event writeup_events[] = {
    A(0, 3000 * MIB),
    A(1, 3000 * MIB),
    A(2, 2714 * MIB),
    A(3, 1000 * MIB),
    F(3),
    A(4, 950 * MIB),
    A(5, 1000 * MIB),
    F(5),
    A(6, 950 * MIB),
    A(7, 1000 * MIB),
    F(7),
    A(8, 950 * MIB),
    A(9, 6330 * MIB - 768 * KIB),
    F(9),
    A(10, 100 * MIB),
    A(11, 6330 * MIB - 768 * KIB),
};

static const struct cmt_model_scenario writeup = {
    "writeup-6.18GiB",
    "A cached 6.18 GiB block split by a 100 MiB tensor: OOM unless max_split_size_mb <= 6144",
    writeup_events,
    sizeof writeup_events / sizeof writeup_events[0],
    12,
    21556 * MIB,
    24 * 1024 * MIB,
};

const struct cmt_model_scenario *cmt_model_scenario_writeup(void)
{
    return &writeup;
}

int cmt_model_replay(struct cmt_model *model, const struct cmt_model_event *events,
                     size_t event_count, cmt_model_handle *handles, uint32_t id_count,
                     size_t *stopped_at)
{
    if (!model || (!events && event_count) || !handles || !stopped_at)
        return CMT_EINVALID;
    for (size_t k = 0; k < event_count; k++) {
        const struct cmt_model_event *e = &events[k];
        int rc;
        *stopped_at = k;
        if (e->id >= id_count)
            return CMT_EINVALID;
        if (e->op == CMT_MODEL_OP_ALLOC)
            rc = cmt_model_alloc(model, e->size, e->stream, &handles[e->id]);
        else
            rc = cmt_model_free(model, handles[e->id]);
        if (rc != CMT_EOK)
            return rc;
    }
    *stopped_at = event_count;
    return CMT_EOK;
}
