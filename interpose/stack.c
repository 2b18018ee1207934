/* stack.c — unwinding (unwind.h, which falls back to libunwind) and the stack trie.
 *
 * A stack is interned from the outermost frame in: node = intern(parent, ip), so common
 * callers are shared and each node is written to the trace once. Lookups are lock-free
 * (open addressing, a slot's id is published last); only inserting a new node takes a
 * spinlock, and never while unwinding. A per-thread cache maps the hash of a whole stack to
 * its leaf, so a hot call site costs one unwind and one cache probe.
 *
 * libunwind validates the memory it reads by writing a byte of it into a pipe of its own
 * (opened at its first unwind, opened again when the program closed it). A program that
 * dup2's its files over low descriptors would have those bytes written into its file: the
 * pipe2 below puts libunwind's pipe near the top of the descriptor range (own_fd.h). */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "recorder.h"
#include "unwind.h"

/* The table and the nodes grow as stacks are seen (nothing is reserved up front: under
 * `ulimit -v` the program's address space stays the program's). */
#define MIN_TABLE_BITS 14
#define MAX_TABLE_BITS 22
#define MAX_NODES (1u << (MAX_TABLE_BITS - 1)) /* keep the table at most half full */
_Static_assert(MAX_NODES == CMT__MAX_NODES, "shared.h names the same bound");
#define CHUNK_BITS CMT__NODE_CHUNK_BITS /* nodes per mapped chunk */
#define CHUNK_NODES CMT__NODE_CHUNK_NODES
#define CACHE_SLOTS 512
#define MAX_FRAMES CMT_MAX_STACK_DEPTH

struct slot {
    _Atomic uint32_t id; /* 0 = empty; set last */
    uint32_t parent;
    uint64_t ip;
};

/* A generation of the hash table. A grown table replaces it; the old one stays mapped, as a
 * lookup may still be probing it (what it finds there is still true; a miss is re-checked
 * under the insert lock in the current table). */
struct table {
    uint64_t mask;
    struct slot slots[];
};

/* The chunks live in the salvage state file under `record` (shared.c), so nodes not yet
 * written can be salvaged; the hash table is only for lookups and stays private. */
#define chunk cmt__node_chunk

static _Atomic(struct table *) table;
static _Atomic(struct chunk *) chunks[MAX_NODES / CHUNK_NODES + 1]; /* set before node_count */
static _Atomic uint32_t node_count;
static atomic_flag insert_lock = ATOMIC_FLAG_INIT;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int usable;

struct cache_entry {
    uint64_t hash;
    uint32_t leaf;
};
static __thread struct cache_entry cache[CACHE_SLOTS] __attribute__((tls_model("initial-exec")));
static __thread int unwinding __attribute__((tls_model("initial-exec")));
/* The leaf of this thread's last stack and its depth: a walk that returns the previous
 * walk's addresses again (a loop's call site, unwind.h) is that leaf, with no hash. */
static __thread uint32_t last_leaf __attribute__((tls_model("initial-exec")));
static __thread int last_depth __attribute__((tls_model("initial-exec")));

/* pipe2 for the whole process (the shim is preloaded), as libc's; a pipe libunwind opens
 * while this thread unwinds goes high (glibc's own callers use its internal pipe2). */
CMT_EXPORT int pipe2(int fds[2], int flags)
{
    static int (*_Atomic real_pipe2)(int[2], int);
    int (*fn)(int[2], int) = atomic_load(&real_pipe2);
    if (!fn) {
        if (!cmt__real_dlsym)
            cmt__resolve_dl();
        fn = cmt__real_dlsym ? (int (*)(int[2], int))cmt__real_dlsym(RTLD_NEXT, "pipe2") : NULL;
        atomic_store(&real_pipe2, fn);
    }
    if (!fn) {
        errno = ENOSYS;
        return -1;
    }
    if (!unwinding)
        return fn(fds, flags);
    /* moved before they are stored: libunwind's array is shared by threads that may reopen
     * it at once */
    int got[2];
    int rc = fn(got, flags);
    if (rc == 0) {
        fds[0] = cmt__own_fd_move_high(got[0], CMT__UNWIND_FD_TOP);
        fds[1] = cmt__own_fd_move_high(got[1], CMT__UNWIND_FD_TOP);
    }
    return rc;
}

