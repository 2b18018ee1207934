/* writer_batch.h — the writer thread's memory and its batch of entries (internal).
 *
 * The writer thread maps its memory (never malloc: glibc would give the thread an arena of its
 * own, 64 MB of address space that a program under `ulimit -v` may need). Each drain copies the
 * rings' new entries into one batch, a run per ring (a thread queues in (seq, kind) order),
 * after what the last drain held back, and puts the batch in that order. */
#ifndef CMT__WRITER_BATCH_H
#define CMT__WRITER_BATCH_H

#include <stddef.h>

#include "shared.h"
#include "writer.h"

/* A block of `size` bytes mapped for the writer (a cmt_allocator's alloc; ctx unused).
 * @return it, or NULL. */
void *cmt__map_alloc(void *ctx, size_t size);
/* Unmaps a block of cmt__map_alloc (NULL: nothing). */
void cmt__map_free(void *ctx, void *p);
/* The format writer's allocator: cmt__map_alloc / cmt__map_free. */
extern const struct cmt_allocator cmt__map_allocator;
/* Grows the array *items of *cap elements of `unit` bytes to at least `need` (doubling, from
 * `first`). @return 0, or -1 (out of memory: *items unchanged). */
int cmt__map_grow(void **items, size_t *cap, size_t need, size_t unit, size_t first);

#define CMT__BATCH_RUNS 16 /* sorted runs merged directly; more (many threads): a heap sort */

struct cmt__batch {
    struct cmt__queued *items, *merged; /* the batch, and room to merge it into */
    size_t len, cap, merged_cap;
    size_t run_start[CMT__BATCH_RUNS + 1]; /* where each run starts (the first runs) */
    size_t runs;
};

/* Starts a drain: what the batch still holds (held back last time) is its first run. */
void cmt__batch_begin(struct cmt__batch *b);
/* Appends entries [tail, head) of ring t as one run (in at most two memcpys: the ring wraps).
 * @return 0, or -1 (out of memory: nothing appended). */
int cmt__batch_add_run(struct cmt__batch *b, const struct cmt__thread *t, uint64_t tail,
                       uint64_t head);
/* Puts the batch in (seq, kind) order: nothing to do when each run starts after the one before
 * it ends; else a merge that copies each stretch of a run below the other runs' next keys in
 * one memcpy (threads that took turns on the cores leave long ones); past CMT__BATCH_RUNS
 * runs, or without memory for the merge, a heap sort in place. */
void cmt__batch_sort(struct cmt__batch *b);
/* Drops the first n entries (written); the rest stays for the next drain. */
void cmt__batch_drop(struct cmt__batch *b, size_t n);

#endif
