/* interpose/writer_batch.c: the writer's drain. Runs read where they lie in their rings
 * (across the wrap) are written in (seq, tid, kind) order, whether they follow one another,
 * interleave in stretches, share seqs across threads or are more than a merge takes; entries at
 * or past the limit stay in their ring (each run's pos stops at the first) and come first in
 * the next drain. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "writer_batch.h"

/* A ring of `entries` slots (a power of two), its thread's tid one more than the last one's. */
static struct cmt__thread *ring(uint32_t entries)
{
    static uint32_t tids;
    size_t bytes = sizeof(struct cmt__thread) + entries * sizeof(struct cmt__queued);
    struct cmt__thread *t = aligned_alloc(CMT__CACHE_LINE, (bytes + 63) / 64 * 64);
    cr_assert_not_null(t);
    memset(t, 0, bytes);
    t->mask = entries - 1;
    t->tid = ++tids;
    return t;
}

/* Queues entry (seq, kind) at t's head. */
static void put(struct cmt__thread *t, uint64_t seq, uint8_t kind)
{
    struct cmt__queued *e = &t->ring[t->head & t->mask];
    memset(e, 0, sizeof *e);
    e->seq = seq;
    e->tid = t->tid;
    e->kind = kind;
    e->v[0] = seq * 10 + kind; /* the payload travels with the entry */
    t->head++;
}

/* What emit saw. */
static struct cmt__queued seen[4096];
static size_t nseen;

static int record(void *ctx, const struct cmt__queued *e)
{
    (void)ctx;
    cr_assert_lt(nseen, sizeof seen / sizeof *seen);
    seen[nseen++] = *e;
    return 0;
}

/* Every entry seen in strictly increasing order, its payload its own, `n` of them. */
static void assert_ordered(size_t n)
{
    cr_assert_eq(nseen, n);
    for (size_t i = 0; i < nseen; i++) {
        cr_assert_eq(seen[i].v[0], seen[i].seq * 10 + seen[i].kind, "entry %zu", i);
        if (i)
            cr_assert(cmt__queued_order(&seen[i - 1]) < cmt__queued_order(&seen[i]),
                      "entries %zu and %zu", i - 1, i);
    }
}

/* One drain of rings t[0..n-1] below `limit`: each ring's tail moves to its run's pos. */
static uint64_t drain(struct cmt__batch *b, struct cmt__thread **t, int n, uint64_t limit)
{
    uint64_t next = 0;
    nseen = 0;
    cmt__batch_begin(b);
    for (int r = 0; r < n; r++)
        if (t[r]->tail != t[r]->head)
            cr_assert_eq(cmt__batch_add_run(b, t[r], t[r]->tail, t[r]->head), 0);
    cr_assert_eq(cmt__batch_emit(b, limit, record, NULL, &next), 0);
    for (size_t r = 0; r < b->nruns; r++)
        b->runs[r].t->tail = b->runs[r].pos;
    return next;
}

Test(writer_batch, reads_a_run_across_the_ring_wrap)
{
    struct cmt__thread *t = ring(8);
    struct cmt__batch b = {0};
    for (uint64_t s = 0; s < 6; s++)
        put(t, s, CMT__ENTRY_EVENT);
    t->tail = t->head; /* slots 0-5 written: the next run wraps */
    for (uint64_t s = 6; s < 11; s++)
        put(t, s, CMT__ENTRY_EVENT);
    cr_assert_eq(drain(&b, &t, 1, UINT64_MAX), 11);
    assert_ordered(5);
    cr_assert_eq(seen[0].seq, 6);
    cr_assert_eq(seen[4].seq, 10);
    cr_assert_eq(t->tail, t->head);
    free(t);
}

Test(writer_batch, runs_in_any_order_of_rings_come_out_in_seq_order)
{
    struct cmt__thread *t[3] = {ring(64), ring(64), ring(64)};
    struct cmt__thread *newest_first[3] = {t[2], t[1], t[0]};
    struct cmt__batch b = {0};
    for (uint64_t s = 0; s < 30; s++) /* threads that took turns: 0-9, 10-19, 20-29 */
        put(t[s / 10], s, CMT__ENTRY_EVENT);
    drain(&b, newest_first, 3, UINT64_MAX);
    assert_ordered(30);
    for (int r = 0; r < 3; r++)
        free(t[r]);
}