static void *map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static struct table *new_table(unsigned bits)
{
    struct table *t = map_zeroed(sizeof *t + sizeof(struct slot) * ((size_t)1 << bits));
    if (t)
        t->mask = ((uint64_t)1 << bits) - 1;
    return t;
}

/* The unwinder's walks of the loaded objects inside the fork-safe section (shim.h). */
static void dl_enter(void)
{
    cmt__dl_enter();
}

static void dl_leave(void)
{
    cmt__dl_leave();
}

static void init(void)
{
    cmt__unwind_set_loader_guard(dl_enter, dl_leave);
    struct table *t = new_table(MIN_TABLE_BITS);
    atomic_store(&table, t);
    unwinding = 1; /* libunwind initialises itself here: its pipe too */
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    unwinding = 0;
    usable = t != NULL;
}

static inline uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t h = (a ^ 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
    h ^= b + 0x94d049bb133111ebull + (h << 6) + (h >> 2);
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

static void place(struct table *t, uint32_t id, uint32_t parent, uint64_t ip)
{
    for (uint64_t i = mix(parent, ip) & t->mask;; i = (i + 1) & t->mask) {
        struct slot *s = &t->slots[i];
        if (atomic_load_explicit(&s->id, memory_order_relaxed))
            continue;
        s->parent = parent;
        s->ip = ip;
        atomic_store_explicit(&s->id, id, memory_order_release);
        return;
    }
}

/* Under the insert lock: room for node n (its chunk, and a table at most half full after it).
 * @return 0, or -1 when no memory (the stack goes unrecorded). */
static int make_room(uint32_t n)
{
    if (n > MAX_NODES)
        return -1;
    if (!atomic_load_explicit(&chunks[n >> CHUNK_BITS], memory_order_relaxed)) {
        struct chunk *c = cmt__shared_chunk(n >> CHUNK_BITS);
        if (!c)
            c = map_zeroed(sizeof *c);
        if (!c)
            return -1;
        atomic_store_explicit(&chunks[n >> CHUNK_BITS], c, memory_order_release);
    }
    struct table *old = atomic_load_explicit(&table, memory_order_relaxed);
    if ((uint64_t)n <= (old->mask + 1) / 2)
        return 0;
    struct table *t = new_table((unsigned)__builtin_ctzll(old->mask + 1) + 1);
    if (!t)
        return -1;
    for (uint32_t id = 1; id < n; id++) {
        const struct chunk *c = chunks[id >> CHUNK_BITS];
        place(t, id, c->parent[id & (CHUNK_NODES - 1)], c->ip[id & (CHUNK_NODES - 1)]);
    }
    atomic_store_explicit(&table, t, memory_order_release);
    return 0;
}

static uint32_t insert(uint32_t parent, uint64_t ip)
{
    while (atomic_flag_test_and_set_explicit(&insert_lock, memory_order_acquire))
        ;
    uint32_t found = 0;
    struct table *t = atomic_load_explicit(&table, memory_order_relaxed);
    for (uint64_t i = mix(parent, ip) & t->mask;; i = (i + 1) & t->mask) {
        struct slot *s = &t->slots[i];
        uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire);
        if (id && s->parent == parent && s->ip == ip) {
            found = id;
            break;
        }
        if (id)
            continue;
        uint32_t n = atomic_load_explicit(&node_count, memory_order_relaxed) + 1;
        if (make_room(n) != 0)
            break; /* full: this stack goes unrecorded (0) */
        struct chunk *c = chunks[n >> CHUNK_BITS];
        c->parent[n & (CHUNK_NODES - 1)] = parent;
        c->ip[n & (CHUNK_NODES - 1)] = ip;
        place(atomic_load_explicit(&table, memory_order_relaxed), n, parent, ip);
        atomic_store_explicit(&node_count, n, memory_order_release);
        cmt__shared_node_count(n);
        found = n;
        break;
    }
    atomic_flag_clear_explicit(&insert_lock, memory_order_release);
    return found;
}

