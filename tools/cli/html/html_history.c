/* html_history.c — the page's `history` object: the allocator's blocks and segments over the
 * run (alloc_history.h computes them), for the active memory timeline, the segment view at any
 * moment and the icicle of the allocated peak (html/alloc_views.js draws them). Capped: the
 * largest blocks are drawn, the rest summed as one series; docs/html-report.md gives the keys. */
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "reader.h"
#include "html/html.h"
#include "oom.h"
#include "output.h"

#define BANDS 2000     /* blocks drawn as bands, the largest; the rest as "other" */
#define BLOCKS 6000    /* blocks given to the segment view, the largest */
#define SEGMENTS 20000 /* segment lives */
#define POINTS 2000    /* points of a series */
#define TREE_NODES 800
#define STACK_FRAMES 24 /* frames given per stack */

static int64_t never(uint64_t v)
{
    return v == CMT_ALLOC_NEVER ? -1 : (int64_t)v;
}

static int by_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

/* The frames of a stack, innermost first: their STACK_NODE ids (as cmt_stack_frames walks). */
static int stack_nodes(const cmt_reader *r, uint32_t leaf, uint32_t *out)
{
    struct cmt_stack_node sn;
    int n = 0;
    for (uint32_t id = leaf; id && n < STACK_FRAMES && cmt_reader_stack_node(r, id, &sn) == 0;) {
        out[n++] = id;
        if (sn.parent == id)
            break;
        id = sn.parent;
    }
    return n;
}

/* `frames` (each distinct frame once) and `stacks` (each a list of indices into it): stacks
 * share most of their frames, so the page stays small however many stacks. @return 0 or -1. */
static int stacks_json(struct cmt__json *j, const cmt_reader *r, const uint32_t *stacks,
                       size_t nstacks)
{
    uint32_t *nodes = malloc((nstacks * STACK_FRAMES + 1) * sizeof *nodes), chain[STACK_FRAMES];
    size_t n = 0, u = 0;
    if (!nodes)
        return -1;
    for (size_t i = 0; i < nstacks; i++)
        n += (size_t)stack_nodes(r, stacks[i], nodes + n);
    qsort(nodes, n, sizeof *nodes, by_u32);
    for (size_t i = 0; i < n; i++)
        if (!u || nodes[u - 1] != nodes[i])
            nodes[u++] = nodes[i];
    char frame[512];
    cmt__json_array(j, "frames");
    for (size_t i = 0; i < u; i++) {
        cmt_reader_format_frame(r, nodes[i], frame, sizeof frame);
        cmt__json_string(j, NULL, frame);
    }
    cmt__json_end_array(j);
    cmt__json_array(j, "stacks");
    for (size_t i = 0; i < nstacks; i++) {
        int m = stack_nodes(r, stacks[i], chain);
        cmt__json_array(j, NULL);
        for (int k = 0; k < m; k++)
            cmt__json_u64(
                j, NULL,
                (uint64_t)((uint32_t *)bsearch(&chain[k], nodes, u, sizeof *nodes, by_u32) -
                           nodes));
        cmt__json_end_array(j);
    }
    cmt__json_end_array(j);
    free(nodes);
    return 0;
}

static void moment_json(struct cmt__json *j, const char *key, const cmt_alloc_history *h,
                        int32_t dev, int reserved)
{
    struct cmt_alloc_moment m;
    if (cmt_alloc_history_peak(h, dev, reserved, &m) != 0) {
        cmt__json_null(j, key);
        return;
    }
    cmt__json_object(j, key);
    cmt__json_u64(j, "seq", m.seq);
    cmt__json_u64(j, "t_ns", m.t_ns);
    cmt__json_u64(j, "bytes", m.bytes);
    cmt__json_end_object(j);
}

static void series_json(struct cmt__json *j, const struct cmt_alloc_history_point *p, size_t n,
                        int all)
{
    static const char *const keys[] = {"s", "allocated", "reserved", "inactive_split"};
    for (int col = 0; col < (all ? 4 : 2); col++) {
        cmt__json_array(j, keys[col]);
        for (size_t i = 0; i < n; i++) {
            uint64_t v[] = {p[i].seq, p[i].allocated, p[i].reserved, p[i].inactive_split};
            cmt__json_u64(j, NULL, v[col]);
        }
        cmt__json_end_array(j);
    }
}

/* The page's OOM episode of the k-th allocator OOM on dev (as html_alloc.c's episode_of). */
static long episode(const struct cmt__html_run *run, int32_t dev, size_t k)
{
    const cmt_oom *o = run->pass.oom;
    for (uint32_t i = 0; o && i < cmt_oom_count(o); i++) {
        const struct cmt_oom_episode *e = cmt_oom_episode(o, i);
        if (e->alloc && e->dev == dev && k-- == 0)
            return i;
    }
    return -1;
}

