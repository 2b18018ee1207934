/* reader.c — chunk walking, decompression and record decoding (docs/trace-format.md). */
#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "cmt_debug.h"
#include "cmt_error.h"
#include "reader_internal.h"
#include "varint.h"

/* No event block is being read: none of its events is handed out next. */
static void forget_blocks(cmt_reader *r)
{
    r->block_left = r->ablock_left = 0;
    r->batch_next = r->batch_end = NULL;
    r->careful_left = 0;
}

static int set_damage(cmt_reader *r, int code, uint64_t offset, const char *what)
{
    if (!r->error) {
        r->error = code;
        r->cur = r->end; /* nothing more is decoded: the fast path of cmt_reader_next stops */
        forget_blocks(r);
        r->damage_offset = offset;
        if (code == CMT_ENOMEM) /* the reader's own failure: the file may be sound */
            snprintf(r->damage, sizeof r->damage,
                     "out of memory reading the chunk at byte %" PRIu64, offset);
        else
            snprintf(r->damage, sizeof r->damage, "%s at byte %" PRIu64 " (%s)",
                     code == CMT_ETRUNCATED ? "trace is truncated" : "trace is damaged", offset,
                     what);
    }
    return r->error;
}

/* ---- open / close ---- */

/* @return 0 with *major set, or the code that refuses the file. */
static int check_header(const uint8_t *data, size_t len, unsigned *major_out)
{
    if (len == 0)
        return CMT_EEMPTY;
    if (len < CMT_MAGIC_SIZE || memcmp(data, CMT_MAGIC, CMT_MAGIC_SIZE) != 0)
        return len < CMT_MAGIC_SIZE && memcmp(data, CMT_MAGIC, len) == 0 ? CMT_ETRUNCATED
                                                                         : CMT_EBAD_MAGIC;
    if (len < CMT_FILE_HEADER_SIZE)
        return CMT_ETRUNCATED;
    unsigned major = data[8] | (unsigned)data[9] << 8;
    if (major > CMT_VERSION_MAJOR)
        return CMT_ENEWER_VERSION;
    if (major == 0)
        return CMT_EBAD_MAGIC;
    *major_out = major;
    return 0;
}

int cmt_reader_open_memory(cmt_reader **out, const void *data, size_t len)
{
    *out = NULL;
    unsigned major;
    int rc = check_header(data, len, &major);
    if (rc)
        return rc;
    cmt_reader *r = calloc(1, sizeof *r);
    if (!r)
        return CMT_ENOMEM;
    r->dctx = ZSTD_createDCtx();
    if (!r->dctx) {
        free(r);
        return CMT_ENOMEM;
    }
    /* ZSTD_d_stableOutBuffer: a streaming decompression (a chunk cut short, the first event of
     * each chunk in reader_chunks.c) writes straight into r->raw, which holds the whole chunk,
     * instead of allocating a window buffer of its own as large as the chunk */
    ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_experimentalParam2, 1);
    r->data = data;
    r->len = len;
    r->major = major;
    r->delta_fields = major >= 2 ? CMT_DELTA_FIELDS : CMT_F(PTR);
    r->pext = cmt__reader_cpu_pext();
    r->damage_offset = UINT64_MAX;
    /* the interning hash's seed: where the reader and the stack lie (ASLR) differs by run */
    r->hash_seed = ((uint64_t)(uintptr_t)r ^ (uint64_t)(uintptr_t)&major << 17) *
                   UINT64_C(0x9e3779b97f4a7c15);
    cmt_reader_rewind(r);
    *out = r;
    return 0;
}

int cmt_reader_open_file(cmt_reader **out, const char *path, struct cmt_err *err)
{
    *out = NULL;
    /* O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting for a writer;
     * it changes nothing for a regular file, which is mapped. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return cmt_err_sys(err, CMT_EIO, errno);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return cmt_err_sys(err, CMT_EIO, e);
    }
    if (!S_ISREG(st.st_mode)) { /* a directory, a device such as /dev/null, a FIFO, a socket */
        close(fd);
        return cmt_err_sys(err, CMT_ENOT_REGULAR, 0);
    }
    size_t len = (size_t)st.st_size;
    void *map = NULL;
    if (len > 0) {
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int e = errno;
            close(fd);
            return cmt_err_sys(err, CMT_EIO, e);
        }
        madvise(map, len, MADV_SEQUENTIAL);
    }
    close(fd);
    int rc = cmt_reader_open_memory(out, map ? map : "", len);
    if (rc) {
        if (map)
            munmap(map, len);
        return cmt_err_sys(err, rc, 0);
    }
    (*out)->map = map;
    (*out)->map_len = len;
    return 0;
}

