/* snapshot.c — a PyTorch memory snapshot from its pickle into plain structures (snapshot.h).
 *
 * The decoded pickle is walked along the known shapes only (never recursively in general:
 * the tree may share nodes and even hold cycles). Each frame list, frame dict and action
 * string is usually met many times through the memo; maps keyed by the node's address make
 * every meeting after the first one lookup. */
#include "snapshot.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_format.h"
#include "cmt_grow.h"
#include "snapshot_internal.h"

typedef struct cmt_pickle_value value;

/* Where the parser is, for error messages: list[i] or list[i][j], then .sub[k]. */
struct where {
    const char *list;
    size_t i, j, k; /* SIZE_MAX: not used */
    const char *sub;
};

struct parser {
    struct cmt_snapshot *s;
    struct cmt_err *err;
    size_t segments_cap, blocks_cap, entries_cap, ids_cap, stacks_cap, annotations_cap;
    struct cmt__u64_map stack_by_node, frame_by_node, action_by_node;
    struct cmt__frame_table frames;
    /* frame lists by content: PyTorch writes one list object per trace entry, but few
     * distinct sequences of (shared) frame dicts; slots hold stack id + 1, rep[stack] the
     * first list node read for that stack */
    uint32_t *seq_slots;
    size_t seq_cap, rep_cap;
    const value **rep;
    /* objects visited; the memo lets a small file name one big dict or list many times, so
     * visits are bounded by the input's length (a real snapshot spends tens of bytes on each) */
    uint64_t work, work_max;
    struct where at;
};

static int fail(struct parser *p, int code, const char *fmt, ...)
{
    if (!p->err)
        return code;
    char place[96] = "";
    const struct where *w = &p->at;
    if (w->list) {
        int n = snprintf(place, sizeof place, "%s", w->list);
        if (w->i != SIZE_MAX && n >= 0 && (size_t)n < sizeof place)
            n += snprintf(place + n, sizeof place - (size_t)n, "[%zu]", w->i);
        if (w->j != SIZE_MAX && n >= 0 && (size_t)n < sizeof place)
            n += snprintf(place + n, sizeof place - (size_t)n, "[%zu]", w->j);
        if (w->sub && n >= 0 && (size_t)n < sizeof place)
            n += snprintf(place + n, sizeof place - (size_t)n, ".%s[%zu]", w->sub, w->k);
    }
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char line[256]; /* the room the line had: a place and a sentence */
    snprintf(line, sizeof line, "%s%s%s", place, *place ? ": " : "", what);
    return cmt_err_set(p->err, code, "%s", line);
}

static void at(struct parser *p, const char *list, size_t i, size_t j)
{
    p->at = (struct where){list, i, j, SIZE_MAX, NULL};
}

static int nomem(struct parser *p)
{
    return cmt_err_set(p->err, CMT_ENOMEM, "out of memory");
}

/* ---- fields ---- */

static int bad_type(struct parser *p, const char *key, const value *v, const char *want)
{
    return fail(p, CMT_ESNAPSHOT_FIELD, "%s%sa%s %s where %s belongs", key, *key ? ": " : "",
                v->type == CMT_PICKLE_INT ? "n" : "", cmt_pickle_type_name(v->type), want);
}

/* A non-negative int field; None or absent gives `dflt`, or an error when `required`. */
static int get_u64(struct parser *p, const value *d, const char *key, int required, uint64_t dflt,
                   uint64_t *out)
{
    const value *v = cmt_pickle_dict_get(d, key);
    if (!v || v->type == CMT_PICKLE_NONE) {
        if (required)
            return fail(p, CMT_ESNAPSHOT_FIELD, "%s: missing", key);
        *out = dflt;
        return 0;
    }
    if (cmt_pickle_get_u64(v, out) == 0)
        return 0;
    if (v->type == CMT_PICKLE_INT)
        return fail(p, CMT_ESNAPSHOT_FIELD, "%s: %lld is negative", key, (long long)v->u.i);
    return bad_type(p, key, v, "a non-negative int");
}

static int get_i64(struct parser *p, const value *d, const char *key, int64_t dflt, int64_t *out)
{
    const value *v = cmt_pickle_dict_get(d, key);
    if (!v || v->type == CMT_PICKLE_NONE) {
        *out = dflt;
        return 0;
    }
    if (cmt_pickle_get_i64(v, out) == 0)
        return 0;
    return bad_type(p, key, v, "an int");
}

