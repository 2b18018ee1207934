/* shared.c — the state file `cumemtrace record` salvages (shared.h), the shim's side.
 *
 * Created when a trace starts (never on the hot path): CUMEMTRACE_SALVAGE_DIR/trace-PID-N,
 * mode 0600, O_EXCL. Every region is allocated in the file with fallocate before it is
 * mapped, so touching a page never raises SIGBUS on a full file system; a region that cannot
 * be had falls back to private memory (those entries are not salvageable, the program runs on
 * unchanged). A finished trace removes its file. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "recorder.h"

struct cmt__shared_header *cmt__shared;
static struct cmt__own_fd shared_fd = {.fd = -1}; /* checked before each use (own_fd.h) */
static int shared_broken; /* it failed once: this process traces without salvage */
static char shared_path[4096];
static atomic_flag grow_lock = ATOMIC_FLAG_INIT;
struct cmt__device_info cmt__private_devices[CMT_MAX_DEVICES];

/* Room for [off, off + len) in the file, within RLIMIT_FSIZE (beyond it ftruncate would
 * send the program SIGXFSZ). @return 0 or -1. */
static int reserve(uint64_t off, uint64_t len)
{
    struct rlimit fsize;
    if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
        off + len > fsize.rlim_cur)
        return -1;
    int fd = cmt__own_fd_get(&shared_fd);
    return fd >= 0 && posix_fallocate(fd, (off_t)off, (off_t)len) == 0 ? 0 : -1;
}

static void *map_at(void *addr, uint64_t len, uint64_t off)
{
    int fd = cmt__own_fd_get(&shared_fd);
    void *p = fd < 0 ? MAP_FAILED
                     : mmap(addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | (addr ? MAP_FIXED : 0),
                            fd, (off_t)off);
    return p == MAP_FAILED ? NULL : p;
}

/* Moves a live region into the file: its bytes are copied there, then the file's pages are
 * mapped over it at the same address (the pointers to it stay valid). */
static int adopt(void *addr, uint64_t len, uint64_t copy, uint64_t off)
{
    if (reserve(off, len) || pwrite(shared_fd.fd, addr, copy, (off_t)off) != (ssize_t)copy)
        return -1;
    return map_at(addr, len, off) ? 0 : -1;
}

static void give_up(const char *why)
{
    cmt__warn("%s: %s; events of a killed process may be lost", shared_path, why);
    cmt__own_fd_close(&shared_fd);
    unlink(shared_path);
    shared_broken = 1;
    cmt__shared = NULL;
    cmt__rec.devices = cmt__private_devices;
}

