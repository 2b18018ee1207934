/* export_perfetto.c — Chrome / Perfetto trace-event JSON ("JSON Object Format": a
 * traceEvents array; ui.perfetto.dev and chrome://tracing open it). Per device, a counter
 * track per memory kind ("C" events, one arg per kind seen so far: Perfetto draws one track
 * per arg); allocations of at least min_slice_bytes as async slices ("b"/"e", id = address)
 * named by their call site, closed at the end when leaked; where an allocator recorded its
 * actions with its figures, a counter track of its allocated and reserved bytes; out-of-memory
 * episodes as process-wide instant events ("i") with their verdict and figures; the program's
 * phases (ranges: NVTX, annotate.h, snapshot annotations) as slices: push ranges as complete
 * events ("X") on their thread, start/end ranges as async slices (cat "phase", they may end on
 * another thread), marks as thread instants. ts is in microseconds.
 *
 * With an allocator's actions (ALLOC_EVENT records: a PyTorch snapshot imported, record
 * --torch, annotate.h) also its blocks as tensor slices (cat "tensor", from the alloc to the
 * free request, named by the top frame: the first Python frame, else the call site), and its
 * inactive split bytes beside allocated and reserved.
 *
 * A window (--from, --to, --device) writes what happened inside it: it opens with the state at
 * its start (a counter per track, a slice begun at `from` for each allocation and block live
 * then) and closes what is still open at its end. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "allocator.h"
#include "frames.h"
#include "oom.h"

/* Writes ts as microseconds with three decimals (exact: t is in ns). */
static void ts(struct cmt__out *o, uint64_t t_ns)
{
    unsigned frac = (unsigned)(t_ns % 1000);
    char d[4] = {'.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10),
                 (char)('0' + frac % 10)};
    cmt__out_u64(o, t_ns / 1000);
    cmt__out_bytes(o, d, 4);
}

static void begin_event(struct cmt__export_perfetto *x)
{
    cmt__out_str(&x->out, x->first ? "\n" : ",\n");
    x->first = 0;
}

/* An event's `,"pid":P,"tid":tid,"ts":T` (T in microseconds). */
static void pid_tid_ts(struct cmt__export_perfetto *x, uint64_t tid, uint64_t t_ns)
{
    struct cmt__out *o = &x->out;
    cmt__out_str(o, ",\"pid\":");
    cmt__out_u64(o, x->pid);
    cmt__out_str(o, ",\"tid\":");
    cmt__out_u64(o, tid);
    cmt__out_str(o, ",\"ts\":");
    ts(o, t_ns);
}

static void device_name(char *buf, size_t size, int32_t dev)
{
    if (dev < 0)
        snprintf(buf, size, "device ? memory");
    else
        snprintf(buf, size, "GPU %d memory", dev);
}

/* A counter event for device d's kinds (every kind it has held so far). */
static void counter(struct cmt__export_perfetto *x, const struct cmt_replay_device *d,
                    uint64_t t_ns)
{
    uint32_t slot = (uint32_t)(d->dev + 1);
    if (!cmt__export_window_dev(&x->window, d->dev))
        return;
    if (slot >= x->kinds_seen_count) {
        uint32_t n = slot + 8;
        uint32_t *k = realloc(x->kinds_seen, n * sizeof *k);
        if (!k)
            return;
        memset(k + x->kinds_seen_count, 0, (n - x->kinds_seen_count) * sizeof *k);
        x->kinds_seen = k;
        x->kinds_seen_count = n;
    }
    uint32_t seen = x->kinds_seen[slot];
    for (int k = 0; k < CMT_KIND_COUNT; k++)
        if (d->kind_bytes[k] && k != CMT_KIND_MAPPING)
            seen |= 1u << k;
    if (!seen)
        return;
    x->kinds_seen[slot] = seen;
    char name[64];
    device_name(name, sizeof name, d->dev);
    struct cmt__out *o = &x->out;
    begin_event(x);
    cmt__out_str(o, "{\"ph\":\"C\",\"name\":\"");
    cmt__out_str(o, name);
    cmt__out_char(o, '"');
    pid_tid_ts(x, 0, t_ns);
    cmt__out_str(o, ",\"args\":{");
    int first = 1;
    for (int k = 0; k < CMT_KIND_COUNT; k++)
        if (seen & (1u << k)) {
            cmt__out_str(o, first ? "\"" : ",\"");
            cmt__out_str(o, cmt_kind_name(k));
            cmt__out_bytes(o, "\":", 2);
            cmt__out_u64(o, d->kind_bytes[k]);
            first = 0;
        }
    cmt__out_bytes(o, "}}", 2);
}

