/* Tests of the ledger (tools/analysis/ledger.c): rows that add up to the capacity, owners from
 * the stacks, allocator pools apart, the moment of a time asked, and a residual that shows. */
#include <criterion/criterion.h>

#include "allocator.h"
#include "ledger.h"
#include "ledger_expect.h"
#include "reader.h"
#include "replay.h"
#include "trace_builder.h"

#define GIB TB_GIB
#define MIB TB_MIB

struct run {
    cmt_reader *reader;
    cmt_replay *replay;
    cmt_alloc *alloc;
    cmt_ledger *ledger;
};

static void run(struct run *x, const struct tb *b, const struct cmt_ledger_options *o)
{
    cr_assert_eq(cmt_reader_open_memory(&x->reader, b->buf.data, b->buf.len), 0);
    cr_assert_eq(cmt_replay_create(&x->replay, x->reader), 0);
    cr_assert_eq(cmt_alloc_create(&x->alloc), 0);
    cr_assert_eq(cmt_ledger_create(&x->ledger, x->alloc, o), 0);
    struct cmt_observer obs[] = {cmt_alloc_observer(x->alloc), cmt_ledger_observer(x->ledger)};
    cr_assert_eq(cmt_replay_run(x->replay, obs, 2), 0);
}

static void done(struct run *x, struct tb *b)
{
    cmt_ledger_destroy(x->ledger);
    cmt_alloc_destroy(x->alloc);
    cmt_replay_destroy(x->replay);
    cmt_reader_close(x->reader);
    tb_free_builder(b);
}

/* The bytes of the rows of type `type` (and, for DRIVER, owner `owner`; -1: any). */
static uint64_t rows(const struct cmt_ledger_moment *m, int type, int owner, uint64_t pool)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < m->row_count; i++) {
        const struct cmt_ledger_row *r = &m->rows[i];
        if (r->type == type && (type != CMT_LEDGER_DRIVER || owner < 0 || r->owner == owner) &&
            ((type != CMT_LEDGER_TENSORS && type != CMT_LEDGER_CACHED) || r->pool == pool))
            sum += r->bytes;
    }
    return sum;
}

static uint64_t all_rows(const struct cmt_ledger_moment *m)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < m->row_count; i++)
        sum += m->rows[i].bytes;
    return sum;
}

static void segment_in_pool(struct tb *b, uint64_t addr, uint64_t size, uint64_t pool)
{
    uint64_t v[] = {addr, size, pool};
    tb_alloc_event(b, CMT_AA_SEGMENT_ALLOC, 0, 0, CMT_AF(ADDR) | CMT_AF(SIZE) | CMT_AF(POOL), v);
}

