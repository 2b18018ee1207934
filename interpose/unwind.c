/* unwind.c — the frame walk, its rule cache and its fallback to libunwind (unwind.h).
 *
 * The rule cache is 4096 64-bit words shared by all threads, each one whole entry: the
 * PC's bits above 12 as a tag, and the rule packed in 25 bits, so a word read with a relaxed
 * load is an entry or empty (0), never half of two. Slot i holds the PC whose low 12 bits are
 * i ^ tag's low 12 bits, so tag and slot name one PC. A PC with no rule the walk follows (none
 * in the CFI, a PC outside every object, or a rule that does not pack: a frame over 128 KiB,
 * rbp saved over 2 KiB below the CFA) makes the walk fall back; the cache holds it as a
 * negative entry (its tag and RULE_NONE), so that later walks through it fall back at once
 * instead of missing again (a try-lock and a walk of the loaded objects each time).
 *
 * A miss (the rule of a PC not in the cache) runs under a try-lock: the list of loaded
 * objects is read again when the loader's add or remove count moved (dl_iterate_phdr), the
 * cache is emptied when an object went away, and the PC's FDE is run. A thread that finds
 * the lock taken falls back to libunwind for that walk instead of waiting (a signal handler
 * may interrupt a miss on its own thread). */
#define UNW_LOCAL_ONLY
#include "unwind.h"

#include <link.h>
#include <libunwind.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "unwind_cfi.h"

#define CACHE_BITS 12
#define CACHE_SLOTS (1u << CACHE_BITS)
#define MAX_OBJECTS 1024
#define RECORD_FRAMES 128 /* frames of the last walk kept per thread */

struct object {
    uintptr_t lo, hi; /* the executable PT_LOAD segments' span */
    const void *eh_frame_hdr;
};

/* Under miss_lock. */
static struct object objects[MAX_OBJECTS];
static int object_count;
static unsigned long long objects_adds, objects_subs;
static int objects_read;
static atomic_flag miss_lock = ATOMIC_FLAG_INIT;

static _Atomic uint64_t rule_cache[CACHE_SLOTS];
static void empty_cache(int negative_only);

static void (*loader_enter)(void), (*loader_leave)(void); /* cmt__unwind_set_loader_guard */

void cmt__unwind_set_loader_guard(void (*enter)(void), void (*leave)(void))
{
    loader_enter = enter;
    loader_leave = leave;
}

static void guard_enter(void)
{
    if (loader_enter)
        loader_enter();
}

static void guard_leave(void)
{
    if (loader_leave)
        loader_leave();
}

/* A walk's frames as it saw them: frame i's registers, and where the step from frame i read
 * its caller's rbp (0: it did not). `complete`: the walk ended at its last frame, an
 * outermost one by its rule (end_at 0) or one whose return address, read at end_at, was 0
 * (a walk from the same registers ends there again while that word is still 0);
 * `returned`: what it returned (-1 when it fell back). The next walk on the thread takes
 * frames from it (replay, below). */
struct frame {
    uintptr_t pc, sp, fp, rbp_at;
};
struct walk_record {
    int n, complete, returned;
    uintptr_t end_at;
    struct frame f[RECORD_FRAMES];
};

/* Does a walk that reaches p's last frame from the same registers end there too? */
static inline int ends_there(const struct walk_record *p)
{
    return p->complete && (!p->end_at || !*(const uintptr_t *)p->end_at);
}

struct thread_state {
    uintptr_t stack_lo, stack_hi;
    int stack_known; /* 0 not asked, 1 known, -1 unknown (every walk falls back) */
    int walking;     /* a walk is under way (a second one is a signal handler's) */
    int previous;    /* records[previous] is the last walk's */
    struct cmt__unwind_counts counts;
    struct walk_record records[2];
};
static __thread struct thread_state self __attribute__((tls_model("initial-exec")));

void cmt__unwind_counts(struct cmt__unwind_counts *out)
{
    *out = self.counts;
}