/* The slot of names[i] in a cache grown on demand (*names, *count), or NULL when out of
 * memory. */
static char **name_slot(char ***names, uint32_t *count, uint32_t i)
{
    if (i >= *count) {
        uint32_t n = i + 64;
        char **grown = realloc(*names, n * sizeof *grown);
        if (!grown)
            return NULL;
        memset(grown + *count, 0, (n - *count) * sizeof *grown);
        *names = grown;
        *count = n;
    }
    return &(*names)[i];
}

/* The call site's name (cached per site), JSON-quoted when written. */
static const char *site_name(struct cmt__export_perfetto *x, const cmt_replay *rp, uint32_t site)
{
    char **name = name_slot(&x->site_names, &x->site_name_count, site);
    if (name && !*name) {
        char buf[512];
        const struct cmt_replay_site *s = cmt_replay_site(rp, site);
        *name = strdup(cmt_stack_top(x->reader, s ? s->stack : 0, buf, sizeof buf));
    }
    return name && *name ? *name : "allocation";
}

/* An async slice's begin or end up to its ts: `{"ph":PH,"cat":CAT,"name":NAME,"id":ID,...`. */
static void async_head(struct cmt__export_perfetto *x, char ph, const char *cat, const char *name,
                       const char *id, uint32_t tid, uint64_t t_ns)
{
    struct cmt__out *o = &x->out;
    begin_event(x);
    cmt__out_str(o, ph == 'b' ? "{\"ph\":\"b\",\"cat\":\"" : "{\"ph\":\"e\",\"cat\":\"");
    cmt__out_str(o, cat);
    cmt__out_str(o, "\",\"name\":");
    cmt__out_quote(o, name);
    cmt__out_str(o, ",\"id\":\"");
    cmt__out_str(o, id);
    cmt__out_char(o, '"');
    pid_tid_ts(x, tid, t_ns);
}

static void slice(struct cmt__export_perfetto *x, const cmt_replay *rp, char ph, uint64_t key,
                  uint64_t bytes, uint32_t site, int32_t dev, uint32_t tid, uint64_t t_ns)
{
    struct cmt__out *o = &x->out;
    char id[24];
    snprintf(id, sizeof id, "0x%" PRIx64, key);
    async_head(x, ph, "allocation", site_name(x, rp, site), id, tid, t_ns);
    if (ph == 'b') {
        cmt__out_str(o, ",\"args\":{\"bytes\":");
        cmt__out_u64(o, bytes);
        cmt__out_str(o, ",\"dev\":");
        cmt__out_i64(o, dev);
        cmt__out_str(o, ",\"site\":");
        cmt__out_u64(o, site);
        cmt__out_char(o, '}');
    }
    cmt__out_char(o, '}');
}

static int sliced(const struct cmt__export_perfetto *x, int kind, uint64_t bytes)
{
    /* graph memory: in the counters only (a launch makes several objects at once) */
    return CMT_KIND_HAS(kind, HOLE) && kind != CMT_KIND_GRAPH && bytes >= x->min_slice_bytes &&
           bytes;
}

static void write_allocator_counter(struct cmt__export_perfetto *x, const struct cmt_alloc_event *a,
                                    uint64_t inactive_split);

