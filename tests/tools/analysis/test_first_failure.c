/* first_failure: when a process failed and which of several failed first
 * (tools/analysis/first_failure.h). */
#include <criterion/criterion.h>

#include "first_failure.h"

#define WALL0 UINT64_C(1800000000000000000)

static struct cmt_failure_candidate failed(int32_t rank, uint64_t pid, uint64_t start,
                                           uint64_t t_ns)
{
    return (struct cmt_failure_candidate){.have_start = 1,
                                          .start_wall_ns = start,
                                          .rank = rank,
                                          .pid = pid,
                                          .failure = CMT_FLEET_FAILED_OOM,
                                          .t_ns = t_ns};
}

Test(first_failure, the_earliest_on_the_wall_clock_in_any_order)
{
    /* rank 1 started later but failed first on the wall clock */
    struct cmt_failure_candidate c[3] = {failed(0, 100, WALL0, 50), failed(1, 101, WALL0 + 10, 20),
                                         failed(2, 102, WALL0, 40)};
    int orders[2][3] = {{0, 1, 2}, {2, 1, 0}};
    for (int o = 0; o < 2; o++) {
        struct cmt_first_failure first;
        cmt_first_failure_init(&first);
        cr_expect_eq(first.index, -1);
        for (int i = 0; i < 3; i++)
            cmt_first_failure_offer(&first, orders[o][i], &c[orders[o][i]]);
        cr_expect_eq(first.index, 1, "order %d", o);
        cr_expect_eq(first.wall_ns, WALL0 + 30);
        cr_expect_eq(first.rank, 1);
    }
}

Test(first_failure, ties_go_to_the_lower_rank_then_pid_and_unknown_ranks_last)
{
    struct cmt_failure_candidate unknown = failed(-1, 5, WALL0, 10), r3 = failed(3, 9, WALL0, 10),
                                 r3_low_pid = failed(3, 8, WALL0, 10);
    struct cmt_first_failure first;
    cmt_first_failure_init(&first);
    cr_expect(cmt_first_failure_offer(&first, 0, &unknown));
    cr_expect(cmt_first_failure_offer(&first, 1, &r3), "a known rank before an unknown one");
    cr_expect(cmt_first_failure_offer(&first, 2, &r3_low_pid), "then the lower pid");
    cr_expect(!cmt_first_failure_offer(&first, 3, &r3), "equal: the one there stays");
    cr_expect(!cmt_first_failure_offer(&first, 4, &unknown));
    cr_expect_eq(first.index, 2);
}

Test(first_failure, processes_that_did_not_fail_or_have_no_start_are_left_out)
{
    struct cmt_failure_candidate ok = failed(0, 1, WALL0, 1), nostart = failed(1, 2, 0, 1);
    ok.failure = CMT_FLEET_NO_FAILURE;
    nostart.have_start = 0; /* no PROCESS record: its times cannot be put on the wall clock */
    struct cmt_first_failure first;
    cmt_first_failure_init(&first);
    cr_expect(!cmt_first_failure_offer(&first, 0, &ok));
    cr_expect(!cmt_first_failure_offer(&first, 1, &nostart));
    cr_expect_eq(first.index, -1);
    /* a start that would wrap with its time saturates and comes last */
    struct cmt_failure_candidate late = failed(2, 3, UINT64_MAX - 5, 100),
                                 early = failed(3, 4, 0, 7);
    cr_expect(cmt_first_failure_offer(&first, 2, &late));
    cr_expect_eq(first.wall_ns, UINT64_MAX);
    cr_expect(cmt_first_failure_offer(&first, 3, &early));
}

Test(first_failure, a_death_by_signal_when_no_oom_was_fatal)
{
    struct cmt_replay_totals t = {0};
    uint64_t when = 0;
    cr_expect_eq(cmt_process_failure(NULL, &t, NULL, &when), CMT_FLEET_NO_FAILURE);
    t.signaled = 1;
    t.last_t_ns = 900;
    cr_expect_eq(cmt_process_failure(NULL, &t, NULL, &when), CMT_FLEET_FAILED_SIGNAL);
    cr_expect_eq(when, 900, "without its SIGNAL record: the last event");
    struct cmt_signal_seen sig = {.t_ns = 700, .seen = 1};
    cr_expect_eq(cmt_process_failure(NULL, &t, &sig, &when), CMT_FLEET_FAILED_SIGNAL);
    cr_expect_eq(when, 700);
}
