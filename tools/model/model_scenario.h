/*
 * model_scenario.h — allocation streams to replay through the model, and a
 * small replayer. The streams are hand-built and hand-checked; they serve the
 * unit tests and demos of `cumemtrace whatif`.
 */
#ifndef CMT_MODEL_SCENARIO_H
#define CMT_MODEL_SCENARIO_H

#include "caching_model.h"

#ifdef __cplusplus
extern "C" {
#endif

enum cmt_model_op { CMT_MODEL_OP_ALLOC = 0, CMT_MODEL_OP_FREE = 1 };

/* One tensor-level event. `id` names the allocation (dense, from 0), so a
 * free refers to the alloc with the same id. */
struct cmt_model_event {
    enum cmt_model_op op;
    uint32_t id;
    uint64_t size;   /* bytes; alloc only */
    uint64_t stream; /* alloc only */
};

struct cmt_model_scenario {
    const char *name;
    const char *description;
    const struct cmt_model_event *events;
    size_t event_count;
    uint32_t id_count;   /* ids are 0 .. id_count-1 */
    size_t capacity;     /* what the allocator can get from the device */
    size_t device_total; /* "total capacity" in the OOM message */
};

/**
 * The shape of the 6.18 GiB OOM in the Stable Diffusion write-up, on a
 * 24 GiB card of which the allocator can get 21556 MiB. Sizes in MiB:
 *   w0 = 3000, w1 = 3000, w2 = 2714                          (kept)
 *   three times: a = 1000; free a; b = 950  (leaves a 50 MiB hole each)
 *   x1 = 6330 MiB - 768 KiB (segment 6330 MiB = "6.18 GiB"); free x1
 *   t  = 100
 *   x2 = 6330 MiB - 768 KiB                                  (the failing one)
 * With max_split_size unlimited, 8192 or 7168 MiB, t splits the cached x1
 * segment (x1 < S), x2 finds no block and no room (free 3512 MiB) and fails:
 * "Tried to allocate 6.18 GiB (GPU 0; 24.00 GiB total capacity; 11.39 GiB
 * already allocated; 3.43 GiB free; 17.62 GiB reserved in total by PyTorch)".
 * With 6144, 5120 or 4096 MiB the x1 segment is oversize: t gets its own
 * 100 MiB segment and x2 reuses x1's. Events: 17.
 * @return a static scenario.
 */
const struct cmt_model_scenario *cmt_model_scenario_writeup(void);

/**
 * Replay events through a model, stopping at the first error. `handles`
 * must hold one entry per id; entries are set by allocs and read by frees.
 * @return CMT_EOK after the last event; otherwise the error of event
 *         *stopped_at (e.g. CMT_EMODEL_OOM); CMT_EINVALID for NULL
 *         arguments or an id >= id_count.
 */
int cmt_model_replay(struct cmt_model *model, const struct cmt_model_event *events,
                     size_t event_count, cmt_model_handle *handles, uint32_t id_count,
                     size_t *stopped_at);

#ifdef __cplusplus
}
#endif

#endif /* CMT_MODEL_SCENARIO_H */