static void flush_figures(struct cmt__export_perfetto *x, uint32_t i)
{
    struct cmt__perfetto_figures *f = &x->pending[i];
    struct cmt_alloc_event a = {
        .dev = f->dev, .t_ns = f->t_ns, .fields = CMT_AF(ALLOCATED) | CMT_AF(RESERVED)};
    a.v[CMT_AFIELD_ALLOCATED] = f->allocated;
    a.v[CMT_AFIELD_RESERVED] = f->reserved;
    write_allocator_counter(x, &a, f->inactive_split);
    x->pending[i] = x->pending[--x->pending_count];
}

/* The figures the pass rebuilt after an action that recorded none, written once its moment
 * (device and time) is over. */
static void rebuilt_counter(struct cmt__export_perfetto *x, const struct cmt_alloc_event *a)
{
    uint32_t i = 0;
    while (i < x->pending_count && x->pending[i].dev != a->dev)
        i++;
    if (i < x->pending_count && x->pending[i].t_ns != a->t_ns)
        flush_figures(x, i), i = x->pending_count;
    if (i == x->pending_count && i == sizeof x->pending / sizeof *x->pending)
        flush_figures(x, 0), i = x->pending_count;
    struct cmt_alloc_figures f = cmt_alloc_device_figures(x->alloc, a->dev);
    x->pending[i] = (struct cmt__perfetto_figures){.dev = a->dev,
                                                   .t_ns = a->t_ns,
                                                   .allocated = f.allocated_bytes,
                                                   .reserved = f.reserved_bytes,
                                                   .inactive_split = f.inactive_split_bytes};
    if (i == x->pending_count)
        x->pending_count++;
}

/* An allocator's figures after one of its actions (ALLOC_EVENT with ALLOCATED or RESERVED, or
 * else as the pass rebuilt them): a counter track "GPU N allocator" with allocated and
 * reserved bytes, and the inactive split bytes the pass rebuilt. */
static void allocator_counter(struct cmt__export_perfetto *x, const struct cmt_alloc_event *a)
{
    const uint32_t both = CMT_AF(ALLOCATED) | CMT_AF(RESERVED);
    if (!(a->fields & both)) {
        if (x->alloc && a->action != CMT_AA_SNAPSHOT && a->action != CMT_AA_OOM)
            rebuilt_counter(x, a);
        return;
    }
    for (uint32_t i = 0; i < x->pending_count; i++)
        if (x->pending[i].dev == a->dev) {
            flush_figures(x, i);
            break;
        }
    write_allocator_counter(
        x, a,
        x->alloc ? cmt_alloc_device_figures(x->alloc, a->dev).inactive_split_bytes : UINT64_MAX);
}

static void write_allocator_counter(struct cmt__export_perfetto *x, const struct cmt_alloc_event *a,
                                    uint64_t inactive_split)
{
    const uint32_t both = CMT_AF(ALLOCATED) | CMT_AF(RESERVED);
    char name[64];
    struct cmt__out *o = &x->out;
    if (a->dev < 0)
        snprintf(name, sizeof name, "device ? allocator");
    else
        snprintf(name, sizeof name, "GPU %d allocator", a->dev);
    begin_event(x);
    cmt__out_str(o, "{\"ph\":\"C\",\"name\":\"");
    cmt__out_str(o, name);
    cmt__out_char(o, '"');
    pid_tid_ts(x, 0, a->t_ns);
    cmt__out_str(o, ",\"args\":{");
    if (a->fields & CMT_AF(ALLOCATED)) {
        cmt__out_str(o, "\"allocated\":");
        cmt__out_u64(o, a->v[CMT_AFIELD_ALLOCATED]);
    }
    if ((a->fields & both) == both)
        cmt__out_char(o, ',');
    if (a->fields & CMT_AF(RESERVED)) {
        cmt__out_str(o, "\"reserved\":");
        cmt__out_u64(o, a->v[CMT_AFIELD_RESERVED]);
    }
    if (inactive_split != UINT64_MAX) {
        cmt__out_str(o, ",\"inactive_split\":");
        cmt__out_u64(o, inactive_split);
    }
    cmt__out_bytes(o, "}}", 2);
}