static int get_bool(struct parser *p, const value *d, const char *key, uint8_t *out)
{
    int64_t i;
    int rc = get_i64(p, d, key, 0, &i);
    *out = i != 0;
    return rc;
}

/* A str field (NULL when absent or None). */
static int get_str(struct parser *p, const value *d, const char *key, const value **out)
{
    const value *v = cmt_pickle_dict_get(d, key);
    *out = NULL;
    if (!v || v->type == CMT_PICKLE_NONE)
        return 0;
    if (v->type != CMT_PICKLE_STR)
        return bad_type(p, key, v, "a str");
    *out = v;
    return 0;
}

/* A list field; absent or None gives NULL. */
static int get_list(struct parser *p, const value *d, const char *key, const value **out)
{
    const value *v = cmt_pickle_dict_get(d, key);
    *out = NULL;
    if (!v || v->type == CMT_PICKLE_NONE)
        return 0;
    if (v->type != CMT_PICKLE_LIST && v->type != CMT_PICKLE_TUPLE)
        return bad_type(p, key, v, "a list");
    *out = v;
    return 0;
}

static int get_device(struct parser *p, const value *d, uint64_t dflt, int32_t *dev)
{
    uint64_t u;
    int rc = get_u64(p, d, "device", 0, dflt, &u);
    if (rc)
        return rc;
    if (u >= CMT_MAX_DEVICES)
        return fail(p, CMT_ESNAPSHOT_FIELD, "device: %llu is not a device ordinal (0 to %d)",
                    (unsigned long long)u, CMT_MAX_DEVICES - 1);
    *dev = (int32_t)u;
    if ((uint32_t)*dev + 1 > p->s->ndevices)
        p->s->ndevices = (uint32_t)*dev + 1;
    return 0;
}

/* A segment, block, trace-entry or frame dict: a dict of a few keys (so that looking keys up
 * stays cheap however often the memo names it), counted against the work bound. */
#define MAX_KEYS 256

static int check_dict(struct parser *p, const value *d, const char *what)
{
    if (d->type != CMT_PICKLE_DICT)
        return bad_type(p, "", d, what);
    if (d->n > MAX_KEYS)
        return fail(p, CMT_ESNAPSHOT_FIELD, "%s of %u keys (at most %d)", what + 2, d->n, MAX_KEYS);
    if (++p->work > p->work_max)
        return fail(p, CMT_ESNAPSHOT_FIELD,
                    "the file names more objects than its %llu bytes can hold (the memo "
                    "repeats them)",
                    (unsigned long long)p->work_max - 65536);
    return 0;
}

/* ---- frames ---- */

static const char *intern(struct parser *p, const value *str)
{
    return cmt__strings_intern(p->s->strings, str ? str->u.s : "", str ? str->n : 0);
}

static int frame_id(struct parser *p, const value *f, uint32_t *id)
{
    if (cmt__node_map_get(&p->frame_by_node, f, id))
        return 0;
    int rc = check_dict(p, f, "a frame dict");
    if (rc)
        return rc;
    const value *name, *file;
    int64_t line;
    if ((rc = get_str(p, f, "name", &name)) || (rc = get_str(p, f, "filename", &file)) ||
        (rc = get_i64(p, f, "line", 0, &line)))
        return rc;
    const char *n = intern(p, name), *fl = intern(p, file);
    if (!n || !fl)
        return nomem(p);
    if (line < 0 || line > UINT32_MAX)
        line = 0;
    if (cmt__frame_intern(&p->frames, n, fl, (uint32_t)line, id) ||
        cmt__u64_map_put(&p->frame_by_node, (uintptr_t)f, *id))
        return nomem(p);
    return 0;
}

static size_t hash_items(const value *list)
{
    uint64_t h = 0xcbf29ce484222325ull ^ list->n;
    for (uint32_t k = 0; k < list->n; k++)
        h = (h ^ (uint64_t)(uintptr_t)list->u.items[k]) * 0x100000001b3ull;
    return (size_t)(h ^ h >> 29);
}

static int same_items(const value *a, const value *b)
{
    return a->n == b->n && memcmp(a->u.items, b->u.items, a->n * sizeof *a->u.items) == 0;
}

