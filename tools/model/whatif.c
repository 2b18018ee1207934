/* whatif.c — extract a tensor-level stream from a trace and judge its shape.
 * The replays and the recommendation are in whatif_run.c. */
#include "whatif.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "cmt_grow.h"
#include "frames.h"

#define MIB ((uint64_t)1 << 20)

/* ---- the stream, collected from replay steps -------------------------- */

/* The replay names every allocation by a dense object id (reused after its free); the stream's
 * tensor ids are those ids less one. The collector only remembers which ids are tensors of the
 * kept device now (mine[]). */
struct cmt_whatif_collector {
    struct cmt_whatif_stream *s;
    uint8_t *mine; /* by object id: 1 while it is a live tensor of the stream */
    size_t mine_cap;
    int failed; /* out of host memory */
    /* Shape of the allocations, for the caching detector. */
    uint64_t segment_shaped;
    uint64_t last_failed_size;
    bool freed_since_failure;
    bool retry_signature;
    uint64_t retry_size;
};

/* The collector feeds the stream through cmt_whatif_stream_push, as any source may. */
static int push_event(struct cmt_whatif_collector *b, const struct cmt_whatif_event *e)
{
    return cmt_whatif_stream_push(b->s, e) ? -1 : 0;
}

static int mark(struct cmt_whatif_collector *b, uint32_t object, uint8_t v)
{
    if (object >= b->mine_cap) {
        size_t had = b->mine_cap;
        if (CMT_GROW(b->mine, b->mine_cap, (size_t)object + 1, 1024) != 0)
            return -1;
        memset(b->mine + had, 0, b->mine_cap - had);
    }
    b->mine[object] = v;
    return 0;
}

static bool is_mine(const struct cmt_whatif_collector *b, uint32_t object)
{
    return object != CMT_NO_OBJECT && object < b->mine_cap && b->mine[object];
}

/* The tensor `object` ends (freed, or dropped by the replay without a recorded free). */
static int end_tensor(struct cmt_whatif_collector *b, uint32_t object, const struct cmt_event *ev)
{
    struct cmt_whatif_event f = {.id = object - 1, .t_ns = ev->t_ns, .seq = ev->seq, .is_free = 1};
    b->mine[object] = 0;
    return push_event(b, &f);
}

static bool segment_shaped(uint64_t size)
{
    return size == 2 * MIB || (size >= 20 * MIB && size % (2 * MIB) == 0);
}

/* A failed allocation, then (after frees, or directly) the same size again:
 * PyTorch's release-and-retry path. */
static void note_failure(struct cmt_whatif_collector *b, uint64_t size)
{
    if (b->last_failed_size == size && !b->retry_signature) {
        b->retry_signature = true;
        b->retry_size = size;
    }
    b->last_failed_size = size;
    b->freed_since_failure = false;
}

static void note_success(struct cmt_whatif_collector *b, uint64_t size)
{
    if (b->last_failed_size == size && b->freed_since_failure && !b->retry_signature) {
        b->retry_signature = true;
        b->retry_size = size;
    }
    b->last_failed_size = 0;
}

/* The model replays plain and stream-ordered device allocations (what PyTorch's allocator
 * turns tensors into when caching is off, or with backend:cudaMallocAsync). */
static bool modelled_kind(int kind)
{
    return kind == CMT_KIND_DEVICE || kind == CMT_KIND_ASYNC;
}

static int on_alloc(struct cmt_whatif_collector *b, const struct cmt_replay_step *st)
{
    struct cmt_whatif_stream *s = b->s;
    const struct cmt_event *ev = &st->rec.u.event;
    uint64_t size = st->request;
    if (st->failed) {
        /* Still a tensor the program asked for: replayed, with an id given at the end. */
        s->failed_allocs++;
        note_failure(b, size);
        if (s->allocs && ev->dev != s->device)
            return 0;
        struct cmt_whatif_event e = {.size = size,
                                     .stream = st->kind == CMT_KIND_ASYNC ? ev->v[CMT_FIELD_STREAM]
                                                                          : 0,
                                     .t_ns = ev->t_ns,
                                     .seq = ev->seq,
                                     .id = CMT_WHATIF_NEW_ID,
                                     .site = st->site,
                                     .failed = 1};
        return push_event(b, &e);
    }
    if (st->object == CMT_NO_OBJECT || !st->key)
        return 0;
    if (s->allocs == 0)
        s->device = ev->dev;
    if (ev->dev != s->device) {
        s->other_device_events++;
        return 0;
    }
    note_success(b, size);
    /* A pointer allocated again without a recorded free (or a tensor the replay dropped with
   * its context): the old tensor ends here. */
    if (is_mine(b, st->replaced) && end_tensor(b, st->replaced, ev))
        return -1;
    if (is_mine(b, st->object) && end_tensor(b, st->object, ev))
        return -1;
    struct cmt_whatif_event e = {.size = size,
                                 .stream = st->kind == CMT_KIND_ASYNC ? ev->v[CMT_FIELD_STREAM] : 0,
                                 .t_ns = ev->t_ns,
                                 .seq = ev->seq,
                                 .id = st->object - 1,
                                 .site = st->site};
    if (mark(b, st->object, 1) || push_event(b, &e))
        return -1;
    if (st->object > s->id_count)
        s->id_count = st->object;
    s->allocs++;
    if (segment_shaped(size))
        b->segment_shaped++;
    return 0;
}