/* ---- the allocator's blocks as tensor slices ---- */

static size_t tensor_slot(const struct cmt__export_perfetto *x, int32_t dev, uint64_t addr)
{
    uint64_t h = (addr >> 4) * UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)(uint32_t)dev;
    size_t i = (size_t)(h >> 17) & (x->tensor_cap - 1);
    while (x->tensors[i].dev != INT32_MIN &&
           !(x->tensors[i].dev == dev && x->tensors[i].addr == addr))
        i = (i + 1) & (x->tensor_cap - 1);
    return i;
}

/* @return 0, or -1 when out of memory (the slice is then left out). */
static int tensor_grow(struct cmt__export_perfetto *x)
{
    size_t cap = x->tensor_cap ? x->tensor_cap * 2 : 1024;
    struct cmt__perfetto_tensor *old = x->tensors, *t = malloc(cap * sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < cap; i++)
        t[i].dev = INT32_MIN;
    size_t old_cap = x->tensor_cap;
    x->tensors = t;
    x->tensor_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].dev != INT32_MIN)
            x->tensors[tensor_slot(x, old[i].dev, old[i].addr)] = old[i];
    free(old);
    return 0;
}

/* The top frame of an allocation stack (cached per stack). */
static const char *frame_name(struct cmt__export_perfetto *x, uint32_t stack)
{
    char **name = name_slot(&x->frame_names, &x->frame_name_count, stack);
    if (name && !*name) {
        char buf[512] = "tensor";
        uint32_t node = stack ? cmt_alloc_site_node(x->reader, stack) : 0;
        if (node)
            cmt_reader_format_frame(x->reader, node, buf, sizeof buf);
        *name = strdup(buf);
    }
    return name && *name ? *name : "tensor";
}

static void tensor_slice(struct cmt__export_perfetto *x, char ph,
                         const struct cmt__perfetto_tensor *t, uint64_t bytes, uint64_t requested,
                         uint32_t tid, uint64_t t_ns)
{
    struct cmt__out *o = &x->out;
    char id[40];
    snprintf(id, sizeof id, "%d:0x%" PRIx64, t->dev, t->addr);
    async_head(x, ph, "tensor", frame_name(x, t->stack), id, tid, t_ns);
    if (ph == 'b') {
        cmt__out_str(o, ",\"args\":{\"bytes\":");
        cmt__out_u64(o, bytes);
        cmt__out_str(o, ",\"requested\":");
        cmt__out_u64(o, requested);
        cmt__out_str(o, ",\"dev\":");
        cmt__out_i64(o, t->dev);
        cmt__out_char(o, '}');
    }
    cmt__out_char(o, '}');
}

static void tensor_end(struct cmt__export_perfetto *x, int32_t dev, uint64_t addr, uint32_t tid,
                       uint64_t t_ns)
{
    if (!x->tensor_count)
        return;
    size_t i = tensor_slot(x, dev, addr);
    if (x->tensors[i].dev == INT32_MIN)
        return; /* never begun: allocated before the window, or a ring-limited snapshot's */
    tensor_slice(x, 'e', &x->tensors[i], 0, 0, tid, t_ns);
    x->tensors[i].dev = INT32_MIN; /* out of the set: the entries after it move back */
    x->tensor_count--;
    for (size_t j = (i + 1) & (x->tensor_cap - 1); x->tensors[j].dev != INT32_MIN;
         j = (j + 1) & (x->tensor_cap - 1)) {
        struct cmt__perfetto_tensor t = x->tensors[j];
        x->tensors[j].dev = INT32_MIN;
        x->tensors[tensor_slot(x, t.dev, t.addr)] = t;
    }
}