static uint32_t intern(uint32_t parent, uint64_t ip)
{
    struct table *t = atomic_load_explicit(&table, memory_order_acquire);
    for (uint64_t i = mix(parent, ip) & t->mask;; i = (i + 1) & t->mask) {
        struct slot *s = &t->slots[i];
        uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire);
        if (!id)
            return insert(parent, ip);
        if (s->parent == parent && s->ip == ip)
            return id;
    }
}

/* One frame into a lane: a bijection of h for a fixed ip (xor, odd multiply, xorshift), so
 * stacks that differ in one frame of a lane never meet in it. One multiply, not mix()'s two. */
static inline uint64_t lane_step(uint64_t h, const void *ip)
{
    h = (h ^ (uint64_t)(uintptr_t)ip) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 32);
}

/* The per-thread cache's key of the n frames at ips: four independent lanes (frame f goes to
 * lane f % 4), so the multiply chains overlap, folded together with mix() at the end. */
static uint64_t stack_hash(void *const *ips, int n)
{
    uint64_t a = (uint64_t)n, b = 1, c = 2, d = 3;
    int f = 0;
    for (; f + 3 < n; f += 4) {
        a = lane_step(a, ips[f]);
        b = lane_step(b, ips[f + 1]);
        c = lane_step(c, ips[f + 2]);
        d = lane_step(d, ips[f + 3]);
    }
    for (; f < n; f++)
        a = lane_step(a, ips[f]);
    return mix(mix(a, b), mix(c, d));
}

uint32_t cmt__stack_capture(int max_depth)
{
    if (max_depth <= 0)
        return 0;
    pthread_once(&init_once, init);
    if (!usable)
        return 0;
    void *ips[MAX_FRAMES];
    int want = max_depth + 8 < MAX_FRAMES ? max_depth + 8 : MAX_FRAMES;
    unwinding = 1;
    int again;
    int n = cmt__unwind_backtrace(ips, want, &again);
    unwinding = 0;
    if (again && last_leaf && last_depth == max_depth)
        return last_leaf;
    last_leaf = 0;
    last_depth = max_depth;
    int skip = 0;
    while (skip < n && cmt__is_own_address((uintptr_t)ips[skip]))
        skip++;
    if (n - skip > max_depth)
        n = skip + max_depth;
    if (n <= skip)
        return 0;
    uint64_t h = stack_hash(ips + skip, n - skip);
    struct cache_entry *c = &cache[h & (CACHE_SLOTS - 1)];
    if (c->hash == h && c->leaf)
        return last_leaf = c->leaf;
    uint32_t node = 0;
    for (int i = n - 1; i >= skip; i--) {
        node = intern(node, (uint64_t)ips[i]);
        if (!node)
            return 0;
    }
    c->hash = h;
    c->leaf = node;
    return last_leaf = node;
}

uint32_t cmt__stack_node_count(void)
{
    return atomic_load_explicit(&node_count, memory_order_acquire);
}

int cmt__stack_node_get(uint32_t id, uint32_t *parent, uint64_t *ip)
{
    if (id == 0 || id > cmt__stack_node_count())
        return -1;
    const struct chunk *c = atomic_load_explicit(&chunks[id >> CHUNK_BITS], memory_order_acquire);
    *parent = c->parent[id & (CHUNK_NODES - 1)];
    *ip = c->ip[id & (CHUNK_NODES - 1)];
    return 0;
}

void cmt__stack_atfork_prepare(void)
{
    while (atomic_flag_test_and_set_explicit(&insert_lock, memory_order_acquire))
        ;
}

void cmt__stack_atfork_release(void)
{
    atomic_flag_clear_explicit(&insert_lock, memory_order_release);
}

void *cmt__stack_chunk(uint32_t k)
{
    return k < MAX_NODES / CHUNK_NODES + 1 ? atomic_load(&chunks[k]) : NULL;
}

void cmt__stack_disable(void)
{
    usable = 0;
}
