/* reader_chunks.c — the chunk sequence (docs/trace-format.md, rule 7): at the first load the
 * reader walks the headers of the whole chunks, leaves out a chunk that repeats an earlier one
 * byte for byte, and reads the chunks that hold events in the order of their first event's seq
 * (a chunk moved in the file is read where the seq order puts it). A chunk cut short and
 * whatever follows damage are read after them, in file order, as before. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "cmt_error.h"
#include "cmt_grow.h"
#include "reader_internal.h"
#include "varint.h"

int cmt__reader_chunk_header_ok(const cmt_reader *r, uint64_t at, uint32_t *csize, uint32_t *rsize)
{
    if (r->len - at < CMT_CHUNK_HEADER_SIZE)
        return 0;
    const uint8_t *h = r->data + at;
    *csize = cmt__get_le32(h + 4);
    *rsize = cmt__get_le32(h + 8);
    return cmt__get_le32(h) == CMT_CHUNK_MAGIC && *rsize != 0 && *rsize <= CMT_CHUNK_RAW_MAX &&
           *csize <= ZSTD_compressBound(*rsize) + 64;
}

/* The seq of the event that starts at p (an EVENT or EVENTS payload, [p, end) a prefix of it):
 * the delta bases are those of a chunk's start. @return 0 with *seq, -1 when malformed. */
static int event_seq(const cmt_reader *r, uint64_t type, const uint8_t *p, const uint8_t *end,
                     uint64_t *seq)
{
    uint64_t v, flags = CMT_EV_SEQ;
    if (type == CMT_REC_EVENTS) { /* count, mask, a length per column, then the head column */
        uint64_t mask;
        if (cmt__get_varint(&p, end, &v) || cmt__get_varint(&p, end, &mask))
            return -1;
        for (int k = __builtin_popcountll(mask); k > 0; k--)
            if (cmt__get_varint(&p, end, &v))
                return -1;
    }
    if (r->major >= 2 || type == CMT_REC_EVENTS) { /* flags, (t), api, then seq if flagged */
        if (cmt__get_varint(&p, end, &flags) ||
            (type == CMT_REC_EVENT && cmt__get_varint(&p, end, &v)) || cmt__get_varint(&p, end, &v))
            return -1;
    }
    *seq = 1; /* the step when absent, from 0 */
    return flags & CMT_EV_SEQ ? cmt__get_varint(&p, end, seq) ? -1 : 0 : 0;
}

/* Looks for the first event among the records decoded so far, raw[*next, produced) (`final`:
 * nothing more will come). @return 1 with *seq, 0 when more is needed, -1 when the chunk has
 * no event (or its records do not parse: the chunk keeps its place, damage is found later). */
static int first_event(const cmt_reader *r, size_t produced, int final, size_t *next, uint64_t *seq)
{
    while (*next < produced) {
        const uint8_t *q = r->raw + *next, *end = r->raw + produced;
        uint64_t type, len;
        if (cmt__get_varint(&q, end, &type) || cmt__get_varint(&q, end, &len))
            return final ? -1 : 0;
        size_t payload = (size_t)(q - r->raw);
        if (len > CMT_CHUNK_RAW_MAX)
            return -1;
        if (type == CMT_REC_EVENT || (type == CMT_REC_EVENTS && r->major >= 3)) {
            size_t want = len < 256 ? (size_t)len : 256; /* the seq lies in the first bytes */
            if (produced - payload < want)
                return final ? -1 : 0;
            return event_seq(r, type, q, q + want, seq) == 0 ? 1 : -1;
        }
        *next = payload + (size_t)len;
    }
    return final ? -1 : 0;
}

/* Decompresses the chunk at `at` only as far as its first event. @return 1 with *seq, 0 when
 * it has none, CMT_ENOMEM. */
static int probe_first_seq(cmt_reader *r, uint64_t at, uint32_t csize, uint32_t rsize,
                           uint64_t *seq)
{
    if (rsize > r->raw_cap) {
        uint8_t *p = realloc(r->raw, (size_t)rsize + CMT__CHUNK_PAD);
        if (!p)
            return CMT_ENOMEM;
        r->raw = p;
        r->raw_cap = rsize;
    }
    r->raw_whole = 0;
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    /* the frame is handed over 16 KiB at a time: zstd decodes the blocks that are whole, so
     * that the walk decodes about one block of each chunk, not all of it */
    ZSTD_inBuffer in = {r->data + at + CMT_CHUNK_HEADER_SIZE, csize < 16384 ? csize : 16384, 0};
    ZSTD_outBuffer out = {r->raw, rsize, 0};
    size_t next = 0;
    for (;;) {
        size_t before = in.pos + out.pos;
        size_t left = ZSTD_decompressStream(r->dctx, &out, &in);
        if (ZSTD_isError(left))
            return ZSTD_getErrorCode(left) == ZSTD_error_memory_allocation ? CMT_ENOMEM : 0;
        int stuck = in.pos + out.pos == before && in.size == csize;
        int final = left == 0 || out.pos == out.size || stuck;
        int found = first_event(r, out.pos, final, &next, seq);
        if (found || final)
            return found > 0;
        if (in.pos == in.size)
            in.size = csize - in.size < 16384 ? csize : in.size + 16384;
    }
}