static void tensor_begin(struct cmt__export_perfetto *x, int32_t dev, uint64_t addr, uint64_t bytes,
                         uint64_t requested, uint32_t stack, uint32_t tid, uint64_t t_ns)
{
    tensor_end(x, dev, addr, tid, t_ns); /* an alloc over one never freed */
    if (2 * (x->tensor_count + 1) > x->tensor_cap && tensor_grow(x) != 0)
        return;
    struct cmt__perfetto_tensor *t = &x->tensors[tensor_slot(x, dev, addr)];
    *t = (struct cmt__perfetto_tensor){addr, dev, stack};
    x->tensor_count++;
    tensor_slice(x, 'b', t, bytes, requested, tid, t_ns);
}

/* A block's action: its alloc begins its slice, its free request (or a free completed without
 * one) ends it. */
static void tensor(struct cmt__export_perfetto *x, const struct cmt_alloc_event *a)
{
    const uint64_t *v = a->v;
    uint64_t addr = (a->fields & CMT_AF(ADDR)) ? v[CMT_AFIELD_ADDR] : 0;
    uint64_t size = (a->fields & CMT_AF(SIZE)) ? v[CMT_AFIELD_SIZE] : 0;
    if (a->action == CMT_AA_ALLOC)
        tensor_begin(x, a->dev, addr, size,
                     (a->fields & CMT_AF(REQUESTED)) ? v[CMT_AFIELD_REQUESTED] : size, a->stack,
                     a->tid, a->t_ns);
    else if (a->action == CMT_AA_FREE_REQUESTED || a->action == CMT_AA_FREE_COMPLETED)
        tensor_end(x, a->dev, addr, a->tid, a->t_ns);
}

/* ---- the window ---- */

struct live_ctx {
    struct cmt__export_perfetto *x;
    const cmt_replay *rp;
    uint64_t t_ns;
    char ph;
};

static void live_slice(void *ctx, const struct cmt_replay_object *o)
{
    struct live_ctx *l = ctx;
    if (sliced(l->x, o->kind, o->size) && cmt__export_window_dev(&l->x->window, o->dev))
        slice(l->x, l->rp, l->ph, o->addr, o->size, o->site, o->dev, 0, l->t_ns);
}

/* The state at the window's start: each device's counters, a slice begun at `from` for each
 * allocation and block live then (but `skip`'s own, the action that opens it). */
static void open_window(struct cmt__export_perfetto *x, const cmt_replay *rp,
                        const struct cmt_alloc_event *skip)
{
    uint64_t t = x->window.from_ns;
    x->opened = 1;
    if (!t)
        return;
    for (uint32_t s = 0; s < cmt_replay_device_count(rp); s++)
        if (cmt_replay_device_slot(rp, s))
            counter(x, cmt_replay_device_slot(rp, s), t);
    struct live_ctx l = {x, rp, t, 'b'};
    cmt_replay_foreach_live(rp, live_slice, &l);
    for (size_t i = 0; x->alloc && i < cmt_alloc_device_count(x->alloc); i++) {
        const struct cmt_alloc_device *d = cmt_alloc_device_at(x->alloc, i);
        struct cmt_alloc_block *b = NULL;
        size_t j = 0;
        while (j < i && cmt_alloc_device_at(x->alloc, j)->dev != d->dev)
            j++;
        if (j == i && cmt__export_window_dev(&x->window, d->dev)) { /* its first allocator */
            struct cmt_alloc_figures f = cmt_alloc_device_figures(x->alloc, d->dev);
            struct cmt_alloc_event a = {
                .dev = d->dev, .t_ns = t, .fields = CMT_AF(ALLOCATED) | CMT_AF(RESERVED)};
            a.v[CMT_AFIELD_ALLOCATED] = f.allocated_bytes;
            a.v[CMT_AFIELD_RESERVED] = f.reserved_bytes;
            write_allocator_counter(x, &a, f.inactive_split_bytes);
        }
        size_t n = cmt__export_window_dev(&x->window, d->dev) ? cmt_alloc_blocks(d, &b) : 0;
        for (size_t k = 0; b && k < n; k++)
            if (!(skip && skip->action == CMT_AA_ALLOC && skip->dev == d->dev &&
                  (skip->fields & CMT_AF(ADDR)) && skip->v[CMT_AFIELD_ADDR] == b[k].addr))
                tensor_begin(x, d->dev, b[k].addr, b[k].size, b[k].requested, b[k].stack, 0, t);
        free(b);
    }
}