static void ooms_json(struct cmt__json *j, const struct cmt__html_run *run, int32_t dev)
{
    size_t n, k = 0;
    const struct cmt_alloc_history_oom *o = cmt_alloc_history_ooms(run->history, &n);
    cmt__json_array(j, "ooms");
    for (size_t i = 0; i < n; i++) {
        if (o[i].dev != dev)
            continue;
        cmt__json_object(j, NULL);
        cmt__json_u64(j, "seq", o[i].seq);
        cmt__json_u64(j, "t_ns", o[i].t_ns);
        cmt__json_u64(j, "request_bytes", o[i].request_bytes);
        cmt__json_i64(j, "episode", episode(run, dev, k++));
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

static void segments_json(struct cmt__json *j, const cmt_alloc_history *h, int32_t dev)
{
    size_t n, total = 0, written = 0;
    const struct cmt_alloc_segment_life *s = cmt_alloc_history_segments(h, &n);
    cmt__json_array(j, "segments"); /* [addr, bytes, from, to, stream, flags, from_t, to_t] */
    for (size_t i = 0; i < n; i++) {
        if (s[i].dev != dev)
            continue;
        if (total++ >= SEGMENTS)
            continue;
        written++;
        cmt__json_array(j, NULL);
        int64_t v[] = {(int64_t)s[i].addr,    (int64_t)s[i].size,
                       never(s[i].from_seq),  never(s[i].to_seq),
                       (int64_t)s[i].stream,  s[i].expandable | s[i].small << 1 | s[i].before << 2,
                       never(s[i].from_t_ns), never(s[i].to_t_ns)};
        for (size_t c = 0; c < sizeof v / sizeof *v; c++)
            cmt__json_i64(j, NULL, v[c]);
        cmt__json_end_array(j);
    }
    cmt__json_end_array(j);
    cmt__json_u64(j, "segments_total", total);
    cmt__json_u64(j, "segments_left_out", total - written);
}

static void tree_json(struct cmt__json *j, const struct cmt__html_run *run, int32_t dev)
{
    struct cmt_alloc_moment m;
    struct cmt_alloc_tree_node *t = NULL;
    size_t n = cmt_alloc_history_peak(run->history, dev, 0, &m) != 0
                   ? 0
                   : cmt_alloc_history_tree(run->history, run->pass.reader, dev, m.seq, TREE_NODES,
                                            &t);
    char frame[512];
    cmt__json_array(j, "icicle"); /* [parent, bytes, blocks, frame] */
    for (size_t i = 0; n != (size_t)-1 && i < n; i++) {
        cmt__json_array(j, NULL);
        cmt__json_i64(j, NULL, t[i].parent);
        cmt__json_u64(j, NULL, t[i].bytes);
        cmt__json_u64(j, NULL, t[i].blocks);
        if (t[i].node)
            cmt_reader_format_frame(run->pass.reader, t[i].node, frame, sizeof frame);
        cmt__json_string(j, NULL, t[i].node ? frame : "all");
        cmt__json_end_array(j);
    }
    cmt__json_end_array(j);
    free(t);
}

/* The blocks of a device as the page draws them: the largest, bands first. */
static int blocks_json(struct cmt__json *j, const struct cmt__html_run *run, int32_t dev,
                       const uint32_t *stacks, size_t nstacks)
{
    const cmt_alloc_history *h = run->history;
    size_t all, *order = NULL, n = cmt_alloc_history_largest(h, dev, BLOCKS, &order);
    const struct cmt_alloc_life *b = cmt_alloc_history_blocks(h, &all);
    unsigned char *chosen = calloc(all + 1, 1);
    struct cmt_alloc_history_point *rest = NULL;
    if (n == (size_t)-1 || !chosen) {
        free(order);
        free(chosen);
        return -1;
    }
    size_t bands = n < BANDS ? n : BANDS, total = 0;
    for (size_t i = 0; i < all; i++)
        total += b[i].dev == dev;
    cmt__json_u64(j, "blocks_total", total);
    cmt__json_u64(j, "bands", bands);
    /* [addr, bytes, requested, alloc, free, done, stack, alloc_t, free_t, done_t] */
    cmt__json_array(j, "blocks");
    for (size_t k = 0; k < n; k++) {
        const struct cmt_alloc_life *l = &b[order[k]];
        const uint32_t *at = l->stack ? bsearch(&l->stack, stacks, nstacks, sizeof *stacks, by_u32)
                                      : NULL;
        int64_t v[] = {(int64_t)l->addr,      (int64_t)l->size,     (int64_t)l->requested,
                       never(l->alloc_seq),   never(l->free_seq),   never(l->done_seq),
                       at ? at - stacks : -1, never(l->alloc_t_ns), never(l->free_t_ns),
                       never(l->done_t_ns)};
        cmt__json_array(j, NULL);
        for (size_t c = 0; c < sizeof v / sizeof *v; c++)
            cmt__json_i64(j, NULL, v[c]);
        cmt__json_end_array(j);
        if (k < bands)
            chosen[order[k]] = 1;
    }
    cmt__json_end_array(j);
    size_t m = cmt_alloc_history_rest(h, dev, chosen, POINTS, &rest);
    cmt__json_object(j, "rest"); /* the allocated bytes of the blocks not drawn as bands */
    series_json(j, rest, m == (size_t)-1 ? 0 : m, 0);
    cmt__json_end_object(j);
    free(rest);
    free(order);
    free(chosen);
    return m == (size_t)-1 ? -1 : 0;
}

/* The sorted distinct stacks of the blocks the page is given. */
static uint32_t *page_stacks(const cmt_alloc_history *h, size_t *count)
{
    size_t ndev = cmt_alloc_history_device_count(h), all, m = 0, cap = 1;
    const struct cmt_alloc_life *b = cmt_alloc_history_blocks(h, &all);
    uint32_t *s = malloc(sizeof *s);
    for (size_t d = 0; s && d < ndev; d++) {
        size_t *order,
            n = cmt_alloc_history_largest(h, cmt_alloc_history_device(h, d), BLOCKS, &order);
        uint32_t *grown = n == (size_t)-1 ? NULL : realloc(s, (cap += n) * sizeof *s);
        if (!grown) {
            free(n == (size_t)-1 ? NULL : order);
            free(s);
            return NULL;
        }
        s = grown;
        for (size_t k = 0; k < n; k++)
            if (b[order[k]].stack)
                s[m++] = b[order[k]].stack;
        free(order);
    }
    if (!s)
        return NULL;
    qsort(s, m, sizeof *s, by_u32);
    size_t u = 0;
    for (size_t i = 0; i < m; i++)
        if (!u || s[u - 1] != s[i])
            s[u++] = s[i];
    *count = u;
    return s;
}

int cmt__html_history_json(struct cmt__json *j, const struct cmt__html_run *run)
{
    const cmt_alloc_history *h = run->history;
    if (!h || !cmt_alloc_history_device_count(h)) {
        cmt__json_null(j, "history");
        return 0;
    }
    size_t nstacks = 0;
    uint32_t *stacks = page_stacks(h, &nstacks);
    if (!stacks)
        return -1;
    int rc = 0;
    char label[160];
    cmt__json_object(j, "history");
    cmt__json_u64(j, "events", cmt_alloc_history_events(h));
    cmt__json_i64(j, "truncated", cmt_alloc_history_truncated(h));
    cmt__html_outside_known_json(j, run);
    if (stacks_json(j, run->pass.reader, stacks, nstacks) != 0) {
        free(stacks);
        return -1;
    }
    cmt__json_array(j, "sites"); /* each stack's call site: its first Python frame, else the
                                    first outside allocator internals (the bands' colour) */
    for (size_t i = 0; i < nstacks; i++) {
        char site[512] = "";
        uint32_t node = cmt_alloc_site_node(run->pass.reader, stacks[i]);
        if (node)
            cmt_reader_format_frame(run->pass.reader, node, site, sizeof site);
        cmt__json_string(j, NULL, site);
    }
    cmt__json_end_array(j);
    cmt__json_array(j, "devices");
    for (size_t d = 0; d < cmt_alloc_history_device_count(h) && !rc; d++) {
        int32_t dev = cmt_alloc_history_device(h, d);
        size_t np;
        const struct cmt_alloc_history_point *p = cmt_alloc_history_series(h, dev, &np);
        cmt__json_object(j, NULL);
        cmt__json_i64(j, "dev", dev);
        cmt__json_string(j, "device",
                         cmt__device_label(run->pass.replay, dev, label, sizeof label));
        moment_json(j, "peak", h, dev, 0);
        moment_json(j, "reserved_peak", h, dev, 1);
        ooms_json(j, run, dev);
        cmt__json_object(j, "series");
        series_json(j, p, np, 1);
        cmt__json_end_object(j);
        rc = blocks_json(j, run, dev, stacks, nstacks);
        segments_json(j, h, dev);
        tree_json(j, run, dev);
        if (!rc)
            rc = cmt__html_outside_json(j, run, dev);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
    cmt__json_end_object(j);
    free(stacks);
    return rc;
}