Test(ledger, rows_add_up_to_the_capacity_at_the_oom)
{
    struct tb b;
    tb_begin(&b, GIB, 768 * MIB); /* 256 MiB used at first use: the context */
    uint32_t torch = tb_stack(&b, "caching_malloc", 2);
    uint32_t nccl = tb_frame(&b, tb_frame(&b, 0, "main"), "ncclMemAlloc");
    uint32_t user = tb_stack(&b, "train_step", 2);
    tb_allocator(&b, 1, "");
    tb_alloc(&b, 0x7f0000000000, 64 * MIB, torch);
    tb_segment(&b, 0x7f0000000000, 64 * MIB, 0);
    tb_block(&b, 0x7f0000000000, 16 * MIB, 16 * MIB, user, 0);
    tb_alloc(&b, 0x7f0010000000, 32 * MIB, torch); /* a private pool (a CUDA graph's) */
    segment_in_pool(&b, 0x7f0010000000, 32 * MIB, 7);
    tb_block(&b, 0x7f0010000000, 8 * MIB, 8 * MIB, user, 0);
    tb_alloc(&b, 0x7f0020000000, 10 * MIB, nccl);
    tb_alloc(&b, 0x7f0030000000, 3 * MIB, user); /* 1 MiB of rounding */
    uint64_t used = 256 * MIB + 64 * MIB + 32 * MIB + 10 * MIB + 4 * MIB + 100 * MIB;
    uint64_t seq = tb_alloc_fail(&b, 900 * MIB, user);
    tb_meminfo(&b, CMT_MEMINFO_OOM, GIB - used, GIB, seq); /* 100 MiB held by others */
    tb_finish(&b, 1);
    struct run x;
    const struct cmt_ledger_options o = {.at = CMT_LEDGER_AT_OOM | CMT_LEDGER_AT_END};
    run(&x, &b, &o);
    const struct cmt_ledger_moment *m = cmt_ledger_find(x.ledger, CMT_LEDGER_AT_OOM, 0, 0);
    cr_assert_not_null(m);
    cr_assert(m->free_measured);
    cr_assert_eq(m->total_bytes, GIB);
    cr_assert_eq(rows(m, CMT_LEDGER_TENSORS, -1, 0), 16 * MIB);
    cr_assert_eq(rows(m, CMT_LEDGER_CACHED, -1, 0), 48 * MIB);
    cr_assert_eq(rows(m, CMT_LEDGER_TENSORS, -1, 7), 8 * MIB, "the private pool is its own row");
    cr_assert_eq(rows(m, CMT_LEDGER_CACHED, -1, 7), 24 * MIB);
    cr_assert_eq(rows(m, CMT_LEDGER_DRIVER, CMT_OWNER_NCCL, 0), 10 * MIB);
    cr_assert_eq(rows(m, CMT_LEDGER_DRIVER, CMT_OWNER_USER, 0), 3 * MIB,
                 "segments are the allocator's rows, not their driver call sites'");
    cr_assert_eq(rows(m, CMT_LEDGER_DRIVER, -1, 0), 13 * MIB);
    cr_assert_eq(rows(m, CMT_LEDGER_ROUNDING, -1, 0), 1 * MIB);
    cr_assert_eq(m->context_bytes, 256 * MIB);
    cr_assert_eq(m->others_bytes, 100 * MIB);
    cr_assert_eq(m->free_bytes, GIB - used);
    cr_assert_eq(m->residual_bytes, 0);
    cr_assert_eq(all_rows(m), GIB, "every byte in a row");
    const struct cmt_ledger_moment *end = cmt_ledger_find(x.ledger, CMT_LEDGER_AT_END, 0, 0);
    cr_assert_not_null(end);
    cr_assert_eq(all_rows(end), GIB);
    cr_assert_eq(end->others_bytes, 100 * MIB, "others stay as last measured");
    done(&x, &b);
}

Test(ledger, a_time_asked_is_the_state_after_every_event_up_to_it)
{
    struct tb b;
    tb_begin(&b, GIB, GIB);
    uint32_t user = tb_stack(&b, "train_step", 2);
    tb_alloc(&b, 0x7f0000000000, 2 * MIB, user);
    uint64_t first = b.t_ns;
    tb_alloc(&b, 0x7f0000200000, 4 * MIB, user);
    uint64_t second = b.t_ns;
    tb_free(&b, 0x7f0000000000);
    tb_finish(&b, 1);
    struct run x;
    const uint64_t times[] = {first, first + 1, second, second + 10 * 1000 * 1000};
    const struct cmt_ledger_options o = {.times = times, .time_count = 4};
    run(&x, &b, &o);
    const uint64_t want[] = {2 * MIB, 2 * MIB, 6 * MIB, 4 * MIB};
    for (size_t i = 0; i < 4; i++) {
        const struct cmt_ledger_moment *m = cmt_ledger_find(x.ledger, CMT_LEDGER_AT_TIME, 0, i);
        cr_assert_not_null(m, "time %zu", i);
        cr_assert_eq(m->t_ns, times[i]);
        cr_assert_eq(rows(m, CMT_LEDGER_DRIVER, CMT_OWNER_USER, 0), want[i], "time %zu: %llu", i,
                     (unsigned long long)rows(m, CMT_LEDGER_DRIVER, CMT_OWNER_USER, 0));
        cr_assert_eq(all_rows(m), GIB);
        cr_assert_eq(m->residual_bytes, 0);
    }
    cr_assert_null(cmt_ledger_find(x.ledger, CMT_LEDGER_AT_END, 0, 0), "the end was not asked");
    done(&x, &b);
}