/* What is still open at t: the allocator's figures held back, the allocations' and the
 * blocks' slices. */
static void close_window(struct cmt__export_perfetto *x, const cmt_replay *rp, uint64_t t)
{
    while (x->pending_count)
        flush_figures(x, 0);
    struct live_ctx l = {x, rp, t, 'e'};
    cmt_replay_foreach_live(rp, live_slice, &l);
    for (size_t i = 0; i < x->tensor_cap; i++)
        if (x->tensors[i].dev != INT32_MIN) {
            tensor_slice(x, 'e', &x->tensors[i], 0, 0, 0, t);
            x->tensors[i].dev = INT32_MIN;
        }
    x->tensor_count = 0;
    x->closed = 1;
}

/* The moments of the window: just before its first event (the state before `from`), and
 * after its last (the state at `to`). */
static void perfetto_moment(struct cmt_observer *self, const cmt_replay *rp)
{
    struct cmt__export_perfetto *x = self->ctx;
    if (!x->opened) {
        open_window(x, rp, NULL);
        self->before_t = x->window.to_ns;
    } else {
        if (!x->closed)
            close_window(x, rp, x->window.to_ns);
        self->before_t = UINT64_MAX;
    }
}

/* Where t lies: before the window (-1), inside it (0, opened now if it was not: `skip` is the
 * allocator action that opens it, or NULL), past it (1, closed now). */
static int enter_window(struct cmt__export_perfetto *x, const cmt_replay *rp, uint64_t t,
                        const struct cmt_alloc_event *skip)
{
    if (t > x->window.to_ns) { /* for an event: no moment came first, it was past the last */
        close_window(x, rp, x->window.to_ns);
        return 1;
    }
    if (t < x->window.from_ns)
        return -1;
    if (!x->opened)
        open_window(x, rp, skip);
    if (t > x->last_t_ns)
        x->last_t_ns = t;
    return 0;
}

static unsigned allocator_step(struct cmt__export_perfetto *x, const cmt_replay *rp,
                               const struct cmt_alloc_event *a)
{
    int where = enter_window(x, rp, a->t_ns, a);
    if (where)
        return where > 0 ? 0 : CMT_OBSERVE_ALL;
    if (cmt__export_window_dev(&x->window, a->dev)) {
        allocator_counter(x, a);
        tensor(x, a);
    }
    return CMT_OBSERVE_ALL;
}

static unsigned perfetto_step(struct cmt_observer *self, const cmt_replay *rp,
                              const struct cmt_replay_step *st)
{
    struct cmt__export_perfetto *x = self->ctx;
    if (x->closed)
        return 0;
    if (st->rec.type == CMT_REC_ALLOC_EVENT)
        return allocator_step(x, rp, &st->rec.u.alloc_event);
    if (st->rec.type != CMT_REC_EVENT)
        return CMT_OBSERVE_ALL;
    const struct cmt_event *ev = &st->rec.u.event;
    int where = enter_window(x, rp, ev->t_ns, NULL);
    if (where)
        return where > 0 ? 0 : CMT_OBSERVE_ALL;
    int32_t dev = st->owner ? st->owner->dev : ev->dev; /* the memory's device */
    if (st->kind >= 0 && sliced(x, st->kind, st->bytes) &&
        cmt__export_window_dev(&x->window, dev)) {
        if (!st->is_alloc || st->replaced != CMT_NO_OBJECT) /* a free, or a key reused */
            slice(x, rp, 'e', st->key, st->bytes, st->site, ev->dev, ev->tid, ev->t_ns);
        if (st->is_alloc && !st->failed)
            slice(x, rp, 'b', st->key, st->bytes, st->site, ev->dev, ev->tid, ev->t_ns);
    }
    if (st->all_devices) {
        for (uint32_t s = 0; s < cmt_replay_device_count(rp); s++) {
            const struct cmt_replay_device *d = cmt_replay_device_slot(rp, s);
            if (d)
                counter(x, d, ev->t_ns);
        }
    } else if (st->kind >= 0 || st->delta) {
        if (st->device)
            counter(x, st->device, ev->t_ns);
        if (st->owner)
            counter(x, st->owner, ev->t_ns);
    }
    return CMT_OBSERVE_ALL;
}