/* The slot of `frames` in the by-content table: holding its stack, or empty (0). */
static uint32_t *seq_slot(struct parser *p, const value *frames)
{
    size_t mask = p->seq_cap - 1;
    for (size_t i = hash_items(frames) & mask;; i = (i + 1) & mask)
        if (!p->seq_slots[i] || same_items(p->rep[p->seq_slots[i] - 1], frames))
            return &p->seq_slots[i];
}

static int seq_grow(struct parser *p)
{
    size_t cap = p->seq_cap ? p->seq_cap * 2 : 1024;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return CMT_ENOMEM;
    uint32_t *old = p->seq_slots;
    size_t old_cap = p->seq_cap;
    p->seq_slots = slots;
    p->seq_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i])
            *seq_slot(p, p->rep[old[i] - 1]) = old[i];
    free(old);
    return 0;
}

/* The stack of a frame list (0 for an empty or absent one). */
static int stack_of(struct parser *p, const value *frames, uint32_t *stack)
{
    *stack = 0;
    if (!frames || !frames->n)
        return 0;
    if (cmt__node_map_get(&p->stack_by_node, frames, stack))
        return 0;
    struct cmt_snapshot *s = p->s;
    if ((s->nstacks + 1) * 2 > p->seq_cap && seq_grow(p))
        return nomem(p);
    uint32_t *slot = seq_slot(p, frames);
    if (*slot) {
        *stack = *slot - 1;
        return cmt__u64_map_put(&p->stack_by_node, (uintptr_t)frames, *stack) ? nomem(p) : 0;
    }
    if (CMT_GROW(s->frame_ids, p->ids_cap, s->nframe_ids + frames->n, 1024) ||
        CMT_GROW(s->stacks, p->stacks_cap, s->nstacks + 1, 256) ||
        CMT_GROW(p->rep, p->rep_cap, s->nstacks + 1, 256))
        return nomem(p);
    uint32_t first = (uint32_t)s->nframe_ids;
    for (uint32_t k = 0; k < frames->n; k++) {
        uint32_t id;
        int rc = frame_id(p, frames->u.items[k], &id);
        if (rc)
            return rc;
        s->frame_ids[s->nframe_ids++] = id;
    }
    *stack = (uint32_t)s->nstacks;
    p->rep[*stack] = frames;
    s->stacks[s->nstacks++] = (struct cmt_snapshot_stack){first, frames->n};
    *slot = *stack + 1;
    return cmt__u64_map_put(&p->stack_by_node, (uintptr_t)frames, *stack) ? nomem(p) : 0;
}

static int frames_field(struct parser *p, const value *d, uint32_t *stack)
{
    const value *frames;
    int rc = get_list(p, d, "frames", &frames);
    return rc ? rc : stack_of(p, frames, stack);
}

/* ---- segments and blocks ---- */

static int block_state(struct parser *p, const value *b, uint32_t *state)
{
    const value *st;
    int rc = get_str(p, b, "state", &st);
    if (rc)
        return rc;
    if (!st || cmt_pickle_str_is(st, "active_allocated"))
        *state = CMT_SNAPSHOT_ACTIVE_ALLOCATED;
    else if (cmt_pickle_str_is(st, "active_pending_free") ||
             cmt_pickle_str_is(st, "active_awaiting_free"))
        *state = CMT_SNAPSHOT_ACTIVE_PENDING_FREE;
    else if (cmt_pickle_str_is(st, "inactive"))
        *state = CMT_SNAPSHOT_INACTIVE;
    else
        return fail(p, CMT_ESNAPSHOT_FIELD, "state: '%.*s' is not a block state",
                    (int)(st->n > 40 ? 40 : st->n), st->u.s);
    return 0;
}

/* 2.0: the block's allocation is the last entry of its `history`. */
static int block_history(struct parser *p, const value *b, struct cmt_snapshot_block *out,
                         int has_requested)
{
    const value *h;
    int rc = get_list(p, b, "history", &h);
    if (rc || !h)
        return rc;
    p->s->flags |= CMT_SNAPSHOT_HISTORY;
    if (!h->n)
        return 0;
    const value *last = h->u.items[h->n - 1];
    if (last->type != CMT_PICKLE_DICT)
        return bad_type(p, "history", last, "a dict");
    if (!has_requested && (rc = get_u64(p, last, "real_size", 0, out->size, &out->requested)))
        return rc;
    return frames_field(p, last, &out->stack);
}