/* ---- the loaded objects ---- */

static int counts_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    unsigned long long *c = data;
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1;
}

static int object_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    struct object o = {UINTPTR_MAX, 0, NULL};
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t at = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_GNU_EH_FRAME)
            o.eh_frame_hdr = (const void *)at;
        else if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            o.lo = at < o.lo ? at : o.lo;
            o.hi = at + ph->p_memsz > o.hi ? at + ph->p_memsz : o.hi;
        }
    }
    if (o.eh_frame_hdr && o.lo < o.hi && object_count < MAX_OBJECTS)
        objects[object_count++] = o;
    return 0;
}

/* Under miss_lock: the list is current (emptying the cache when an object went away, and its
 * negative entries when one came: their PCs may be in it). */
static void refresh_objects(void)
{
    unsigned long long c[2] = {0, 0};
    dl_iterate_phdr(counts_cb, c);
    if (objects_read && c[0] == objects_adds && c[1] == objects_subs)
        return;
    if (objects_read)
        empty_cache(c[1] == objects_subs);
    object_count = 0;
    dl_iterate_phdr(object_cb, NULL);
    objects_adds = c[0];
    objects_subs = c[1];
    objects_read = 1;
}

static const void *eh_frame_hdr_of(uintptr_t pc)
{
    for (int i = 0; i < object_count; i++)
        if (pc >= objects[i].lo && pc < objects[i].hi)
            return objects[i].eh_frame_hdr;
    return NULL;
}

/* ---- the rule cache ---- */

/* A cache word: the PC's tag (bits 25-63), then the rule in 25 bits: cfa_offset / 8 (bits
 * 0-13, up to 128 KiB), -rbp_offset / 8 (bits 14-21; 0 = rbp unchanged), CFA on rbp (22),
 * outermost frame (23), no rule (24). The walk reads the fields straight from the word. */
#define RULE_CFA_MASK 0x3fffu
#define RULE_RBP_SHIFT 14
#define RULE_RBP_MASK 0xffu
#define RULE_CFA_RBP (1u << 22)
#define RULE_OUTERMOST (1u << 23)
#define RULE_NONE (1u << 24) /* a negative entry: no rule, the walk falls back */
#define TAG_SHIFT 25

static inline unsigned slot_of(uintptr_t pc)
{
    return (unsigned)((pc ^ (pc >> CACHE_BITS)) & (CACHE_SLOTS - 1));
}

/* Empties the cache's entries: all of them, or only the negative ones (`negative_only`). */
static void empty_cache(int negative_only)
{
    for (unsigned i = 0; i < CACHE_SLOTS; i++)
        if (!negative_only ||
            (atomic_load_explicit(&rule_cache[i], memory_order_relaxed) & RULE_NONE))
            atomic_store_explicit(&rule_cache[i], 0, memory_order_relaxed);
}

/* @return the rule's bits, or 0 when it does not fit them. */
static uint64_t pack(const struct cmt__cfi_rule *r)
{
    if (r->outermost)
        return RULE_OUTERMOST;
    uint64_t cfa = (uint64_t)r->cfa_offset / 8, rbp = (uint64_t) - (int64_t)r->rbp_offset / 8;
    if (r->cfa_offset % 8 || cfa > RULE_CFA_MASK || r->rbp_offset % 8 || rbp > RULE_RBP_MASK)
        return 0;
    return cfa | rbp << RULE_RBP_SHIFT | (r->cfa_is_rbp ? RULE_CFA_RBP : 0);
}

/* The cache word of pc from the CFI, stored in the cache (RULE_NONE when it has no rule, or
 * none that packs). @return it, or 0 when the lock is taken: fall back. */