void cmt_reader_close(cmt_reader *r)
{
    if (!r)
        return;
    if (r->map)
        munmap(r->map, r->map_len);
    ZSTD_freeDCtx(r->dctx);
    free(r->raw);
    free(r->order);
    free(r->order_low);
    cmt__reader_free_tables(r);
    free(r);
}

void cmt_reader_rewind(cmt_reader *r)
{
    r->pos = CMT_FILE_HEADER_SIZE;
    r->released = 0;
    r->cur = r->end = NULL;
    r->cut = 0; /* a chunk cut short is cut when it is loaded again */
    forget_blocks(r);
    r->chunk_records = r->records_seen = 0;
    r->events = 0;
    r->gaps = 0;
    r->last_seq = 0;
    r->error = 0;
    r->stopped = 0;
    r->damage_offset = UINT64_MAX;
    r->damage[0] = 0;
    r->ordinal = 0;
    r->folded = 0;
    r->order_next = 0;
    r->missing_events = r->missing_at = 0;
    r->overlapping_events = r->overlap_at = 0;
    r->drop_event = 0;
}

/* ---- chunks ---- */

/* Hands back the mapped pages below `upto`, from r->released on, in steps of 2 MiB aligned on
 * 2 MiB boundaries of the address space, so that the resident memory of a pass stays bounded
 * by the live state, not by the file (the pages stay in the page cache; a rewind faults them
 * in again). The steps are those of a huge page: a kernel that maps the page cache's large
 * folios whole (FilePmdMapped) would fault a whole 2 MiB back in for any byte touched under a
 * boundary that was not one, and those pages, below r->released, would stay. */
void cmt__reader_release(cmt_reader *r, uint64_t upto)
{
    if (!r->map || upto <= r->released)
        return;
    uintptr_t base = (uintptr_t)r->map, step = (uintptr_t)CMT__RELEASE_STEP;
    uintptr_t end = (base + (uintptr_t)upto) & ~(step - 1);
    if (end <= base + r->released)
        return;
    madvise((char *)r->map + r->released, end - base - r->released, MADV_DONTNEED);
    r->released = end - base;
}

/* Decompresses the frame of a chunk cut short, [src, src + avail), as far as it goes: zstd
 * hands out each of its blocks once the whole block is there (the writer ends one after every
 * CMT_GROUP_EVENTS_MAX events). @return the bytes decoded into r->raw, -1 when the part
 * that is there does not decode, -2 when zstd found no memory. */
static int64_t decompress_cut(cmt_reader *r, const uint8_t *src, size_t avail, uint32_t rsize)
{
    r->raw_whole = 0;
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    ZSTD_inBuffer in = {src, avail, 0};
    ZSTD_outBuffer out = {r->raw, rsize, 0};
    while (in.pos < in.size) {
        size_t before = in.pos + out.pos;
        size_t left = ZSTD_decompressStream(r->dctx, &out, &in);
        if (ZSTD_isError(left))
            return ZSTD_getErrorCode(left) == ZSTD_error_memory_allocation ? -2 : -1;
        if (left == 0 || in.pos + out.pos == before)
            break;
    }
    return (int64_t)out.pos;
}

/* Loads the chunk at `at`; of a chunk cut short, the part that decodes (r->cut is then set,
 * and its end, or a record it cuts, is reported as truncation). @return 1 loaded, 0 clean
 * end, <0 damage. */
