/* export_perfetto.c — Chrome / Perfetto trace-event JSON ("JSON Object Format": a
 * traceEvents array; ui.perfetto.dev and chrome://tracing open it). Per device, a counter
 * track per memory kind ("C" events, one arg per kind seen so far: Perfetto draws one track
 * per arg); allocations of at least min_slice_bytes as async slices ("b"/"e", id = address)
 * named by their call site, closed at the end when leaked; where an allocator recorded its
 * actions with its figures, a counter track of its allocated and reserved bytes; out-of-memory
 * episodes as process-wide instant events ("i") with their verdict and figures; the program's
 * phases (ranges: NVTX, annotate.h, snapshot annotations) as slices: push ranges as complete
 * events ("X") on their thread, start/end ranges as async slices (cat "phase", they may end on
 * another thread), marks as thread instants. ts is in microseconds. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
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

/* The call site's name (cached per site), JSON-quoted when written. */
static const char *site_name(struct cmt__export_perfetto *x, const cmt_replay *rp, uint32_t site)
{
    if (site >= x->site_name_count) {
        uint32_t n = site + 64;
        char **names = realloc(x->site_names, n * sizeof *names);
        if (!names)
            return "allocation";
        memset(names + x->site_name_count, 0, (n - x->site_name_count) * sizeof *names);
        x->site_names = names;
        x->site_name_count = n;
    }
    if (!x->site_names[site]) {
        char buf[512];
        const struct cmt_replay_site *s = cmt_replay_site(rp, site);
        x->site_names[site] = strdup(cmt_stack_top(x->reader, s ? s->stack : 0, buf, sizeof buf));
        if (!x->site_names[site])
            return "allocation";
    }
    return x->site_names[site];
}

static void slice(struct cmt__export_perfetto *x, const cmt_replay *rp, char ph, uint64_t key,
                  uint64_t bytes, uint32_t site, int32_t dev, uint32_t tid, uint64_t t_ns)
{
    struct cmt__out *o = &x->out;
    char id[24];
    begin_event(x);
    cmt__out_str(o, ph == 'b' ? "{\"ph\":\"b\"" : "{\"ph\":\"e\"");
    cmt__out_str(o, ",\"cat\":\"allocation\",\"name\":");
    cmt__out_quote(o, site_name(x, rp, site));
    snprintf(id, sizeof id, "0x%" PRIx64, key);
    cmt__out_str(o, ",\"id\":\"");
    cmt__out_str(o, id);
    cmt__out_char(o, '"');
    pid_tid_ts(x, tid, t_ns);
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

static void write_allocator_counter(struct cmt__export_perfetto *x,
                                    const struct cmt_alloc_event *a);

static void flush_figures(struct cmt__export_perfetto *x, uint32_t i)
{
    struct cmt__perfetto_figures *f = &x->pending[i];
    struct cmt_alloc_event a = {
        .dev = f->dev, .t_ns = f->t_ns, .fields = CMT_AF(ALLOCATED) | CMT_AF(RESERVED)};
    a.v[CMT_AFIELD_ALLOCATED] = f->allocated;
    a.v[CMT_AFIELD_RESERVED] = f->reserved;
    write_allocator_counter(x, &a);
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
                                                   .reserved = f.reserved_bytes};
    if (i == x->pending_count)
        x->pending_count++;
}

/* An allocator's figures after one of its actions (ALLOC_EVENT with ALLOCATED or RESERVED, or
 * else as the pass rebuilt them): a counter track "GPU N allocator" with allocated and
 * reserved bytes. */
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
    write_allocator_counter(x, a);
}

static void write_allocator_counter(struct cmt__export_perfetto *x, const struct cmt_alloc_event *a)
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
    cmt__out_bytes(o, "}}", 2);
}

static unsigned perfetto_step(struct cmt_observer *self, const cmt_replay *rp,
                              const struct cmt_replay_step *st)
{
    struct cmt__export_perfetto *x = self->ctx;
    if (st->rec.type == CMT_REC_ALLOC_EVENT)
        allocator_counter(x, &st->rec.u.alloc_event);
    if (st->rec.type != CMT_REC_EVENT)
        return CMT_OBSERVE_ALL;
    const struct cmt_event *ev = &st->rec.u.event;
    if (st->kind >= 0 && sliced(x, st->kind, st->bytes)) {
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
                                                  const cmt_alloc *alloc)
{
    memset(x, 0, sizeof *x);
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
    return o;
}

struct leak_ctx {
    struct cmt__export_perfetto *x;
    const cmt_replay *rp;
    uint64_t t_ns;
};

static void close_leak(void *ctx, const struct cmt_replay_object *o)
{
    struct leak_ctx *l = ctx;
    if (sliced(l->x, o->kind, o->size))
        slice(l->x, l->rp, 'e', o->addr, o->size, o->site, o->dev, 0, l->t_ns);
}

/* The ranges of the pass's phases as slices (see the top of the file). */
static void phase_slices(struct cmt__export_perfetto *x, const struct cmt_phases *ph)
{
    struct cmt__out *o = &x->out;
    char id[32];
    for (size_t i = 0; i < ph->range_count; i++) {
        const struct cmt_phase_range *r = &ph->ranges[i];
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
            pid_tid_ts(x, r->tid, end ? r->end_ns : r->start_ns);
            if (r->action == CMT_RA_PUSH) {
                cmt__out_str(o, ",\"dur\":");
                ts(o, r->end_ns - r->start_ns);
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
    while (x->pending_count)
        flush_figures(x, 0);
    struct leak_ctx l = {x, rp, end};
    cmt_replay_foreach_live(rp, close_leak, &l);
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
    free(x->kinds_seen);
}