Test(ledger, the_residual_shows_what_the_measured_free_memory_cannot_hold)
{
    struct tb b;
    tb_begin(&b, GIB, 768 * MIB);
    tb_alloc(&b, 0x7f0000000000, 64 * MIB, tb_stack(&b, "train_step", 2));
    tb_meminfo(&b, CMT_MEMINFO_EXIT, GIB, GIB, b.seq); /* says nothing is used: it cannot be */
    tb_finish(&b, 1);
    struct run x;
    const struct cmt_ledger_options o = {.at = CMT_LEDGER_AT_END};
    run(&x, &b, &o);
    const struct cmt_ledger_moment *m = cmt_ledger_find(x.ledger, CMT_LEDGER_AT_END, 0, 0);
    cr_assert_not_null(m);
    cr_assert(m->free_measured);
    cr_assert_eq(m->others_bytes, 0);
    cr_assert_eq(m->free_bytes, GIB);
    cr_assert_eq(m->residual_bytes, -(int64_t)(320 * MIB), "%lld", (long long)m->residual_bytes);
    cr_assert_eq((int64_t)all_rows(m) + m->residual_bytes, (int64_t)GIB);
    done(&x, &b);
}

Test(ledger, owners_come_from_the_innermost_library_frame)
{
    struct tb b;
    tb_begin(&b, GIB, GIB);
    uint32_t user = tb_frame(&b, 0, "main");
    uint32_t via_torch = tb_frame(&b, tb_frame(&b, user, "c10::cuda::blas_handle"), "cublasCreate");
    uint32_t cudnn = tb_frame(&b, user, "cudnnCreate");
    tb_alloc(&b, 0x7f0000000000, 2 * MIB, via_torch);
    tb_alloc(&b, 0x7f0000200000, 2 * MIB, cudnn);
    tb_finish(&b, 1);
    struct run x;
    run(&x, &b, NULL);
    const cmt_reader *r = x.reader;
    cr_assert_eq(cmt_ledger_owner_of(r, via_torch), CMT_OWNER_CUBLAS);
    cr_assert_eq(cmt_ledger_owner_of(r, cudnn), CMT_OWNER_CUDNN);
    cr_assert_eq(cmt_ledger_owner_of(r, user), CMT_OWNER_USER);
    cr_assert_eq(cmt_ledger_owner_of(r, 0), CMT_OWNER_NO_STACK);
    const struct cmt_ledger_moment *m = cmt_ledger_find(x.ledger, CMT_LEDGER_AT_END, 0, 0);
    cr_assert_not_null(m);
    cr_assert_eq(rows(m, CMT_LEDGER_DRIVER, CMT_OWNER_CUBLAS, 0), 2 * MIB);
    cr_assert_eq(rows(m, CMT_LEDGER_DRIVER, CMT_OWNER_CUDNN, 0), 2 * MIB);
    done(&x, &b);
}

/* The shim's first-use baseline and the sample after a failure can carry the same time and
 * figures (a process whose first call fails): the failure's free is still measured. */
Test(ledger, a_sample_after_the_failure_is_measured_even_when_it_repeats_the_baseline)
{
    struct tb b;
    tb_begin(&b, GIB, 768 * MIB);
    uint32_t user = tb_stack(&b, "train_step", 2);
    b.t_ns = 1000;
    tb_meminfo(&b, CMT_MEMINFO_BASELINE, 512 * MIB, GIB, 1);
    b.t_ns = 0; /* the failed call gets t = 1000 too */
    uint64_t seq = tb_alloc_fail(&b, 900 * MIB, user);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 512 * MIB, GIB, seq);
    tb_alloc(&b, 0x7f0000000000, 2 * MIB, user);
    tb_finish(&b, 1);
    struct run x;
    const struct cmt_ledger_options o = {.at = CMT_LEDGER_AT_OOM};
    run(&x, &b, &o);
    const struct cmt_ledger_moment *m = cmt_ledger_find(x.ledger, CMT_LEDGER_AT_OOM, 0, 0);
    cr_assert_not_null(m);
    cr_assert(m->free_measured, "the OOM's own sample");
    cr_assert_eq(m->free_bytes, 512 * MIB);
    cr_assert_eq(m->others_bytes, 256 * MIB, "used 512 MiB: 256 at first use, 256 since");
    cr_assert_eq(all_rows(m), GIB);
    done(&x, &b);
}

