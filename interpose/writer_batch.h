/* writer_batch.h — the writer thread's memory and its batch of entries (internal).
 *
 * The writer thread maps its memory (never malloc: glibc would give the thread an arena of its
 * own, 64 MB of address space that a program under `ulimit -v` may need). Each drain takes the
 * rings' new entries as runs, one per ring (a thread queues in cmt__queued_order), and writes
 * those that no thread can precede any more in that order, straight from the rings. */
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

#define CMT__BATCH_RUNS 16 /* runs merged in place; more (many threads): copied, heap sorted */

/* A ring's entries [pos, end) not written yet, in cmt__queued_order (a thread queues so). */
struct cmt__run {
    struct cmt__thread *t;
    uint64_t pos, end;
};

struct cmt__batch {
    struct cmt__run *runs; /* this drain's, one per ring with entries */
    size_t nruns, runs_cap;
    struct cmt__queued *items; /* copies, only to sort more than CMT__BATCH_RUNS runs */
    size_t cap;
};

/* Starts a drain: no runs. */
void cmt__batch_begin(struct cmt__batch *b);
/* Adds ring t's entries [tail, head) (tail < head) as a run. @return 0, or -1 (out of memory). */
int cmt__batch_add_run(struct cmt__batch *b, struct cmt__thread *t, uint64_t tail, uint64_t head);
/* Writes, in cmt__queued_order, every entry of the runs with a seq below `limit` (UINT64_MAX:
 * all), through emit(ctx, entry), read where it lies in its ring (no copy: what stays for the
 * next drain stays in the ring). Up to CMT__BATCH_RUNS runs are merged in place, a stretch of
 * one run below every other run's next entry at a time (threads that took turns on the cores
 * leave long ones); more are copied out and heap sorted. Each run's pos ends at its first
 * entry not written; *next_seq = the seq after the last one written (untouched when none).
 * @return 0, emit's error, or CMT_ENOMEM (no room to sort: nothing written). */
int cmt__batch_emit(struct cmt__batch *b, uint64_t limit,
                    int (*emit)(void *ctx, const struct cmt__queued *e), void *ctx,
                    uint64_t *next_seq);

#endif
