/* ledger_print.c — the ledger as text and JSON (see ledger_print.h). */
#include "print/ledger_print.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmt_error.h"
#include "frames.h"

static const char *allocator_name(const cmt_alloc *a, uint32_t id)
{
    const struct cmt_alloc_settings *s = a ? cmt_alloc_settings(a, id) : NULL;
    return s && s->name && *s->name ? s->name : "allocator";
}

const char *cmt__ledger_row_text(const cmt_reader *r, const cmt_alloc *a,
                                 const struct cmt_ledger_row *row, char *buf, size_t size)
{
    char top[512], pool[64] = "";
    if (row->pool)
        snprintf(pool, sizeof pool, ", private pool %" PRIu64, row->pool);
    switch (row->type) {
    case CMT_LEDGER_TENSORS:
    case CMT_LEDGER_CACHED:
        snprintf(buf, size, "%s (%s%s)", cmt_ledger_row_label(row->type),
                 allocator_name(a, row->allocator), pool);
        break;
    case CMT_LEDGER_DRIVER:
        if (row->owner != CMT_OWNER_USER)
            snprintf(buf, size, "%s", cmt_ledger_owner_label(row->owner));
        else if (row->stack)
            snprintf(buf, size, "user code: %s", cmt_stack_top(r, row->stack, top, sizeof top));
        else
            snprintf(buf, size, "user code: other call sites");
        break;
    default: snprintf(buf, size, "%s", cmt_ledger_row_label(row->type));
    }
    return buf;
}

void cmt__ledger_print(const struct cmt__pass *p, const struct cmt_ledger_moment *m,
                       const char *when, const char *indent)
{
    char dev[160], a[32], b[32], label[600], text[600];
    cmt__device_label(p->replay, m->dev, dev, sizeof dev);
    printf("%sledger of %s at %s: capacity %s%s\n", indent, dev, when,
           m->total_bytes ? cmt__bytes(m->total_bytes, a) : "not recorded",
           !m->total_bytes    ? ""
           : m->free_measured ? ", free measured"
                              : ", free derived from the last sample");
    for (size_t i = 0; i < m->row_count; i++) {
        const struct cmt_ledger_row *row = &m->rows[i];
        char share[16] = "     -";
        if (m->total_bytes)
            snprintf(share, sizeof share, "%5.1f%%",
                     100.0 * (double)row->bytes / (double)m->total_bytes);
        printf("%s  %-9s %10s %s  %s", indent, cmt_ledger_row_key(row->type),
               cmt__bytes(row->bytes, a), share,
               cmt__text(cmt__ledger_row_text(p->reader, p->alloc, row, label, sizeof label), text,
                         sizeof text));
        if (row->count && (row->type == CMT_LEDGER_DRIVER || row->type == CMT_LEDGER_TENSORS))
            printf(" (%" PRIu64 " %s%s)", row->count,
                   row->type == CMT_LEDGER_TENSORS ? "block" : "allocation",
                   row->count == 1 ? "" : "s");
        putchar('\n');
    }
    if (!m->total_bytes) {
        printf("%s  (the capacity was never measured: this process's rows only, no residual)\n",
               indent);
        return;
    }
    uint64_t r = m->residual_bytes < 0 ? (uint64_t)-m->residual_bytes : (uint64_t)m->residual_bytes;
    printf("%s  %-9s %s%s  (capacity less every row%s)\n", indent, "residual",
           m->residual_bytes < 0 ? "-" : "", cmt__bytes(r, b),
           m->residual_bytes ? ": this process's rows exceed what the driver measured as used"
                             : "");
}

