/* reader_decode.c — fuzz target: any bytes given to the reader and the replay engine (and the
 * OOM, timeline and fragmentation analyses on top) must neither crash nor leak nor hang.
 * Built as a libFuzzer target with -DCMT_FUZZ=ON (clang), and always as a corpus replayer. */
#include <stddef.h>
#include <stdint.h>

#include "oom.h"
#include "reader.h"
#include "replay.h"
#include "timeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cmt_reader *r;
    if (cmt_reader_open_memory(&r, data, size) != 0)
        return 0;
    cmt_replay *rp;
    cmt_oom *oom;
    struct cmt_timeline tl;
    if (cmt_replay_create(&rp, r) != 0) {
        cmt_reader_close(r);
        return 0;
    }
    if (cmt_oom_create(&oom) != 0) {
        cmt_replay_destroy(rp);
        cmt_reader_close(r);
        return 0;
    }
    cmt_timeline_init(&tl, 16);
    struct cmt_replay_step st;
    while (cmt_replay_next(rp, &st) > 0) {
        cmt_oom_observe(oom, rp, &st);
        cmt_timeline_observe(&tl, rp, &st);
    }
    cmt_replay_finish(rp);
    cmt_oom_finish(oom, rp);
    cmt_timeline_finish(&tl, rp);
    for (uint32_t s = 0; s < cmt_replay_device_count(rp); s++) {
        const struct cmt_replay_device *d = cmt_replay_device_slot(rp, s);
        struct cmt_fragmentation f;
        if (d) {
            cmt_replay_fragmentation(rp, d->dev, &f);
            cmt_replay_peak_fragmentation(rp, d->dev, &f);
        }
    }
    char frame[256];
    for (uint32_t i = 0; i < cmt_oom_count(oom); i++)
        cmt_reader_format_frame(r, cmt_oom_episode(oom, i)->stack, frame, sizeof frame);
    cmt_timeline_free(&tl);
    cmt_oom_destroy(oom);
    cmt_replay_destroy(rp);
    cmt_reader_close(r);
    return 0;
}
