/* alloc_print.c — allocator-level figures and settings for report, diff and timeline. */
#include "print/alloc_print.h"

#include <stdio.h>
#include <string.h>

int cmt__alloc_totals(const cmt_alloc *a, int32_t dev, struct cmt_alloc_figures *now,
                      struct cmt_alloc_figures *peak)
{
    int found = 0;
    memset(now, 0, sizeof *now);
    memset(peak, 0, sizeof *peak);
    for (size_t i = 0; i < cmt_alloc_device_count(a); i++) {
        const struct cmt_alloc_device *d = cmt_alloc_device_at(a, i);
        if (d->dev != dev)
            continue;
        found = 1;
#define CMT__SUM(f)     \
    now->f += d->now.f; \
    peak->f += d->peak.f;
        CMT__SUM(allocated_bytes)
        CMT__SUM(active_bytes)
        CMT__SUM(requested_bytes)
        CMT__SUM(reserved_bytes)
        CMT__SUM(inactive_split_bytes)
        CMT__SUM(segments)
        CMT__SUM(blocks)
#undef CMT__SUM
    }
    return found;
}

const char *cmt__alloc_headline_text(const struct cmt__pass *p, char *buf, size_t size)
{
    struct cmt_alloc_summary h;
    if (!cmt_alloc_summarize(p->alloc, &h))
        return NULL;
    char a[32], b[32], c[32], t[32], at[40] = "", where[200] = "", label[160];
    if (h.devices > 1)
        snprintf(where, sizeof where, " on %s (the largest of %u devices)",
                 cmt__device_label(p->replay, h.dev, label, sizeof label), h.devices);
    if (h.peak_allocated_t_ns != h.peak_reserved_t_ns) /* each peak at its own time */
        snprintf(at, sizeof at, " at %s", cmt__duration(h.peak_allocated_t_ns, t));
    snprintf(
        buf, size, "allocator peak %s allocated%s, %s reserved at %s%s, %s allocated at the end",
        cmt__bytes(h.peak_allocated_bytes, a), at, cmt__bytes(h.peak_reserved_bytes, b),
        cmt__duration(h.peak_reserved_t_ns, t), where, cmt__bytes(h.allocated_bytes_at_end, c));
    return buf;
}

void cmt__alloc_json_headline(struct cmt__json *j, const char *key, const cmt_alloc *a)
{
    struct cmt_alloc_summary h;
    if (!cmt_alloc_summarize(a, &h))
        return;
    cmt__json_object(j, key);
    CMT__JSON_U64S(j, {"peak_allocated_bytes", h.peak_allocated_bytes},
                   {"peak_reserved_bytes", h.peak_reserved_bytes},
                   {"peak_allocated_t_ns", h.peak_allocated_t_ns},
                   {"peak_reserved_t_ns", h.peak_reserved_t_ns});
    cmt__json_i64(j, "dev", h.dev);
    CMT__JSON_U64S(j, {"allocated_bytes_at_end", h.allocated_bytes_at_end},
                   {"reserved_bytes_at_end", h.reserved_bytes_at_end}, {"events", h.events});
    cmt__json_end_object(j);
}

/* The ENV record naming the allocator's settings, or NULL. */
static const struct cmt_env *conf_env(const cmt_reader *r)
{
    for (size_t i = 0; i < cmt_reader_env_count(r); i++) {
        const struct cmt_env *e = cmt_reader_env(r, i);
        if (e->name && (strcmp(e->name, "PYTORCH_CUDA_ALLOC_CONF") == 0 ||
                        strcmp(e->name, "PYTORCH_ALLOC_CONF") == 0))
            return e;
    }
    return NULL;
}

const char *cmt__alloc_settings_text(const struct cmt__pass *p, char *buf, size_t size)
{
    const cmt_alloc *a = p->alloc;
    if (!a || !cmt_alloc_present(a))
        return NULL;
    size_t n = cmt_alloc_settings_count(a), at = 0;
    char text[512], conf[512];
    buf[0] = 0;
    for (size_t i = 0; i < n && at < size; i++) {
        const struct cmt_alloc_settings *s = cmt_alloc_settings_at(a, i);
        int len = snprintf(buf + at, size - at, "%s%s%s%s: %s", i ? "; " : "",
                           cmt__text(s->name ? s->name : "allocator", text, sizeof text),
                           s->version && *s->version ? " " : "", s->version ? s->version : "",
                           s->conf && *s->conf ? cmt__text(s->conf, conf, sizeof conf)
                                               : "default settings");
        at += len > 0 ? (size_t)len : 0;
    }
    if (n)
        return buf;
    const struct cmt_env *e = conf_env(p->reader);
    if (e)
        snprintf(buf, size, "%s=%s, from the environment", e->name,
                 cmt__text(e->value ? e->value : "", conf, sizeof conf));
    else
        snprintf(buf, size, "not recorded");
    return buf;
}

void cmt__alloc_json_device(struct cmt__json *j, const cmt_alloc *a, int32_t dev)
{
    struct cmt_alloc_figures now, peak;
    if (!a || !cmt__alloc_totals(a, dev, &now, &peak))
        return;
    uint64_t unknown = 0;
    for (size_t i = 0; i < cmt_alloc_device_count(a); i++)
        if (cmt_alloc_device_at(a, i)->dev == dev)
            unknown += cmt_alloc_device_at(a, i)->unknown_frees;
    cmt__json_object(j, "allocator");
    CMT__JSON_U64S(
        j, {"allocated_bytes_at_end", now.allocated_bytes},
        {"reserved_bytes_at_end", now.reserved_bytes}, {"active_bytes_at_end", now.active_bytes},
        {"requested_bytes_at_end", now.requested_bytes},
        {"inactive_split_bytes_at_end", now.inactive_split_bytes},
        {"segments_at_end", now.segments}, {"blocks_at_end", now.blocks},
        {"peak_allocated_bytes", peak.allocated_bytes},
        {"peak_reserved_bytes", peak.reserved_bytes}, {"peak_active_bytes", peak.active_bytes},
        {"peak_requested_bytes", peak.requested_bytes},
        {"peak_inactive_split_bytes", peak.inactive_split_bytes}, {"peak_segments", peak.segments},
        {"unknown_frees", unknown});
    cmt__json_end_object(j);
}

void cmt__alloc_json_settings(struct cmt__json *j, const struct cmt__pass *p)
{
    const cmt_alloc *a = p->alloc;
    if (!a || !cmt_alloc_present(a))
        return;
    cmt__json_array(j, "allocator_settings");
    for (size_t i = 0; i < cmt_alloc_settings_count(a); i++) {
        const struct cmt_alloc_settings *s = cmt_alloc_settings_at(a, i);
        cmt__json_object(j, NULL);
        cmt__json_u64(j, "id", s->id);
        cmt__json_i64(j, "dev", s->dev);
        cmt__json_string(j, "name", s->name ? s->name : "");
        cmt__json_string(j, "version", s->version ? s->version : "");
        cmt__json_string(j, "conf", s->conf ? s->conf : "");
        cmt__json_string(j, "source", "allocator");
        cmt__json_end_object(j);
    }
    const struct cmt_env *e = cmt_alloc_settings_count(a) ? NULL : conf_env(p->reader);
    if (e) {
        cmt__json_object(j, NULL);
        cmt__json_string(j, "conf", e->value ? e->value : "");
        cmt__json_string(j, "source", "environment");
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
}
