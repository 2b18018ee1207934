/* interpose/unwind.c: our frame walk gives the return addresses libunwind's unw_backtrace
 * gives from the same place, on every shape (recursion, a shared library with frame
 * pointers, a dlopen'ed module, code without frame pointers, threads), and falls back to
 * libunwind where it does not follow a frame (a signal frame, a frame too large for the rule
 * cache). Each test runs in a process of its own (Criterion). */
#define UNW_LOCAL_ONLY
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <libunwind.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

#include "unwind.h"
#include "unwind_shapes.h"

#define FRAMES 512

struct walks {
    int max;
    int ours_n, theirs_n, again;
    void *ours[FRAMES], *theirs[FRAMES];
    struct cmt__unwind_counts before, after;
};

/* Both walks from one frame: ips[0] is each call's own return address (they differ), the
 * rest must not. */
static __attribute__((noinline)) int walk_both(void *arg)
{
    struct walks *w = arg;
    cmt__unwind_counts(&w->before);
    w->ours_n = cmt__unwind_backtrace(w->ours, w->max ? w->max : FRAMES, &w->again);
    cmt__unwind_counts(&w->after);
    w->theirs_n = unw_backtrace(w->theirs, w->max ? w->max : FRAMES);
    __asm__ volatile("" ::: "memory");
    return 0;
}

static void assert_same(const struct walks *w, int min_frames)
{
    cr_assert_eq(w->ours_n, w->theirs_n, "ours %d frames, libunwind's %d", w->ours_n, w->theirs_n);
    cr_assert_geq(w->ours_n, min_frames);
    for (int i = 1; i < w->ours_n; i++)
        cr_assert_eq(w->ours[i], w->theirs[i], "frame %d: %p vs %p", i, w->ours[i], w->theirs[i]);
}

static uint64_t fallbacks(const struct walks *w)
{
    return w->after.fallbacks - w->before.fallbacks;
}

static __attribute__((noinline)) int recurse(int depth, cmt_shape_leaf leaf, void *arg)
{
    int r = depth > 0 ? recurse(depth - 1, leaf, arg) : leaf(arg);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

/* Both walks at the bottom of `depth` frames of a shape: the same, with no fallback. */
static void check_shape(int (*shape)(int, cmt_shape_leaf, void *), int depth)
{
    static struct walks w;
    shape(depth, walk_both, &w);
    assert_same(&w, depth + 2);
    cr_assert_eq(fallbacks(&w), 0);
}

Test(unwind, matches_libunwind_on_a_plain_call)
{
    static struct walks w;
    walk_both(&w);
    assert_same(&w, 3);
    cr_assert_eq(fallbacks(&w), 0);
}

Test(unwind, matches_libunwind_on_deep_recursion)
{
    check_shape(recurse, 300);
}

Test(unwind, stops_at_max)
{
    static struct walks w = {.max = 5};
    recurse(20, walk_both, &w);
    assert_same(&w, 5);
    cr_assert_eq(w.ours_n, 5);
}

Test(unwind, matches_libunwind_across_a_shared_library)
{
    check_shape(cmt_shape_shared, 12);
}

static void *open_module(cmt_shape_module_fn *fn)
{
    void *h = dlopen(CMT_UNWIND_MODULE_PATH, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    *fn = (cmt_shape_module_fn)dlsym(h, "cmt_shape_module");
    cr_assert_not_null(*fn);
    return h;
}

Test(unwind, matches_libunwind_across_a_dlopened_module)
{
    static struct walks w;
    walk_both(&w); /* the objects are read before the module is there */
    cmt_shape_module_fn fn;
    void *h = open_module(&fn);
    check_shape(fn, 9);
    dlclose(h);
}

Test(unwind, matches_libunwind_after_a_module_is_closed_and_opened_again)
{
    static struct walks w;
    cmt_shape_module_fn fn;
    void *h = open_module(&fn);
    fn(5, walk_both, &w);
    cr_assert_eq(dlclose(h), 0);
    void *other = dlopen(CMT_UNWIND_SHARED_PATH, RTLD_NOW); /* something may land there */
    h = open_module(&fn);
    check_shape(fn, 7);
    dlclose(h);
    if (other)
        dlclose(other);
}

Test(unwind, matches_libunwind_without_frame_pointers)
{
    check_shape(cmt_shape_no_fp, 40);
}

Test(unwind, a_frame_over_the_cache_limit_falls_back)
{
    static struct walks w;
    cmt_shape_huge_frame(walk_both, &w);
    assert_same(&w, 3);
    cr_assert_eq(fallbacks(&w), 1);
}

/* A call to a noreturn function can be its caller's last instruction: the return address is
 * then past the caller's end, and only the call instruction (address - 1) finds its rule. */
static jmp_buf leave;

static __attribute__((noreturn, noinline)) void walk_and_leave(void *arg)
{
    walk_both(arg);
    longjmp(leave, 1);
}

static __attribute__((noinline)) void ends_in_a_noreturn_call(void *arg)
{
    walk_and_leave(arg);
}

Test(unwind, matches_libunwind_past_a_noreturn_call)
{
    static struct walks w;
    if (!setjmp(leave))
        ends_in_a_noreturn_call(&w);
    assert_same(&w, 4);
    cr_assert_eq(fallbacks(&w), 0);
}

static struct walks in_handler;

static void on_signal(int sig)
{
    recurse(3, walk_both, &in_handler);
}

Test(unwind, a_signal_frame_falls_back)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    cr_assert_eq(raise(SIGUSR1), 0);
    assert_same(&in_handler, 6);
    cr_assert_eq(fallbacks(&in_handler), 1);
}

static void *thread_main(void *arg)
{
    recurse(8, walk_both, arg);
    return NULL;
}

Test(unwind, matches_libunwind_on_another_thread)
{
    static struct walks w;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, thread_main, &w), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    assert_same(&w, 10);
    cr_assert_eq(fallbacks(&w), 0);
}

