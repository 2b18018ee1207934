/* interpose/writer_batch.c: the writer's batch. Runs copied out of rings (across the wrap),
 * put in (seq, kind) order whether they are already in order, interleave in stretches or are
 * more than a merge takes; what a drain holds back is the next drain's first run. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "writer_batch.h"

/* A ring of `entries` slots (a power of two). */
static struct cmt__thread *ring(uint32_t entries)
{
    size_t bytes = sizeof(struct cmt__thread) + entries * sizeof(struct cmt__queued);
    struct cmt__thread *t = aligned_alloc(CMT__CACHE_LINE, (bytes + 63) / 64 * 64);
    cr_assert_not_null(t);
    memset(t, 0, bytes);
    t->mask = entries - 1;
    return t;
}

/* Queues entry (seq, kind) at t's head, tid naming the ring. */
static void put(struct cmt__thread *t, uint64_t seq, uint8_t kind, uint32_t tid)
{
    struct cmt__queued *e = &t->ring[t->head & t->mask];
    memset(e, 0, sizeof *e);
    e->seq = seq;
    e->kind = kind;
    e->tid = tid;
    e->v[0] = seq * 10 + kind; /* the payload travels with the entry */
    t->head++;
}

/* Every entry of b in strictly increasing key, its payload its own, `n` of them. */
static void assert_ordered(const struct cmt__batch *b, size_t n)
{
    cr_assert_eq(b->len, n);
    for (size_t i = 0; i < b->len; i++) {
        cr_assert_eq(b->items[i].v[0], b->items[i].seq * 10 + b->items[i].kind, "entry %zu", i);
        if (i)
            cr_assert_lt(cmt__queued_key(&b->items[i - 1]), cmt__queued_key(&b->items[i]),
                         "entries %zu and %zu", i - 1, i);
    }
}

/* Drains ring t into b: [tail, head) as one run, tail moved up. */
static void add(struct cmt__batch *b, struct cmt__thread *t)
{
    cr_assert_eq(cmt__batch_add_run(b, t, t->tail, t->head), 0);
    t->tail = t->head;
}

Test(writer_batch, copies_a_run_across_the_ring_wrap)
{
    struct cmt__thread *t = ring(8);
    struct cmt__batch b = {0};
    for (uint64_t s = 0; s < 6; s++)
        put(t, s, CMT__ENTRY_EVENT, 1);
    t->tail = t->head; /* slots 0-5 drained: the next run wraps */
    for (uint64_t s = 6; s < 11; s++)
        put(t, s, CMT__ENTRY_EVENT, 1);
    cmt__batch_begin(&b);
    add(&b, t);
    cmt__batch_sort(&b);
    assert_ordered(&b, 5);
    cr_assert_eq(b.items[0].seq, 6);
    cr_assert_eq(b.items[4].seq, 10);
    free(t);
}

Test(writer_batch, runs_that_took_turns_stay_as_they_are)
{
    struct cmt__thread *t[3] = {ring(64), ring(64), ring(64)};
    struct cmt__batch b = {0};
    for (uint64_t s = 0; s < 30; s++)
        put(t[s / 10], s, CMT__ENTRY_EVENT, (uint32_t)(s / 10));
    cmt__batch_begin(&b);
    for (int r = 2; r >= 0; r--) /* the rings' list is newest first */
        add(&b, t[r]);
    cmt__batch_sort(&b); /* runs 20-29, 10-19, 0-9: out of order, merged */
    assert_ordered(&b, 30);
    cmt__batch_drop(&b, 30);
    for (uint64_t s = 30; s < 60; s++)
        put(t[(s - 30) / 10], s, CMT__ENTRY_EVENT, (uint32_t)((s - 30) / 10));
    cmt__batch_begin(&b);
    for (int r = 0; r < 3; r++)
        add(&b, t[r]);
    struct cmt__queued *before = b.items;
    cmt__batch_sort(&b); /* 30-39, 40-49, 50-59: in order, nothing moves */
    cr_assert_eq(b.items, before);
    assert_ordered(&b, 30);
    for (int r = 0; r < 3; r++)
        free(t[r]);
}

Test(writer_batch, interleaved_runs_merge_in_key_order)
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
                put(r, seq, CMT__ENTRY_DEVICE, (uint32_t)i);
                n++;
            }
            put(r, seq++, CMT__ENTRY_EVENT, (uint32_t)i);
        }
    }
    cmt__batch_begin(&b);
    for (int r = 0; r < 4; r++)
        add(&b, t[r]);
    cmt__batch_sort(&b);
    assert_ordered(&b, n);
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
        put(t[s % RINGS], s, CMT__ENTRY_EVENT, (uint32_t)(s % RINGS));
    cmt__batch_begin(&b);
    for (int r = 0; r < RINGS; r++)
        add(&b, t[r]);
    cmt__batch_sort(&b);
    assert_ordered(&b, 10 * RINGS);
    for (int r = 0; r < RINGS; r++)
        free(t[r]);
}

Test(writer_batch, what_a_drain_holds_back_is_the_next_first_run)
{
    struct cmt__thread *t[2] = {ring(64), ring(64)};
    struct cmt__batch b = {0};
    for (uint64_t s = 0; s < 20; s++)
        put(t[s % 2], s, CMT__ENTRY_EVENT, (uint32_t)(s % 2));
    cmt__batch_begin(&b);
    add(&b, t[0]);
    add(&b, t[1]);
    cmt__batch_sort(&b);
    cmt__batch_drop(&b, 12); /* 0-11 written, 12-19 held back */
    cr_assert_eq(b.len, 8);
    cr_assert_eq(b.items[0].seq, 12);
    for (uint64_t s = 20; s < 30; s++)
        put(t[s % 2], s, CMT__ENTRY_EVENT, (uint32_t)(s % 2));
    cmt__batch_begin(&b);
    cr_assert_eq(b.runs, 1);
    add(&b, t[1]);
    add(&b, t[0]);
    cmt__batch_sort(&b);
    assert_ordered(&b, 18);
    cr_assert_eq(b.items[0].seq, 12);
    cr_assert_eq(b.items[17].seq, 29);
    free(t[0]);
    free(t[1]);
}