static int load_chunk_at(cmt_reader *r, uint64_t at)
{
    if (at == r->len)
        return 0;
    if (r->len - at < CMT_CHUNK_HEADER_SIZE)
        return set_damage(r, CMT_ETRUNCATED, at, "incomplete chunk header");
    const uint8_t *h = r->data + at;
    if (cmt__get_le32(h) != CMT_CHUNK_MAGIC)
        return set_damage(r, CMT_ECORRUPT, at, "bad chunk magic");
    uint32_t csize = cmt__get_le32(h + 4), rsize = cmt__get_le32(h + 8);
    if (rsize > CMT_CHUNK_RAW_MAX || csize > ZSTD_compressBound(rsize) + 64)
        return set_damage(r, CMT_ECORRUPT, at, "impossible chunk size");
    if (rsize == 0) /* an empty chunk holds no records */
        return set_damage(r, CMT_ECORRUPT, at, "empty chunk");
    if (rsize > r->raw_cap) {
        uint8_t *p = realloc(r->raw, (size_t)rsize + CMT__CHUNK_PAD);
        if (!p)
            return set_damage(r, CMT_ENOMEM, at, "out of memory");
        r->raw = p;
        r->raw_cap = rsize;
    }
    size_t avail = r->len - at - CMT_CHUNK_HEADER_SIZE, n;
    r->cut = avail < csize;
    if (r->cut) {
        int64_t got = decompress_cut(r, h + CMT_CHUNK_HEADER_SIZE, avail, rsize);
        if (got == -2)
            return set_damage(r, CMT_ENOMEM, at, "out of memory");
        if (got < 0)
            return set_damage(r, CMT_ECORRUPT, at, "chunk cut short and damaged");
        n = (size_t)got;
    } else if (r->raw_whole == at + 1) { /* decoded already, and nothing wrote raw since */
        n = rsize;
    } else {
        r->raw_whole = 0;
        n = ZSTD_decompressDCtx(r->dctx, r->raw, rsize, h + CMT_CHUNK_HEADER_SIZE, csize);
        if (ZSTD_isError(n) && ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation)
            return set_damage(r, CMT_ENOMEM, at, "out of memory");
        if (ZSTD_isError(n) || n != rsize)
            return set_damage(r, CMT_ECORRUPT, at,
                              ZSTD_isError(n) ? ZSTD_getErrorName(n) : "chunk size mismatch");
        r->raw_whole = at + 1;
    }
    memset(r->raw + n, 0, CMT__CHUNK_PAD);
    r->chunk_offset = at;
    r->pos = r->cut ? r->len : at + CMT_CHUNK_HEADER_SIZE + csize;
    r->chunk_records = cmt__get_le32(h + 12); /* the header is read before its pages go */
    /* the chunk is decompressed: the pages below every chunk this pass has still to read go */
    cmt__reader_release(r, r->order_next < r->order_count ? r->order_low[r->order_next] : r->pos);
    r->cur = r->raw;
    r->end = r->raw + n;
    r->prev_t = r->prev_seq = 0;
    memset(r->prev_v, 0, sizeof r->prev_v);
    r->prev_tid = r->prev_stack = 0;
    r->prev_dev = 0;
    r->records_seen = 0;
    forget_blocks(r);
    r->prev_at = 0;
    memset(r->prev_av, 0, sizeof r->prev_av);
    r->chunk_first_event = r->events;
    return 1;
}

/* The next chunk of the sequence (reader_chunks.c): the whole chunks in seq order, then the
 * rest of the file from where they end. @return as load_chunk_at. */
static int load_chunk(cmt_reader *r)
{
    if (!r->scanned && cmt__reader_scan_chunks(r) != 0)
        return set_damage(r, CMT_ENOMEM, CMT_FILE_HEADER_SIZE, "out of memory");
    if (r->order_next < r->order_count)
        return load_chunk_at(r, r->order[r->order_next++]);
    if (r->pos < r->scan_end)
        r->pos = r->scan_end;
    return load_chunk_at(r, r->pos);
}

/* ---- the event fast path (the other records: reader_records.c) ---- */

/* The values of an event. A delta field is applied to the chunk's previous value at once,
 * and its delta kept in undo[] so that undo_values can restore the previous values when the
 * record turns out malformed (rare: the checked decoder then reads it again). */