static __attribute__((noinline)) uint64_t rule_miss(uintptr_t pc)
{
    self.counts.misses++;
    guard_enter(); /* before the lock: a fork waits until no thread holds it */
    if (atomic_flag_test_and_set_explicit(&miss_lock, memory_order_acquire)) {
        guard_leave();
        return 0;
    }
    refresh_objects();
    const void *hdr = eh_frame_hdr_of(pc);
    struct cmt__cfi_rule r;
    uint64_t bits = hdr && cmt__cfi_find(hdr, pc, &r) == 0 ? pack(&r) : 0;
    uint64_t word = (uint64_t)(pc >> CACHE_BITS) << TAG_SHIFT | (bits ? bits : RULE_NONE);
    atomic_store_explicit(&rule_cache[slot_of(pc)], word, memory_order_relaxed);
    atomic_flag_clear_explicit(&miss_lock, memory_order_release);
    guard_leave();
    return word;
}

/* ---- the walk ---- */

/* This thread's stack, asked once. @return 1 when known. */
static int stack_bounds(void)
{
    if (__builtin_expect(self.stack_known != 0, 1))
        return self.stack_known > 0;
    self.stack_known = -1;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return 0;
    void *addr;
    size_t size;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        self.stack_lo = (uintptr_t)addr;
        self.stack_hi = (uintptr_t)addr + size;
        self.stack_known = 1;
    }
    pthread_attr_destroy(&attr);
    return self.stack_known > 0;
}

/* libunwind's walk, from the frame whose return address is pc (its own frames and ours
 * before that are dropped). */
static __attribute__((noinline)) int fallback(void **ips, int max, uintptr_t pc)
{
    self.counts.fallbacks++;
    void *all[CMT__UNWIND_MAX_FRAMES + 8];
    guard_enter();
    int n = unw_backtrace(all, max + 8);
    guard_leave();
    int skip = 0;
    while (skip < n && skip < 8 && (uintptr_t)all[skip] != pc)
        skip++;
    if (skip == n || skip == 8)
        skip = 0;
    n = n - skip < max ? n - skip : max;
    memcpy(ips, all + skip, sizeof *ips * (size_t)(n > 0 ? n : 0));
    return n > 0 ? n : 0;
}

/* One walk under way: the registers of its innermost frame so far, frame n - 1. */
struct walk {
    void **ips;
    int n, max, limit; /* frames below limit are recorded */
    int j;             /* the previous walk's first frame not below sp */
    int fell_back;
    uintptr_t pc, sp, fp, hi;
    uintptr_t first; /* frame 0's pc: where a fallback starts */
    struct walk_record *record;
    const struct walk_record *previous;
};

static inline void add_frame(struct walk *w)
{
    if (w->n < w->limit) {
        w->record->f[w->n] = (struct frame){w->pc, w->sp, w->fp, 0};
        w->record->n = w->n + 1;
    }
    w->ips[w->n++] = (void *)w->pc;
}

/* Does the step from frame a of a walk read what it read then, so that frame b follows? */
static inline int still_follows(const struct frame *a, const struct frame *b)
{
    return ((const uintptr_t *)b->sp)[-1] == b->pc &&
           (!a->rbp_at || *(const uintptr_t *)a->rbp_at == b->fp);
}

/* The previous walk's frames from its frame j (whose registers are the current frame's) for
 * as long as each step from them reads what it read then: the same registers and the same
 * memory make the same walk. @return 1 when the walk is over (the previous one ended there,
 * or max), else 0: go on stepping from the current frame. */