/* Threads that walk at once share the rule cache and race for its misses (a thread that
 * finds a miss under way falls back): every walk still gives libunwind's addresses. */
struct racer {
    struct walks w;
    int mismatches;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    for (int i = 0; i < 200; i++) {
        if (i % 3 == 0)
            cmt_shape_no_fp(5 + i % 7, walk_both, &r->w);
        else if (i % 3 == 1)
            cmt_shape_shared(3 + i % 5, walk_both, &r->w);
        else
            recurse(i % 11, walk_both, &r->w);
        int same = r->w.ours_n == r->w.theirs_n;
        for (int k = 1; same && k < r->w.ours_n; k++)
            same = r->w.ours[k] == r->w.theirs[k];
        r->mismatches += !same;
    }
    return NULL;
}

Test(unwind, threads_walking_at_once_match_libunwind)
{
    enum { THREADS = 6 };
    static struct racer racers[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, race, &racers[i]), 0);
    for (int i = 0; i < THREADS; i++) {
        cr_assert_eq(pthread_join(t[i], NULL), 0);
        cr_assert_eq(racers[i].mismatches, 0, "thread %d", i);
    }
}

Test(unwind, a_stack_seen_before_reads_no_unwind_tables)
{
    static struct walks w;
    for (int i = 0; i < 3; i++)
        cmt_shape_shared(4, walk_both, &w);
    assert_same(&w, 6);
    cr_assert_eq(w.after.misses, w.before.misses);
    cr_assert_eq(fallbacks(&w), 0);
}

Test(unwind, a_stack_like_the_last_one_is_taken_from_it)
{
    static struct walks w;
    for (int i = 0; i < 3; i++)
        cmt_shape_no_fp(10, walk_both, &w);
    assert_same(&w, 12);
    /* all but the frames the walks do not share (walk_both's own, and the step into it) */
    cr_assert_geq(w.after.replayed - w.before.replayed, (uint64_t)w.ours_n - 2);
}

Test(unwind, says_when_a_walk_returns_the_previous_one_again)
{
    static struct walks w, other;
    for (int i = 0; i < 3; i++) {
        w.max = 0;
        cmt_shape_no_fp(6, walk_both, &w);
        assert_same(&w, 8);
        cr_assert_eq(w.again, i > 0, "walk %d", i);
    }
    w.max = 4; /* the same stack, fewer frames: not what the previous walk returned */
    cmt_shape_no_fp(6, walk_both, &w);
    assert_same(&w, 4);
    cr_assert_eq(w.again, 0);
    cmt_shape_no_fp(7, walk_both, &other);
    assert_same(&other, 9);
    cr_assert_eq(other.again, 0);
}

