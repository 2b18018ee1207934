/* sites.c — ranking call sites, grouping them by call-site frame and naming them. */
#include "sites.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"

#define KEY_FRAMES 16
#define KEY_SIZE 1024

static void measure(const struct cmt_replay_site *s, enum cmt_rank_by by, uint64_t *bytes,
                    uint64_t *count)
{
    switch (by) {
    case CMT_RANK_AT_PEAK:
        *bytes = s->at_peak_bytes;
        *count = s->at_peak_count;
        break;
    case CMT_RANK_LIVE:
        *bytes = s->live_bytes;
        *count = s->live_count;
        break;
    case CMT_RANK_HOST_LIVE:
        *bytes = s->host_live_bytes;
        *count = s->host_live_count;
        break;
    default: *bytes = s->peak_bytes; *count = s->alloc_count;
    }
}

/* Inserts r into the top list (largest first; an equal one stays behind those before it). */
static void rank_insert(struct cmt_ranked_site *out, size_t *n, size_t max,
                        struct cmt_ranked_site r)
{
    size_t at = *n < max ? (*n)++ : max;
    if (at == max && r.bytes <= out[max - 1].bytes)
        return;
    if (at == max)
        at--;
    while (at > 0 && out[at - 1].bytes < r.bytes) {
        out[at] = out[at - 1];
        at--;
    }
    out[at] = r;
}

struct keyed {
    char *key;
    size_t index; /* into the items */
};

static int by_key_then_index(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

struct group {
    size_t first; /* its first item: the tie-break */
    struct cmt_ranked_site r;
    uint64_t rep_bytes;
};

static int by_bytes_then_first(const void *a, const void *b)
{
    const struct group *x = a, *y = b;
    if (x->r.bytes != y->r.bytes)
        return x->r.bytes < y->r.bytes ? 1 : -1;
    return (x->first > y->first) - (x->first < y->first);
}

static size_t rank_ungrouped(const struct cmt_site_item *items, size_t n,
                             struct cmt_ranked_site *out, size_t max)
{
    size_t count = 0;
    for (size_t i = 0; i < n && max; i++)
        rank_insert(out, &count, max,
                    (struct cmt_ranked_site){items[i].site, items[i].bytes, items[i].count});
    return count;
}

size_t cmt_sites_group(const cmt_reader *r, const struct cmt_site_item *items, size_t n,
                       struct cmt_ranked_site *out, size_t max)
{
    if (!n || !max)
        return 0;
    struct keyed *k = calloc(n, sizeof *k);
    struct group *g = malloc(n * sizeof *g);
    size_t done = 0, groups = 0;
    char buf[KEY_SIZE];
    for (; k && g && done < n; done++) {
        k[done].index = done;
        if (!(k[done].key = strdup(cmt_site_key(r, items[done].stack, buf, sizeof buf))))
            break;
    }
    if (done == n) {
        qsort(k, n, sizeof *k, by_key_then_index);
        for (size_t i = 0; i < n; i++) {
            const struct cmt_site_item *it = &items[k[i].index];
            if (i == 0 || strcmp(k[i - 1].key, k[i].key) != 0)
                g[groups++] = (struct group){k[i].index, {it->site, 0, 0}, it->bytes};
            struct group *cur = &g[groups - 1];
            cur->r.bytes += it->bytes;
            cur->r.count += it->count;
            if (it->bytes > cur->rep_bytes) { /* the largest member (first among equals) */
                cur->rep_bytes = it->bytes;
                cur->r.site = it->site;
            }
        }
        qsort(g, groups, sizeof *g, by_bytes_then_first);
    }
    size_t count = 0;
    if (done == n) {
        for (; count < groups && count < max; count++)
            out[count] = g[count].r;
    } else {
        count = rank_ungrouped(items, n, out, max);
    }
    for (size_t i = 0; k && i < done; i++)
        free(k[i].key);
    free(k);
    free(g);
    return count;
}

size_t cmt_sites_rank(const cmt_replay *rp, enum cmt_rank_by by, struct cmt_ranked_site *out,
                      size_t max)
{
    uint32_t sites = cmt_replay_site_count(rp);
    struct cmt_site_item *items = malloc((size_t)sites * sizeof *items);
    size_t n = 0;
    for (uint32_t i = 0; items && i < sites; i++) {
        const struct cmt_replay_site *s = cmt_replay_site(rp, i);
        struct cmt_site_item it = {i, s->stack, 0, 0};
        measure(s, by, &it.bytes, &it.count);
        if (it.bytes || (by == CMT_RANK_LIVE && it.count) || (by == CMT_RANK_HOST_LIVE && it.count))
            items[n++] = it;
    }
    size_t count = 0;
    if (items) {
        count = cmt_sites_group(cmt_replay_reader(rp), items, n, out, max);
    } else { /* out of memory: the sites one by one */
        for (uint32_t i = 0; i < sites && max; i++) {
            struct cmt_ranked_site r = {i, 0, 0};
            measure(cmt_replay_site(rp, i), by, &r.bytes, &r.count);
            if (r.bytes || (by == CMT_RANK_LIVE && r.count) ||
                (by == CMT_RANK_HOST_LIVE && r.count))
                rank_insert(out, &count, max, r);
        }
    }
    free(items);
    return count;
}

const char *cmt_site_key(const cmt_reader *r, uint32_t stack, char *buf, size_t size)
{
    if (!stack) {
        snprintf(buf, size, "(no stack)");
        return buf;
    }
    uint32_t from = cmt_call_site_node(r, stack);
    return cmt_stack_text(r, from ? from : stack, KEY_FRAMES, buf, size);
}
