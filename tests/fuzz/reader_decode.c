/* reader_decode.c — fuzz target: any bytes given to the reader and the replay engine (and the
 * OOM, timeline and fragmentation analyses on top) must neither crash nor leak nor hang.
 * Built as a libFuzzer target with -DCMT_FUZZ=ON (clang), and always as a corpus replayer.
 *
 * Two kinds of input. One that starts like a trace (the magic's first byte, 0x89) is read as a
 * whole file: headers, chunk framing, compression, damage. Any other is taken as the records
 * of one chunk (after its first byte): the harness compresses them into a well-formed trace,
 * so that mutations reach the record decoder and the analyses instead of dying at the chunk's
 * checksum. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "cmt_format.h"
#include "oom.h"
#include "reader.h"
#include "replay.h"
#include "timeline.h"
#include "varint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The records that a chunk header should count: whole type/length/payload triples. */
static uint32_t count_records(const uint8_t *p, const uint8_t *end)
{
    uint32_t n = 0;
    uint64_t type, len;
    while (p < end && cmt__get_varint(&p, end, &type) == 0 && cmt__get_varint(&p, end, &len) == 0 &&
           len <= (uint64_t)(end - p)) {
        p += len;
        n++;
    }
    return n ? n : 1;
}

/* A trace holding `records` as its only chunk. @return malloc'ed bytes, or NULL. */
static uint8_t *wrap_records(const uint8_t *records, size_t len, size_t *out_len)
{
    size_t bound = ZSTD_compressBound(len);
    uint8_t *t = malloc(CMT_FILE_HEADER_SIZE + CMT_CHUNK_HEADER_SIZE + bound);
    if (!t)
        return NULL;
    uint8_t *frame = t + CMT_FILE_HEADER_SIZE + CMT_CHUNK_HEADER_SIZE;
    ZSTD_CCtx *c = ZSTD_createCCtx();
    size_t csize = c ? ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1) : 0;
    if (!c || ZSTD_isError(csize) ||
        ZSTD_isError(csize = ZSTD_compress2(c, frame, bound, records, len))) {
        ZSTD_freeCCtx(c);
        free(t);
        return NULL;
    }
    ZSTD_freeCCtx(c);
    memcpy(t, CMT_MAGIC, CMT_MAGIC_SIZE);
    t[8] = CMT_VERSION_MAJOR;
    t[9] = 0;
    t[10] = CMT_VERSION_MINOR;
    t[11] = 0;
    memset(t + 12, 0, 4);
    uint8_t *h = t + CMT_FILE_HEADER_SIZE;
    cmt__put_le32(h, CMT_CHUNK_MAGIC);
    cmt__put_le32(h + 4, (uint32_t)csize);
    cmt__put_le32(h + 8, (uint32_t)len);
    cmt__put_le32(h + 12, count_records(records, records + len));
    *out_len = CMT_FILE_HEADER_SIZE + CMT_CHUNK_HEADER_SIZE + csize;
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *wrapped = NULL;
    if (size > 1 && data[0] != 0x89 && size - 1 <= CMT_CHUNK_RAW_MAX) {
        if (!(wrapped = wrap_records(data + 1, size - 1, &size)))
            return 0;
        data = wrapped;
    }
    cmt_reader *r;
    if (cmt_reader_open_memory(&r, data, size) != 0) {
        free(wrapped);
        return 0;
    }
    cmt_replay *rp = NULL;
    cmt_oom *oom = NULL;
    struct cmt_timeline tl;
    if (cmt_replay_create(&rp, r) != 0 || cmt_oom_create(&oom) != 0) {
        cmt_replay_destroy(rp);
        cmt_reader_close(r);
        free(wrapped);
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
    free(wrapped);
    return 0;
}
