/* replay_vmm.c — the virtual-memory calls of the replay: physical handles and their
 * references, mappings, reservations (see replay.h for the VMM rules). */
#include "replay_books.h"

void cmt__handle_unref(cmt_replay *rp, struct cmt_replay_step *st, struct cmt__entry *h)
{
    if (h->refs || h->maps)
        return;
    int kind = h->kind - 1;
    uint64_t key = h->key;
    st->kind = kind;
    st->key = key;
    st->bytes = h->size;
    st->object = h->object;
    if (CMT_KIND_IS_DEVICE_MEMORY(kind)) { /* a multicast object holds no device memory */
        st->released = h->size;
        st->delta = -(int64_t)h->size;
    }
    st->site = h->site;
    cmt__note_owner(rp, st, h->dev);
    cmt__drop(rp, h);
    cmt__map_remove(&rp->handles, h);
    if (kind == CMT_KIND_MULTICAST)
        cmt__multicast_forget(rp, st, key);
}

static void apply_unmap(cmt_replay *rp, struct cmt_replay_step *st)
{
    const struct cmt_event *e = &st->rec.u.event;
    uint64_t at = e->v[CMT_FIELD_PTR], end = at + e->v[CMT_FIELD_SIZE];
    int found = 0;
    do { /* one cuMemUnmap may cover several adjacent mappings */
        struct cmt__entry *m = cmt__map_find(&rp->mappings, at);
        if (!m)
            break;
        found = 1;
        uint64_t size = m->size ? m->size : 1, handle = m->aux;
        struct cmt_replay_device *d = cmt__device_slot(rp, m->dev);
        cmt__note_owner(rp, st, m->dev);
        d->mapped_bytes -= m->size;
        cmt__log_freed(rp, m);
        d->kind_bytes[CMT_KIND_MAPPING] -= m->size;
        d->kind_count[CMT_KIND_MAPPING]--;
        cmt__map_remove(&rp->mappings, m);
        struct cmt__entry *h = cmt__map_find(&rp->handles, handle);
        if (h && h->maps) {
            if (h->maps != 255)
                h->maps--;
            cmt__handle_unref(rp, st, h);
        }
        at += size;
    } while (at < end);
    if (!found) {
        st->unknown_free = 1;
        rp->totals.unknown_frees++;
    }
}

static void apply_map(cmt_replay *rp, struct cmt_replay_step *st)
{
    const struct cmt_event *e = &st->rec.u.event;
    struct cmt__entry *h = cmt__map_find(&rp->handles, e->v[CMT_FIELD_HANDLE]);
    int32_t dev = h ? h->dev : e->dev;
    uint64_t ptr = e->v[CMT_FIELD_PTR], size = e->v[CMT_FIELD_SIZE];
    if (h && h->maps != 255)
        h->maps++;
    struct cmt__entry *m = cmt__map_find(&rp->mappings, ptr);
    if (m) { /* remapped without an unmap */
        struct cmt_replay_device *od = cmt__device_slot(rp, m->dev);
        od->mapped_bytes -= m->size;
        od->kind_bytes[CMT_KIND_MAPPING] -= m->size;
        od->kind_count[CMT_KIND_MAPPING]--;
    } else if (!(m = cmt__map_insert(&rp->mappings, ptr))) {
        rp->failed = 1;
        return;
    }
    *m = (struct cmt__entry){.key = ptr,
                             .size = size,
                             .aux = e->v[CMT_FIELD_HANDLE],
                             .seq = rp->tick,
                             .dev = dev,
                             .kind = CMT_KIND_MAPPING + 1};
    struct cmt_replay_device *d = cmt__device_slot(rp, dev);
    d->mapped_bytes += size;
    d->kind_bytes[CMT_KIND_MAPPING] += size;
    d->kind_count[CMT_KIND_MAPPING]++;
    st->kind = CMT_KIND_MAPPING;
}

/* ---- the handlers of CMT_REPLAY_OPS for the VMM calls (replay_ops.h); a failed call
 * changes nothing ---- */

/* The live entry of map at key that a successful release names; NULL for a failed call, or
 * for a key not live (counted as an unknown free). */