static inline __attribute__((always_inline)) const uint8_t *fast_values(
    cmt_reader *r, const uint8_t *p, uint64_t fields, struct cmt_event *e, uint64_t *undo, int *bad)
{
    for (uint64_t m = fields & ((UINT64_C(1) << CMT_NFIELDS) - 1); m; m &= m - 1) {
        int f = __builtin_ctzll(m);
        uint64_t v = cmt__varint_fast(&p, bad);
        if (r->delta_fields >> f & 1) {
            undo[f] = (uint64_t)cmt__unzigzag(v);
            v = r->prev_v[f] += undo[f];
        }
        e->v[f] = v;
    }
    return p;
}

static __attribute__((noinline)) void undo_values(cmt_reader *r, uint64_t fields,
                                                  const uint64_t *undo)
{
    for (uint64_t m = fields & r->delta_fields & ((UINT64_C(1) << CMT_NFIELDS) - 1); m; m &= m - 1)
        r->prev_v[__builtin_ctzll(m)] -= undo[__builtin_ctzll(m)];
}

/* An event's parts but its values, as the fast decoders read them (before range checks). */
struct parts {
    uint64_t flags, seq, t, api, result, fields;
    int64_t dev;
    uint32_t tid, stack;
};

/* The parts that follow `api` in a v2 EVENT and in a v3 head column, as `flags` names them:
 * seq, tid, result, dev and stack, each its usual value when absent. */
static inline __attribute__((always_inline)) void optional_parts(const cmt_reader *r,
                                                                 const uint8_t **pp,
                                                                 struct parts *x, int *bad)
{
    x->seq = r->prev_seq + (x->flags & CMT_EV_SEQ ? cmt__varint_fast(pp, bad) : 1);
    x->tid = r->prev_tid;
    if (x->flags & CMT_EV_TID)
        x->tid += (uint32_t)cmt__unzigzag(cmt__varint_fast(pp, bad));
    x->result = x->flags & CMT_EV_RESULT ? cmt__varint_fast(pp, bad) : 0;
    x->dev = x->flags & CMT_EV_DEV ? cmt__unzigzag(cmt__varint_fast(pp, bad)) : r->prev_dev;
    x->stack = r->prev_stack;
    if (x->flags & CMT_EV_STACK)
        x->stack += (uint32_t)cmt__unzigzag(cmt__varint_fast(pp, bad));
}

/* @return non-zero when a part is out of its range (a malformed event). */
static inline __attribute__((always_inline)) int parts_out_of_range(const struct parts *x)
{
    return x->api > UINT32_MAX || x->result > UINT32_MAX || x->dev < INT32_MIN ||
           x->dev > INT32_MAX || x->flags & ~(uint64_t)CMT_EV_ALL;
}

/* A well-formed event's parts become the chunk's delta bases and the record. */
static inline __attribute__((always_inline)) void commit_event(cmt_reader *r, struct cmt_event *e,
                                                               const struct parts *x)
{
    r->prev_seq = x->seq;
    r->prev_t = x->t;
    r->prev_tid = x->tid;
    r->prev_dev = (int32_t)x->dev;
    r->prev_stack = x->stack;
    e->seq = x->seq;
    e->t_ns = x->t;
    e->tid = x->tid;
    e->api = (uint32_t)x->api;
    e->result = (int32_t)(uint32_t)x->result;
    e->dev = (int32_t)x->dev;
    e->stack = x->stack;
    e->fields = (uint32_t)x->fields;
    cmt__reader_count_event(r, x->seq);
}

_Static_assert(10 * (9 + CMT_NFIELDS) <= CMT__CHUNK_PAD, "the event fast path may overrun");

/* The common case: a complete event record. Decodes into locals and commits only when the
 * record was well formed and not shorter than its fields (then the checked decoder, which
 * reads absent trailing fields as 0, takes over). @return 0 done, -1 use the checked path. */
