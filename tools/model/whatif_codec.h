/* whatif_codec.h — internal to tools/model: decoding the replay bytes of a whatif stream
 * (whatif_stream.c says the encoding), inline so that a replay loop decodes at full speed. */
#ifndef CMT__WHATIF_CODEC_H
#define CMT__WHATIF_CODEC_H

#include "whatif.h"

enum {
    CMT__WF_FREE = 1,
    CMT__WF_FAILED = 2,
    CMT__WF_STREAM = 4,
    CMT__WF_NEW_ID = 8,
    CMT__WF_BITS = 4
};

static inline uint64_t cmt__whatif_varint(const uint8_t **pp)
{
    const uint8_t *p = *pp;
    uint64_t v = *p++;
    if (v >= 0x80) {
        v &= 0x7f;
        unsigned shift = 7;
        uint64_t b;
        do {
            b = *p++;
            v |= (b & 0x7f) << shift;
            shift += 7;
        } while (b >= 0x80 && shift < 64);
    }
    *pp = p;
    return v;
}

/* One event from the replay bytes; *stream and *new_id carry the running state. */
static inline void cmt__whatif_decode(const uint8_t **p, uint64_t *stream, uint32_t *new_id,
                                      struct cmt_whatif_event *e)
{
    uint64_t head = cmt__whatif_varint(p);
    e->is_free = head & CMT__WF_FREE;
    e->failed = (head & CMT__WF_FAILED) != 0;
    e->id = (uint32_t)(head >> CMT__WF_BITS);
    if (head & CMT__WF_NEW_ID)
        e->id = (*new_id)++;
    if (head & CMT__WF_FREE) {
        e->size = 0;
        e->stream = 0;
        return;
    }
    e->size = cmt__whatif_varint(p);
    if (head & CMT__WF_STREAM)
        *stream = cmt__whatif_varint(p);
    e->stream = *stream;
}

/* Refill c's window when fewer than one event's longest encoding is left (whatif_stream.c).
 * @return false at the end of the stream or on a read error (c->error). */
bool cmt__whatif_cursor_fill(struct cmt_whatif_cursor *c);

/* @return true when c's window holds the next event's bytes. */
static inline bool cmt__whatif_cursor_ready(struct cmt_whatif_cursor *c)
{
    return c->end - c->at >= 32 || cmt__whatif_cursor_fill(c);
}

#endif