static void metadata(struct cmt__export_perfetto *x, const char *what, uint32_t tid,
                     const char *name)
{
    struct cmt__out *o = &x->out;
    begin_event(x);
    cmt__out_str(o, "{\"ph\":\"M\",\"name\":\"");
    cmt__out_str(o, what);
    cmt__out_str(o, "\",\"pid\":");
    cmt__out_u64(o, x->pid);
    cmt__out_str(o, ",\"tid\":");
    cmt__out_u64(o, tid);
    cmt__out_str(o, ",\"ts\":0,\"args\":{\"name\":");
    cmt__out_quote(o, name);
    cmt__out_bytes(o, "}}", 2);
}

struct cmt_observer cmt__export_perfetto_observer(struct cmt__export_perfetto *x, FILE *f,
                                                  const cmt_reader *r, uint64_t min_slice_bytes,
                                                  const cmt_alloc *alloc,
                                                  const struct cmt__export_window *window)
{
    memset(x, 0, sizeof *x);
    x->window = *window;
    x->alloc = alloc;
    x->f = f;
    x->reader = r;
    x->min_slice_bytes = min_slice_bytes;
    x->first = 1;
    cmt__out_init(&x->out, f);
    const struct cmt_process *proc = cmt_reader_process(r);
    x->pid = proc ? proc->pid : 0;
    cmt__out_str(&x->out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":"
                          "\"cumemtrace\"},\"traceEvents\":[");
    char name[512];
    snprintf(name, sizeof name, "%s (pid %" PRIu64 ")",
             proc && proc->argc  ? proc->argv[0]
             : proc && proc->exe ? proc->exe
                                 : "process",
             x->pid);
    metadata(x, "process_name", 0, name);
    struct cmt_observer o = {.wants = CMT_OBSERVE_ALL, .step = perfetto_step, .ctx = x};
    if (window->from_ns) /* just before the first event at or after `from` */
        o.before_t = window->from_ns - 1, o.before = perfetto_moment;
    else if (window->to_ns != UINT64_MAX)
        o.before_t = window->to_ns, o.before = perfetto_moment;
    else
        o.before_t = UINT64_MAX;
    if (!window->from_ns)
        x->opened = 1;
    return o;
}

/* The ranges of the pass's phases as slices (see the top of the file). */
static void phase_slices(struct cmt__export_perfetto *x, const struct cmt_phases *ph)
{
    struct cmt__out *o = &x->out;
    char id[32];
    for (size_t i = 0; i < ph->range_count; i++) {
        const struct cmt_phase_range *r = &ph->ranges[i];
        if (r->end_ns < x->window.from_ns || r->start_ns > x->window.to_ns)
            continue; /* outside the window; clipped to it below */
        uint64_t start = r->start_ns > x->window.from_ns ? r->start_ns : x->window.from_ns;
        uint64_t stop = r->end_ns < x->window.to_ns ? r->end_ns : x->window.to_ns;
        for (int end = 0; end < 1 + (r->action == CMT_RA_START); end++) {
            begin_event(x);
            cmt__out_str(o, r->action == CMT_RA_PUSH   ? "{\"ph\":\"X\""
                            : r->action == CMT_RA_MARK ? "{\"ph\":\"i\",\"s\":\"t\""
                            : end                      ? "{\"ph\":\"e\""
                                                       : "{\"ph\":\"b\"");
            cmt__out_str(o, ",\"cat\":\"phase\",\"name\":");
            cmt__out_quote(o, cmt_phases_name(ph, r->phase));
            if (r->action == CMT_RA_START) {
                snprintf(id, sizeof id, "phase-%zu", i);
                cmt__out_str(o, ",\"id\":\"");
                cmt__out_str(o, id);
                cmt__out_char(o, '"');
            }
            pid_tid_ts(x, r->tid, end ? stop : start);
            if (r->action == CMT_RA_PUSH) {
                cmt__out_str(o, ",\"dur\":");
                ts(o, stop - start);
            }
            cmt__out_str(o, ",\"args\":{\"category\":");
            cmt__out_u64(o, r->category);
            cmt__out_str(o, r->open ? ",\"open\":true}}" : "}}");
        }
    }
}