static int on_free(struct cmt_whatif_collector *b, const struct cmt_replay_step *st)
{
    struct cmt_whatif_stream *s = b->s;
    const struct cmt_event *ev = &st->rec.u.event;
    if (is_mine(b, st->object)) {
        if (end_tensor(b, st->object, ev))
            return -1;
        s->frees++;
        b->freed_since_failure = true;
        return 0;
    }
    /* a free of device memory that is not a tensor of the stream */
    if (st->failed || !ev->v[CMT_FIELD_PTR] || !modelled_kind(cmt_op_kind((uint32_t)st->op)) ||
        !(cmt_op_attrs((uint32_t)st->op) & CMT_OPA_FREE))
        return 0;
    if (s->allocs && ev->dev != s->device && ev->dev >= 0)
        s->other_device_events++;
    else
        s->unmatched_frees++;
    return 0;
}

static unsigned collect_step(struct cmt_observer *self, const cmt_replay *rp,
                             const struct cmt_replay_step *st)
{
    (void)rp;
    struct cmt_whatif_collector *b = self->ctx;
    int failed = 0;
    if (st->is_alloc) {
        if (modelled_kind(st->kind))
            failed = on_alloc(b, st);
    } else if (st->object != CMT_NO_OBJECT || st->unknown_free) {
        failed = on_free(b, st);
    }
    if (failed) {
        b->failed = 1;
        return 0; /* out of host memory: nothing more to collect */
    }
    return CMT_OBSERVE_EVENT;
}

/* The frame a call site is named by, as report and oom name it (frames.h), as text ("" without
 * a stack). */
static void site_text(const cmt_reader *r, uint32_t leaf, char *buf, size_t size)
{
    buf[0] = 0;
    uint32_t node = cmt_call_site_node(r, leaf);
    if (node)
        cmt_reader_format_frame(r, node, buf, size);
}

/* Sites are the replay's call sites, named once the symbols (at the trace's end) are known. */
static int name_sites(struct cmt_whatif_stream *s, const cmt_replay *rp)
{
    uint32_t n = cmt_replay_site_count(rp);
    s->sites = calloc(n ? n : 1, sizeof *s->sites);
    if (!s->sites)
        return -1;
    char text[512];
    for (uint32_t i = 0; i < n; i++) {
        text[0] = 0;
        if (i)
            site_text(cmt_replay_reader(rp), cmt_replay_site(rp, i)->stack, text, sizeof text);
        if (!(s->sites[i] = strdup(text)))
            return -1;
        s->site_count = i + 1;
    }
    return 0;
}

/* The verdict: PyTorch's retry signature, or allocations nearly all shaped
 * like segments with few frees (a tensor-level stream frees most of what it
 * allocates; a caching allocator frees only on its release paths). */
static void judge_caching(struct cmt_whatif_stream *s, uint64_t shaped, bool retry,
                          uint64_t retry_size)
{
    s->caching_detected = false;
    s->caching_reason[0] = 0;
    if (retry) {
        char size[32];
        cmt_model_format_size(retry_size, size, sizeof size);
        s->caching_detected = true;
        snprintf(s->caching_reason, sizeof s->caching_reason,
                 "a failed allocation of %s was retried with the same size after releasing "
                 "memory (PyTorch's release-and-retry path)",
                 size);
    } else if (s->allocs >= 4 && shaped * 10 >= s->allocs * 9 && s->frees * 10 <= s->allocs) {
        s->caching_detected = true;
        snprintf(s->caching_reason, sizeof s->caching_reason,
                 "%" PRIu64 " of %" PRIu64 " allocations are 2 MiB or whole multiples of 2 MiB "
                 "of at least 20 MiB, and only %" PRIu64 " were freed (segment-sized)",
                 shaped, s->allocs, s->frees);
    }
}