static int parse_block(struct parser *p, const value *b, uint64_t at_addr)
{
    int rc = check_dict(p, b, "a block dict");
    if (rc)
        return rc;
    struct cmt_snapshot_block out = {0};
    if ((rc = get_u64(p, b, "size", 1, 0, &out.size)) ||
        (rc = get_u64(p, b, "address", 0, at_addr, &out.addr)) ||
        (rc = block_state(p, b, &out.state)))
        return rc;
    const value *req = cmt_pickle_dict_get(b, "requested_size");
    if ((rc = get_u64(p, b, "requested_size", 0, out.size, &out.requested)) ||
        (rc = frames_field(p, b, &out.stack)) ||
        (rc = block_history(p, b, &out, req && req->type != CMT_PICKLE_NONE)))
        return rc;
    struct cmt_snapshot *s = p->s;
    if (CMT_GROW(s->blocks, p->blocks_cap, s->nblocks + 1, 1024))
        return nomem(p);
    s->blocks[s->nblocks++] = out;
    return 0;
}

static int pool_id(struct parser *p, const value *seg, int64_t id[2])
{
    const value *v = cmt_pickle_dict_get(seg, "segment_pool_id");
    id[0] = id[1] = 0;
    if (!v || v->type == CMT_PICKLE_NONE)
        return 0;
    if ((v->type != CMT_PICKLE_TUPLE && v->type != CMT_PICKLE_LIST) || v->n != 2 ||
        cmt_pickle_get_i64(v->u.items[0], &id[0]) || cmt_pickle_get_i64(v->u.items[1], &id[1]))
        return fail(p, CMT_ESNAPSHOT_FIELD, "segment_pool_id: not a pair of ints");
    return 0;
}

static int parse_segment(struct parser *p, const value *d)
{
    int rc = check_dict(p, d, "a segment dict");
    if (rc)
        return rc;
    struct cmt_snapshot_segment g = {0};
    const value *type, *blocks;
    if ((rc = get_device(p, d, 0, &g.dev)) || (rc = get_u64(p, d, "address", 1, 0, &g.addr)) ||
        (rc = get_u64(p, d, "total_size", 1, 0, &g.total_size)) ||
        (rc = get_u64(p, d, "allocated_size", 0, 0, &g.allocated_size)) ||
        (rc = get_u64(p, d, "active_size", 0, 0, &g.active_size)) ||
        (rc = get_u64(p, d, "requested_size", 0, 0, &g.requested_size)) ||
        (rc = get_u64(p, d, "stream", 0, 0, &g.stream)) ||
        (rc = get_str(p, d, "segment_type", &type)) ||
        (rc = get_bool(p, d, "is_expandable", &g.expandable)) || (rc = pool_id(p, d, g.pool_id)) ||
        (rc = frames_field(p, d, &g.stack)) || (rc = get_list(p, d, "blocks", &blocks)))
        return rc;
    g.small = cmt_pickle_str_is(type, "small");
    g.first_block = (uint32_t)p->s->nblocks;
    uint64_t offset = 0;
    for (uint32_t k = 0; blocks && k < blocks->n; k++) {
        p->at.sub = "blocks";
        p->at.k = k;
        if ((rc = parse_block(p, blocks->u.items[k], g.addr + offset)))
            return rc;
        offset += p->s->blocks[p->s->nblocks - 1].size;
    }
    p->at.sub = NULL;
    g.nblocks = (uint32_t)(p->s->nblocks - g.first_block);
    struct cmt_snapshot *s = p->s;
    if (CMT_GROW(s->segments, p->segments_cap, s->nsegments + 1, 256))
        return nomem(p);
    s->segments[s->nsegments++] = g;
    return 0;
}