/* A trace that never measured the device (a snapshot without device figures): this process's
 * rows alone, no free row, nothing invented. */
Test(ledger, without_a_capacity_only_the_process_rows_are_given)
{
    struct tb b;
    tb_begin(&b, 0, 0);
    tb_alloc(&b, 0x7f0000000000, 4 * MIB, tb_stack(&b, "train_step", 2));
    tb_finish(&b, 1);
    struct run x;
    run(&x, &b, NULL);
    const struct cmt_ledger_moment *m = cmt_ledger_find(x.ledger, CMT_LEDGER_AT_END, 0, 0);
    cr_assert_not_null(m);
    cr_assert_eq(m->total_bytes, 0);
    cr_assert_eq(m->residual_bytes, 0);
    cr_assert_eq(m->others_bytes, 0);
    cr_assert(!m->free_measured);
    cr_assert_eq(rows(m, CMT_LEDGER_FREE, -1, 0), 0);
    cr_assert_eq(all_rows(m), 4 * MIB, "the allocation alone");
    done(&x, &b);
}

/* Three processes on one GPU, none of which measured its free memory: each derived its free
 * from its own rows, so the GPU's is what all of them leave, and nothing is left over (it was
 * the smallest member's free, which counted the other processes' bytes twice: -4 MiB). */
Test(ledger, combined_free_without_a_measurement_is_what_the_processes_leave)
{
    struct cmt_ledger_moment a = {
        .total_bytes = GIB, .process_bytes = 2 * MIB, .free_bytes = GIB - 2 * MIB};
    struct cmt_ledger_moment b = a;
    struct cmt_ledger_moment c = {
        .total_bytes = GIB, .process_bytes = 4 * MIB, .free_bytes = GIB - 4 * MIB};
    const struct cmt_ledger_moment *m[] = {&a, &b, &c};
    struct cmt_ledger_combined out;
    cmt_ledger_combine(m, 3, &out);
    cr_expect_eq(out.processes_bytes, 8 * MIB);
    cr_expect_eq(out.free_bytes, GIB - 8 * MIB);
    cr_expect_eq(out.shared_bytes, 0);
    cr_expect_eq(out.residual_bytes, 0, "%lld", (long long)out.residual_bytes);
    cr_expect(!out.free_measured);
    /* one measured free wins: what it does not hold beyond the processes is shared */
    c.free_measured = 1;
    c.free_bytes = GIB - 100 * MIB;
    cmt_ledger_combine(m, 3, &out);
    cr_expect_eq(out.free_bytes, GIB - 100 * MIB);
    cr_expect_eq(out.shared_bytes, 92 * MIB);
    cr_expect_eq(out.residual_bytes, 0);
}

/* Runs the ledger over b twice: keeping the peak (o's budget), and taking the peak's time as a
 * time asked (what a second replay does). @return the peak's time. */
static uint64_t run_both(struct run *kept, struct run *asked, const struct tb *b, size_t budget)
{
    const struct cmt_ledger_options o = {.at = CMT_LEDGER_AT_PEAK, .peak_budget = budget};
    run(kept, b, &o);
    uint64_t t = cmt_replay_totals(kept->replay)->peak_t_ns;
    const struct cmt_ledger_options at = {.times = &t, .time_count = 1};
    run(asked, b, &at);
    return t;
}

/* Allocations from three sites on two devices up to the peak, a free at the peak's own time,
 * then frees, a new site and a sample after it. */
static void peak_then_more(struct tb *b)
{
    tb_begin(b, GIB, 768 * MIB);
    uint32_t a = tb_stack(b, "load", 2), c = tb_stack(b, "train_step", 3);
    uint32_t nccl = tb_frame(b, tb_frame(b, 0, "main"), "ncclMemAlloc");
    uint64_t on1[] = {0x7e0000000000, 8 * MIB};
    tb_event(b, TB_ALLOC, 0, 1, a, CMT_F(PTR) | CMT_F(SIZE), on1);
    tb_alloc(b, 0x7f0000000000, 2 * MIB, a);
    tb_alloc(b, 0x7f0000200000, 4 * MIB, c);
    tb_alloc(b, 0x7f0000600000, 6 * MIB, nccl);
    tb_alloc(b, 0x7f0000c00000, 8 * MIB, c); /* the peak */
    b->t_ns -= 1000;                         /* the same time: part of the peak's moment */
    tb_free(b, 0x7f0000000000);
    tb_free(b, 0x7f0000200000);
    tb_meminfo(b, CMT_MEMINFO_OOM, 700 * MIB, GIB, b->seq);
    uint32_t late = tb_stack(b, "eval", 2);
    tb_alloc(b, 0x7f0001400000, 1 * MIB, late);
    tb_free(b, 0x7f0000600000);
    uint64_t free1[] = {0x7e0000000000};
    tb_event(b, TB_FREE, 0, 1, 0, CMT_F(PTR), free1);
    tb_finish(b, 1);
}

