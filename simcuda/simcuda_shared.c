/* simcuda_shared.c — SIMCUDA_SHARED=NAME: the devices' memory shared across processes.
 *
 * Simulated, like the rest of simcuda. Processes that set the same NAME see one set of
 * devices: each publishes what it holds per device (pages in use and its context overhead) in
 * a slot of its own in the file /dev/shm/simcuda-NAME, and a device's free memory is its
 * capacity less what this process holds and what every other live process's slot says.
 * A POSIX record lock on the file, taken with simcuda's mutex, makes a check of free memory and
 * the allocation that follows one step across processes; the kernel drops it when a process
 * dies, and a dead process's slot (its pid gone) counts for nothing and is reused. */
#include "simcuda_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHARED_MAGIC 0x53494d53u /* "SMIS" */
#define SHARED_VERSION 1u
#define SHARED_SLOTS 256 /* processes at once */

struct shared_slot {
    int32_t pid; /* 0: free */
    uint32_t pad;
    uint64_t held[SIMCUDA__MAX_DEVICES]; /* bytes */
};

struct shared_file {
    uint32_t magic, version;
    uint32_t device_count, pad;
    uint64_t capacity[SIMCUDA__MAX_DEVICES]; /* the first process's SIMCUDA_MEMORY */
    struct shared_slot slots[SHARED_SLOTS];
};

static int shared_fd = -1;
static struct shared_file *shared;
static struct shared_slot *mine;
static pid_t mine_pid;

static void file_lock(short type)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    while (fcntl(shared_fd, F_SETLKW, &fl) != 0 && errno == EINTR)
        ;
}

void simcuda__shared_lock(void)
{
    if (shared)
        file_lock(F_WRLCK);
}

void simcuda__shared_unlock(void)
{
    if (shared)
        file_lock(F_UNLCK);
}

static int slot_alive(const struct shared_slot *s)
{
    int32_t pid = __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE);
    return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH);
}

/* File lock held. A free slot, or a dead process's. @return it, or NULL when all are taken. */
static struct shared_slot *claim_slot(void)
{
    for (int i = 0; i < SHARED_SLOTS; i++) {
        struct shared_slot *s = &shared->slots[i];
        if (s->pid == 0 || !slot_alive(s)) {
            memset(s->held, 0, sizeof s->held);
            __atomic_store_n(&s->pid, (int32_t)getpid(), __ATOMIC_RELEASE);
            mine_pid = getpid();
            return s;
        }
    }
    return NULL;
}

static void give_up(const char *name, const char *why)
{
    fprintf(stderr, "simcuda: SIMCUDA_SHARED=\"%s\": %s; the devices are not shared\n", name, why);
    if (shared)
        munmap(shared, sizeof *shared);
    if (shared_fd >= 0)
        close(shared_fd);
    shared = NULL;
    shared_fd = -1;
}

void simcuda__shared_setup(void)
{
    const char *name = getenv("SIMCUDA_SHARED");
    if (!name || !*name)
        return;
    char path[96];
    if (strlen(name) > 64 || strchr(name, '/')) {
        give_up(name, "expected a name of at most 64 characters without '/'");
        return;
    }
    snprintf(path, sizeof path, "/simcuda-%s", name);
    shared_fd = shm_open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (shared_fd < 0 || ftruncate(shared_fd, sizeof *shared) != 0) {
        give_up(name, strerror(errno));
        return;
    }
    void *m = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED, shared_fd, 0);
    if (m == MAP_FAILED) {
        give_up(name, strerror(errno));
        return;
    }
    shared = m;
    file_lock(F_WRLCK);
    struct simcuda__state *st = &simcuda__state;
    if (shared->magic != SHARED_MAGIC) { /* the first process: its devices are the file's */
        memset(shared, 0, sizeof *shared);
        shared->version = SHARED_VERSION;
        shared->device_count = (uint32_t)st->device_count;
        for (int d = 0; d < st->device_count; d++)
            shared->capacity[d] = st->devices[d].capacity;
        shared->magic = SHARED_MAGIC;
    }
    const char *why = shared->version != SHARED_VERSION ? "the file has another layout" : NULL;
    if (!why && shared->device_count != (uint32_t)st->device_count)
        why = "SIMCUDA_DEVICES differs from the first process's";
    for (int d = 0; !why && d < st->device_count; d++)
        if (shared->capacity[d] != st->devices[d].capacity)
            why = "SIMCUDA_MEMORY differs from the first process's";
    if (!why && !(mine = claim_slot()))
        why = "every process slot is taken";
    file_lock(F_UNLCK);
    if (why)
        give_up(name, why);
}

uint64_t simcuda__shared_others(int device)
{
    if (!shared)
        return 0;
    uint64_t sum = 0;
    for (int i = 0; i < SHARED_SLOTS; i++) {
        const struct shared_slot *s = &shared->slots[i];
        if (s != mine && (mine || s->pid != getppid()) && slot_alive(s))
            sum += __atomic_load_n(&s->held[device], __ATOMIC_RELAXED);
    }
    return sum;
}

void simcuda__shared_publish(void)
{
    if (!shared)
        return;
    if (mine_pid != getpid()) /* a forked child holds a copy of its parent's books, not memory
                                 of its own (a real driver refuses a forked child too) */
        mine = NULL;
    if (!mine)
        return;
    for (int d = 0; d < simcuda__state.device_count; d++) {
        const struct simcuda__device *dev = &simcuda__state.devices[d];
        uint64_t held = dev->pages_in_use * SIMCUDA__PAGE_SIZE +
                        (dev->contexts_alive ? simcuda__state.context_overhead : 0);
        __atomic_store_n(&mine->held[d], held, __ATOMIC_RELAXED);
    }
}