void cmt__ledger_json(struct cmt__json *j, const char *key, const struct cmt__pass *p,
                      const struct cmt_ledger_moment *m)
{
    char label[600];
    cmt__json_object(j, key);
    cmt__json_i64(j, "dev", m->dev);
    CMT__JSON_U64S(j, {"t_ns", m->t_ns}, {"seq", m->seq}, {"total_bytes", m->total_bytes});
    cmt__json_bool(j, "free_measured", m->free_measured);
    CMT__JSON_U64S(j, {"process_bytes", m->process_bytes}, {"context_bytes", m->context_bytes},
                   {"others_bytes", m->others_bytes}, {"free_bytes", m->free_bytes});
    cmt__json_i64(j, "residual_bytes", m->residual_bytes);
    cmt__json_array(j, "rows");
    for (size_t i = 0; i < m->row_count; i++) {
        const struct cmt_ledger_row *row = &m->rows[i];
        cmt__json_object(j, NULL);
        cmt__json_string(j, "row", cmt_ledger_row_key(row->type));
        cmt__json_string(j, "label",
                         cmt__ledger_row_text(p->reader, p->alloc, row, label, sizeof label));
        cmt__json_u64(j, "bytes", row->bytes);
        if (row->type == CMT_LEDGER_TENSORS || row->type == CMT_LEDGER_CACHED) {
            cmt__json_u64(j, "allocator", row->allocator);
            cmt__json_u64(j, "pool", row->pool);
        }
        if (row->type == CMT_LEDGER_DRIVER) {
            cmt__json_string(j, "owner", cmt_ledger_owner_key(row->owner));
            if (row->stack)
                cmt__json_stack(j, "stack", p->reader, row->stack);
        }
        if (row->count)
            cmt__json_u64(j, "count", row->count);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
    cmt__json_end_object(j);
}

void cmt__ledger_page_json(struct cmt__json *j, const struct cmt__pass *p, const cmt_alloc *a,
                           const cmt_ledger *l)
{
    if (!l)
        return;
    char label[600];
    struct cmt__pass named = *p; /* the row labels read the allocator names from a */
    named.alloc = (cmt_alloc *)a;
    cmt__json_array(j, "ledger");
    for (uint32_t slot = 1; slot < cmt_replay_device_count(p->replay); slot++) {
        int32_t dev = (int32_t)slot - 1;
        size_t any = 0;
        while (any < cmt_ledger_count(l) &&
               (!(cmt_ledger_moment(l, any)->why & CMT_LEDGER_AT_TIME) ||
                cmt_ledger_moment(l, any)->dev != dev))
            any++;
        if (any == cmt_ledger_count(l))
            continue;
        cmt__json_object(j, NULL);
        cmt__json_i64(j, "dev", dev);
        cmt__json_array(j, "t");
        for (size_t i = 0; i < cmt_ledger_count(l); i++) {
            const struct cmt_ledger_moment *m = cmt_ledger_moment(l, i);
            if ((m->why & CMT_LEDGER_AT_TIME) && m->dev == dev)
                cmt__json_u64(j, NULL, m->t_ns);
        }
        cmt__json_end_array(j);
        cmt__json_array(j, "m");
        for (size_t i = 0; i < cmt_ledger_count(l); i++) {
            const struct cmt_ledger_moment *m = cmt_ledger_moment(l, i);
            if (!(m->why & CMT_LEDGER_AT_TIME) || m->dev != dev)
                continue;
            cmt__json_object(j, NULL);
            cmt__json_u64(j, "total", m->total_bytes);
            cmt__json_i64(j, "residual", m->residual_bytes);
            cmt__json_array(j, "rows");
            for (size_t r = 0; r < m->row_count; r++) {
                cmt__json_array(j, NULL);
                cmt__json_string(j, NULL, cmt_ledger_row_key(m->rows[r].type));
                cmt__json_string(
                    j, NULL,
                    cmt__ledger_row_text(p->reader, named.alloc, &m->rows[r], label, sizeof label));
                cmt__json_u64(j, NULL, m->rows[r].bytes);
                cmt__json_end_array(j);
            }
            cmt__json_end_array(j);
            cmt__json_end_object(j);
        }
        cmt__json_end_array(j);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}

size_t cmt__ledger_page_times(uint64_t end_t, uint64_t peak_t, uint32_t buckets, size_t count,
                              uint64_t *times)
{
    unsigned shift = 10; /* the series' bucket width (site_timeline.c): doubled to fit end_t */
    while (buckets && (end_t >> shift) >= buckets && shift < 62)
        shift++;
    uint64_t used = (end_t >> shift) + 1, step = (used + count - 1) / (count ? count : 1);
    size_t n = 0;
    int peak_done = 0;
    for (uint64_t k = step - 1; n < count; k += step) {
        uint64_t t = k + 1 >= used ? end_t : ((k + 1) << shift) - 1; /* the bucket's end */
        if (!peak_done && peak_t <= t) {
            peak_done = 1;
            if (peak_t < t)
                times[n++] = peak_t;
        }
        times[n++] = t;
        if (k + 1 >= used)
            break;
    }
    if (!peak_done)
        times[n++] = peak_t;
    return n;
}

int cmt__parse_time(const char *text, uint64_t *ns)
{
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"", 1e9}, {"s", 1e9}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"min", 60e9}};
    char *end;
    if (!text || !((*text >= '0' && *text <= '9') || *text == '.'))
        return -1;
    double v = strtod(text, &end);
    if (end == text || !(v >= 0))
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strcmp(end, units[i].unit) == 0 && v * units[i].scale < 1.8e19) {
            *ns = (uint64_t)(v * units[i].scale + 0.5);
            return 0;
        }
    return -1;
}