static inline __attribute__((always_inline)) int decode_event_fast(cmt_reader *r, const uint8_t *p,
                                                                   const uint8_t *end,
                                                                   struct cmt_event *e)
{
    int bad = 0;
    struct parts x = {0};
    if (__builtin_expect(r->major >= 2, 1)) {
        x.flags = cmt__varint_fast(&p, &bad);
        x.t = r->prev_t + (uint64_t)cmt__unzigzag(cmt__varint_fast(&p, &bad));
        x.api = cmt__varint_fast(&p, &bad);
        optional_parts(r, &p, &x, &bad);
    } else {
        x.seq = r->prev_seq + cmt__varint_fast(&p, &bad);
        x.t = r->prev_t + (uint64_t)cmt__unzigzag(cmt__varint_fast(&p, &bad));
        x.tid = r->prev_tid + (uint32_t)cmt__unzigzag(cmt__varint_fast(&p, &bad));
        x.api = cmt__varint_fast(&p, &bad);
        x.result = cmt__varint_fast(&p, &bad);
        x.dev = cmt__unzigzag(cmt__varint_fast(&p, &bad));
        x.stack = r->prev_stack + (uint32_t)cmt__unzigzag(cmt__varint_fast(&p, &bad));
    }
    uint64_t undo[CMT_NFIELDS];
    x.fields = cmt__varint_fast(&p, &bad);
    p = fast_values(r, p, x.fields, e, undo, &bad);
    if (__builtin_expect(bad || p != end || x.fields >> CMT_NFIELDS || parts_out_of_range(&x), 0)) {
        undo_values(r, x.fields, undo);
        return -1;
    }
    commit_event(r, e, &x);
    return 0;
}

/* ---- EVENTS blocks (v3) ---- */

/* Sets up the block whose payload is [p, end) (cmt__reader_block_columns); an absent column is
 * empty, over the chunk's zeroed padding. @return 0, or -1 when the header is malformed. */
static int start_block(cmt_reader *r, const uint8_t *p, const uint8_t *end)
{
    uint32_t count;
    if (cmt__reader_block_columns(p, end, &count, r->col, r->col_end, CMT_NCOLS, r->end) != 0)
        return -1;
    r->block_left = count;
    return 0;
}

/* After a block's last event: every column must end exactly there. */
static __attribute__((noinline)) void end_block(cmt_reader *r)
{
    for (int k = 0; k < CMT_NCOLS; k++)
        if (r->col[k] != r->col_end[k]) {
            set_damage(r, CMT_ECORRUPT, r->chunk_offset, "event block longer than its events");
            return;
        }
}

/* Field f of a block's event, from its column. */
static inline __attribute__((always_inline)) void block_value(cmt_reader *r, struct cmt_event *e,
                                                              int f, int *bad)
{
    const uint8_t *c = r->col[CMT_COL_VALUES + f];
    uint64_t v = cmt__varint_fast(&c, bad);
    *bad |= c > r->col_end[CMT_COL_VALUES + f];
    r->col[CMT_COL_VALUES + f] = c;
    if (CMT_DELTA_FIELDS >> f & 1)
        v = r->prev_v[f] += (uint64_t)cmt__unzigzag(v);
    e->v[f] = v;
}

/* The next event of the current block. Each read stays within the chunk and its padding: a
 * cursor is at most at its column's end before an event, and an event reads at most 8
 * varints from the head column and one from each other. @return 0, or -1 when malformed. */
static inline __attribute__((always_inline)) int block_event(cmt_reader *r, struct cmt_event *e)
{
    int bad = 0;
    CMT_ASSERT(r->col[CMT_COL_HEAD] <= r->col_end[CMT_COL_HEAD] &&
               r->col[CMT_COL_TIME] <= r->col_end[CMT_COL_TIME]);
    const uint8_t *h = r->col[CMT_COL_HEAD], *tp = r->col[CMT_COL_TIME];
    struct parts x;
    x.flags = cmt__varint_fast(&h, &bad);
    x.api = cmt__varint_fast(&h, &bad);
    optional_parts(r, &h, &x, &bad);
    x.fields = cmt__varint_fast(&h, &bad) & ((UINT64_C(1) << CMT_NFIELDS) - 1); /* newer: skipped */
    x.t = r->prev_t + (uint64_t)cmt__unzigzag(cmt__varint_fast(&tp, &bad));
    /* ptr, size and stream, which most events carry, with constant offsets; then the rest */
    if (x.fields & CMT_F(PTR))
        block_value(r, e, CMT_FIELD_PTR, &bad);
    if (x.fields & CMT_F(SIZE))
        block_value(r, e, CMT_FIELD_SIZE, &bad);
    if (x.fields & CMT_F(STREAM))
        block_value(r, e, CMT_FIELD_STREAM, &bad);
    for (uint64_t m = x.fields & ~(uint64_t)(CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM)); m;
         m &= m - 1)
        block_value(r, e, __builtin_ctzll(m), &bad);
    if (__builtin_expect(bad || h > r->col_end[CMT_COL_HEAD] || tp > r->col_end[CMT_COL_TIME] ||
                             parts_out_of_range(&x),
                         0))
        return -1;
    r->col[CMT_COL_HEAD] = h;
    r->col[CMT_COL_TIME] = tp;
    commit_event(r, e, &x);
    if (__builtin_expect(--r->block_left == 0, 0))
        end_block(r);
    return 0;
}