int cmt__shared_start(void)
{
    const char *dir = getenv("CUMEMTRACE_SALVAGE_DIR");
    if (!dir || !*dir || shared_broken)
        return 0;
    if (cmt__shared) { /* the file of a trace that ended (an exec failed) */
        munmap(cmt__shared, CMT__SHARED_NODES_AT);
        cmt__shared = NULL;
        cmt__shared_close();
    }
    int fd = -1;
    for (unsigned n = 0; fd < 0 && n < 1000; n++) {
        snprintf(shared_path, sizeof shared_path, "%s/trace-%d-%u", dir, (int)getpid(), n);
        fd = open(shared_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0 || cmt__own_fd_take(&shared_fd, fd, shared_path, O_RDWR) != 0) {
        give_up(strerror(errno));
        return -1;
    }
    struct cmt__shared_header *h = NULL;
    if (reserve(0, CMT__SHARED_NODES_AT) || !(h = map_at(NULL, CMT__SHARED_NODES_AT, 0))) {
        give_up("cannot map the salvage state");
        return -1;
    }
    memcpy(h->magic, CMT__SHARED_MAGIC, sizeof h->magic);
    h->header_bytes = sizeof *h;
    h->ring_entries = CMT__SHARED_RING_SIZE;
    h->pid = (int32_t)getpid();
    h->use_tsc = cmt__rec.use_tsc;
    /* what this process already has (a forked child's inherited stacks, the rings of a
     * process whose exec failed) moves into the new file */
    for (uint32_t k = 0; k < CMT__NODE_CHUNKS; k++) {
        void *c = cmt__stack_chunk(k);
        if (c && adopt(c, CMT__SHARED_CHUNK_BYTES, sizeof(struct cmt__node_chunk),
                       CMT__SHARED_NODES_AT + (uint64_t)k * CMT__SHARED_CHUNK_BYTES)) {
            munmap(h, CMT__SHARED_NODES_AT);
            give_up("cannot move the stack nodes");
            return -1;
        }
    }
    atomic_store(&h->nodes, cmt__stack_node_count());
    uint32_t rings = 0;
    for (struct cmt__thread *t = atomic_load(&cmt__rec.threads); t; t = t->next, rings++)
        if (adopt(t, CMT__RING_BYTES(t->mask + 1), sizeof *t,
                  CMT__SHARED_RINGS_AT +
                      (uint64_t)rings * CMT__RING_BYTES(CMT__SHARED_RING_SIZE))) {
            munmap(h, CMT__SHARED_NODES_AT);
            give_up("cannot move the rings");
            return -1;
        }
    atomic_store(&h->rings, rings);
    cmt__rec.devices = (struct cmt__device_info *)((char *)h + CMT__SHARED_DEVICES_AT);
    memcpy(cmt__rec.devices, cmt__private_devices, sizeof cmt__private_devices);
    cmt__shared = h;
    for (uint32_t k = 0; k < CMT__MAX_ALLOCATORS; k++) /* those declared before (a fork) */
        cmt__shared_allocator(k);
    return 0;
}

void cmt__shared_allocator(uint32_t slot)
{
    struct cmt__shared_header *h = cmt__shared;
    if (!h || slot >= CMT__MAX_ALLOCATORS ||
        !atomic_load_explicit(&cmt__allocators[slot].ready, memory_order_acquire))
        return;
    const struct cmt__allocator_decl *d = &cmt__allocators[slot];
    struct cmt__allocator_decl *to = &h->allocators[slot];
    uint64_t start = cmt__rec.start_ticks;
    to->dev = d->dev;
    to->t_ticks = d->t_ticks > start ? d->t_ticks - start : 0;
    memcpy(to->name, d->name, sizeof to->name);
    memcpy(to->version, d->version, sizeof to->version);
    memcpy(to->conf, d->conf, sizeof to->conf);
    atomic_store_explicit(&to->ready, 1, memory_order_release);
}

struct cmt__thread *cmt__shared_ring(void)
{
    struct cmt__shared_header *h = cmt__shared;
    if (!h)
        return NULL;
    uint64_t slot = CMT__RING_BYTES(CMT__SHARED_RING_SIZE);
    uint32_t entries = cmt__ring_entries(CMT__SHARED_RING_SIZE);
    uint64_t bytes = CMT__RING_BYTES(entries); /* (the rest of its slot stays a hole) */
    while (atomic_flag_test_and_set_explicit(&grow_lock, memory_order_acquire))
        sched_yield(); /* its holder may be descheduled in a syscall (8 threads, 2 cores) */
    uint32_t k = atomic_load(&h->rings);
    uint64_t off = CMT__SHARED_RINGS_AT + (uint64_t)k * slot;
    struct cmt__thread *t = reserve(off, bytes) ? NULL : map_at(NULL, bytes, off);
    if (t) {
        t->mask = entries - 1;
        atomic_store(&h->rings, k + 1);
    }
    atomic_flag_clear_explicit(&grow_lock, memory_order_release);
    return t;
}

void *cmt__shared_chunk(uint32_t k)
{
    if (!cmt__shared || k >= CMT__NODE_CHUNKS)
        return NULL;
    uint64_t off = CMT__SHARED_NODES_AT + (uint64_t)k * CMT__SHARED_CHUNK_BYTES;
    return reserve(off, CMT__SHARED_CHUNK_BYTES) ? NULL
                                                 : map_at(NULL, CMT__SHARED_CHUNK_BYTES, off);
}

void cmt__shared_node_count(uint32_t n)
{
    if (cmt__shared)
        atomic_store_explicit(&cmt__shared->nodes, n, memory_order_release);
}

void cmt__shared_trace(const char *path, int use_tsc)
{
    if (!cmt__shared)
        return;
    cmt__shared->use_tsc = use_tsc;
    snprintf(cmt__shared->trace, sizeof cmt__shared->trace, "%s", path);
}

void cmt__shared_publish(const struct cmt__on_disk *d)
{
    struct cmt__shared_header *h = cmt__shared;
    if (!h)
        return;
    uint64_t g = atomic_load_explicit(&h->generation, memory_order_relaxed) + 1;
    h->on_disk[g & 1] = *d;
    atomic_store_explicit(&h->generation, g, memory_order_release);
}

void cmt__shared_done(void)
{
    if (!cmt__shared)
        return;
    atomic_store(&cmt__shared->done, 1);
    unlink(shared_path);
}

void cmt__shared_forget(void)
{
    /* A forked child: the mappings are the parent's, still in use there. The child drops
     * its rings (their owners are gone) and its device table, and takes private copies of
     * the stack nodes (its own first trace moves them into a file of its own). */
    if (!cmt__shared)
        return;
    for (uint32_t k = 0; k < CMT__NODE_CHUNKS; k++) {
        void *c = cmt__stack_chunk(k), *copy;
        if (!c)
            continue;
        copy = mmap(NULL, CMT__SHARED_CHUNK_BYTES, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (copy == MAP_FAILED || (memcpy(copy, c, CMT__SHARED_CHUNK_BYTES),
                                   mremap(copy, CMT__SHARED_CHUNK_BYTES, CMT__SHARED_CHUNK_BYTES,
                                          MREMAP_MAYMOVE | MREMAP_FIXED, c) == MAP_FAILED))
            cmt__stack_disable(); /* never write to the parent's nodes */
    }
    for (struct cmt__thread *t = atomic_load(&cmt__rec.threads), *next; t; t = next) {
        next = t->next;
        munmap(t, CMT__RING_BYTES(t->mask + 1));
    }
    atomic_store(&cmt__rec.threads, NULL);
    munmap(cmt__shared, CMT__SHARED_NODES_AT);
    cmt__shared = NULL;
    cmt__rec.devices = cmt__private_devices;
    cmt__own_fd_close(&shared_fd);
}

void cmt__shared_close(void)
{
    cmt__own_fd_close(&shared_fd);
}

void cmt__shared_wait_open(void)
{
    struct timespec nap = {0, 200000};
    for (int i = 0; i < 10000 && cmt__shared && atomic_load(&cmt__rec.state) == CMT__RUNNING &&
                    atomic_load(&cmt__shared->generation) < 2;
         i++)
        nanosleep(&nap, NULL);
}

/* (recorder.h) Prefaults the pages of t's ring that its owner writes next, so the owner's
 * stores seldom fault (a page of the state file costs a fault at first touch, and again after
 * writeback cleaned it). The contents are left alone. The window past `head` is four times what
 * the owner queued since the writer's last look, at least an eighth of the ring and at most
 * half, topped up once less than three quarters of it is left: a thread that queues more than
 * an eighth of its ring between two looks (one thread alone does in 10 ms) would otherwise
 * outrun it and take the faults itself, while a slow one keeps few pages ahead. */
void cmt__shared_populate_ahead(struct cmt__thread *t, uint64_t head)
{
#ifdef MADV_POPULATE_WRITE
    static int unsupported; /* an older kernel: EINVAL once, then never again */
    uint64_t entries = (uint64_t)t->mask + 1, least = entries / 8, most = entries / 2;
    uint64_t moved = head - t->populate_head;
    t->populate_head = head;
    if (unsupported || least < 64)
        return;
    uint64_t ahead = moved * 4 < least ? least : moved * 4 > most ? most : moved * 4;
    if (t->populated < head || t->populated > head + most)
        t->populated = head;
    if (t->populated >= head + ahead / 4 * 3)
        return;
    uint64_t from = t->populated, to = head + ahead;
    uintptr_t page = CMT__SHARED_PAGE;
    while (from < to && !unsupported) { /* in at most two pieces: the ring wraps */
        uint64_t end = from + (entries - (from & t->mask));
        end = end < to ? end : to;
        uintptr_t lo = (uintptr_t)&t->ring[from & t->mask] & ~(page - 1);
        uintptr_t hi = (uintptr_t)&t->ring[((end - 1) & t->mask) + 1];
        hi = (hi + page - 1) & ~(page - 1);
        if (madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
            unsupported = 1;
        from = end;
    }
    t->populated = to;
#else
    (void)t;
    (void)head;
#endif
}