Test(ledger, the_peak_kept_in_the_pass_is_what_a_replay_to_its_time_takes)
{
    struct tb b;
    peak_then_more(&b);
    struct run kept, asked;
    uint64_t t = run_both(&kept, &asked, &b, 0);
    for (int32_t dev = 0; dev < 2; dev++) {
        const struct cmt_ledger_moment *p = cmt_ledger_find(kept.ledger, CMT_LEDGER_AT_PEAK, dev,
                                                            0);
        const struct cmt_ledger_moment *m = cmt_ledger_find(asked.ledger, CMT_LEDGER_AT_TIME, dev,
                                                            0);
        cr_assert_not_null(p, "device %d", dev);
        cr_assert_not_null(m, "device %d", dev);
        cr_assert_eq(p->t_ns, t);
        expect_same_moment(p, m);
    }
    const struct cmt_ledger_moment *p = cmt_ledger_find(kept.ledger, CMT_LEDGER_AT_PEAK, 0, 0);
    /* the 2 MiB freed at the peak's time is not in it, the 4 MiB freed after it is */
    cr_expect_eq(rows(p, CMT_LEDGER_DRIVER, CMT_OWNER_USER, 0), 12 * MIB);
    cr_expect_eq(rows(p, CMT_LEDGER_DRIVER, CMT_OWNER_NCCL, 0), 6 * MIB);
    done(&kept, &b);
    done(&asked, &(struct tb){0});
}

/* own_times: the first failure of each device and the end join the times asked, each taken as
 * a replay asked for it alone takes it (the state after every event at or before it). */
Test(ledger, its_own_times_are_taken_as_a_time_asked_for_them_alone)
{
    struct tb b;
    tb_begin(&b, GIB, 768 * MIB);
    uint32_t a = tb_stack(&b, "load", 2), c = tb_stack(&b, "train_step", 3);
    uint64_t on1[] = {0x7e0000000000, 8 * MIB};
    tb_event(&b, TB_ALLOC, 0, 1, a, CMT_F(PTR) | CMT_F(SIZE), on1);
    tb_alloc(&b, 0x7f0000000000, 2 * MIB, a);
    uint64_t asked = b.t_ns;
    tb_alloc(&b, 0x7f0000200000, 4 * MIB, c);
    tb_alloc_fail(&b, 900 * MIB, c);
    uint64_t fail0 = b.t_ns;
    b.t_ns -= 1000; /* the same time as the failure: part of its moment */
    tb_alloc(&b, 0x7f0000600000, 6 * MIB, c);
    tb_alloc_fail(&b, 900 * MIB, c); /* not device 0's first: no time of its own */
    tb_free(&b, 0x7f0000000000);
    uint64_t big[] = {900 * MIB};
    tb_event(&b, TB_ALLOC, 2, 1, a, CMT_F(SIZE), big);
    uint64_t fail1 = b.t_ns;
    tb_free(&b, 0x7f0000200000);
    uint64_t free1[] = {0x7e0000000000};
    tb_event(&b, TB_FREE, 0, 1, 0, CMT_F(PTR), free1);
    tb_finish(&b, 1);
    struct run x;
    const struct cmt_ledger_options o = {.times = &asked, .time_count = 1, .own_times = 1};
    run(&x, &b, &o);
    uint64_t end = cmt_replay_totals(x.replay)->last_t_ns;
    size_t n;
    const uint64_t *times = cmt_ledger_times(x.ledger, &n);
    const uint64_t want[] = {asked, fail0, fail1, end};
    cr_assert_eq(n, 4);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(times[i], want[i], "time %zu", i);
        struct run one;
        const struct cmt_ledger_options only = {.times = &want[i], .time_count = 1};
        run(&one, &b, &only);
        for (int32_t dev = 0; dev < 2; dev++) {
            const struct cmt_ledger_moment *m = cmt_ledger_find(x.ledger, CMT_LEDGER_AT_TIME, dev,
                                                                i);
            const struct cmt_ledger_moment *w = cmt_ledger_find(one.ledger, CMT_LEDGER_AT_TIME, dev,
                                                                0);
            cr_assert_not_null(m, "time %zu device %d", i, dev);
            cr_assert_not_null(w, "time %zu device %d", i, dev);
            expect_same_moment(m, w);
        }
        done(&one, &(struct tb){0});
    }
    /* the failure's moment holds the allocation made at its own time, not the free after it */
    const struct cmt_ledger_moment *m = cmt_ledger_find(x.ledger, CMT_LEDGER_AT_TIME, 0, 1);
    cr_expect_eq(rows(m, CMT_LEDGER_DRIVER, CMT_OWNER_USER, 0), 12 * MIB);
    done(&x, &b);
}