/* Returns the current block's next event as an EVENT record, or the damage it shows. */
static inline __attribute__((always_inline)) int next_block_event(cmt_reader *r,
                                                                  struct cmt_record *rec)
{
    if (__builtin_expect(block_event(r, &rec->u.event) != 0, 0))
        return set_damage(r, CMT_ECORRUPT, r->chunk_offset, "malformed event block");
    rec->type = CMT_REC_EVENT;
    rec->offset = r->chunk_offset;
    return 1;
}

/* The event decoded ahead e into rec: its parts, ptr, size and stream, then any other field. */
static inline __attribute__((always_inline)) void copy_batch_event(cmt_reader *r,
                                                                   struct cmt_record *rec,
                                                                   const struct cmt_event *e)
{
    memcpy(&rec->u.event, e, offsetof(struct cmt_event, v) + 3 * sizeof e->v[0]);
    const uint32_t others = ~(CMT_F(PTR) | CMT_F(SIZE) | CMT_F(STREAM));
    for (uint32_t m = e->fields & others; __builtin_expect(m != 0, 0); m &= m - 1)
        rec->u.event.v[__builtin_ctz(m)] = e->v[__builtin_ctz(m)];
    rec->type = CMT_REC_EVENT;
    rec->offset = r->chunk_offset;
}

/* Returns the next event decoded ahead; after the block's last, every column must end there. */
static inline __attribute__((always_inline)) int next_batch_event(cmt_reader *r,
                                                                  struct cmt_record *rec)
{
    const struct cmt_event *e = r->batch_next++;
    copy_batch_event(r, rec, e);
    cmt__reader_count_event(r, e->seq);
    if (__builtin_expect(r->batch_next == r->batch_end && r->block_left == 0, 0))
        end_block(r);
    return 1;
}

/* The current block's next event: from a batch (decoded ahead), or one at a time with every
 * check when the batch that holds it showed damage. */
static inline __attribute__((always_inline)) int next_unbatched_block_event(cmt_reader *r,
                                                                            struct cmt_record *rec)
{
    if (r->careful_left == 0) {
        if (__builtin_expect(cmt__reader_fill_batch(r) == 0, 1))
            return next_batch_event(r, rec);
        r->careful_left = r->block_left < CMT__BATCH_EVENTS ? r->block_left : CMT__BATCH_EVENTS;
    }
    r->careful_left--;
    return next_block_event(r, rec);
}

/* Returns the current ALLOC_EVENTS block's next report, or the damage it shows. */
static __attribute__((noinline)) int next_alloc_block_event(cmt_reader *r, struct cmt_record *rec)
{
    if (cmt__reader_alloc_block_next(r, &rec->u.alloc_event) != 0)
        return set_damage(r, CMT_ECORRUPT, r->chunk_offset, "malformed allocator event block");
    rec->type = CMT_REC_ALLOC_EVENT;
    rec->offset = r->chunk_offset;
    return 1;
}

/* The list families (docs/trace-format.md, rule 6): a record of one of them whose bytes
 * repeat an earlier record of the file is folded, so that memory follows distinct content. */
#define CMT__FOLDED_TYPES (1u << CMT_REC_ENV | 1u << CMT_REC_NOTE | 1u << CMT_REC_THREAD)

