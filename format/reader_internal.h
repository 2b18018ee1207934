/* reader_internal.h — the reader's state, shared by reader.c (decoding) and
 * reader_tables.c (interned tables and queries). Internal to format/. */
#ifndef CMT__READER_INTERNAL_H
#define CMT__READER_INTERNAL_H

#include <zstd.h>

#include "reader.h"

/* Bounds that keep a hostile file from asking for absurd tables. */
#define CMT__MAX_TABLE_ID (1u << 26)
#define CMT__MAX_API_ID 65535u
/* Zeroed bytes kept after a chunk's records, so the unchecked event decoders never read
 * outside the buffer (they check their positions against the record's or column's end
 * afterwards): an EVENT has at most 9 + CMT_NFIELDS varints of at most 10 bytes, so even a
 * record cut to one byte keeps every read within 10 * (9 + CMT_NFIELDS) bytes past its end;
 * an event batch's bound follows. */
#define CMT__CHUNK_PAD 1024
/* The events of an EVENTS block decoded ahead at a time (reader_batch.c). Its unchecked reads
 * stay within the padding too: a cursor starts at most at the chunk's end, a varint that
 * starts below it ends at most 9 bytes past it and one that starts in the zeroed padding is
 * one byte long, and the head column gives at most 8 varints an event. */
#define CMT__BATCH_EVENTS 64
_Static_assert(8 * CMT__BATCH_EVENTS + 2 * 10 <= CMT__CHUNK_PAD, "an event batch may overrun");

/* A checked decoder over [p, end): reads past the end set bad (reader_records.c). */
struct cmt__dec {
    const uint8_t *p, *end;
    int bad, nomem;
};

struct cmt__arena_block {
    struct cmt__arena_block *next;
    size_t used, cap;
    char data[];
};

struct cmt__thread_entry {
    uint32_t tid;
    const char *name;
};

/* A set of byte strings, each kept once in the arena (open addressing, linear probes, half
 * full at most): the reader's strings, and the records of the list families (ENV, NOTE,
 * THREAD), so that memory follows what is distinct, not what a file repeats. */
struct cmt__intern_slot {
    uint64_t hash; /* 0: the slot is empty (hashes are stored with their low bit set) */
    const char *text;
    size_t len;
    uint64_t first; /* the fold set: the ordinal of the record's first occurrence */
};
struct cmt__intern {
    struct cmt__intern_slot *slots;
    size_t cap, count;
};

struct cmt_reader {
    const uint8_t *data; /* whole file */
    size_t len;
    void *map; /* non-NULL when we mmap'ed it */
    size_t map_len;
    size_t released; /* the mapping's pages below this offset were handed back (madvise) */

    ZSTD_DCtx *dctx;
    uint8_t *raw; /* current chunk, decompressed */
    size_t raw_cap;
    /* offset + 1 of the whole chunk raw holds, 0 none: a rewind to the chunk last loaded (a
     * first look, a second pass) decodes it once */
    uint64_t raw_whole;
    const uint8_t *cur, *end; /* unread part of the current chunk */
    uint64_t pos;             /* offset of the next chunk header */
    uint64_t chunk_offset;    /* offset of the current chunk */
    int cut;                  /* the current chunk is cut short: only its start was decoded */
    unsigned major;           /* format major version of the file (1, 2 or 3) */
    uint32_t delta_fields;    /* CMT_DELTA_FIELDS (v2), or CMT_F(PTR) alone (v1) */
    uint64_t prev_t, prev_seq, prev_v[CMT_NFIELDS]; /* delta bases, reset per chunk */
    uint32_t prev_tid, prev_stack;
    int32_t prev_dev;
    uint32_t chunk_records, records_seen; /* declared in the chunk header / decoded */
    /* the EVENTS block being read (v3): events left, and a cursor and end per column (an
     * absent column is empty: a cursor at the chunk's zeroed padding) */
    uint32_t block_left;
    const uint8_t *col[CMT_NCOLS], *col_end[CMT_NCOLS];
    /* events of that block decoded ahead (reader_batch.c): [batch_next, batch_end) of batch[]
     * are handed out next, and block_left does not count them; careful_left: events to decode
     * one at a time, with every check, because the batch that held them showed damage */
    const struct cmt_event *batch_next, *batch_end;
    uint32_t careful_left;
    int pext; /* batches pack varints with BMI2's pext (cmt__reader_cpu_pext) */
    /* the ALLOC_EVENTS block being read (3.3): reports left, a decoder per column (an absent
     * column reads as damage), and its delta bases, reset per chunk */
    uint32_t ablock_left;
    struct cmt__dec acol[CMT_NACOLS];
    uint64_t prev_at, prev_av[CMT_NAFIELDS];