/* "X.Y..." at the start of text: a version (digits, a dot, digits). */
static bool version_at(const char *text)
{
    const char *p = text;
    if (*p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9')
        p++;
    return *p == '.' && p[1] >= '0' && p[1] <= '9';
}

/* Copies the version at text (up to a space or the end) into out. */
static void copy_version(char *out, size_t len, const char *text)
{
    size_t n = 0;
    while (text[n] && text[n] != ' ' && (unsigned char)text[n] >= 0x20 && n + 1 < len)
        n++;
    memcpy(out, text, n);
    out[n] = 0;
}

bool cmt_whatif_torch_prints_1x(const char *version)
{
    if (!version || !version_at(version))
        return false;
    char *end;
    unsigned long major = strtoul(version, &end, 10);
    unsigned long minor = strtoul(end + 1, NULL, 10);
    return major < 2 || (major == 2 && minor == 0);
}

/* The PyTorch version the trace names (whatif.h says where it looks). */
static void find_torch_version(struct cmt_whatif_stream *s, const cmt_reader *r)
{
    static const char *const vars[] = {"PYTORCH_VERSION", "PYTORCH_BUILD_VERSION"};
    for (size_t v = 0; v < sizeof vars / sizeof *vars; v++) {
        for (size_t i = 0; i < cmt_reader_env_count(r); i++) {
            const struct cmt_env *e = cmt_reader_env(r, i);
            if (e->name && e->value && strcmp(e->name, vars[v]) == 0 && version_at(e->value)) {
                copy_version(s->torch_version, sizeof s->torch_version, e->value);
                snprintf(s->torch_version_source, sizeof s->torch_version_source, "%s", vars[v]);
                return;
            }
        }
    }
    uint32_t modules = cmt_reader_module_count(r);
    for (uint32_t id = 0; id <= modules; id++) {
        const struct cmt_module *mod = cmt_reader_module(r, id);
        if (!mod || !mod->path)
            continue;
        static const char *const dirs[] = {"/pytorch-", "/torch-"};
        for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
            const char *at = strstr(mod->path, dirs[d]);
            if (at && version_at(at + strlen(dirs[d]))) {
                at += strlen(dirs[d]);
                size_t n = 0;
                while (at[n] && strchr("0123456789.", at[n]))
                    n++;
                if (n >= sizeof s->torch_version)
                    n = sizeof s->torch_version - 1;
                memcpy(s->torch_version, at, n);
                s->torch_version[n] = 0;
                snprintf(s->torch_version_source, sizeof s->torch_version_source,
                         "a loaded module's path");
                return;
            }
        }
    }
}

static int collect_finish(struct cmt_observer *self, const cmt_replay *rp)
{
    struct cmt_whatif_collector *b = self->ctx;
    struct cmt_whatif_stream *s = b->s;
    if (b->failed || name_sites(s, rp))
        return b->failed = 1, CMT_EMODEL_NOMEM;
    const struct cmt_replay_device *d = s->allocs ? cmt_replay_device(rp, s->device) : NULL;
    if (d && d->have_baseline) {
        snprintf(s->device_name, sizeof s->device_name, "%s", d->name ? d->name : "");
        s->device_total = d->baseline_total_bytes;
        s->device_free = d->baseline_free_bytes;
        s->has_capacity = d->baseline_total_bytes > 0 && d->baseline_free_bytes > 0 &&
                          d->baseline_free_bytes <= d->baseline_total_bytes;
    }
    judge_caching(s, b->segment_shaped, b->retry_signature, b->retry_size);
    find_torch_version(s, cmt_replay_reader(rp));
    return 0;
}

int cmt_whatif_collector_create(struct cmt_whatif_collector **out, struct cmt_whatif_stream *stream)
{
    *out = NULL;
    if (!stream)
        return CMT_EINVALID;
    memset(stream, 0, sizeof *stream);
    struct cmt_whatif_collector *b = calloc(1, sizeof *b);
    if (!b)
        return CMT_EMODEL_NOMEM;
    b->s = stream;
    *out = b;
    return 0;
}

struct cmt_observer cmt_whatif_observer(struct cmt_whatif_collector *c)
{
    return (struct cmt_observer){
        .wants = CMT_OBSERVE_EVENT, .step = collect_step, .finish = collect_finish, .ctx = c};
}