void cmt__export_perfetto_end(struct cmt__export_perfetto *x, const struct cmt__pass *p)
{
    const cmt_replay *rp = p->replay;
    uint64_t end = cmt_replay_totals(rp)->last_t_ns;
    if (!x->closed)
        close_window(x, rp, end > x->last_t_ns ? end : x->last_t_ns);
    phase_slices(x, &p->phases);
    for (uint32_t i = 0; i < cmt_replay_thread_count(rp); i++) {
        const struct cmt_replay_thread *th = cmt_replay_thread(rp, i);
        const char *name = cmt_reader_thread_name(p->reader, th->tid);
        if (name)
            metadata(x, "thread_name", th->tid, name);
    }
    for (uint32_t i = 0; p->oom && i < cmt_oom_count(p->oom); i++) {
        const struct cmt_oom_episode *e = cmt_oom_episode(p->oom, i);
        char a[32], name[160];
        if (!cmt__export_window_time(&x->window, e->t_ns) ||
            !cmt__export_window_dev(&x->window, e->dev))
            continue;
        snprintf(name, sizeof name, "out of memory on %s%d: %s (%s)",
                 e->dev < 0 ? "device " : "GPU ", e->dev, cmt__bytes(e->request_bytes, a),
                 cmt_verdict_name(e->verdict));
        struct cmt__out *o = &x->out;
        begin_event(x);
        cmt__out_str(o, "{\"ph\":\"i\",\"s\":\"p\",\"cat\":\"oom\",\"name\":");
        cmt__out_quote(o, name);
        pid_tid_ts(x, e->tid, e->t_ns);
        cmt__out_flush(o); /* the args are written with the JSON writer, straight to the FILE */
        struct cmt__json j;
        cmt__json_init(&j, x->f);
        fputs(",\"args\":", x->f);
        cmt__json_object(&j, NULL);
        cmt__json_i64(&j, "dev", e->dev);
        cmt__json_u64(&j, "request_bytes", e->request_bytes);
        cmt__json_string(&j, "verdict", cmt_verdict_name(e->verdict));
        cmt__json_bool(&j, "fatal", e->fatal);
        cmt__json_u64(&j, "attempts", e->attempts);
        cmt__json_u64(&j, "free_bytes", e->free_bytes);
        cmt__json_u64(&j, "total_bytes", e->total_bytes);
        cmt__json_u64(&j, "process_bytes", e->process_bytes);
        cmt__json_u64(&j, "others_bytes", e->others_bytes);
        cmt__json_u64(&j, "shortfall_bytes", e->shortfall_bytes);
        cmt__json_stack(&j, "stack", p->reader, e->stack);
        cmt__json_end_object(&j);
        fputc('}', x->f);
    }
    cmt__out_str(&x->out, "\n]}\n");
    cmt__out_flush(&x->out);
    for (uint32_t i = 0; i < x->site_name_count; i++)
        free(x->site_names[i]);
    free(x->site_names);
    for (uint32_t i = 0; i < x->frame_name_count; i++)
        free(x->frame_names[i]);
    free(x->frame_names);
    free(x->tensors);
    free(x->kinds_seen);
}