    /* the chunk sequence (reader_chunks.c): the whole chunks found at the first load, in the
     * order they are read (seq order; a chunk repeated byte for byte left out), then the rest
     * of the file from scan_end in file order (a chunk cut short, damage) */
    int scanned;
    uint64_t *order;
    uint64_t *order_low; /* order_low[i]: the lowest offset of order[i..] (pages below it go) */
    size_t order_count, order_next;
    uint64_t scan_end;
    uint64_t repeated_chunks, repeated_at;   /* chunks left out; the first one's offset */
    uint64_t moved_chunks, moved_at;         /* chunks read out of file order; the first's */
    uint64_t missing_events, missing_at;     /* a chunk's first event jumps the seq: the first */
    uint64_t overlapping_events, overlap_at; /* events at or below a seq already read: left out */
    int drop_event;                          /* the event just decoded is one of them */
    uint64_t chunk_first_event;              /* r->events when the current chunk was loaded */

    int error;   /* sticky damage code */
    int stopped; /* cmt_reader_stop: the pass ends here (until a rewind) */
    uint64_t damage_offset;
    char damage[160];

    struct cmt__arena_block *arena;
    uint64_t hash_seed;
    struct cmt__intern strings_interned; /* every string a record holds */
    struct cmt__intern folds;            /* records of the list families, whole */
    uint64_t ordinal;                    /* records read by the slow path in this pass */
    uint64_t folded;                     /* repeated records folded in this pass */
    int record_fresh; /* the record being decoded is the first of its content in the file */

    struct cmt_process process;
    int have_process;
    const char **argv;

    struct cmt_api *apis;
    uint32_t api_cap;
    const char **strings;
    uint32_t string_cap, string_max;
    uint32_t *node_parent;
    uint64_t *node_ip;
    uint32_t node_cap, node_max;
    struct cmt_symbol *symbols;
    uint32_t symbol_cap;
    struct cmt_module *modules;
    uint32_t module_count, module_cap;
    struct cmt_device *devices;
    uint32_t device_cap;
    struct cmt__thread_entry *threads;
    uint32_t thread_count, thread_cap;
    uint32_t *thread_index; /* open addressing by tid: position in threads + 1, 0 empty */
    uint32_t thread_index_cap;
    struct cmt_env *envs;
    size_t env_count, env_cap;

    int clean_exit;
    uint64_t events, gaps, last_seq;

    struct cmt_event batch[CMT__BATCH_EVENTS]; /* see batch_next */
};

/* Tables (reader_tables.c). Each store returns 0, CMT_ECORRUPT for an id out of bounds, or
 * CMT_ENOMEM. */
/* A hash of s keyed by the reader's seed. */
uint64_t cmt__reader_hash(const cmt_reader *r, const uint8_t *s, size_t len);
/* The arena's copy of s (NUL-terminated), the same pointer for the same bytes. NULL: no memory. */
const char *cmt__reader_strdup(cmt_reader *r, const uint8_t *s, size_t len);
/* The slot of bytes s in set t, added (with *fresh = 1) when new. NULL: no memory. The slot
 * moves when the set grows: use it before the next call. */
struct cmt__intern_slot *cmt__reader_intern(cmt_reader *r, struct cmt__intern *t, const uint8_t *s,
                                            size_t len, int *fresh);
int cmt__reader_store_api(cmt_reader *r, const struct cmt_api *a);
int cmt__reader_store_string(cmt_reader *r, uint32_t id, const char *s);
int cmt__reader_store_node(cmt_reader *r, const struct cmt_stack_node *n);
int cmt__reader_store_symbol(cmt_reader *r, const struct cmt_symbol *s);
int cmt__reader_store_module(cmt_reader *r, const struct cmt_module *m);
int cmt__reader_store_device(cmt_reader *r, const struct cmt_device *d);
int cmt__reader_store_thread(cmt_reader *r, const struct cmt_thread *th);
int cmt__reader_store_env(cmt_reader *r, const struct cmt_env *e);
/* Frees every table and the string arena. */
void cmt__reader_free_tables(cmt_reader *r);

