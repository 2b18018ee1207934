/* whatif_stream.c — the compact encoding of a tensor-level stream (whatif.h).
 *
 * Two byte strings of LEB128 varints. `replay` holds what a replay reads, per event:
 *   head = id << 4 | flags (FREE, FAILED, STREAM: the stream differs from the previous
 *   alloc's, NEW_ID: a failed request whose id is given at finish, then id 0), then for an
 *   alloc its size, and with STREAM the stream.
 * `detail` holds what reports read: the seq delta, the t_ns delta (zigzag: times of
 * different threads may go back), then for an alloc its site. Every 256th event gets a mark
 * (both offsets and the running state), so any event is decoded from its mark.
 *
 * Each string (and the marks) is a log: appended in memory, and once its tail reaches
 * CMT_WHATIF_LOG_TAIL the tail is written to an unlinked temporary file, so what a stream
 * holds in memory is bounded whatever its length; readers copy windows back with pread, which
 * several threads may do at once. */
#include "whatif.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmt_error.h"
#include "cmt_grow.h"
#include "whatif_codec.h"

#define MARK_EVERY 256

struct cmt_whatif_mark {
    size_t replay, detail;
    uint64_t seq, t_ns, stream;
    uint32_t new_ids;
};

/* The longest event encoding (3 varints of up to 10 bytes), with room. */
#define LONGEST 32

/* An unlinked temporary file in TMPDIR (else /tmp). @return its descriptor, or -1. */
static int temporary_file(void)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    if (!dir || !*dir)
        dir = "/tmp";
    if (snprintf(path, sizeof path, "%s/cumemtrace-whatif.XXXXXX", dir) >= (int)sizeof path)
        return -1;
    int fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    return fd;
}

/* Write the tail to the file (made on first use); on any failure the log stays in memory. */
static void log_spill(struct cmt_whatif_log *g)
{
    size_t n = g->len - g->spilled;
    if (g->in_memory || n == 0)
        return;
    if (g->spilled == 0 && (g->fd = temporary_file()) < 0) {
        g->in_memory = true;
        return;
    }
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(g->fd, g->tail + done, n - done, (off_t)(g->spilled + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            /* Keep what is in the file; the tail grows from here on. */
            g->in_memory = true;
            if (g->spilled == 0)
                close(g->fd);
            return;
        }
        done += (size_t)w;
    }
    g->spilled += n;
}

/* Room for `more` bytes at the end of the log. @return 0 or CMT_EMODEL_NOMEM. */
static int log_reserve(struct cmt_whatif_log *g, size_t more)
{
    size_t used = g->len - g->spilled;
    if (used + more > CMT_WHATIF_LOG_TAIL && !g->in_memory) {
        log_spill(g);
        used = g->len - g->spilled;
    }
    return CMT_GROW(g->tail, g->tail_cap, used + more, 4096) != 0 ? CMT_EMODEL_NOMEM : 0;
}

static uint8_t *log_end(struct cmt_whatif_log *g)
{
    return g->tail + (g->len - g->spilled);
}

/* Copy up to n bytes from offset into dst. @return the bytes copied (short only at the end of
 * the log), or -1 when the file could not be read. */
static long log_read(const struct cmt_whatif_log *g, size_t offset, uint8_t *dst, size_t n)
{
    size_t copied = 0;
    while (copied < n && offset < g->spilled) {
        size_t want = n - copied < g->spilled - offset ? n - copied : g->spilled - offset;
        ssize_t r = pread(g->fd, dst + copied, want, (off_t)offset);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        copied += (size_t)r;
        offset += (size_t)r;
    }
    if (copied < n && offset < g->len) {
        size_t want = n - copied < g->len - offset ? n - copied : g->len - offset;
        memcpy(dst + copied, g->tail + (offset - g->spilled), want);
        copied += want;
    }
    return (long)copied;
}

static void log_free(struct cmt_whatif_log *g)
{
    if (g->spilled > 0)
        close(g->fd);
    free(g->tail);
    memset(g, 0, sizeof *g);
}

/* A window over a log from an offset: at..end are the bytes read so far and not consumed. */
static void window_start(struct cmt_whatif_cursor *c, const struct cmt_whatif_log *g, size_t offset)
{
    c->log = g;
    c->next = offset;
    c->at = c->end = c->window;
    c->error = 0;
}

/* Keep at least LONGEST bytes ahead of c->at (fewer only at the end of the log).
 * @return false when nothing is left or the file could not be read (c->error). */