/* After the peak, the steps the ledger takes inline (a free or an allocation at a site that
 * has its cell, a failed call) mixed with those it leaves to its general path: a cuMemGetInfo
 * event, a free of another device's memory from device 0's context, a MEMINFO record,
 * allocations at sites past the cells it has. */
static void peak_then_every_kind_of_step(struct tb *b)
{
    tb_begin(b, GIB, 768 * MIB);
    uint32_t a = tb_stack(b, "load", 2), c = tb_stack(b, "train_step", 3);
    uint64_t on1[] = {0x7e0000000000, 8 * MIB};
    tb_event(b, TB_ALLOC, 0, 1, a, CMT_F(PTR) | CMT_F(SIZE), on1);
    tb_alloc(b, 0x7f0000000000, 2 * MIB, a);
    tb_alloc(b, 0x7f0000200000, 4 * MIB, c);
    tb_alloc(b, 0x7f0000600000, 8 * MIB, c); /* the peak */
    tb_free(b, 0x7f0000000000);
    uint64_t info[] = {600 * MIB, GIB};
    tb_event(b, TB_INFO, 0, 0, 0, CMT_F(FREE) | CMT_F(TOTAL), info);
    tb_alloc(b, 0x7f0001000000, 1 * MIB, c);
    uint64_t size[] = {64 * MIB};
    tb_event(b, TB_ALLOC, 1, 0, c, CMT_F(SIZE), size); /* CUDA_ERROR_INVALID_VALUE: no change */
    uint64_t free1[] = {0x7e0000000000};
    tb_event(b, TB_FREE, 0, 0, 0, CMT_F(PTR), free1); /* device 1's memory */
    tb_meminfo(b, CMT_MEMINFO_OOM, 650 * MIB, GIB, b->seq);
    for (uint64_t i = 0; i < 80; i++) /* sites 3 .. 82: more than the first cells */
        tb_alloc(b, 0x7f0100000000 + i * MIB, 4096 + i, tb_stack(b, "layer", 2));
    for (uint64_t i = 0; i < 80; i += 2)
        tb_free(b, 0x7f0100000000 + i * MIB);
    tb_free(b, 0x7f0000200000);
    tb_finish(b, 1);
}

Test(ledger, the_peak_kept_through_every_kind_of_step_is_what_a_replay_to_its_time_takes)
{
    struct tb b;
    peak_then_every_kind_of_step(&b);
    struct run kept, asked;
    run_both(&kept, &asked, &b, 0);
    for (int32_t dev = 0; dev < 2; dev++) {
        const struct cmt_ledger_moment *p = cmt_ledger_find(kept.ledger, CMT_LEDGER_AT_PEAK, dev,
                                                            0);
        cr_assert_not_null(p, "device %d: the peak was not kept", dev);
        expect_same_moment(p, cmt_ledger_find(asked.ledger, CMT_LEDGER_AT_TIME, dev, 0));
    }
    const struct cmt_ledger_moment *p = cmt_ledger_find(kept.ledger, CMT_LEDGER_AT_PEAK, 1, 0);
    cr_expect_eq(rows(p, CMT_LEDGER_DRIVER, CMT_OWNER_USER, 0), 8 * MIB, "freed after the peak");
    done(&kept, &b);
    done(&asked, &(struct tb){0});
}

