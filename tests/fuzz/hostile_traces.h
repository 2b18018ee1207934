/* hostile_traces.h — the hostile trace files of issue 24, built in memory: repeated records, a
 * chunk duplicated, dropped or moved, a wrong major version, a cut that leaves no event. The
 * generator (make_hostile.c) writes them into corpus/hostile; the format and CLI tests build
 * them again to assert what each must give. */
#ifndef CMT_TEST_HOSTILE_TRACES_H
#define CMT_TEST_HOSTILE_TRACES_H

#include <stddef.h>
#include <stdint.h>

#include "writer.h"

#define HOSTILE_CHUNK_EVENTS \
    200 /* events in each chunk of hostile_chunked: 100 allocs, 100 frees */
#define HOSTILE_MAX_CHUNKS 64

/* A clean trace of `chunks` chunks (at most HOSTILE_MAX_CHUNKS): the first holds the header
 * records too; each holds 100 allocations of 1 MiB and their frees, so that a chunk counted
 * twice doubles the allocations and a chunk moved makes frees come before their allocations. */
void hostile_chunked(struct cmt_membuf *out, int chunks);

/* The file offsets where the chunks of data start. @return their number. */
size_t hostile_chunk_starts(const uint8_t *data, size_t len, size_t *starts, size_t max);

/* Chunk k (0 = the first) written a second time right after itself. */
void hostile_duplicate_chunk(struct cmt_membuf *b, size_t k);
/* Chunks i and j (i < j) change places. */
void hostile_swap_chunks(struct cmt_membuf *b, size_t i, size_t j);
/* Chunk k left out. */
void hostile_drop_chunk(struct cmt_membuf *b, size_t k);
/* The header's major version replaced. */
void hostile_relabel(struct cmt_membuf *b, unsigned major);

/* A trace of about `file_bytes` bytes that is mostly the same THREAD, NOTE and ENV records
 * repeated, `*repeats` of them in all beyond the first of each, with an allocation and its
 * free after every 4096 of each (so that no two chunks are the same bytes). */
void hostile_repeated(struct cmt_membuf *out, size_t file_bytes, uint64_t *repeats);

/* A sound trace of one chunk of `raw` bytes (at most CMT_CHUNK_RAW_MAX): a record of a type
 * no reader knows, zeros (a few KiB compressed): reading it takes `raw` bytes of memory. */
void hostile_big_chunk(struct cmt_membuf *out, size_t raw);

#endif
