/* fuzz_wrap.c — see fuzz_wrap.h. */
#include "fuzz_wrap.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "cmt_format.h"
#include "varint.h"

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

uint8_t *cmt_fuzz_wrap(const uint8_t **data, size_t *size)
{
    if (*size <= 1 || (*data)[0] == 0x89 || *size - 1 > CMT_CHUNK_RAW_MAX)
        return NULL;
    uint8_t *wrapped = wrap_records(*data + 1, *size - 1, size);
    if (!wrapped)
        *size = 0;
    else
        *data = wrapped;
    return wrapped;
}