/* The chunks found by the walk: their offset, and the seq of their first event. */
struct chunk {
    uint64_t at, seq;
    int has_seq, repeated;
};

static uint64_t chunk_hash(const cmt_reader *r, const struct chunk *c)
{
    /* the header (sizes, record count) and the frame's last bytes (its checksum) */
    const uint8_t *h = r->data + c->at;
    size_t csize = cmt__get_le32(h + 4), tail = csize < 8 ? csize : 8;
    return cmt__reader_hash(r, h, CMT_CHUNK_HEADER_SIZE) ^
           cmt__reader_hash(r, h + CMT_CHUNK_HEADER_SIZE + csize - tail, tail) * 31;
}

static int same_chunk(const cmt_reader *r, const struct chunk *a, const struct chunk *b)
{
    size_t len = CMT_CHUNK_HEADER_SIZE + cmt__get_le32(r->data + a->at + 4);
    return len == CMT_CHUNK_HEADER_SIZE + cmt__get_le32(r->data + b->at + 4) &&
           memcmp(r->data + a->at, r->data + b->at, len) == 0;
}

/* The chunks seen so far, by a hash of their header and last bytes. */
struct seen {
    struct {
        uint64_t hash;
        size_t index;
    } * slots;
    size_t cap;
};

/* @return 0 or CMT_ENOMEM. */
static int seen_init(struct seen *t, size_t n)
{
    t->cap = 64;
    while (t->cap < 2 * n)
        t->cap *= 2;
    t->slots = calloc(t->cap, sizeof *t->slots);
    return t->slots ? 0 : CMT_ENOMEM;
}

/* Marks chunk i when it repeats an earlier one byte for byte, else adds it to t. */
static void mark_repeat(cmt_reader *r, struct seen *t, struct chunk *c, size_t i)
{
    uint64_t h = chunk_hash(r, &c[i]) | 1; /* 0 marks an empty slot */
    size_t j = (size_t)h & (t->cap - 1);
    int alike = 0; /* chunks alike but in the middle: 8 compared, the rest not kept */
    for (; t->slots[j].hash; j = (j + 1) & (t->cap - 1)) {
        if (t->slots[j].hash != h)
            continue;
        if (same_chunk(r, &c[t->slots[j].index], &c[i])) {
            c[i].repeated = 1;
            if (!r->repeated_chunks++)
                r->repeated_at = c[i].at;
            return;
        }
        if (++alike == 8)
            return;
    }
    t->slots[j].hash = h;
    t->slots[j].index = i;
}

static int by_seq(const void *a, const void *b)
{
    const struct chunk *x = *(struct chunk *const *)a, *y = *(struct chunk *const *)b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at; /* stable: file order among equals */
}

/* r->order: the chunks kept, in file order, but those with events in the places of the chunks
 * with events sorted by their first seq. @return 0 or CMT_ENOMEM. */
static int order_chunks(cmt_reader *r, struct chunk *c, size_t n)
{
    struct chunk **ev = malloc((n ? n : 1) * sizeof *ev);
    r->order = malloc((n ? n : 1) * sizeof *r->order);
    r->order_low = malloc((n ? n : 1) * sizeof *r->order_low);
    if (!ev || !r->order || !r->order_low) {
        free(ev);
        return CMT_ENOMEM;
    }
    size_t nev = 0;
    int sorted = 1;
    for (size_t i = 0; i < n; i++)
        if (!c[i].repeated && c[i].has_seq) {
            sorted &= nev == 0 || ev[nev - 1]->seq <= c[i].seq;
            ev[nev++] = &c[i];
        }
    if (!sorted)
        qsort(ev, nev, sizeof *ev, by_seq);
    size_t k = 0;
    r->order_count = 0;
    for (size_t i = 0; i < n; i++) {
        if (c[i].repeated)
            continue;
        const struct chunk *take = c[i].has_seq ? ev[k++] : &c[i];
        if (take != &c[i] && !r->moved_chunks++)
            r->moved_at = take->at;
        r->order[r->order_count++] = take->at;
    }
    /* the pages below the lowest chunk still to be read can go (a moved chunk keeps those
     * of the chunks it jumped over) */
    for (size_t i = r->order_count; i-- > 0;)
        r->order_low[i] = i + 1 < r->order_count && r->order_low[i + 1] < r->order[i]
                              ? r->order_low[i + 1]
                              : r->order[i];
    free(ev);
    return 0;
}

