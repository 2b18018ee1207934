/* unwind.h — the shim's unwinder: the return addresses of the calling thread's stack.
 *
 * Our own x86-64 frame walk over the loaded objects' .eh_frame CFI (unwind_cfi.h), with each
 * return address's rule (CFA = rsp/rbp + offset, return address at CFA - 8, rbp saved at
 * CFA - 8k) cached in a fixed, lock-free table shared by all threads, so a stack seen before
 * costs a few loads per frame. A walk falls back to libunwind's unw_backtrace, whole, when any
 * frame is one we do not follow: a signal frame, a DWARF expression, a PC outside every object
 * with unwind tables (JIT code), a frame outside the thread's stack, or the table's lock held
 * by another thread's miss. Memory is read only within the thread's stack bounds and the
 * objects' own unwind tables. No heap allocation, no system call on a hit; a miss takes a
 * try-lock and may walk the objects (dl_iterate_phdr). The first walk on a thread asks for its
 * stack bounds once (pthread_getattr_np). x86-64 only (elsewhere every walk is libunwind's).
 *
 * The walks of the loaded objects (a miss, libunwind's walk) take the loader's lock: they run
 * inside the brackets cmt__unwind_set_loader_guard names (the shim's fork-safe section), a hit
 * touches neither. Callers set stack.c's `unwinding` flag (libunwind may open its pipe). */
#ifndef CMT_UNWIND_H
#define CMT_UNWIND_H

#include <stdint.h>

/* Brackets around each walk of the loaded objects (dl_iterate_phdr, unw_backtrace): enter
 * before, leave after; none by default. Set once, before the first walk. */
void cmt__unwind_set_loader_guard(void (*enter)(void), void (*leave)(void));

/* The most frames one walk returns. */
#define CMT__UNWIND_MAX_FRAMES 512

/* Fills ips with the return addresses of the caller's stack, innermost first: ips[0] is the
 * address cmt__unwind_backtrace returns to, then its caller's, out to the outermost frame (or
 * `max`): what unw_backtrace gives from the same call site (the tests hold the two equal).
 * `again` (may be NULL) is set to 1 when these are the very addresses this thread's previous
 * walk returned (a loop's call site: the caller may reuse what it made of them), else 0.
 * @return the number of addresses written (0 when max <= 0). */
int cmt__unwind_backtrace(void **ips, int max, int *again);

/* This thread's walks so far: how many, how many fell back to libunwind, how many frames
 * missed the rule cache, how many frames were taken from the thread's previous walk (for
 * tests and the benchmark's notes). */
struct cmt__unwind_counts {
    uint64_t walks, fallbacks, misses, replayed;
};
void cmt__unwind_counts(struct cmt__unwind_counts *out);

#endif