static inline int replay(struct walk *w)
{
    const struct walk_record *p = w->previous;
    struct walk_record *r = w->record;
    const int last = p->n - 1, from = w->n;
    int j = w->j, n = w->n;
    for (; j < last && n < w->max && still_follows(&p->f[j], &p->f[j + 1]); j++) {
        if (n - 1 < w->limit)
            r->f[n - 1].rbp_at = p->f[j].rbp_at;
        if (n < w->limit)
            r->f[n] = (struct frame){p->f[j + 1].pc, p->f[j + 1].sp, p->f[j + 1].fp, 0};
        w->ips[n++] = (void *)p->f[j + 1].pc;
    }
    if (w->limit)
        r->n = n < w->limit ? n : w->limit;
    self.counts.replayed += (uint64_t)(n - from);
    w->n = n;
    w->j = j;
    w->pc = p->f[j].pc;
    w->sp = p->f[j].sp;
    w->fp = p->f[j].fp;
    if (n == w->max)
        return 1;
    if (j == last && ends_there(p)) {
        if (n <= w->limit) {
            r->complete = 1;
            r->end_at = p->end_at;
        }
        return 1;
    }
    return 0;
}

/* One frame out from the current one by its rule. @return 1 stepped, 0 the walk is over,
 * -1 fall back. */
static inline int step(struct walk *w)
{
    uintptr_t call = w->pc - 1; /* the call instruction: its rule is the frame's */
    uint64_t e = atomic_load_explicit(&rule_cache[slot_of(call)], memory_order_relaxed);
    if (__builtin_expect((e >> TAG_SHIFT) != (call >> CACHE_BITS), 0) && !(e = rule_miss(call)))
        return -1;
    if (e & (RULE_OUTERMOST | RULE_NONE)) {
        if (e & RULE_NONE)
            return -1;
        if (w->n <= w->limit) {
            w->record->complete = 1;
            w->record->end_at = 0;
        }
        return 0;
    }
    uintptr_t sp = w->sp, cfa = ((e & RULE_CFA_RBP) ? w->fp : sp) + ((e & RULE_CFA_MASK) << 3);
    if (cfa < sp + 8 || cfa > w->hi)
        return -1;
    uintptr_t rbp_slots = (e >> RULE_RBP_SHIFT) & RULE_RBP_MASK;
    if (rbp_slots) {
        uintptr_t at = cfa - (rbp_slots << 3);
        if (at < sp)
            return -1;
        w->fp = *(const uintptr_t *)at;
        if (w->n - 1 < w->limit)
            w->record->f[w->n - 1].rbp_at = at;
    }
    w->pc = ((const uintptr_t *)cfa)[-1];
    w->sp = cfa;
    if (!w->pc) { /* the outermost frame of a thread whose entry pushed no return address */
        if (w->n <= w->limit) {
            w->record->complete = 1;
            w->record->end_at = cfa - 8;
        }
        return 0;
    }
    add_frame(w);
    return 1;
}

/* The walk from frame w->n - 1 on: replaying the previous walk where it meets it, stepping
 * by the rules elsewhere. */
static int walk_on(struct walk *w)
{
    const struct walk_record *p = w->previous;
    for (;;) {
        if (w->n == w->max)
            return w->n;
        while (w->j < p->n && p->f[w->j].sp < w->sp)
            w->j++;
        if (w->j < p->n && p->f[w->j].sp == w->sp && p->f[w->j].pc == w->pc &&
            p->f[w->j].fp == w->fp && replay(w))
            return w->n;
        int r = step(w);
        if (r < 0) {
            w->fell_back = 1;
            return fallback(w->ips, w->max, w->first);
        }
        if (r == 0)
            return w->n;
    }
}

/* The common case of a loop: the previous walk again, whole, from the same registers. Writes
 * ips and @return the frame count, or 0 with *same set to how many first frames it shares. */
static inline int same_walk(const struct walk_record *p, struct walk *w, int *same)
{
    *same = 0;
    if (!p->n || p->f[0].pc != w->pc || p->f[0].sp != w->sp || p->f[0].fp != w->fp)
        return 0;
    int end = p->n < w->max ? p->n : w->max, k = 0;
    w->ips[0] = (void *)w->pc;
    for (; k + 1 < end && still_follows(&p->f[k], &p->f[k + 1]); k++)
        w->ips[k + 1] = (void *)p->f[k + 1].pc;
    if (k + 1 == end && (end == w->max || ends_there(p)))
        return end;
    *same = k + 1;
    return 0;
}