int cmt__reader_scan_chunks(cmt_reader *r)
{
    r->scanned = 1;
    struct chunk *c = NULL;
    size_t n = 0, cap = 0;
    uint64_t at = CMT_FILE_HEADER_SIZE;
    uint32_t csize, rsize;
    int rc = 0;
    while (at < r->len && cmt__reader_chunk_header_ok(r, at, &csize, &rsize) &&
           r->len - at - CMT_CHUNK_HEADER_SIZE >= csize) {
        if (CMT_GROW(c, cap, n + 1, 64) != 0) {
            rc = CMT_ENOMEM;
            goto out;
        }
        c[n++] = (struct chunk){at, 0, 0, 0};
        at += CMT_CHUNK_HEADER_SIZE + csize;
        cmt__reader_release(r, at); /* the pages each header brought in (a whole folio) */
    }
    r->released = 0;
    r->scan_end = at;
    struct seen seen;
    if ((rc = seen_init(&seen, n)) != 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        mark_repeat(r, &seen, c, i);
        if (c[i].repeated)
            continue;
        cmt__reader_chunk_header_ok(r, c[i].at, &csize, &rsize);
        int found = probe_first_seq(r, c[i].at, csize, rsize, &c[i].seq);
        if (found < 0) {
            free(seen.slots);
            rc = found;
            goto out;
        }
        c[i].has_seq = found;
        /* again: no more of the file stays resident (the next chunk starts where this ends) */
        cmt__reader_release(r, c[i].at + CMT_CHUNK_HEADER_SIZE + csize);
    }
    free(seen.slots);
    rc = order_chunks(r, c, n);
out:
    cmt__reader_release(r, r->len); /* and the first pass starts releasing from the start */
    r->released = 0;
    free(c);
    if (rc) { /* read in file order, as far as memory goes */
        free(r->order);
        free(r->order_low);
        r->order = r->order_low = NULL;
        r->order_count = 0;
        r->scan_end = CMT_FILE_HEADER_SIZE;
    }
    return rc;
}

void cmt__reader_count_gap(cmt_reader *r, uint64_t seq)
{
    r->gaps += seq - r->last_seq - 1;
    if (r->events == r->chunk_first_event) { /* at a chunk's start: a chunk missing */
        if (!r->missing_events)
            r->missing_at = r->chunk_offset;
        r->missing_events += seq - r->last_seq - 1;
    }
}

size_t cmt_reader_sequence_note(const cmt_reader *r, char *buf, size_t size)
{
    size_t n = 0;
    const char *sep = "";
    buf[0] = 0;
#define CMT__NOTE_PART(...)                                            \
    do {                                                               \
        int k = snprintf(buf + n, n < size ? size - n : 0, "%s", sep); \
        n += k > 0 ? (size_t)k : 0;                                    \
        k = snprintf(buf + n, n < size ? size - n : 0, __VA_ARGS__);   \
        n += k > 0 ? (size_t)k : 0;                                    \
        sep = "; ";                                                    \
    } while (0)
    if (r->repeated_chunks)
        CMT__NOTE_PART("%llu chunk%s repeating an earlier one byte for byte left out (the first "
                       "at byte %llu)",
                       (unsigned long long)r->repeated_chunks, r->repeated_chunks > 1 ? "s" : "",
                       (unsigned long long)r->repeated_at);
    if (r->moved_chunks)
        CMT__NOTE_PART("%llu chunks out of seq order read in seq order (the first read: the "
                       "chunk at byte %llu)",
                       (unsigned long long)r->moved_chunks, (unsigned long long)r->moved_at);
    if (r->missing_events)
        CMT__NOTE_PART("%llu events missing between chunks (a chunk lost: the first gap before "
                       "the chunk at byte %llu)",
                       (unsigned long long)r->missing_events, (unsigned long long)r->missing_at);
    if (r->overlapping_events)
        CMT__NOTE_PART("%llu events at or below a seq already read left out (a chunk written "
                       "twice or overlapping another: the first in the chunk at byte %llu)",
                       (unsigned long long)r->overlapping_events,
                       (unsigned long long)r->overlap_at);
#undef CMT__NOTE_PART
    return n;
}