/* b finished; its peak kept in the pass, equal to a replay to its time, with user_bytes of user
 * code's allocations on device 0. */
static void expect_peak_kept(struct tb *b, uint64_t user_bytes)
{
    tb_finish(b, 1);
    struct run kept, asked;
    run_both(&kept, &asked, b, 0);
    const struct cmt_ledger_moment *p = cmt_ledger_find(kept.ledger, CMT_LEDGER_AT_PEAK, 0, 0);
    cr_assert_not_null(p);
    expect_same_moment(p, cmt_ledger_find(asked.ledger, CMT_LEDGER_AT_TIME, 0, 0));
    cr_expect_eq(rows(p, CMT_LEDGER_DRIVER, CMT_OWNER_USER, 0), user_bytes);
    done(&kept, b);
    done(&asked, &(struct tb){0});
}

/* 2 MiB, then 4 MiB (the peak) from user code. */
static void up_to_a_peak(struct tb *b)
{
    tb_begin(b, GIB, GIB);
    uint32_t user = tb_stack(b, "train_step", 2);
    tb_alloc(b, 0x7f0000000000, 2 * MIB, user);
    tb_alloc(b, 0x7f0000200000, 4 * MIB, user);
}

Test(ledger, the_peak_at_the_last_time_is_the_end_state)
{
    struct tb b;
    up_to_a_peak(&b);
    b.t_ns -= 1000; /* after the peak, at its time: no event after that time */
    tb_free(&b, 0x7f0000000000);
    expect_peak_kept(&b, 4 * MIB);
}

/* The cases a second replay must take: no CMT_LEDGER_AT_PEAK moment. */
static void expect_not_kept(struct tb *b, size_t budget)
{
    struct run kept, asked;
    run_both(&kept, &asked, b, budget);
    for (size_t i = 0; i < cmt_ledger_count(kept.ledger); i++)
        cr_expect_not(cmt_ledger_moment(kept.ledger, i)->why & CMT_LEDGER_AT_PEAK, "moment %zu", i);
    cr_expect_not_null(cmt_ledger_find(asked.ledger, CMT_LEDGER_AT_TIME, 0, 0));
    done(&kept, b);
    done(&asked, &(struct tb){0});
}

Test(ledger, the_peak_is_not_kept_when_the_clock_goes_backwards)
{
    struct tb b;
    up_to_a_peak(&b);
    tb_free(&b, 0x7f0000200000);
    b.t_ns -= 2500; /* a thread's clock behind: "up to the peak's time" is not "up to the peak" */
    tb_free(&b, 0x7f0000000000);
    tb_finish(&b, 1);
    expect_not_kept(&b, 0);
}

Test(ledger, the_peak_is_not_kept_past_its_budget)
{
    struct tb b;
    up_to_a_peak(&b);
    tb_free(&b, 0x7f0000200000); /* a change after the peak: its sums need cells */
    tb_finish(&b, 1);
    expect_not_kept(&b, 1);
}

Test(ledger, the_peak_is_not_kept_when_an_address_is_reused_without_its_free)
{
    struct tb b;
    up_to_a_peak(&b);
    tb_free(&b, 0x7f0000200000);
    tb_alloc(&b, 0x7f0000000000, 1 * MIB,
             tb_stack(&b, "eval", 2)); /* drops the 2 MiB the step does not name */
    tb_finish(&b, 1);
    expect_not_kept(&b, 0);
}

/* A ramp: 100 allocations, each a new peak at its own time (the ledger stops copying each
 * peak's moment as its time passes), then what follows it. */
static void ramp(struct tb *b)
{
    tb_begin(b, GIB, GIB);
    uint32_t user = tb_stack(b, "forward", 2);
    for (uint64_t i = 0; i < 100; i++)
        tb_alloc(b, 0x7f0000000000 + i * 2 * MIB, MIB + i * 4096, user);
}