/* A walk of this thread's, recorded for the next one; *again: it returned what the previous
 * one did. */
static int walk_recorded(struct walk *w, int *again)
{
    const struct walk_record *p = &self.records[self.previous];
    int same;
    int n = same_walk(p, w, &same);
    if (n) {
        self.counts.replayed += (uint64_t)(n - 1);
        *again = n == p->returned;
        return n; /* the previous record stands for this walk too */
    }
    struct walk_record *r = &self.records[self.previous ^ 1];
    w->previous = p;
    w->record = r;
    w->limit = RECORD_FRAMES;
    r->complete = 0;
    r->end_at = 0;
    if (same) { /* frames 0..same-1 as before, and already in ips */
        memcpy(r->f, p->f, sizeof *r->f * (size_t)same);
        r->f[same - 1].rbp_at = 0;
        r->n = w->n = w->j = same;
        w->pc = p->f[same - 1].pc;
        w->sp = p->f[same - 1].sp;
        w->fp = p->f[same - 1].fp;
        self.counts.replayed += (uint64_t)(same - 1);
    } else {
        r->n = 0;
        add_frame(w);
    }
    n = walk_on(w);
    r->returned = w->fell_back ? -1 : n;
    self.previous ^= 1;
    return n;
}

int cmt__unwind_walk(void **ips, int max, uintptr_t pc, uintptr_t sp, uintptr_t fp, int *again);

/* The walk from the caller's registers (the entry below passes them). */
__attribute__((used, visibility("hidden"))) int cmt__unwind_walk(void **ips, int max, uintptr_t pc,
                                                                 uintptr_t sp, uintptr_t fp,
                                                                 int *again)
{
    int again_unused;
    again = again ? again : &again_unused;
    *again = 0;
    if (max <= 0)
        return 0;
    self.counts.walks++;
    struct walk w = {.ips = ips,
                     .max = max < CMT__UNWIND_MAX_FRAMES ? max : CMT__UNWIND_MAX_FRAMES,
                     .pc = pc,
                     .sp = sp,
                     .fp = fp,
                     .first = pc};
    if (!stack_bounds() || sp < self.stack_lo || sp >= self.stack_hi)
        return fallback(ips, w.max, pc);
    w.hi = self.stack_hi;
    if (self.walking) { /* a signal handler's walk inside another: neither read nor recorded */
        static const struct walk_record none;
        w.previous = &none;
        w.record = NULL; /* limit 0: never written */
        add_frame(&w);
        return walk_on(&w);
    }
    self.walking = 1;
    int n = walk_recorded(&w, again);
    self.walking = 0;
    return n;
}

#if defined(__x86_64__)
/* cmt__unwind_backtrace(ips, max, again): the caller's pc, rsp and rbp as they are after its
 * call returns, then a jump (not a call) into the walk, which returns to the caller itself. */
__asm__(".text\n"
        ".globl cmt__unwind_backtrace\n"
        ".hidden cmt__unwind_backtrace\n"
        ".type cmt__unwind_backtrace, @function\n"
        "cmt__unwind_backtrace:\n"
        ".cfi_startproc\n"
        "endbr64\n"
        "movq %rdx, %r9\n"
        "movq (%rsp), %rdx\n"
        "leaq 8(%rsp), %rcx\n"
        "movq %rbp, %r8\n"
        "jmp cmt__unwind_walk\n"
        ".cfi_endproc\n"
        ".size cmt__unwind_backtrace, .-cmt__unwind_backtrace\n");
#else
int cmt__unwind_backtrace(void **ips, int max, int *again)
{
    if (again)
        *again = 0;
    if (max <= 0)
        return 0;
    self.counts.walks++;
    return fallback(ips, max < CMT__UNWIND_MAX_FRAMES ? max : CMT__UNWIND_MAX_FRAMES,
                    (uintptr_t)__builtin_return_address(0));
}
#endif
