/* whatif_stream.c — the compact encoding of a tensor-level stream (whatif.h).
 *
 * Two byte strings of LEB128 varints. `replay` holds what a replay reads, per event:
 *   head = id << 4 | flags (FREE, FAILED, STREAM: the stream differs from the previous
 *   alloc's, NEW_ID: a failed request whose id is given at finish, then id 0), then for an
 *   alloc its size, and with STREAM the stream.
 * `detail` holds what reports read: the seq delta, the t_ns delta (zigzag: times of
 * different threads may go back), then for an alloc its site. Every 256th event gets a mark
 * (both offsets and the running state), so any event is decoded from its mark. */
#include "whatif.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_grow.h"
#include "whatif_codec.h"

#define MARK_EVERY 256

struct cmt_whatif_mark {
    size_t replay, detail;
    uint64_t seq, t_ns, stream;
    uint32_t new_ids;
};

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
    /* Room for the longest encoding: 3 varints of up to 10 bytes each. */
    if (CMT_GROW(c->replay, c->replay_cap, c->replay_len + 32, 4096) != 0 ||
        CMT_GROW(c->detail, c->detail_cap, c->detail_len + 32, 4096) != 0)
        return CMT_EMODEL_NOMEM;
    if (s->event_count % MARK_EVERY == 0) {
        if (CMT_GROW(c->marks, c->mark_cap, c->mark_count + 1, 64) != 0)
            return CMT_EMODEL_NOMEM;
        c->marks[c->mark_count++] = (struct cmt_whatif_mark){
            c->replay_len, c->detail_len, c->last_seq, c->last_t_ns, c->last_stream, c->new_ids};
    }
    bool new_id = e->id == CMT_WHATIF_NEW_ID;
    uint64_t flags = (e->is_free ? CMT__WF_FREE : 0) | (e->failed ? CMT__WF_FAILED : 0) |
                     (new_id ? CMT__WF_NEW_ID : 0) |
                     (!e->is_free && e->stream != c->last_stream ? CMT__WF_STREAM : 0);
    uint8_t *r = c->replay + c->replay_len;
    size_t n = put_varint(r, (new_id ? 0 : (uint64_t)e->id) << CMT__WF_BITS | flags);
    if (!e->is_free) {
        n += put_varint(r + n, e->size);
        if (flags & CMT__WF_STREAM)
            n += put_varint(r + n, e->stream);
        c->last_stream = e->stream;
        if (e->size > s->max_request)
            s->max_request = e->size;
    }
    c->replay_len += n;
    uint8_t *d = c->detail + c->detail_len;
    n = put_varint(d, zigzag((int64_t)(e->seq - c->last_seq)));
    n += put_varint(d + n, zigzag((int64_t)(e->t_ns - c->last_t_ns)));
    if (!e->is_free)
        n += put_varint(d + n, e->site);
    c->detail_len += n;
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
    c->at = s->codec.replay;
    c->end = s->codec.replay ? s->codec.replay + s->codec.replay_len : NULL;
    c->stream = 0;
    c->new_id = s->new_id_base;
}

bool cmt_whatif_cursor_next(struct cmt_whatif_cursor *c, struct cmt_whatif_event *e)
{
    if (c->at == c->end)
        return false;
    cmt__whatif_decode(&c->at, &c->stream, &c->new_id, e);
    e->seq = e->t_ns = 0;
    e->site = 0;
    return true;
}

int cmt_whatif_stream_event(const struct cmt_whatif_stream *s, size_t index,
                            struct cmt_whatif_event *out)
{
    if (!s || !out || index >= s->event_count)
        return CMT_EINVALID;
    const struct cmt_whatif_codec *c = &s->codec;
    const struct cmt_whatif_mark *mk = &c->marks[index / MARK_EVERY];
    const uint8_t *r = c->replay + mk->replay, *d = c->detail + mk->detail;
    uint64_t stream = mk->stream, seq = mk->seq, t = mk->t_ns;
    uint32_t new_id = s->new_id_base + mk->new_ids;
    for (size_t k = index / MARK_EVERY * MARK_EVERY;; k++) {
        cmt__whatif_decode(&r, &stream, &new_id, out);
        seq += (uint64_t)unzigzag(cmt__whatif_varint(&d));
        t += (uint64_t)unzigzag(cmt__whatif_varint(&d));
        out->site = out->is_free ? 0 : (uint32_t)cmt__whatif_varint(&d);
        if (k == index)
            break;
    }
    out->seq = seq;
    out->t_ns = t;
    return 0;
}

size_t cmt_whatif_stream_bytes(const struct cmt_whatif_stream *s)
{
    const struct cmt_whatif_codec *c = &s->codec;
    return c->replay_cap + c->detail_cap + c->mark_cap * sizeof *c->marks;
}

void cmt_whatif_stream_free(struct cmt_whatif_stream *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->site_count; i++)
        free(s->sites[i]);
    free(s->sites);
    free(s->codec.replay);
    free(s->codec.detail);
    free(s->codec.marks);
    memset(&s->codec, 0, sizeof s->codec);
    s->sites = NULL;
    s->site_count = 0;
    s->event_count = 0;
}
