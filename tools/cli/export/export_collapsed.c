/* export_collapsed.c — folded stacks ("frame;frame;leaf weight", root first) as flamegraph.pl,
 * inferno and speedscope read them: one line per call site (replay site: one leaf stack) with
 * a nonzero weight. Weights: device bytes held at the process peak, device bytes still live at
 * the end, or allocations made (device and pinned host: every successful allocation call). A
 * trace without driver allocation calls (a PyTorch snapshot) gives its allocator's blocks by
 * their first Python frame instead. A frame's ';' becomes ':' and control bytes become spaces, so the line
 * splits as those tools split it (frames on ';', the weight after the last space). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "cmt_format.h"
#include "cmt_grow.h"
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

static void print_line(FILE *f, struct frames *fr, uint64_t w)
{
    if (!fr->n)
        keep(fr, "[no stack]");
    for (int k = fr->n - 1; k >= 0; k--) /* innermost first from the reader: root first here */
        fprintf(f, "%s%s", k == fr->n - 1 ? "" : ";", fr->text[k]);
    fprintf(f, " %" PRIu64 "\n", w);
}

static void cmt__export_collapsed(const struct cmt__pass *p, FILE *f,
                                  enum cmt__export_weight weight)
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
        print_line(f, &fr, w);
    }
}

/* ---- the allocator's blocks (a trace without driver allocation calls) ---- */

/* Weights by stack id, and where the allocated bytes (every device summed) peaked. */
struct by_stack {
    const cmt_alloc *alloc; /* the pass's state, updated before this observer sees a step */
    enum cmt__export_weight weight;
    uint64_t *w; /* by stack id */
    size_t cap;
    uint64_t events, peak_event, peak_bytes, take_event;
    int failed;
};

static void add(struct by_stack *b, uint32_t stack, uint64_t v)
{
    size_t had = b->cap;
    if (CMT_GROW(b->w, b->cap, (size_t)stack + 1, 256) != 0) {
        b->failed = 1;
        return;
    }
    memset(b->w + had, 0, (b->cap - had) * sizeof *b->w); /* the room grown */
    b->w[stack] += v;
}

/* Adds the live blocks of every (allocator, device) of a. */
static void add_blocks(struct by_stack *b, const cmt_alloc *a)
{
    for (size_t i = 0; i < cmt_alloc_device_count(a); i++) {
        struct cmt_alloc_block *blocks = NULL;
        size_t n = cmt_alloc_blocks(cmt_alloc_device_at(a, i), &blocks);
        if (n == (size_t)-1)
            b->failed = 1;
        for (size_t k = 0; n != (size_t)-1 && k < n; k++)
            add(b, blocks[k].stack, blocks[k].size);
        free(blocks);
    }
}

static unsigned by_stack_step(struct cmt_observer *self, const cmt_replay *rp,
                              const struct cmt_replay_step *st)
{
    (void)rp;
    struct by_stack *b = self->ctx;
    if (st->rec.type != CMT_REC_ALLOC_EVENT)
        return CMT_OBSERVE_RECORD;
    b->events++;
    if (b->weight == CMT__EXPORT_WEIGHT_COUNT && st->rec.u.alloc_event.action == CMT_AA_ALLOC)
        add(b, st->rec.u.alloc_event.stack, 1);
    if (b->take_event && b->events == b->take_event)
        add_blocks(b, b->alloc); /* the second pass, at the first pass's peak */
    uint64_t sum = 0;
    for (size_t i = 0; i < cmt_alloc_device_count(b->alloc); i++)
        sum += cmt_alloc_device_at(b->alloc, i)->now.allocated_bytes;
    if (sum > b->peak_bytes) {
        b->peak_bytes = sum;
        b->peak_event = b->events;
    }
    return CMT_OBSERVE_RECORD;
}

/* One pass over path with the observer b (b->alloc set to the pass's state). @return 0, or 1
 * after saying why the trace cannot be read. */
static int by_stack_pass(struct cmt__pass *p, const char *path, struct by_stack *b)
{
    if (cmt__pass_open(p, "export", path) != 0)
        return 1;
    if (cmt_alloc_create(&p->alloc) != 0) {
        fprintf(stderr, "cumemtrace export: %s: out of memory\n", path);
        cmt__pass_close(p);
        return 1;
    }
    b->alloc = p->alloc;
    if (b->take_event) { /* the second reading, for the peak */
        p->stage = 2;
        p->stages = 2;
    }
    struct cmt_observer o = {.wants = CMT_OBSERVE_RECORD, .step = by_stack_step, .ctx = b};
    return cmt__pass_replay(p, 0, NULL, &o, 1) != 0;
}

/* The blocks' weights folded by their first Python frame (cmt_alloc_site_node) and its callers. */
static void print_blocks(const cmt_reader *r, const struct by_stack *b, FILE *f)
{
    static struct frames fr;
    uint64_t *by_node = calloc(b->cap ? b->cap : 1, sizeof *by_node);
    for (size_t s = 0; by_node && s < b->cap; s++)
        if (b->w[s]) {
            uint32_t node = s ? cmt_alloc_site_node(r, (uint32_t)s) : 0;
            by_node[node < b->cap ? node : s] += b->w[s];
        }
    for (size_t s = 0; s < b->cap; s++) {
        uint64_t w = by_node ? by_node[s] : b->w[s];
        if (!w)
            continue;
        fr.n = 0;
        if (s)
            cmt_stack_frames(r, (uint32_t)s, MAX_FRAMES, keep, &fr);
        print_line(f, &fr, w);
    }
    free(by_node);
}

int cmt__export_collapsed_run(const char *path, FILE *f, enum cmt__export_weight weight)
{
    struct cmt__pass p;
    struct by_stack b = {.weight = weight};
    if (by_stack_pass(&p, path, &b) != 0)
        return 1;
    int status = cmt__pass_status(&p);
    if (cmt_replay_totals(p.replay)->alloc_calls || !cmt_alloc_present(p.alloc)) {
        cmt__export_collapsed(&p, f, weight); /* the driver's call sites */
    } else {
        if (weight == CMT__EXPORT_WEIGHT_LEAKED)
            add_blocks(&b, p.alloc);
        if (weight == CMT__EXPORT_WEIGHT_PEAK && b.peak_event) {
            struct cmt__pass second;
            b.take_event = b.peak_event;
            b.events = 0;
            if (by_stack_pass(&second, path, &b) == 0)
                cmt__pass_close(&second);
            else
                status = 1;
        }
        print_blocks(p.reader, &b, f);
        if (b.failed) {
            fprintf(stderr, "cumemtrace export: %s: out of memory, the stacks are partial\n", path);
            status = 1;
        }
    }
    free(b.w);
    cmt__pass_close(&p);
    return status;
}