const struct cmt_ledger_moment *cmt__ledger_at_oom(const cmt_ledger *l, int32_t dev, uint64_t t_ns)
{
    for (size_t i = 0; l && i < cmt_ledger_count(l); i++) {
        const struct cmt_ledger_moment *m = cmt_ledger_moment(l, i);
        if ((m->why & CMT_LEDGER_AT_OOM) && m->dev == dev && m->t_ns == t_ns)
            return m;
    }
    return NULL;
}

int cmt__ledger_pass(struct cmt__pass *p, const char *cmd, const char *path, unsigned want,
                     const struct cmt_ledger_options *o, int second, cmt_ledger **ledger,
                     const struct cmt_observer *extra)
{
    *ledger = NULL;
    if (cmt__pass_open(p, cmd, path) != 0)
        return 1;
    p->quiet_damage = second;
    if (second) { /* the command's second reading of the trace */
        p->stage = 2;
        p->stages = 2;
    }
    struct cmt_observer obs[2];
    size_t n = 0;
    if (cmt_alloc_create(&p->alloc) != 0 || cmt_ledger_create(ledger, p->alloc, o) != 0)
        fprintf(stderr, "cumemtrace %s: %s: out of memory (no ledger)\n", cmd, path);
    else
        obs[n++] = cmt_ledger_observer(*ledger);
    if (extra)
        obs[n++] = *extra;
    return cmt__pass_replay(p, want, NULL, n ? obs : NULL, n);
}

/* Stops the replay's reader at its moment (after the ledger's, which comes before it). */
static void stop_reading(struct cmt_observer *self, const cmt_replay *rp)
{
    cmt_reader_stop(cmt_replay_reader(rp));
    self->before_t = UINT64_MAX;
}

int cmt__ledger_rerun_to(const struct cmt__pass *p, uint64_t t, cmt_ledger **ledger)
{
    *ledger = NULL;
    cmt_replay *rp = NULL;
    cmt_alloc *a = NULL;
    const struct cmt_ledger_options o = {.times = &t, .time_count = 1};
    cmt_reader_rewind(p->reader);
    int rc = cmt_replay_create(&rp, p->reader);
    if (rc == 0)
        rc = cmt_alloc_create(&a);
    if (rc == 0)
        rc = cmt_ledger_create(ledger, a, &o);
    if (rc == 0) {
        struct cmt_observer obs[] = {cmt_alloc_observer(a),
                                     cmt_ledger_observer(*ledger),
                                     {.before_t = t, .before = stop_reading}};
        rc = cmt_replay_run(rp, obs, sizeof obs / sizeof *obs);
        rc = rc == CMT_ENOMEM ? rc : 0; /* damage past t was said by the first pass */
    }
    if (rc != 0) {
        cmt_ledger_destroy(*ledger);
        *ledger = NULL;
    }
    cmt_alloc_destroy(a);
    cmt_replay_destroy(rp);
    return rc;
}

int cmt__ledger_pass_to(struct cmt__pass *p, const char *cmd, const char *path, cmt_reader *reader,
                        uint64_t t, cmt_ledger **ledger)
{
    *ledger = NULL;
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->path = path;
    p->reader = reader;
    const struct cmt_ledger_options o = {.times = &t, .time_count = 1};
    cmt_reader_rewind(reader);
    int rc = cmt_replay_create(&p->replay, reader);
    if (rc == 0)
        rc = cmt_alloc_create(&p->alloc);
    if (rc == 0)
        rc = cmt_ledger_create(ledger, p->alloc, &o);
    if (rc == 0) {
        struct cmt_observer obs[] = {cmt_alloc_observer(p->alloc),
                                     cmt_ledger_observer(*ledger),
                                     {.before_t = t, .before = stop_reading}};
        rc = cmt_replay_run(p->replay, obs, sizeof obs / sizeof *obs);
        rc = rc == CMT_ENOMEM ? rc : 0; /* damage was said by the first pass */
    }
    if (rc != 0) {
        cmt_ledger_destroy(*ledger);
        *ledger = NULL;
        fprintf(stderr, "cumemtrace %s: %s: out of memory (no ledger)\n", cmd, path);
        return 1;
    }
    return 0;
}
