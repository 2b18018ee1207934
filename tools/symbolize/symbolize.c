/* symbolize.c — reads a trace, resolves its unsymbolized stack nodes, appends the answers. */
#include "symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmt_error.h"
#include "reader.h"
#include "symbolize_internal.h"
#include "writer.h"

/* Interned text → STRING id: the file's strings plus the ones this run adds. */
struct string_slot {
    const char *text; /* NULL = empty slot */
    uint32_t id;
    int owned;
};

/* Return address → what it resolved to (the same call site appears under many callers). */
struct ip_slot {
    uint64_t ip;
    int used;
    struct cmt_symbol sym; /* node unused; function/file 0 = unknown */
};

struct run {
    const char *path;
    cmt_reader *r;
    cmt__module_set *modules;
    struct string_slot *strings;
    size_t string_cap, string_used;
    uint32_t next_string_id;
    struct ip_slot *ips;
    size_t ip_cap, ip_used;
    off_t file_size; /* size when read: appending refuses a file that changed since */
    int fd;          /* -1 until the first record is appended */
    cmt_writer *w;
    struct cmt_symbolize_stats *stats;
    struct cmt_err *err;
};

/* The message names the file first: "PATH: what went wrong". */
static int fail(struct run *run, int code, const char *fmt, ...)
{
    if (!run->err)
        return code;
    char what[CMT_ERR_TEXT];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return cmt_err_set(run->err, code, "%s: %s", run->path, what);
}

