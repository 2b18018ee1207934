/* salvage.c — completes a dead process's trace from its state file (salvage.h). */
#include "salvage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmt_error.h"
#include "emit.h"
#include "cmt_grow.h"

struct state {
    const uint8_t *map;
    size_t size;
    const struct cmt__shared_header *h;
    struct cmt__on_disk disk;
    struct cmt__queued *entries;
    size_t count;
    uint32_t *named; /* tids with a THREAD record */
    size_t named_count, named_cap;
    cmt_writer *w;
};

static const struct cmt__thread *ring_at(const struct state *s, uint32_t k)
{
    uint64_t bytes = CMT__RING_BYTES(s->h->ring_entries);
    uint64_t off = CMT__SHARED_RINGS_AT + (uint64_t)k * bytes;
    if (off + sizeof(struct cmt__thread) > s->size)
        return NULL;
    const struct cmt__thread *t = (const void *)(s->map + off);
    uint64_t entries = (uint64_t)t->mask + 1;
    if (entries > s->h->ring_entries || (entries & (entries - 1)) ||
        off + CMT__RING_BYTES(entries) > s->size)
        return NULL;
    return t;
}

/* Every entry a ring holds that the trace lacks. @return 0 or CMT_ENOMEM. */
static int collect(struct state *s)
{
    size_t cap = 0;
    for (uint32_t k = 0; k < s->h->rings; k++) {
        const struct cmt__thread *t = ring_at(s, k);
        if (!t)
            continue;
        uint64_t head = t->head, from = t->released;
        if (head - from > (uint64_t)t->mask + 1) /* never more than a ring holds */
            from = head - t->mask - 1;
        for (uint64_t i = from; i < head; i++) {
            const struct cmt__queued *e = &t->ring[i & t->mask];
            if (cmt__queued_order(e) < s->disk.order)
                continue;
            if (CMT_GROW(s->entries, cap, s->count + 1, 4096) != 0)
                return CMT_ENOMEM;
            s->entries[s->count++] = *e;
        }
    }
    cmt__queued_sort(s->entries, s->count);
    return 0;
}

static const char *ring_name(const struct state *s, uint32_t tid)
{
    for (uint32_t k = 0; k < s->h->rings; k++) {
        const struct cmt__thread *t = ring_at(s, k);
        if (t && t->tid == tid)
            return t->name[sizeof t->name - 1] ? "" : t->name;
    }
    return "";
}

/* A THREAD record for a tid the trace does not name yet (emit.h). */
static int name_thread(void *ctx, uint32_t tid)
{
    struct state *s = ctx;
    uint32_t on_disk = s->disk.tids < CMT__SHARED_TIDS ? s->disk.tids : CMT__SHARED_TIDS;
    for (uint32_t i = 0; i < on_disk; i++)
        if (s->h->tid[i] == tid)
            return 0;
    for (size_t i = 0; i < s->named_count; i++)
        if (s->named[i] == tid)
            return 0;
    if (CMT_GROW(s->named, s->named_cap, s->named_count + 1, 64) != 0)
        return CMT_ENOMEM;
    s->named[s->named_count++] = tid;
    return cmt_writer_thread(s->w, &(struct cmt_thread){tid, ring_name(s, tid)});
}

static int write_nodes(struct state *s, uint32_t nodes)
{
    int rc = 0;
    for (uint32_t id = s->disk.nodes + 1; !rc && id <= nodes; id++) {
        uint64_t off = CMT__SHARED_NODES_AT +
                       (uint64_t)(id >> CMT__NODE_CHUNK_BITS) * CMT__SHARED_CHUNK_BYTES;
        if (off + sizeof(struct cmt__node_chunk) > s->size)
            return CMT_ECORRUPT;
        const struct cmt__node_chunk *c = (const void *)(s->map + off);
        uint32_t i = id & (CMT__NODE_CHUNK_NODES - 1);
        rc = cmt_writer_stack_node(
            s->w, &(struct cmt_stack_node){.id = id, .parent = c->parent[i], .ip = c->ip[i]});
    }
    return rc;
}

/* A declaration whose strings end inside their fields (the file may be damaged). */
static int whole_strings(const struct cmt__allocator_decl *d)
{
    return memchr(d->name, 0, sizeof d->name) && memchr(d->version, 0, sizeof d->version) &&
           memchr(d->conf, 0, sizeof d->conf);
}

