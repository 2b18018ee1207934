/* Tests of the replay's observer runner (cmt_replay_run in tools/analysis/replay.c): a class
 * of one observer is shown without the list's walk, so each case runs with the observer alone
 * and again beside a second one that sees every step (the walk), and must give the same. */
#include <criterion/criterion.h>

#include "reader.h"
#include "replay.h"
#include "trace_builder.h"

#define MAX_SEEN 16

/* What an observer saw: the seqs it was shown, the window ends and moments it was called at. */
struct seen {
    uint64_t shown[MAX_SEEN];
    size_t shown_count;
    uint64_t end_live[MAX_SEEN], end_skipped[MAX_SEEN], end_last_t[MAX_SEEN];
    size_t end_count;
    uint64_t moment_live[MAX_SEEN];
    size_t moment_count;
    uint64_t window_until; /* step() opens a window to this time on device 0 (0: none) */
    uint64_t moment_at;    /* step() of the first event sets this moment (0: none) */
};

static void note_shown(struct seen *s, const struct cmt_replay_step *st)
{
    if (st->rec.type == CMT_REC_EVENT && s->shown_count < MAX_SEEN)
        s->shown[s->shown_count++] = st->rec.u.event.seq;
}

/* Opens a window on device 0 from 0 to window_until, at most 8 MiB live. */
static unsigned window_step(struct cmt_observer *self, const cmt_replay *rp,
                            const struct cmt_replay_step *st)
{
    (void)rp;
    struct seen *s = self->ctx;
    note_shown(s, st);
    self->quiet = (struct cmt_observe_quiet){
        .dev = 0, .from = 0, .until = s->window_until, .live_max = 8 * TB_MIB};
    return CMT_OBSERVE_EVENT;
}

static void window_end(struct cmt_observer *self, const cmt_replay *rp)
{
    struct seen *s = self->ctx;
    s->end_live[s->end_count] = cmt_replay_totals(rp)->live_bytes;
    s->end_skipped[s->end_count] = self->quiet.skipped;
    s->end_last_t[s->end_count++] = self->quiet.last_t;
}

/* Shown every step; counts them. */
static unsigned every_step(struct cmt_observer *self, const cmt_replay *rp,
                           const struct cmt_replay_step *st)
{
    (void)rp;
    note_shown(self->ctx, st);
    return CMT_OBSERVE_ALL;
}

static struct cmt_observer every_observer(struct seen *s)
{
    return (struct cmt_observer){.wants = CMT_OBSERVE_ALL, .step = every_step, .ctx = s};
}

/* Replays b's trace with obs (n of them). */
static void run(struct tb *b, struct cmt_observer *obs, size_t n)
{
    cmt_reader *reader;
    cmt_replay *rp;
    cr_assert_eq(cmt_reader_open_memory(&reader, b->buf.data, b->buf.len), 0);
    cr_assert_eq(cmt_replay_create(&rp, reader), 0);
    cr_assert_eq(cmt_replay_run(rp, obs, n), 0);
    cmt_replay_destroy(rp);
    cmt_reader_close(reader);
}

/* A trace of `before` allocations of 1 MiB, an out-of-memory failure when `after` > 0, and
 * `after` more (an event every 1000 ns from t = 1000). */
static void allocations(struct tb *b, int before, int after)
{
    tb_begin(b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t stack = tb_stack(b, "a", 1);
    for (int i = 0; i < before + after; i++) {
        if (after && i == before)
            tb_alloc_fail(b, 30 * TB_GIB, stack);
        tb_alloc(b, 0x7f0000000000 + (uint64_t)i * 0x200000, TB_MIB, stack);
    }
}

/* Events at t = 1000, 2000, 3000, 4000 (1 MiB each); a window to 3000 opened by the first is
 * ended by the event at 3000 (until is not in it), before that event is applied. */
Test(replay_observers, a_window_that_ends_between_two_events_ends_before_the_next)
{
    struct tb b;
    allocations(&b, 4, 0);
    tb_finish(&b, 1);
    for (size_t n = 1; n <= 2; n++) {
        struct seen s = {.window_until = 3000}, all = {0};
        struct cmt_observer obs[2] = {
            {.wants = CMT_OBSERVE_EVENT, .step = window_step, .ctx = &s, .quiet_end = window_end},
            every_observer(&all)};
        run(&b, obs, n);
        cr_assert_eq(s.end_count, 1, "n %zu: one window ended", n);
        cr_expect_eq(s.end_skipped[0], 1, "n %zu: the event at 2000 skipped", n);
        cr_expect_eq(s.end_last_t[0], 2000, "n %zu", n);
        cr_expect_eq(s.end_live[0], 2 * TB_MIB, "n %zu: before the event at 3000", n);
        cr_assert_eq(s.shown_count, 3, "n %zu: 1000, 3000 and 4000 shown", n);
        cr_expect_eq(s.shown[0], 1);
        cr_expect_eq(s.shown[1], 3);
        cr_expect_eq(s.shown[2], 4);
        if (n == 2)
            cr_expect_eq(all.shown_count, 4, "the other observer sees every event");
    }
    tb_free_builder(&b);
}

/* Wants EVENT for three events, then only OOM failures, then every event again. */
static unsigned changing_step(struct cmt_observer *self, const cmt_replay *rp,
                              const struct cmt_replay_step *st)
{
    struct seen *s = self->ctx;
    note_shown(s, st);
    if (s->moment_at && s->shown_count == 1)
        self->before_t = s->moment_at; /* a moment set by step() */
    (void)rp;
    if (st->oom)
        return CMT_OBSERVE_EVENT;
    return s->shown_count == 3 ? CMT_OBSERVE_OOM : self->wants;
}

static void changing_before(struct cmt_observer *self, const cmt_replay *rp)
{
    struct seen *s = self->ctx;
    s->moment_live[s->moment_count++] = cmt_replay_totals(rp)->live_bytes;
    self->before_t = UINT64_MAX;
}

/* Five allocations, an out-of-memory failure (seq 6), two allocations: shown 1-3, 6, 7, 8;
 * the moment at 1500 that step() set is taken before the event at 2000. */
Test(replay_observers, an_observer_whose_wants_change_mid_run)
{
    struct tb b;
    allocations(&b, 5, 2);
    tb_finish(&b, 1);
    static const uint64_t want[] = {1, 2, 3, 6, 7, 8};
    for (size_t n = 1; n <= 2; n++) {
        struct seen s = {.moment_at = 1500}, all = {0};
        struct cmt_observer obs[2] = {{.wants = CMT_OBSERVE_EVENT,
                                       .step = changing_step,
                                       .ctx = &s,
                                       .before_t = UINT64_MAX,
                                       .before = changing_before},
                                      every_observer(&all)};
        run(&b, obs, n);
        cr_assert_eq(s.shown_count, 6, "n %zu: shown %zu", n, s.shown_count);
        for (size_t i = 0; i < 6; i++)
            cr_expect_eq(s.shown[i], want[i], "n %zu: step %zu", n, i);
        cr_assert_eq(s.moment_count, 1, "n %zu", n);
        cr_expect_eq(s.moment_live[0], TB_MIB, "n %zu: the state at 1500", n);
        if (n == 2)
            cr_expect_eq(all.shown_count, 8, "the other observer sees every event");
    }
    tb_free_builder(&b);
}