static uint64_t hash_bytes(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static uint64_t hash_ip(uint64_t ip)
{
    ip ^= ip >> 33;
    ip *= 0xff51afd7ed558ccdull;
    return ip ^ (ip >> 33);
}

/* Open-addressing tables grow at half full; capacities are powers of two. */
static int grow_strings(struct run *run)
{
    size_t cap = run->string_cap ? run->string_cap * 2 : 1024;
    struct string_slot *t = calloc(cap, sizeof *t);
    if (!t)
        return CMT_ENOMEM;
    for (size_t i = 0; i < run->string_cap; i++) {
        struct string_slot *s = &run->strings[i];
        if (!s->text)
            continue;
        size_t j = hash_bytes(s->text) & (cap - 1);
        while (t[j].text)
            j = (j + 1) & (cap - 1);
        t[j] = *s;
    }
    free(run->strings);
    run->strings = t;
    run->string_cap = cap;
    return 0;
}

/* @return the slot holding `text`, or the empty slot where it belongs; NULL when out of memory. */
static struct string_slot *string_slot(struct run *run, const char *text)
{
    if ((run->string_used + 1) * 2 > run->string_cap && grow_strings(run) != 0)
        return NULL;
    size_t j = hash_bytes(text) & (run->string_cap - 1);
    while (run->strings[j].text && strcmp(run->strings[j].text, text) != 0)
        j = (j + 1) & (run->string_cap - 1);
    return &run->strings[j];
}

/* Seeds the table with the file's strings so a name already there is not written again. */
static int seed_strings(struct run *run)
{
    uint32_t n = cmt_reader_string_count(run->r);
    for (uint32_t id = 1; id <= n; id++) {
        const char *text = cmt_reader_string(run->r, id);
        if (!text)
            continue;
        struct string_slot *s = string_slot(run, text);
        if (!s)
            return fail(run, CMT_ENOMEM, "out of memory");
        if (!s->text) {
            *s = (struct string_slot){text, id, 0};
            run->string_used++;
        }
    }
    run->next_string_id = n + 1;
    return 0;
}

/* Opens the file for appending on the first record: a run that adds nothing never writes. */
static int ensure_writer(struct run *run)
{
    struct stat st;
    if (run->w)
        return 0;
    int fd = open(run->path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0)
        return fail(run, CMT_EIO, "cannot append: %s", strerror(errno));
    if (fstat(fd, &st) != 0 || st.st_size != run->file_size) {
        close(fd);
        return fail(run, CMT_EIO, "file changed while it was being symbolized; not modified");
    }
    run->fd = fd; /* from here on, a failure cuts the file back to file_size */
    struct cmt_writer_options opt = {.append = 1};
    int rc = cmt_writer_create(&run->w, cmt_fd_sink, &run->fd, &opt);
    return rc ? fail(run, rc, "cannot append: %s", cmt_strerror(rc)) : 0;
}

/* @return the STRING id for `text` (0 for NULL), appending a STRING record when new;
 * a negative code on failure. */
static int64_t intern(struct run *run, const char *text)
{
    if (!text || !*text)
        return 0;
    struct string_slot *s = string_slot(run, text);
    if (!s)
        return fail(run, CMT_ENOMEM, "out of memory");
    if (s->text)
        return s->id;
    int rc = ensure_writer(run);
    if (rc)
        return rc;
    char *copy = strdup(text);
    if (!copy)
        return fail(run, CMT_ENOMEM, "out of memory");
    rc = cmt_writer_string(run->w, run->next_string_id, copy);
    if (rc) {
        free(copy);
        return fail(run, rc, "cannot append: %s", cmt_strerror(rc));
    }
    *s = (struct string_slot){copy, run->next_string_id++, 1};
    run->string_used++;
    if (run->stats)
        run->stats->strings_added++;
    return s->id;
}

static struct ip_slot *ip_slot(struct run *run, uint64_t ip)
{
    if ((run->ip_used + 1) * 2 > run->ip_cap) {
        size_t cap = run->ip_cap ? run->ip_cap * 2 : 1024;
        struct ip_slot *t = calloc(cap, sizeof *t);
        if (!t)
            return NULL;
        for (size_t i = 0; i < run->ip_cap; i++) {
            if (!run->ips[i].used)
                continue;
            size_t j = hash_ip(run->ips[i].ip) & (cap - 1);
            while (t[j].used)
                j = (j + 1) & (cap - 1);
            t[j] = run->ips[i];
        }
        free(run->ips);
        run->ips = t;
        run->ip_cap = cap;
    }
    size_t j = hash_ip(ip) & (run->ip_cap - 1);
    while (run->ips[j].used && run->ips[j].ip != ip)
        j = (j + 1) & (run->ip_cap - 1);
    return &run->ips[j];
}

/* Resolves `ip` once; later nodes with the same ip reuse the answer. */
static int resolve_ip(struct run *run, uint64_t ip, const struct cmt_symbol **out)
{
    struct ip_slot *slot = ip_slot(run, ip);
    if (!slot)
        return fail(run, CMT_ENOMEM, "out of memory");
    *out = &slot->sym;
    if (slot->used)
        return 0;
    slot->used = 1;
    slot->ip = ip;
    run->ip_used++;
    memset(&slot->sym, 0, sizeof slot->sym);
    const struct cmt_module *m = cmt_reader_module_at(run->r, ip);
    if (!m) {
        if (run->stats)
            run->stats->outside_modules++;
        return 0;
    }
    struct cmt__frame_info info;
    if (cmt__module_lookup(run->modules, m, ip, &info) != CMT__MODULE_OK)
        return 0;
    slot->sym.module = m->id;
    int64_t fn = intern(run, info.function);
    int64_t file = fn < 0 ? 0 : intern(run, info.file);
    if (fn < 0 || file < 0)
        return (int)(fn < 0 ? fn : file);
    slot->sym.function = (uint32_t)fn;
    slot->sym.file = (uint32_t)file;
    slot->sym.line = file ? info.line : 0;
    return 0;
}

static int symbolize_nodes(struct run *run)
{
    uint32_t max = cmt_reader_stack_node_count(run->r);
    for (uint32_t id = 1; id <= max; id++) {
        struct cmt_stack_node node;
        if (cmt_reader_stack_node(run->r, id, &node) != 0 || cmt_reader_symbol(run->r, id))
            continue;
        if (run->stats)
            run->stats->nodes++;
        const struct cmt_symbol *found = NULL;
        int rc = resolve_ip(run, node.ip, &found);
        if (rc)
            return rc;
        if (!found->function && !found->file)
            continue; /* no record: a later run with the files installed may name it */
        struct cmt_symbol sym = *found;
        sym.node = id;
        rc = ensure_writer(run);
        if (rc)
            return rc;
        rc = cmt_writer_symbol(run->w, &sym);
        if (rc)
            return fail(run, rc, "cannot append: %s", cmt_strerror(rc));
        if (run->stats) {
            run->stats->symbols_added++;
            run->stats->named += sym.function != 0;
            run->stats->with_line += sym.file != 0 && sym.line != 0;
        }
    }
    return 0;
}

/* Opens and fully reads the trace; refuses damage. */
static int read_trace(struct run *run)
{
    struct stat st;
    if (stat(run->path, &st) != 0)
        return fail(run, CMT_EIO, "%s", strerror(errno));
    run->file_size = st.st_size;
    struct cmt_err err = {0};
    int rc = cmt_reader_open_file(&run->r, run->path, &err);
    if (rc)
        return fail(run, rc, "%s", cmt_err_message(&err));
    rc = cmt_reader_preload(run->r);
    if (rc < 0) /* the damage's description, or the reader's own failure (out of memory) */
        return fail(run, rc, "%s; not symbolized (records appended after damage could not be read)",
                    cmt_reader_damage(run->r)[0] ? cmt_reader_damage(run->r) : cmt_strerror(rc));
    return 0;
}

/* Finishes the appended chunks; on any failure cuts the file back to its old size, so a
 * half-written chunk never leaves the trace damaged. */
static int finish_append(struct run *run, int rc)
{
    if (run->fd < 0)
        return rc;
    if (rc == 0 && (rc = cmt_writer_flush(run->w)) != 0)
        fail(run, rc, "cannot append: %s", cmt_strerror(rc));
    cmt_writer_destroy(run->w);
    run->w = NULL;
    if (rc == 0 && fsync(run->fd) != 0 && errno != EINVAL)
        rc = fail(run, CMT_EIO, "cannot append: %s", strerror(errno));
    if (rc != 0 && ftruncate(run->fd, run->file_size) != 0)
        fail(run, rc, "append failed and the file could not be restored: %s", strerror(errno));
    if (close(run->fd) != 0 && rc == 0)
        rc = fail(run, CMT_EIO, "cannot append: %s", strerror(errno));
    run->fd = -1;
    return rc;
}

static void run_free(struct run *run)
{
    for (size_t i = 0; i < run->string_cap; i++)
        if (run->strings[i].owned)
            free((char *)run->strings[i].text);
    free(run->strings);
    free(run->ips);
    cmt__module_set_free(run->modules);
    cmt_reader_close(run->r);
}

int cmt_symbolize_file(const char *trace_path, struct cmt_symbolize_stats *stats,
                       struct cmt_err *err)
{
    struct run run = {
        .path = trace_path ? trace_path : "(null)", .fd = -1, .stats = stats, .err = err};
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!trace_path)
        return fail(&run, CMT_EINVALID, "no trace path given");
    int rc = read_trace(&run);
    if (rc == 0 && !(run.modules = cmt__module_set_create()))
        rc = fail(&run, CMT_ENOMEM, "out of memory");
    if (rc == 0)
        rc = seed_strings(&run);
    if (rc == 0)
        rc = symbolize_nodes(&run);
    rc = finish_append(&run, rc);
    if (stats && run.modules)
        cmt__module_set_counts(run.modules, &stats->modules_missing, &stats->modules_changed);
    run_free(&run);
    return rc;
}