/* Appends the missing chunk to the trace. @return 0 or a CMT_E code. */
static int append(struct state *s, uint32_t nodes, struct cmt_salvage_result *out,
                  struct cmt_err *err)
{
    const char *path = s->h->trace;
    int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        cmt_err_set(err, CMT_EIO, "cannot complete %s: %s", path,
                    fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return CMT_EIO;
    }
    /* a chunk cut by the death goes: its entries are among those appended */
    if ((uint64_t)st.st_size < s->disk.offset || ftruncate(fd, (off_t)s->disk.offset) != 0 ||
        lseek(fd, (off_t)s->disk.offset, SEEK_SET) < 0) {
        cmt_err_set(err, CMT_EIO, "cannot complete %s: %s", path,
                    (uint64_t)st.st_size < s->disk.offset ? "it is shorter than the shim wrote"
                                                          : strerror(errno));
        close(fd);
        return CMT_EIO;
    }
    struct cmt_writer_options options = {.level = 1, .append = s->disk.offset > 0};
    int rc = cmt_writer_create(&s->w, cmt_fd_sink, &fd, &options);
    char note[256];
    snprintf(note, sizeof note,
             "the process died before writing its last %zu events and %u stack nodes; "
             "cumemtrace record recovered them from the shim's shared buffers",
             s->count, nodes - s->disk.nodes);
    if (!rc)
        rc = cmt_writer_note(s->w, &(struct cmt_note){CMT_NOTE_INFO, note});
    if (!rc)
        rc = write_nodes(s, nodes);
    struct cmt__emitter em = {.w = s->w,
                              .devices = (const void *)(s->map + CMT__SHARED_DEVICES_AT),
                              .use_tsc = s->h->use_tsc,
                              .ns_per_tick = s->disk.ns_per_tick,
                              .last_t = s->disk.last_t,
                              .events = s->disk.events,
                              .thread = name_thread,
                              .thread_ctx = s};
    for (uint32_t k = s->disk.allocators; !rc && k < CMT__MAX_ALLOCATORS; k++)
        if (atomic_load(&s->h->allocators[k].ready) && whole_strings(&s->h->allocators[k]))
            rc = cmt__emit_allocator(&em, k + 1, &s->h->allocators[k], s->h->allocators[k].t_ticks);
    for (size_t i = 0; !rc && i < s->count; i++)
        rc = cmt__emit_entry(&em, &s->entries[i]);
    if (!rc)
        rc = cmt_writer_flush(s->w);
    cmt_writer_destroy(s->w);
    s->w = NULL;
    if (close(fd) != 0 && !rc)
        rc = CMT_ESINK;
    if (rc)
        return cmt_err_set(err, rc, "cannot complete %s: %s", path, cmt_strerror(rc));
    snprintf(out->trace, sizeof out->trace, "%s", path);
    out->events = s->count;
    out->nodes = nodes - s->disk.nodes;
    return 0;
}

/* Checks the header. @return 0, or CMT_ECORRUPT. */
static int check(struct state *s)
{
    const struct cmt__shared_header *h = s->h;
    uint32_t e = h->ring_entries;
    if (s->size < CMT__SHARED_NODES_AT || memcmp(h->magic, CMT__SHARED_MAGIC, sizeof h->magic) ||
        h->header_bytes != sizeof *h || !e || (e & (e - 1)) || e > (1u << 24) ||
        memchr(h->trace, 0, sizeof h->trace) == NULL)
        return CMT_ECORRUPT;
    s->disk = h->on_disk[h->generation & 1];
    return 0;
}

int cmt_salvage_file(const char *path, struct cmt_salvage_result *out, struct cmt_err *err)
{
    memset(out, 0, sizeof *out);
    struct state s = {0};
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        cmt_err_set(err, CMT_EIO, "cannot read %s: %s", path,
                    fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return CMT_EIO;
    }
    s.size = (size_t)st.st_size;
    void *map = s.size >= sizeof *s.h ? mmap(NULL, s.size, PROT_READ, MAP_SHARED, fd, 0)
                                      : MAP_FAILED;
    close(fd);
    if (map == MAP_FAILED)
        return cmt_err_set(err, CMT_ECORRUPT, "%s is not a salvage state file", path);
    s.map = map;
    s.h = map;
    int rc = check(&s);
    if (rc)
        cmt_err_set(err, rc, "%s is not a salvage state file", path);
    uint32_t nodes = rc ? 0 : s.h->nodes;
    if (nodes > CMT__MAX_NODES)
        nodes = CMT__MAX_NODES;
    /* a process that outlived record's child (a daemon) still writes its trace itself */
    int alive = !rc && s.h->pid > 0 && (kill(s.h->pid, 0) == 0 || errno == EPERM);
    if (!rc && !alive && !s.h->done && s.h->trace[0] && s.h->generation > 0) {
        rc = collect(&s);
        if (rc)
            cmt_err_set(err, rc, "salvaging %s: %s", path, cmt_strerror(rc));
        else if (s.count || nodes > s.disk.nodes)
            rc = append(&s, nodes, out, err);
    }
    munmap(map, s.size);
    free(s.entries);
    free(s.named);
    unlink(path);
    return rc;
}

int cmt_salvage_dir(const char *dir,
                    void (*report)(void *ctx, const struct cmt_salvage_result *r, const char *err),
                    void *ctx)
{
    DIR *d = opendir(dir);
    int failures = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (strncmp(de->d_name, "trace-", 6))
            continue;
        char path[4096];
        struct cmt_err err = {0};
        struct cmt_salvage_result r;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        int rc = cmt_salvage_file(path, &r, &err);
        failures += rc != 0;
        if (report && (rc || r.trace[0]))
            report(ctx, rc ? NULL : &r, rc ? cmt_err_message(&err) : "");
    }
    if (d)
        closedir(d);
    return failures;
}
