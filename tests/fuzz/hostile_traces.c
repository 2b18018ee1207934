/* hostile_traces.c — see hostile_traces.h. */
#include "hostile_traces.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "cmt_format.h"
#include "trace_builder.h"
#include "varint.h"

void hostile_chunked(struct cmt_membuf *out, int chunks)
{
    struct tb b;
    tb_begin(&b, 8 * TB_GIB, 8 * TB_GIB);
    uint32_t s = tb_stack(&b, "chunked", 2);
    for (int c = 0; c < chunks && c < HOSTILE_MAX_CHUNKS; c++) {
        uint64_t base = 0x7f0000000000 + (uint64_t)c * TB_GIB;
        for (int i = 0; i < HOSTILE_CHUNK_EVENTS / 2; i++)
            tb_alloc(&b, base + (uint64_t)i * 2 * TB_MIB, TB_MIB, s);
        for (int i = 0; i < HOSTILE_CHUNK_EVENTS / 2; i++)
            tb_free(&b, base + (uint64_t)i * 2 * TB_MIB);
        cmt_writer_flush(b.w);
    }
    tb_finish(&b, 1); /* END and the SYMBOL records: one more chunk, without events */
    *out = b.buf;
    b.buf = (struct cmt_membuf){0};
    tb_free_builder(&b);
}

size_t hostile_chunk_starts(const uint8_t *data, size_t len, size_t *starts, size_t max)
{
    size_t n = 0, at = CMT_FILE_HEADER_SIZE;
    while (n < max && at + CMT_CHUNK_HEADER_SIZE <= len) {
        starts[n++] = at;
        at += CMT_CHUNK_HEADER_SIZE + cmt__get_le32(data + at + 4);
    }
    return n;
}

/* [start, end) of chunk k. */
static void chunk_span(const struct cmt_membuf *b, size_t k, size_t *start, size_t *end)
{
    size_t starts[HOSTILE_MAX_CHUNKS + 2];
    size_t n = hostile_chunk_starts(b->data, b->len, starts, HOSTILE_MAX_CHUNKS + 2);
    if (k >= n)
        abort();
    *start = starts[k];
    *end = k + 1 < n ? starts[k + 1] : b->len;
}

/* Replaces [at, at + old_len) with len bytes of src. */
static void splice(struct cmt_membuf *b, size_t at, size_t old_len, const uint8_t *src, size_t len)
{
    size_t n = b->len - old_len + len;
    uint8_t *p = malloc(n);
    if (!p)
        abort();
    memcpy(p, b->data, at);
    memcpy(p + at, src, len);
    memcpy(p + at + len, b->data + at + old_len, b->len - at - old_len);
    free(b->data);
    b->data = p;
    b->len = b->cap = n;
}

void hostile_duplicate_chunk(struct cmt_membuf *b, size_t k)
{
    size_t start, end;
    chunk_span(b, k, &start, &end);
    uint8_t *copy = malloc(end - start);
    if (!copy)
        abort();
    memcpy(copy, b->data + start, end - start);
    splice(b, end, 0, copy, end - start);
    free(copy);
}

void hostile_swap_chunks(struct cmt_membuf *b, size_t i, size_t j)
{
    size_t is, ie, js, je;
    chunk_span(b, i, &is, &ie);
    chunk_span(b, j, &js, &je);
    uint8_t *tmp = malloc(je - is);
    if (!tmp || i >= j)
        abort();
    size_t n = 0; /* chunk j, what lies between, chunk i */
    memcpy(tmp + n, b->data + js, je - js);
    n += je - js;
    memcpy(tmp + n, b->data + ie, js - ie);
    n += js - ie;
    memcpy(tmp + n, b->data + is, ie - is);
    memcpy(b->data + is, tmp, je - is);
    free(tmp);
}

void hostile_drop_chunk(struct cmt_membuf *b, size_t k)
{
    size_t start, end;
    chunk_span(b, k, &start, &end);
    splice(b, start, end - start, NULL, 0);
}

void hostile_relabel(struct cmt_membuf *b, unsigned major)
{
    b->data[8] = (uint8_t)major;
    b->data[9] = (uint8_t)(major >> 8);
}

void hostile_repeated(struct cmt_membuf *out, size_t file_bytes, uint64_t *repeats)
{
    struct tb b;
    tb_begin(&b, 8 * TB_GIB, 8 * TB_GIB);
    uint32_t s = tb_stack(&b, "repeated", 2);
    /* tb_begin wrote THREAD 77 "main" once: every THREAD below repeats it */
    struct cmt_thread th = {77, "main"};
    struct cmt_note note = {1, "the shim could not intercept a route: cuGetProcAddress"};
    *repeats = 0;
    int first = 1;
    for (uint64_t batch = 0; b.buf.len < file_bytes; batch++) {
        for (int i = 0; i < 4096; i++) {
            cmt_writer_thread(b.w, &th);
            cmt_writer_note(b.w, &note);
            cmt_writer_env(b.w, "CUDA_VISIBLE_DEVICES", "0,1,2,3");
            *repeats += first ? 1 : 3; /* the first NOTE and ENV repeat nothing */
            first = 0;
        }
        /* an allocation between batches: no two chunks are the same bytes */
        tb_alloc(&b, 0x7f1000000000 + batch * TB_MIB, TB_MIB, s);
        tb_free(&b, 0x7f1000000000 + batch * TB_MIB);
    }
    tb_finish(&b, 1);
    *out = b.buf;
    b.buf = (struct cmt_membuf){0};
    tb_free_builder(&b);
}

void hostile_big_chunk(struct cmt_membuf *out, size_t raw)
{
    uint8_t *records = calloc(1, raw); /* one record of type 100 (unknown), zeros */
    uint8_t *p = records ? cmt__put_varint(records, 100) : NULL;
    if (!p)
        abort();
    p = cmt__put_varint(p, raw - 16);
    size_t len = raw - 16 + (size_t)(p - records), bound = ZSTD_compressBound(len);
    uint8_t *t = malloc(CMT_FILE_HEADER_SIZE + CMT_CHUNK_HEADER_SIZE + bound);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    if (!t || !cc)
        abort();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    size_t csize = ZSTD_compress2(cc, t + 32, bound, records, len);
    if (ZSTD_isError(csize))
        abort();
    ZSTD_freeCCtx(cc);
    free(records);
    memcpy(t, CMT_MAGIC, CMT_MAGIC_SIZE);
    cmt__put_le32(t + 8, CMT_VERSION_MAJOR | CMT_VERSION_MINOR << 16);
    cmt__put_le32(t + 12, 0);
    cmt__put_le32(t + 16, CMT_CHUNK_MAGIC);
    cmt__put_le32(t + 20, (uint32_t)csize);
    cmt__put_le32(t + 24, (uint32_t)len);
    cmt__put_le32(t + 28, 1);
    *out = (struct cmt_membuf){t, 32 + csize, 32 + csize};
}