Test(writer_batch, interleaved_runs_merge_in_order)
{
    struct cmt__thread *t[4] = {ring(256), ring(256), ring(256), ring(256)};
    struct cmt__batch b = {0};
    uint64_t seq = 0;
    size_t n = 0;
    /* stretches of 1 to 7 entries per thread in turn, a DEVICE entry with an EVENT's seq */
    for (int i = 0; i < 40; i++) {
        struct cmt__thread *r = t[(i * 7) % 4];
        for (int k = 0; k <= (i * 5) % 7; k++, n++) {
            if (k == 1) {
                put(r, seq, CMT__ENTRY_DEVICE);
                n++;
            }
            put(r, seq++, CMT__ENTRY_EVENT);
        }
    }
    cr_assert_eq(drain(&b, t, 4, UINT64_MAX), seq);
    assert_ordered(n);
    for (int r = 0; r < 4; r++)
        free(t[r]);
}

Test(writer_batch, more_runs_than_a_merge_takes_are_sorted_too)
{
    enum { RINGS = CMT__BATCH_RUNS + 4 };
    struct cmt__thread *t[RINGS];
    struct cmt__batch b = {0};
    for (int r = 0; r < RINGS; r++)
        t[r] = ring(16);
    for (uint64_t s = 0; s < 10 * RINGS; s++)
        put(t[s % RINGS], s, CMT__ENTRY_EVENT);
    cr_assert_eq(drain(&b, t, RINGS, 7 * RINGS), 7 * RINGS); /* the rest held back */
    assert_ordered(7 * RINGS);
    for (int r = 0; r < RINGS; r++)
        cr_assert_eq(t[r]->head - t[r]->tail, 3, "ring %d", r);
    drain(&b, t, RINGS, UINT64_MAX);
    assert_ordered(3 * RINGS);
    cr_assert_eq(seen[0].seq, 7 * RINGS);
    for (int r = 0; r < RINGS; r++)
        free(t[r]);
}

Test(writer_batch, what_a_drain_holds_back_stays_in_the_ring_for_the_next)
{
    struct cmt__thread *t[2] = {ring(64), ring(64)};
    struct cmt__batch b = {0};
    for (uint64_t s = 0; s < 20; s++)
        put(t[s % 2], s, CMT__ENTRY_EVENT);
    cr_assert_eq(drain(&b, t, 2, 12), 12); /* a thread still holds seq 12 */
    assert_ordered(12);
    cr_assert_eq(t[0]->head - t[0]->tail, 4);
    cr_assert_eq(t[1]->head - t[1]->tail, 4);
    for (uint64_t s = 20; s < 30; s++)
        put(t[s % 2], s, CMT__ENTRY_EVENT);
    cr_assert_eq(drain(&b, t, 2, 13), 13); /* one more */
    assert_ordered(1);
    cr_assert_eq(seen[0].seq, 12);
    drain(&b, t, 2, UINT64_MAX);
    assert_ordered(17);
    cr_assert_eq(seen[0].seq, 13);
    cr_assert_eq(seen[16].seq, 29);
    free(t[0]);
    free(t[1]);
}

Test(writer_batch, threads_with_the_same_seqs_come_out_by_tid_and_are_held_back_together)
{
    enum { RINGS = 3 }; /* and CMT__BATCH_RUNS + 1 rings: the sorted path */
    for (int many = 0; many < 2; many++) {
        int n = many ? CMT__BATCH_RUNS + 1 : RINGS;
        struct cmt__thread *t[CMT__BATCH_RUNS + 1];
        struct cmt__batch b = {0};
        for (int r = 0; r < n; r++)
            t[r] = ring(64);
        for (uint64_t s = 1; s <= 20; s++) /* every thread took seqs 1..20 (a coarse clock) */
            for (int r = n; r-- > 0;) {
                if (s % 5 == 0)
                    put(t[r], s, CMT__ENTRY_DEVICE);
                put(t[r], s, CMT__ENTRY_EVENT);
            }
        cr_assert_eq(drain(&b, t, n, 10), 10); /* seq 10 of every thread held back */
        assert_ordered((size_t)n * 10);
        for (int r = 0; r < n; r++) {
            cr_assert_eq(t[r]->ring[t[r]->tail & t[r]->mask].seq, 10, "ring %d", r);
            cr_assert_eq(t[r]->ring[t[r]->tail & t[r]->mask].kind, CMT__ENTRY_DEVICE);
        }
        cr_assert_eq(seen[0].tid, t[0]->tid);
        cr_assert_eq(seen[1].tid, t[1]->tid);
        cr_assert_eq(drain(&b, t, n, UINT64_MAX), 21);
        assert_ordered((size_t)n * 14);
        cr_assert_eq(seen[0].seq, 10);
        for (int r = 0; r < n; r++)
            free(t[r]);
    }
}