/* Looks up the whole record [start, end) among those of its families read so far (a rewind
 * keeps them: the first occurrence is known by its ordinal), and sets r->record_fresh.
 * @return 1 when it repeats an earlier record (counted as folded), 0 when it is the first of
 * its content, CMT_ENOMEM. */
static int fold(cmt_reader *r, const uint8_t *start, const uint8_t *end)
{
    int fresh;
    struct cmt__intern_slot *e = cmt__reader_intern(r, &r->folds, start, (size_t)(end - start),
                                                    &fresh);
    if (!e)
        return CMT_ENOMEM;
    if (fresh)
        e->first = r->ordinal;
    r->record_fresh = fresh;
    if (e->first == r->ordinal)
        return 0;
    r->folded++;
    return 1;
}

/* A known record other than EVENTS, decoded (and folded when it repeats one of its list
 * family). @return 1 with *rec filled, 0 when it was folded, or the damage. */
static int known_record(cmt_reader *r, uint32_t type, const uint8_t *start, struct cmt__dec *d,
                        struct cmt_record *rec)
{
    int folded = 0;
    if (CMT__FOLDED_TYPES >> type & 1) {
        folded = fold(r, start, d->end);
        if (folded < 0)
            return set_damage(r, CMT_ENOMEM, r->chunk_offset, "out of memory");
        if (folded && type != CMT_REC_THREAD) /* a repeated THREAD still names its tid */
            return 0;
    }
    int rc = cmt__reader_decode(r, type, d, rec);
    if (rc == CMT_ENOMEM || d->nomem)
        return set_damage(r, CMT_ENOMEM, r->chunk_offset, "out of memory");
    if (rc != 0 || d->bad)
        return set_damage(r, CMT_ECORRUPT, r->chunk_offset, "malformed record");
    return !folded;
}

/* Everything but a complete, well-formed event in the current chunk: chunk boundaries, long
 * record headers, other record types, damage, and events the fast decoder refused. */
static __attribute__((noinline)) int next_slow(cmt_reader *r, struct cmt_record *rec)
{
    for (;;) {
        if (r->error)
            return r->error;
        if (__builtin_expect(r->stopped, 0))
            return 0;
        if (r->cur == r->end) {
            if (r->cut) /* the decoded part of a chunk cut short ends here */
                return set_damage(r, CMT_ETRUNCATED, r->chunk_offset, "chunk cut short");
            if (r->records_seen != r->chunk_records)
                return set_damage(r, CMT_ECORRUPT, r->chunk_offset, "record count mismatch");
            int rc = load_chunk(r);
            if (rc <= 0)
                return rc;
            continue;
        }
        const uint8_t *start = r->cur;
        uint64_t type, len;
        if (cmt__get_varint(&r->cur, r->end, &type) || cmt__get_varint(&r->cur, r->end, &len) ||
            len > (uint64_t)(r->end - r->cur))
            return set_damage(r, r->cut ? CMT_ETRUNCATED : CMT_ECORRUPT, r->chunk_offset,
                              r->cut ? "chunk cut short" : "bad record header");
        struct cmt__dec d = {r->cur, r->cur + len, 0, 0};
        r->cur += len;
        r->records_seen++;
        r->ordinal++;
        rec->type = (uint32_t)type;
        rec->offset = r->chunk_offset;
        if (type == CMT_REC_EVENT && decode_event_fast(r, d.p, d.end, &rec->u.event) == 0)
            return 1;
        if (type == CMT_REC_EVENTS && r->major < 3) /* no 1.x or 2.x writer wrote one */
            return set_damage(r, CMT_ECORRUPT, r->chunk_offset,
                              "event blocks of major 3 in a file that says an older major");
        if (type == CMT_REC_EVENTS) {
            if (start_block(r, d.p, d.end) != 0)
                return set_damage(r, CMT_ECORRUPT, r->chunk_offset, "malformed event block");
            return next_unbatched_block_event(r, rec);
        }
        if (type == CMT_REC_ALLOC_EVENTS) {
            if (cmt__reader_alloc_block(r, &d) != 0)
                return set_damage(r, CMT_ECORRUPT, r->chunk_offset,
                                  "malformed allocator event block");
            return next_alloc_block_event(r, rec);
        }
        if (type == 0 || type >= CMT_REC_MAX)
            continue; /* unknown record types are skipped (MUST) */
        int rc = known_record(r, (uint32_t)type, start, &d, rec);
        if (rc != 0)
            return rc;
    }
}