static int parse_segments(struct parser *p, const value *list)
{
    if (list->type != CMT_PICKLE_LIST)
        return bad_type(p, "segments", list, "a list");
    for (uint32_t i = 0; i < list->n; i++) {
        at(p, "segments", i, SIZE_MAX);
        int rc = parse_segment(p, list->u.items[i]);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- trace entries ---- */

static const char *const action_names[] = {
#define ACTION_NAME(name, text) text,
    CMT_SNAPSHOT_ACTIONS(ACTION_NAME)
#undef ACTION_NAME
};

/* @return the action of a str node, CMT_SNAPSHOT_ACTION_COUNT for one not in the table. */
static int action_of(struct parser *p, const value *v, uint32_t *action)
{
    if (cmt__node_map_get(&p->action_by_node, v, action))
        return 0;
    *action = CMT_SNAPSHOT_ACTION_COUNT;
    for (uint32_t a = 0; a < CMT_SNAPSHOT_ACTION_COUNT; a++)
        if (cmt_pickle_str_is(v, action_names[a]))
            *action = a;
    return cmt__u64_map_put(&p->action_by_node, (uintptr_t)v, *action) ? nomem(p) : 0;
}

static int parse_entry(struct parser *p, const value *d, int32_t dev)
{
    int rc = check_dict(p, d, "a trace-entry dict");
    if (rc)
        return rc;
    struct cmt_snapshot_entry e = {.dev = dev};
    const value *action, *t;
    if ((rc = get_str(p, d, "action", &action)))
        return rc;
    if (!action)
        return fail(p, CMT_ESNAPSHOT_FIELD, "action: missing");
    if ((rc = action_of(p, action, &e.action)))
        return rc;
    if (e.action == CMT_SNAPSHOT_ACTION_COUNT) { /* user_defined, annotate, newer ones */
        p->s->skipped_entries++;
        return 0;
    }
    if ((rc = get_u64(p, d, "addr", 0, 0, &e.addr)) ||
        (rc = get_u64(p, d, "size", 0, 0, &e.size)) ||
        (rc = get_u64(p, d, "stream", 0, 0, &e.stream)) ||
        (rc = get_u64(p, d, "device_free", 0, 0, &e.device_free)) ||
        (rc = frames_field(p, d, &e.stack)))
        return rc;
    t = cmt_pickle_dict_get(d, "time_us");
    if (t && t->type != CMT_PICKLE_NONE) {
        if ((rc = get_u64(p, d, "time_us", 1, 0, &e.time_us)))
            return rc;
        e.has_time = 1;
    } else {
        p->s->flags |= CMT_SNAPSHOT_NO_TIME;
    }
    struct cmt_snapshot *s = p->s;
    if (CMT_GROW(s->entries, p->entries_cap, s->nentries + 1, 4096))
        return nomem(p);
    s->entries[s->nentries++] = e;
    return 0;
}

static int parse_traces(struct parser *p, const value *traces)
{
    if (traces->type != CMT_PICKLE_LIST)
        return bad_type(p, "device_traces", traces, "a list");
    if (traces->n > CMT_MAX_DEVICES)
        return fail(p, CMT_ESNAPSHOT_FIELD, "device_traces: %u devices (at most %d)", traces->n,
                    CMT_MAX_DEVICES);
    p->s->flags |= CMT_SNAPSHOT_TRACES;
    if (traces->n > p->s->ndevices)
        p->s->ndevices = traces->n;
    for (uint32_t i = 0; i < traces->n; i++) {
        const value *list = traces->u.items[i];
        at(p, "device_traces", i, SIZE_MAX);
        if (list->type == CMT_PICKLE_NONE)
            continue;
        if (list->type != CMT_PICKLE_LIST)
            return bad_type(p, "", list, "a list");
        for (uint32_t j = 0; j < list->n; j++) {
            at(p, "device_traces", i, j);
            int rc = parse_entry(p, list->u.items[j], (int32_t)i);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* ---- settings ---- */

/* roundup_power2_divisions: a dict {"1": d, "2": d, ... "32768": d} keyed by the bucket's
 * first MiB, a list of 16 values, or one value for every bucket. */
static int parse_roundup(struct parser *p, const value *v, uint32_t out[16])
{
    int64_t div;
    if (!v || v->type == CMT_PICKLE_NONE)
        return 0;
    if (cmt_pickle_get_i64(v, &div) == 0) {
        for (int k = 0; k < CMT_SNAPSHOT_ROUNDUP_BUCKETS; k++)
            out[k] = div > 0 && div <= UINT32_MAX ? (uint32_t)div : 0;
        return 0;
    }
    int is_dict = v->type == CMT_PICKLE_DICT;
    if (!is_dict && v->type != CMT_PICKLE_LIST)
        return bad_type(p, "roundup_power2_divisions", v, "a dict, list or int");
    for (uint32_t k = 0; k < v->n; k++) {
        const value *val = is_dict ? v->u.items[2 * k + 1] : v->u.items[k];
        uint32_t bucket = k;
        if (is_dict) {
            const value *key = v->u.items[2 * k];
            char buf[24];
            int64_t mib = 0;
            if (key->type == CMT_PICKLE_STR && key->n < sizeof buf) {
                memcpy(buf, key->u.s, key->n);
                buf[key->n] = 0;
                mib = strtoll(buf, NULL, 10);
            } else if (cmt_pickle_get_i64(key, &mib)) {
                mib = 0;
            }
            for (bucket = 0; bucket < 15 && ((int64_t)1 << bucket) < mib; bucket++)
                ;
        }
        if (bucket < CMT_SNAPSHOT_ROUNDUP_BUCKETS && cmt_pickle_get_i64(val, &div) == 0)
            out[bucket] = div > 0 && div <= UINT32_MAX ? (uint32_t)div : 0;
    }
    return 0;
}

static int parse_settings(struct parser *p, const value *d)
{
    struct cmt_snapshot_settings *st = &p->s->settings;
    at(p, "allocator_settings", SIZE_MAX, SIZE_MAX);
    if (d->type != CMT_PICKLE_DICT)
        return bad_type(p, "", d, "a dict");
    p->s->flags |= CMT_SNAPSHOT_SETTINGS;
    const value *conf, *gc;
    int rc;
    if ((rc = get_str(p, d, "PYTORCH_CUDA_ALLOC_CONF", &conf)) ||
        (rc = get_i64(p, d, "max_split_size", -1, &st->max_split_size)) ||
        (rc = get_bool(p, d, "expandable_segments", &st->expandable_segments)) ||
        (rc = get_bool(p, d, "release_lock_on_cudamalloc", &st->release_lock_on_cudamalloc)) ||
        (rc = parse_roundup(p, cmt_pickle_dict_get(d, "roundup_power2_divisions"),
                            st->roundup_power2_divisions)))
        return rc;
    if (!conf)
        (void)get_str(p, d, "PYTORCH_ALLOC_CONF", &conf);
    gc = cmt_pickle_dict_get(d, "garbage_collection_threshold");
    if (gc && gc->type != CMT_PICKLE_NONE &&
        cmt_pickle_get_double(gc, &st->garbage_collection_threshold))
        return bad_type(p, "garbage_collection_threshold", gc, "a float");
    if (conf && !(st->conf = intern(p, conf)))
        return nomem(p);
    return 0;
}

/* ---- the whole ---- */

/* ---- external_annotations ---- */

/* [{"stage": "START" | "END", "name": str, "device": int, "time_us": int}, ...]; entries of
 * another stage are skipped. */
static int parse_annotations(struct parser *p, const value *list)
{
    if (list->type != CMT_PICKLE_LIST)
        return bad_type(p, "external_annotations", list, "a list");
    for (uint32_t i = 0; i < list->n; i++) {
        const value *d = list->u.items[i], *stage, *name, *t;
        at(p, "external_annotations", i, SIZE_MAX);
        int rc = check_dict(p, d, "an annotation dict");
        if (rc || (rc = get_str(p, d, "stage", &stage)) || (rc = get_str(p, d, "name", &name)))
            return rc;
        struct cmt_snapshot_annotation a = {.dev = -1};
        if (!stage || !name)
            continue;
        if (stage->n == 5 && !memcmp(stage->u.s, "START", 5))
            a.start = 1;
        else if (!(stage->n == 3 && !memcmp(stage->u.s, "END", 3)))
            continue;
        if (!(a.name = intern(p, name)))
            return nomem(p);
        if (cmt_pickle_dict_get(d, "device") && (rc = get_device(p, d, 0, &a.dev)))
            return rc;
        t = cmt_pickle_dict_get(d, "time_us");
        if (t && t->type != CMT_PICKLE_NONE) {
            if ((rc = get_u64(p, d, "time_us", 1, 0, &a.time_us)))
                return rc;
            a.has_time = 1;
        }
        struct cmt_snapshot *s = p->s;
        if (CMT_GROW(s->annotations, p->annotations_cap, s->nannotations + 1, 64))
            return nomem(p);
        s->annotations[s->nannotations++] = a;
    }
    return 0;
}

static int parse_root(struct parser *p, const value *root)
{
    if (root->type == CMT_PICKLE_LIST) {
        p->s->flags |= CMT_SNAPSHOT_BARE_LIST;
        return parse_segments(p, root);
    }
    if (root->type != CMT_PICKLE_DICT)
        return fail(p, CMT_ESNAPSHOT_FORM, "the pickle holds a%s %s, not a dict or a list",
                    root->type == CMT_PICKLE_INT ? "n" : "", cmt_pickle_type_name(root->type));
    const value *segments = cmt_pickle_dict_get(root, "segments");
    const value *traces = cmt_pickle_dict_get(root, "device_traces");
    const value *settings = cmt_pickle_dict_get(root, "allocator_settings");
    if (!segments && !traces)
        return fail(p, CMT_ESNAPSHOT_FORM,
                    "the pickle holds a dict without 'segments' or 'device_traces'");
    int rc;
    if (segments && (rc = parse_segments(p, segments)))
        return rc;
    if (traces && traces->type != CMT_PICKLE_NONE && (rc = parse_traces(p, traces)))
        return rc;
    if (settings && settings->type != CMT_PICKLE_NONE && (rc = parse_settings(p, settings)))
        return rc;
    const value *annotations = cmt_pickle_dict_get(root, "external_annotations");
    if (annotations && annotations->type != CMT_PICKLE_NONE &&
        (rc = parse_annotations(p, annotations)))
        return rc;
    return 0;
}

int cmt_snapshot_sniff(const void *data, size_t len)
{
    const unsigned char *b = data;
    return len >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5;
}

int cmt_snapshot_parse(struct cmt_snapshot *snap, const void *data, size_t len, struct cmt_err *err)
{
    memset(snap, 0, sizeof *snap);
    cmt_err_sys(err, 0, 0);
    cmt_pickle *doc;
    struct cmt_err perr = {0};
    uint64_t at;
    int rc = cmt_pickle_decode(&doc, data, len, NULL, &perr, &at);
    if (rc)
        return cmt_err_set(err, rc, "pickle byte %llu: %s", (unsigned long long)at,
                           cmt_err_message(&perr));
    struct parser p = {.s = snap, .err = err, .work_max = (uint64_t)len + 65536};
    p.frames.frames = &snap->frames;
    p.frames.nframes = &snap->nframes;
    snap->protocol = cmt_pickle_protocol(doc);
    snap->settings.max_split_size = -1;
    snap->strings = cmt__strings_create();
    if (!snap->strings || CMT_GROW(snap->stacks, p.stacks_cap, 1, 256))
        rc = nomem(&p);
    else
        snap->stacks[snap->nstacks++] = (struct cmt_snapshot_stack){0, 0};
    if (!rc)
        rc = parse_root(&p, cmt_pickle_root(doc));
    cmt__u64_map_free(&p.stack_by_node);
    cmt__u64_map_free(&p.frame_by_node);
    cmt__u64_map_free(&p.action_by_node);
    cmt__frame_table_free(&p.frames);
    free(p.seq_slots);
    free(p.rep);
    cmt_pickle_free(doc);
    if (rc)
        cmt_snapshot_free(snap);
    return rc;
}

void cmt_snapshot_free(struct cmt_snapshot *snap)
{
    free(snap->segments);
    free(snap->blocks);
    free(snap->entries);
    free(snap->annotations);
    free(snap->frames);
    free(snap->frame_ids);
    free(snap->stacks);
    cmt__strings_destroy(snap->strings);
    memset(snap, 0, sizeof *snap);
}

const char *cmt_snapshot_action_name(uint32_t action)
{
    return action < CMT_SNAPSHOT_ACTION_COUNT ? action_names[action] : NULL;
}

const uint32_t *cmt_snapshot_stack_frames(const struct cmt_snapshot *snap, uint32_t stack,
                                          uint32_t *count)
{
    *count = 0;
    if (stack == 0 || stack >= snap->nstacks)
        return NULL;
    *count = snap->stacks[stack].count;
    return snap->frame_ids + snap->stacks[stack].first;
}
