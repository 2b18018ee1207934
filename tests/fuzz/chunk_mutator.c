/* chunk_mutator.c — a structure-aware mutator for the trace fuzzer (libFuzzer's
 * LLVMFuzzerCustomMutator).
 *
 * A trace's records sit inside zstd frames, so byte flips in the file mostly break a frame and
 * stop at the decompressor. This mutator takes the trace apart as the format describes it
 * (file header, then chunks: a 16-byte header and a zstd frame), decompresses one chunk,
 * mutates its records (EVENTS columns, table records, record headers and lengths alike) with
 * libFuzzer's own mutator, sometimes changes the chunk's record count, compresses it again and
 * writes the chunk header to match. Inputs that are not traces, and one mutation in eight, get
 * plain byte mutations. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "cmt_format.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

#define RAW_MAX (1u << 20) /* chunks larger than this are mutated as bytes */

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* The offsets of up to `max` whole chunks after the file header. @return how many. */
static size_t find_chunks(const uint8_t *data, size_t size, size_t *at, size_t max)
{
    size_t n = 0, off = CMT_FILE_HEADER_SIZE;
    if (size < CMT_FILE_HEADER_SIZE || memcmp(data, CMT_MAGIC, CMT_MAGIC_SIZE) != 0)
        return 0;
    while (n < max && off + CMT_CHUNK_HEADER_SIZE <= size && get32(data + off) == CMT_CHUNK_MAGIC) {
        size_t frame = get32(data + off + 4);
        if (frame > size - off - CMT_CHUNK_HEADER_SIZE)
            break;
        at[n++] = off;
        off += CMT_CHUNK_HEADER_SIZE + frame;
    }
    return n;
}

/* Mutates the records of the chunk at `off` in place. @return the new size, or 0 when the
 * chunk cannot be taken apart (the caller mutates bytes instead). */
static size_t mutate_chunk(uint8_t *data, size_t size, size_t max_size, size_t off,
                           unsigned int seed)
{
    uint8_t *h = data + off;
    size_t frame = get32(h + 4), raw = get32(h + 8);
    if (raw == 0 || raw > RAW_MAX)
        return 0;
    uint8_t *records = malloc(RAW_MAX);
    size_t bound = ZSTD_compressBound(RAW_MAX);
    uint8_t *packed = malloc(bound);
    size_t out = 0;
    if (!records || !packed)
        goto done;
    size_t got = ZSTD_decompress(records, RAW_MAX, h + CMT_CHUNK_HEADER_SIZE, frame);
    if (ZSTD_isError(got) || got != raw)
        goto done;
    size_t mutated = LLVMFuzzerMutate(records, raw, RAW_MAX);
    size_t packed_size = ZSTD_compress(packed, bound, records, mutated, 1);
    if (ZSTD_isError(packed_size))
        goto done;
    size_t tail = size - off - CMT_CHUNK_HEADER_SIZE - frame; /* the chunks after it */
    if (off + CMT_CHUNK_HEADER_SIZE + packed_size + tail > max_size)
        goto done;
    memmove(h + CMT_CHUNK_HEADER_SIZE + packed_size, h + CMT_CHUNK_HEADER_SIZE + frame, tail);
    memcpy(h + CMT_CHUNK_HEADER_SIZE, packed, packed_size);
    put32(h + 4, (uint32_t)packed_size);
    put32(h + 8, (uint32_t)mutated);
    uint32_t count = get32(h + 12);
    if (seed % 16 == 0) /* now and then a record count that no longer matches */
        put32(h + 12, seed % 32 == 0 ? count + 1 : count - (count > 1));
    out = off + CMT_CHUNK_HEADER_SIZE + packed_size + tail;
done:
    free(records);
    free(packed);
    return out;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    size_t at[64];
    size_t n = seed % 8 ? find_chunks(data, size, at, 64) : 0;
    size_t out = n ? mutate_chunk(data, size, max_size, at[(seed / 8) % n], seed) : 0;
    return out ? out : LLVMFuzzerMutate(data, size, max_size);
}