/* zero_ra_call(leaf, arg): calls leaf(arg) from a frame whose return address slot holds 0
 * (CFA = rbp + 16, rbp saved at CFA - 16), the way some threads' outermost frames end: a walk
 * from leaf stops there, on the 0, not on an outermost rule. */
int zero_ra_call(cmt_shape_leaf leaf, void *arg);
__asm__(".text\n"
        ".type zero_ra_call, @function\n"
        "zero_ra_call:\n"
        ".cfi_startproc\n"
        "pushq %rbp\n"
        ".cfi_adjust_cfa_offset 8\n"
        "pushq $0\n"
        "pushq %rbp\n"
        "movq %rsp, %rbp\n"
        ".cfi_def_cfa %rbp, 16\n"
        ".cfi_offset %rbp, -16\n"
        "movq %rdi, %rax\n"
        "movq %rsi, %rdi\n"
        "call *%rax\n"
        "movq %rbp, %rsp\n"
        "popq %rbp\n"
        "addq $8, %rsp\n"
        ".cfi_def_cfa %rsp, 16\n"
        "popq %rbp\n"
        ".cfi_def_cfa %rsp, 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size zero_ra_call, .-zero_ra_call\n");

Test(unwind, a_walk_that_ends_on_a_zero_return_address_is_taken_whole_again)
{
    static struct walks w;
    int first = 0;
    for (int i = 0; i < 3; i++) {
        zero_ra_call(walk_both, &w);
        cr_assert_eq(fallbacks(&w), 0);
        cr_assert_eq(w.again, i > 0, "walk %d", i);
        first = i ? first : w.ours_n;
        cr_assert_eq(w.ours_n, first);
    }
    cr_assert_eq(w.ours_n, 2, "walk_both's caller, the trampoline, then the 0");
}

/* A PC with no rule the cache holds (here a frame over 128 KiB) is a negative entry: later
 * walks through it fall back without missing again. */
Test(unwind, a_frame_over_the_cache_limit_misses_once)
{
    static struct walks w;
    cmt_shape_huge_frame(walk_both, &w);
    cr_assert_eq(fallbacks(&w), 1);
    cmt_shape_huge_frame(walk_both, &w);
    assert_same(&w, 3);
    cr_assert_eq(fallbacks(&w), 1);
    cr_assert_eq(w.after.misses, w.before.misses);
}

/* A negative entry lasts until the first miss after an object was loaded (the new object may
 * hold its PC): the walk through the same frame then looks its rule up again. */
Test(unwind, a_negative_entry_goes_at_the_first_miss_after_a_load)
{
    static struct walks w;
    cmt_shape_huge_frame(walk_both, &w);
    cr_assert_eq(fallbacks(&w), 1);
    cmt_shape_module_fn fn;
    void *h = open_module(&fn);
    check_shape(fn, 9); /* its PCs miss: the objects are read again */
    cmt_shape_huge_frame(walk_both, &w);
    assert_same(&w, 3);
    cr_assert_eq(fallbacks(&w), 1);
    cr_assert_eq(w.after.misses - w.before.misses, 1, "the huge frame's PC, looked up again");
    dlclose(h);
}

/* The same depth and frame sizes through two different callers: a walk that reused the
 * previous one's frames past the point where they part would give the wrong caller. */
static __attribute__((noinline)) int middle_a(cmt_shape_leaf leaf, void *arg)
{
    int r = recurse(3, leaf, arg);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

static __attribute__((noinline)) int middle_b(cmt_shape_leaf leaf, void *arg)
{
    int r = recurse(3, leaf, arg);
    __asm__ volatile("" ::: "memory");
    return r + 2;
}

Test(unwind, a_stack_that_changed_below_the_leaf_is_walked_again)
{
    static struct walks a, b, a2;
    for (int i = 0; i < 2; i++) {
        middle_a(walk_both, &a);
        middle_b(walk_both, &b);
        middle_a(walk_both, &a2);
        assert_same(&a, 6);
        assert_same(&b, 6);
        assert_same(&a2, 6);
        cr_assert_neq(a.ours[5], b.ours[5]);
        cr_assert_gt(a2.after.replayed, a2.before.replayed); /* the frames past the middle */
    }
}
