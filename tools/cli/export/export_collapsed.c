/* export_collapsed.c — folded stacks ("frame;frame;leaf weight", root first) as flamegraph.pl,
 * inferno and speedscope read them: one line per call site (replay site: one leaf stack) with
 * a nonzero weight. Weights: device bytes held at the process peak, device bytes still live at
 * the end, or allocations made (device and pinned host: every successful allocation call). A frame's ';' becomes ':' and control bytes become spaces, so the line
 * splits as those tools split it (frames on ';', the weight after the last space). */
#include <inttypes.h>
#include <string.h>

#include "cmt_format.h"
#include "export/export.h"
#include "frames.h"

#define MAX_FRAMES CMT_MAX_STACK_DEPTH /* every frame the shim records */

struct frames {
    char text[MAX_FRAMES][512];
    int n;
};

static void keep(void *ctx, const char *frame)
{
    struct frames *fr = ctx;
    if (fr->n >= MAX_FRAMES)
        return;
    char *out = fr->text[fr->n++];
    size_t i = 0;
    for (; frame[i] && i + 1 < sizeof fr->text[0]; i++) {
        unsigned char c = (unsigned char)frame[i];
        out[i] = c == ';' ? ':' : c < 0x20 || c == 0x7f ? ' ' : (char)c;
    }
    out[i] = 0;
}

static uint64_t weight_of(const struct cmt_replay_site *s, enum cmt__export_weight w)
{
    switch (w) {
    case CMT__EXPORT_WEIGHT_PEAK: return s->at_peak_bytes;
    case CMT__EXPORT_WEIGHT_LEAKED: return s->live_bytes;
    case CMT__EXPORT_WEIGHT_COUNT: return s->alloc_count + s->host_alloc_count;
    }
    return 0;
}

void cmt__export_collapsed(const struct cmt__pass *p, FILE *f, enum cmt__export_weight weight)
{
    static struct frames fr;
    for (uint32_t i = 0; i < cmt_replay_site_count(p->replay); i++) {
        const struct cmt_replay_site *s = cmt_replay_site(p->replay, i);
        uint64_t w = weight_of(s, weight);
        if (!w)
            continue;
        fr.n = 0;
        if (s->stack)
            cmt_stack_frames(p->reader, s->stack, MAX_FRAMES, keep, &fr);
        if (!fr.n)
            keep(&fr, "[no stack]");
        for (int k = fr.n - 1; k >= 0; k--) /* innermost first from the reader: root first here */
            fprintf(f, "%s%s", k == fr.n - 1 ? "" : ";", fr.text[k]);
        fprintf(f, " %" PRIu64 "\n", w);
    }
}