static bool window_fill(struct cmt_whatif_cursor *c)
{
    size_t left = (size_t)(c->end - c->at);
    if (left >= LONGEST || c->next >= c->log->len)
        return left > 0;
    memmove(c->window, c->at, left);
    long n = log_read(c->log, c->next, c->window + left, sizeof c->window - left);
    if (n < 0) {
        c->error = CMT_EIO;
        c->at = c->end = c->window;
        return false;
    }
    c->next += (size_t)n;
    c->at = c->window;
    c->end = c->window + left + (size_t)n;
    return c->end > c->at;
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

int cmt_whatif_stream_push(struct cmt_whatif_stream *s, const struct cmt_whatif_event *e)
{
    if (!s || !e || (e->is_free && e->id == CMT_WHATIF_NEW_ID) || s->codec.finished)
        return CMT_EINVALID;
    struct cmt_whatif_codec *c = &s->codec;
    if (log_reserve(&c->replay, LONGEST) != 0 || log_reserve(&c->detail, LONGEST) != 0 ||
        log_reserve(&c->marks, sizeof(struct cmt_whatif_mark)) != 0)
        return CMT_EMODEL_NOMEM;
    if (s->event_count % MARK_EVERY == 0) {
        struct cmt_whatif_mark mk;
        memset(&mk, 0, sizeof mk); /* padding too: the bytes go to a file */
        mk.replay = c->replay.len;
        mk.detail = c->detail.len;
        mk.seq = c->last_seq;
        mk.t_ns = c->last_t_ns;
        mk.stream = c->last_stream;
        mk.new_ids = c->new_ids;
        memcpy(log_end(&c->marks), &mk, sizeof mk);
        c->marks.len += sizeof mk;
    }
    bool new_id = e->id == CMT_WHATIF_NEW_ID;
    uint64_t flags = (e->is_free ? CMT__WF_FREE : 0) | (e->failed ? CMT__WF_FAILED : 0) |
                     (new_id ? CMT__WF_NEW_ID : 0) |
                     (!e->is_free && e->stream != c->last_stream ? CMT__WF_STREAM : 0);
    uint8_t *r = log_end(&c->replay);
    size_t n = put_varint(r, (new_id ? 0 : (uint64_t)e->id) << CMT__WF_BITS | flags);
    if (!e->is_free) {
        n += put_varint(r + n, e->size);
        if (flags & CMT__WF_STREAM)
            n += put_varint(r + n, e->stream);
        c->last_stream = e->stream;
        if (e->size > s->max_request)
            s->max_request = e->size;
    }
    c->replay.len += n;
    uint8_t *d = log_end(&c->detail);
    n = put_varint(d, zigzag((int64_t)(e->seq - c->last_seq)));
    n += put_varint(d + n, zigzag((int64_t)(e->t_ns - c->last_t_ns)));
    if (!e->is_free)
        n += put_varint(d + n, e->site);
    c->detail.len += n;
    c->last_seq = e->seq;
    c->last_t_ns = e->t_ns;
    c->new_ids += new_id;
    s->event_count++;
    return 0;
}

void cmt_whatif_stream_finish(struct cmt_whatif_stream *s)
{
    if (!s || s->codec.finished)
        return;
    s->codec.finished = true;
    s->new_id_base = s->id_count;
    s->id_count += s->codec.new_ids;
}

void cmt_whatif_cursor_init(struct cmt_whatif_cursor *c, const struct cmt_whatif_stream *s)
{
    window_start(c, &s->codec.replay, 0);
    c->stream = 0;
    c->new_id = s->new_id_base;
}

bool cmt_whatif_cursor_next(struct cmt_whatif_cursor *c, struct cmt_whatif_event *e)
{
    if (!cmt__whatif_cursor_ready(c))
        return false;
    cmt__whatif_decode(&c->at, &c->stream, &c->new_id, e);
    e->seq = e->t_ns = 0;
    e->site = 0;
    return true;
}

bool cmt__whatif_cursor_fill(struct cmt_whatif_cursor *c)
{
    return window_fill(c);
}

int cmt_whatif_stream_event(const struct cmt_whatif_stream *s, size_t index,
                            struct cmt_whatif_event *out)
{
    if (!s || !out || index >= s->event_count)
        return CMT_EINVALID;
    const struct cmt_whatif_codec *c = &s->codec;
    struct cmt_whatif_mark mk;
    if (log_read(&c->marks, index / MARK_EVERY * sizeof mk, (uint8_t *)&mk, sizeof mk) !=
        (long)sizeof mk)
        return CMT_EIO;
    /* Two windows: the replay bytes and the detail bytes from the mark on. */
    struct cmt_whatif_cursor *r = malloc(2 * sizeof *r), *d = r + 1;
    if (!r)
        return CMT_EMODEL_NOMEM;
    window_start(r, &c->replay, mk.replay);
    window_start(d, &c->detail, mk.detail);
    uint64_t stream = mk.stream, seq = mk.seq, t = mk.t_ns;
    uint32_t new_id = s->new_id_base + mk.new_ids;
    int rc = 0;
    for (size_t k = index / MARK_EVERY * MARK_EVERY;; k++) {
        if (!window_fill(r) || !window_fill(d)) {
            rc = CMT_EIO;
            break;
        }
        cmt__whatif_decode(&r->at, &stream, &new_id, out);
        seq += (uint64_t)unzigzag(cmt__whatif_varint(&d->at));
        t += (uint64_t)unzigzag(cmt__whatif_varint(&d->at));
        out->site = out->is_free ? 0 : (uint32_t)cmt__whatif_varint(&d->at);
        if (k == index)
            break;
    }
    free(r);
    out->seq = seq;
    out->t_ns = t;
    return rc;
}

size_t cmt_whatif_stream_bytes(const struct cmt_whatif_stream *s)
{
    const struct cmt_whatif_codec *c = &s->codec;
    return c->replay.len + c->detail.len + c->marks.len;
}

size_t cmt_whatif_stream_memory(const struct cmt_whatif_stream *s)
{
    const struct cmt_whatif_codec *c = &s->codec;
    return c->replay.tail_cap + c->detail.tail_cap + c->marks.tail_cap;
}

void cmt_whatif_stream_free(struct cmt_whatif_stream *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->site_count; i++)
        free(s->sites[i]);
    free(s->sites);
    log_free(&s->codec.replay);
    log_free(&s->codec.detail);
    log_free(&s->codec.marks);
    memset(&s->codec, 0, sizeof s->codec);
    s->sites = NULL;
    s->site_count = 0;
    s->event_count = 0;
}
