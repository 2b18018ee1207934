/* sites.c — ranking call sites and naming them across traces. */
#include "sites.h"

#include <string.h>

#include "output.h"

static void measure(const struct cmt_replay_site *s, enum cmt__rank_by by, uint64_t *bytes,
                    uint64_t *count)
{
    switch (by) {
    case CMT__AT_PEAK:
        *bytes = s->at_peak_bytes;
        *count = s->at_peak_count;
        break;
    case CMT__LIVE:
        *bytes = s->live_bytes;
        *count = s->live_count;
        break;
    default:
        *bytes = s->peak_bytes;
        *count = s->alloc_count;
    }
}

size_t cmt__rank_sites(const cmt_replay *rp, enum cmt__rank_by by, struct cmt__ranked *out,
                       size_t max)
{
    size_t n = 0;
    uint32_t count = cmt_replay_site_count(rp);
    for (uint32_t i = 0; i < count && max; i++) {
        struct cmt__ranked r = {i, 0, 0};
        measure(cmt_replay_site(rp, i), by, &r.bytes, &r.count);
        if (!r.bytes && !(by == CMT__LIVE && r.count))
            continue;
        size_t at = n < max ? n++ : max;
        if (at == max && r.bytes <= out[max - 1].bytes)
            continue;
        if (at == max)
            at--;
        while (at > 0 && out[at - 1].bytes < r.bytes) {
            out[at] = out[at - 1];
            at--;
        }
        out[at] = r;
    }
    return n;
}

struct key_ctx {
    char *buf;
    size_t size, len;
};

static void append(void *ctx, const char *frame)
{
    struct key_ctx *k = ctx;
    int n = snprintf(k->buf + k->len, k->size - k->len, "%s%s", k->len ? " <- " : "", frame);
    if (n > 0)
        k->len = k->len + (size_t)n < k->size ? k->len + (size_t)n : k->size - 1;
}

const char *cmt__site_key(const cmt_reader *r, uint32_t stack, char *buf, size_t size)
{
    struct key_ctx k = {buf, size, 0};
    buf[0] = 0;
    if (!stack) {
        snprintf(buf, size, "(no stack)");
        return buf;
    }
    cmt__stack_frames(r, stack, 16, append, &k);
    return buf;
}