/* The reader hands back the mapped pages it has read in steps of this size, aligned on it. */
#define CMT__RELEASE_STEP (2u << 20)
/* Hands back the mapped pages below `upto` (from r->released on, to the last 2 MiB boundary
 * of the address space at or below it), so that the resident memory of a pass over a large
 * file stays bounded (reader.c). A caller reads what it needs under `upto` first: a page
 * touched again below r->released stays resident until the next rewind. */
void cmt__reader_release(cmt_reader *r, uint64_t upto);
/* Chunks (reader_chunks.c). Walks the headers of the whole chunks once, leaves out a chunk
 * that repeats an earlier one byte for byte, and orders the chunks with events by the seq of
 * their first event (a chunk without events keeps its place). @return 0 or CMT_ENOMEM. */
int cmt__reader_scan_chunks(cmt_reader *r);
/* Counts the events missing before an event of `seq` (it jumps the seq order): at a chunk's
 * start, a chunk missing. */
void cmt__reader_count_gap(cmt_reader *r, uint64_t seq);
/* Counts an event of `seq` in the seq order: one at or below a seq already read (a chunk
 * written twice with other bytes, or overlapping its neighbours) is marked to be left out
 * (drop_event), never counted twice. */
static inline __attribute__((always_inline)) void cmt__reader_count_event(cmt_reader *r,
                                                                          uint64_t seq)
{
    if (__builtin_expect(seq == r->last_seq + 1 && seq != 0, 1)) { /* the next in order */
        r->last_seq = seq;
        r->events++;
        return;
    }
    if (__builtin_expect(r->events != 0 && seq <= r->last_seq, 0)) {
        if (!r->overlapping_events++)
            r->overlap_at = r->chunk_offset;
        r->drop_event = 1;
        return;
    }
    if (__builtin_expect(r->events && seq > r->last_seq + 1, 0))
        cmt__reader_count_gap(r, seq);
    r->last_seq = seq;
    r->events++;
}
/* The chunk header at `at` is whole and sane, its frame csize bytes long (*csize, *rsize). */
int cmt__reader_chunk_header_ok(const cmt_reader *r, uint64_t at, uint32_t *csize, uint32_t *rsize);

/* A record's payload being decoded: absent trailing fields read as 0, damage sets bad, a
 * failed allocation nomem. */
/* Decodes one known record's payload (any type but EVENTS; reader_records.c).
 * @return 0, -1 when the payload is malformed, or CMT_ENOMEM. */
int cmt__reader_decode(cmt_reader *r, uint32_t type, struct cmt__dec *d, struct cmt_record *rec);
/* The header of an EVENTS or ALLOC_EVENTS block whose payload is [p, end): varint count (at
 * least 1), varint mask of the columns present (head and time always), a varint length per
 * column, the columns, adding up to the payload. Sets *count and, for each column k < ncols,
 * [col[k], col_end[k]) (`absent` for both when the mask leaves it out); a column past ncols (a
 * newer writer's field) is skipped. @return 0, or -1 when the header is malformed. */
int cmt__reader_block_columns(const uint8_t *p, const uint8_t *end, uint32_t *count,
                              const uint8_t **col, const uint8_t **col_end, int ncols,
                              const uint8_t *absent);
/* Decodes the next min(block_left, CMT__BATCH_EVENTS) events of the current EVENTS block into
 * r->batch at once, with their checks made once for all (reader_batch.c); the state moves on
 * only when every one of them is well formed. @return 0, or -1 when one of them is malformed
 * (nothing changed: the one-at-a-time decoder finds which). */
int cmt__reader_fill_batch(cmt_reader *r);
/* @return non-zero when this CPU runs BMI2's pext fast (then a reader's batches use it). */
int cmt__reader_cpu_pext(void);
/* An ALLOC_EVENTS block's payload d: sets up its columns and r->ablock_left.
 * @return 0, or -1 when its header is malformed. */
int cmt__reader_alloc_block(cmt_reader *r, struct cmt__dec *d);
/* The block's next report (after its last, every column must have ended there).
 * @return 0, or -1 when the block is malformed. */
int cmt__reader_alloc_block_next(cmt_reader *r, struct cmt_alloc_event *e);

#endif