Test(ledger, the_peak_at_the_top_of_a_ramp_is_kept_in_the_pass)
{
    struct tb b;
    ramp(&b);
    tb_free(&b, 0x7f0000000000); /* the first event after the peak: no new peak */
    tb_alloc(&b, 0x7f0010000000, MIB, tb_stack(&b, "backward", 2));
    tb_free(&b, 0x7f0000200000);
    expect_peak_kept(&b, 100 * MIB + 4950 * 4096);
}

Test(ledger, an_event_at_the_ramps_last_time_is_part_of_its_peak)
{
    struct tb b;
    ramp(&b);
    b.t_ns -= 1000; /* the peak's own time */
    tb_free(&b, 0x7f0000000000);
    tb_free(&b, 0x7f0000200000);
    tb_alloc(&b, 0x7f0010000000, MIB, tb_stack(&b, "backward", 2));
    expect_peak_kept(&b, 99 * MIB + 4950 * 4096);
}

Test(ledger, a_sample_after_a_ramps_peak_leaves_it_to_a_second_replay)
{
    struct tb b;
    ramp(&b);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 300 * MIB, GIB, b.seq); /* may change the moment */
    tb_free(&b, 0x7f0000000000);
    tb_finish(&b, 1);
    expect_not_kept(&b, 0);
}

/* After the peak, 300 allocations and frees below it (the common step, inline), then a new peak
 * (taken inline with the last moment closed and used), then more of them. */
Test(ledger, a_new_peak_after_a_long_run_of_non_peaks_is_kept_in_the_pass)
{
    struct tb b;
    up_to_a_peak(&b);
    tb_free(&b, 0x7f0000000000);
    uint32_t eval = tb_stack(&b, "eval", 2);
    for (uint64_t i = 0; i < 300; i++) {
        tb_alloc(&b, 0x7f0100000000, MIB + i * 4096, eval);
        tb_free(&b, 0x7f0100000000);
    }
    tb_alloc(&b, 0x7f0002000000, 8 * MIB, tb_stack(&b, "backward", 2)); /* the peak: 12 MiB */
    tb_free(&b, 0x7f0000200000);
    for (uint64_t i = 0; i < 300; i++) {
        tb_alloc(&b, 0x7f0100000000, 2 * MIB, eval);
        tb_free(&b, 0x7f0100000000);
    }
    expect_peak_kept(&b, 12 * MIB);
}

/* An out-of-memory failure at the peak's own time (part of its moment) and another after it,
 * with its sample: the general path's steps between the common ones. */
Test(ledger, a_peak_with_oom_failures_at_its_time_and_after_is_kept_in_the_pass)
{
    struct tb b;
    up_to_a_peak(&b);
    b.t_ns -= 1000; /* the peak's time */
    tb_alloc_fail(&b, 900 * MIB, tb_stack(&b, "eval", 2));
    tb_free(&b, 0x7f0000000000);
    uint64_t seq = tb_alloc_fail(&b, 2 * GIB, tb_stack(&b, "eval", 2));
    tb_meminfo(&b, CMT_MEMINFO_OOM, 500 * MIB, GIB, seq);
    tb_free(&b, 0x7f0000200000);
    expect_peak_kept(&b, 6 * MIB);
}

/* 6 MiB up to the peak, a free, then a new peak of 8 MiB more (and its free), the clock going
 * back before the new peak itself (at_the_peak) or before a second free ahead of it (the peak
 * not kept from there: the new peak finds it so). */
static void a_new_peak_after_a_clock_behind(int at_the_peak)
{
    struct tb b;
    up_to_a_peak(&b);
    tb_free(&b, 0x7f0000000000);
    b.t_ns -= 2500;
    if (!at_the_peak)
        tb_free(&b, 0x7f0000200000);
    tb_alloc(&b, 0x7f0002000000, 8 * MIB, tb_stack(&b, "backward", 2)); /* the new peak */
    tb_free(&b, 0x7f0002000000);
    tb_finish(&b, 1);
    expect_not_kept(&b, 0);
}

Test(ledger, a_new_peak_after_the_clock_went_backwards_leaves_it_to_a_second_replay)
{
    a_new_peak_after_a_clock_behind(0);
}

Test(ledger, a_new_peak_behind_the_last_events_clock_leaves_it_to_a_second_replay)
{
    a_new_peak_after_a_clock_behind(1);
}