int cmt_whatif_collector_end(struct cmt_whatif_collector *b, int replay_rc, struct cmt_err *err)
{
    struct cmt_whatif_stream *out = b->s;
    int rc = 0;
    out->damage = replay_rc < 0 && replay_rc != CMT_ENOMEM ? replay_rc : 0;
    if (b->failed || replay_rc == CMT_ENOMEM) {
        rc = CMT_EMODEL_NOMEM;
        cmt_err_set(err, rc, "out of host memory while reading the trace");
    } else if (out->allocs == 0) {
        rc = CMT_EWHATIF_EMPTY;
        cmt_err_set(err, rc, "%s",
                    out->failed_allocs
                        ? "no allocation in the trace succeeded: there is no stream to replay"
                        : "the trace holds no device allocations (cuMemAlloc/cuMemAllocAsync)");
    }
    if (rc) {
        cmt_whatif_stream_free(out);
        return rc;
    }
    /* The failed requests' tensors are never freed: ids after every replay object's. */
    cmt_whatif_stream_finish(out);
    return 0;
}

void cmt_whatif_collector_destroy(struct cmt_whatif_collector *b)
{
    if (!b)
        return;
    free(b->mine);
    free(b);
}

int cmt_whatif_stream_load(cmt_reader *reader, struct cmt_whatif_stream *out, struct cmt_err *err)
{
    return cmt_whatif_stream_load_observed(reader, out, NULL, 0, err);
}

int cmt_whatif_stream_load_observed(cmt_reader *reader, struct cmt_whatif_stream *out,
                                    struct cmt_observer *extra, size_t extra_count,
                                    struct cmt_err *err)
{
    if (!reader || !out || extra_count > 7 || (extra_count && !extra))
        return cmt_err_sys(err, CMT_EINVALID, 0);
    struct cmt_whatif_collector *c;
    cmt_replay *rp = NULL;
    int rc = cmt_whatif_collector_create(&c, out);
    if (rc)
        return cmt_err_sys(err, rc, 0);
    cmt_reader_rewind(reader);
    if (cmt_replay_create(&rp, reader) != 0) {
        cmt_whatif_collector_destroy(c);
        return cmt_err_set(err, CMT_EMODEL_NOMEM, "out of host memory while reading the trace");
    }
    struct cmt_observer obs[8];
    for (size_t i = 0; i < extra_count; i++)
        obs[i] = extra[i];
    obs[extra_count] = cmt_whatif_observer(c);
    rc = cmt_replay_run(rp, obs, extra_count + 1);
    rc = cmt_whatif_collector_end(c, rc == CMT_EMODEL_NOMEM ? CMT_ENOMEM : rc, err);
    cmt_replay_destroy(rp);
    cmt_whatif_collector_destroy(c);
    return rc;
}

void cmt_whatif_detect_caching(struct cmt_whatif_stream *s)
{
    uint64_t shaped = 0;
    struct cmt_whatif_cursor c;
    struct cmt_whatif_event e;
    cmt_whatif_cursor_init(&c, s);
    while (cmt_whatif_cursor_next(&c, &e))
        if (!e.is_free && segment_shaped(e.size))
            shaped++;
    judge_caching(s, shaped, false, 0);
}

int cmt_whatif_stream_from_events(const struct cmt_whatif_event *events, size_t count,
                                  uint32_t id_count, uint64_t device_total, uint64_t device_free,
                                  struct cmt_whatif_stream *out)
{
    if (!out || (!events && count))
        return CMT_EINVALID;
    memset(out, 0, sizeof *out);
    uint8_t *live = calloc(id_count ? id_count : 1, 1);
    out->sites = malloc(sizeof *out->sites);
    if (!live || !out->sites || !(out->sites[0] = strdup(""))) {
        free(live);
        cmt_whatif_stream_free(out);
        return CMT_EMODEL_NOMEM;
    }
    out->site_count = 1;
    for (size_t k = 0; k < count; k++) {
        struct cmt_whatif_event e = events[k];
        if (cmt_whatif_event_empties_cache(&e)) {
            e.id = 0;
            if (cmt_whatif_stream_push(out, &e) != 0) {
                free(live);
                cmt_whatif_stream_free(out);
                return CMT_EMODEL_NOMEM;
            }
            out->empty_caches++;
            continue;
        }
        if (e.id >= id_count || (e.is_free ? !live[e.id] : live[e.id])) {
            free(live);
            cmt_whatif_stream_free(out);
            return CMT_EINVALID;
        }
        live[e.id] = !e.is_free;
        e.site = 0;
        if (cmt_whatif_stream_push(out, &e) != 0) {
            free(live);
            cmt_whatif_stream_free(out);
            return CMT_EMODEL_NOMEM;
        }
        if (e.is_free)
            out->frees++;
        else
            out->allocs++;
    }
    free(live);
    out->id_count = id_count;
    out->device_total = device_total;
    out->device_free = device_free;
    out->has_capacity = device_total > 0 && device_free > 0 && device_free <= device_total;
    return 0;
}