static struct cmt__entry *released(cmt_replay *rp, struct cmt_replay_step *st, struct cmt__map *map,
                                   uint64_t key)
{
    if (st->rec.u.event.result != 0)
        return NULL;
    struct cmt__entry *h = cmt__map_find(map, key);
    if (!h) {
        st->unknown_free = 1;
        rp->totals.unknown_frees++;
    }
    return h;
}

void cmt__apply_vmm_release(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                            int kind)
{
    (void)d, (void)kind;
    struct cmt__entry *h = released(rp, st, &rp->handles, st->rec.u.event.v[CMT_FIELD_HANDLE]);
    if (!h)
        return;
    if (h->refs)
        h->refs--;
    cmt__handle_unref(rp, st, h);
}

void cmt__apply_vmm_retain(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                           int kind)
{
    (void)d, (void)kind;
    const struct cmt_event *e = &st->rec.u.event;
    struct cmt__entry *h;
    if (e->result == 0 && (h = cmt__map_find(&rp->handles, e->v[CMT_FIELD_HANDLE])) &&
        h->refs != UINT16_MAX)
        h->refs++;
}

/* Memory exported by someone else: a reference, no bytes. */
void cmt__apply_vmm_import(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                           int kind)
{
    (void)d, (void)kind;
    const struct cmt_event *e = &st->rec.u.event;
    uint64_t handle = e->v[CMT_FIELD_HANDLE];
    struct cmt__entry *h;
    if (e->result != 0)
        return;
    if ((h = cmt__map_find(&rp->handles, handle))) {
        if (h->refs != UINT16_MAX)
            h->refs++;
    } else if (e->fields & CMT_F(HANDLE)) {
        cmt__add_object(rp, st, &rp->handles, handle, CMT_KIND_VMM, 0, 0);
    }
}

void cmt__apply_vmm_map(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                        int kind)
{
    (void)d, (void)kind;
    if (st->rec.u.event.result == 0)
        apply_map(rp, st);
}

void cmt__apply_vmm_unmap(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                          int kind)
{
    (void)d, (void)kind;
    if (st->rec.u.event.result == 0)
        apply_unmap(rp, st);
}

void cmt__apply_va_reserve(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                           int kind)
{
    (void)d, (void)kind;
    const struct cmt_event *e = &st->rec.u.event;
    if (e->result == 0 && (e->fields & CMT_F(PTR)))
        cmt__add_object(rp, st, &rp->vas, e->v[CMT_FIELD_PTR], CMT_KIND_VA, e->v[CMT_FIELD_SIZE],
                        0);
}

void cmt__apply_va_free(cmt_replay *rp, struct cmt_replay_device *d, struct cmt_replay_step *st,
                        int kind)
{
    (void)d, (void)kind;
    struct cmt__entry *h = released(rp, st, &rp->vas, st->rec.u.event.v[CMT_FIELD_PTR]);
    if (!h)
        return;
    st->kind = CMT_KIND_VA;
    cmt__drop(rp, h);
    cmt__map_remove(&rp->vas, h);
}

/* cuDevicePrimaryCtxReset frees everything the device's primary context held. */
void cmt__reset_device(cmt_replay *rp, int32_t dev)
{
    cmt__sync_pools(rp, dev, 0);
    struct cmt__map *maps[] = {&rp->allocs, &rp->handles, &rp->mappings};
    for (size_t m = 0; m < sizeof maps / sizeof *maps; m++) {
        struct cmt__map *map = maps[m];
        for (size_t i = 0; i < map->count;) {
            struct cmt__entry *e = &map->entries[i];
            if (e->dev != dev || e->kind == CMT_KIND_HOST + 1) {
                i++;
                continue;
            }
            if (e->kind == CMT_KIND_MAPPING + 1) {
                struct cmt_replay_device *d = cmt__device_slot(rp, e->dev);
                d->mapped_bytes -= e->size;
                d->kind_bytes[CMT_KIND_MAPPING] -= e->size;
                d->kind_count[CMT_KIND_MAPPING]--;
            } else
                cmt__drop(rp, e);
            cmt__map_remove(map, e); /* entry i now holds the last one */
        }
    }
    cmt__multicast_reset(rp, NULL, dev);
}