static inline __attribute__((always_inline)) int next_record(cmt_reader *r, struct cmt_record *rec)
{
    if (__builtin_expect(r->batch_next != r->batch_end, 1)) /* an EVENTS block's next event */
        return next_batch_event(r, rec);
    if (__builtin_expect(r->block_left != 0, 1))
        return next_unbatched_block_event(r, rec);
    if (__builtin_expect(r->ablock_left != 0, 0)) /* an ALLOC_EVENTS block's next report */
        return next_alloc_block_event(r, rec);
    /* the hot path: an event with a two-byte header, whole inside the current chunk (a
     * damaged reader has cur == end, so it always takes the slow path) */
    const uint8_t *cur = r->cur;
    if (__builtin_expect(r->end - cur >= 2 && cur[0] == CMT_REC_EVENT && cur[1] < 0x80 &&
                             cur[1] <= r->end - cur - 2,
                         1)) {
        const uint8_t *p = cur + 2, *end = p + cur[1];
        if (__builtin_expect(decode_event_fast(r, p, end, &rec->u.event) == 0, 1)) {
            r->cur = end;
            r->records_seen++;
            rec->type = CMT_REC_EVENT;
            rec->offset = r->chunk_offset;
            return 1;
        }
    }
    return next_slow(r, rec);
}

/* The next record but the common case, an event decoded ahead that is kept. */
static __attribute__((noinline)) int next_any(cmt_reader *r, struct cmt_record *rec)
{
    int rc = next_record(r, rec);
    while (__builtin_expect(r->drop_event, 0) && rc > 0) { /* rule 7: an overlapping event */
        r->drop_event = 0;
        rc = next_record(r, rec);
    }
    return rc;
}

/* cmt_reader_next's event decoded ahead, rec, when it is not the next seq in order or ends its
 * block: counted (rule 7: left out when it overlaps), the block's end checked. */
static __attribute__((noinline)) int batch_event_end(cmt_reader *r, struct cmt_record *rec)
{
    cmt__reader_count_event(r, rec->u.event.seq);
    if (r->batch_next == r->batch_end && r->block_left == 0)
        end_block(r);
    if (__builtin_expect(!r->drop_event, 1))
        return 1;
    r->drop_event = 0;
    return next_any(r, rec);
}

int cmt_reader_next(cmt_reader *r, struct cmt_record *rec)
{
    const struct cmt_event *e = r->batch_next;
    if (__builtin_expect(e == r->batch_end, 0))
        return next_any(r, rec);
    /* the common case: the next seq in order, not its block's last (only tail calls besides) */
    r->batch_next = e + 1;
    uint64_t seq = e->seq;
    copy_batch_event(r, rec, e);
    if (__builtin_expect(
            seq != r->last_seq + 1 || seq == 0 || (e + 1 == r->batch_end && r->block_left == 0), 0))
        return batch_event_end(r, rec);
    r->last_seq = seq;
    r->events++;
    return 1;
}

void cmt_reader_stop(cmt_reader *r)
{
    r->stopped = 1;
    r->cur = r->end;  /* the fast path sees no event left in the chunk: next_slow says 0 */
    forget_blocks(r); /* nor in a block */
}

int cmt_reader_preload(cmt_reader *r)
{
    struct cmt_record rec;
    int rc;
    while ((rc = cmt_reader_next(r, &rec)) > 0)
        ;
    /* the damage is described after the rewind too: a caller that refuses it names it (the
     * next pass stops at the same place and describes it the same way) */
    char damage[sizeof r->damage];
    uint64_t offset = r->damage_offset;
    memcpy(damage, r->damage, sizeof damage);
    cmt_reader_rewind(r);
    memcpy(r->damage, damage, sizeof damage);
    r->damage_offset = offset;
    return rc;
}
