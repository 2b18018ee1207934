/* replay_multicast.c — multicast objects of the replay (cuMulticastCreate and its binds).
 *
 * An object is a handle in the handles' map (kind multicast) whose size is the bytes each
 * device may bind, none of it device memory: cuMemMap, cuMemUnmap, cuMemRelease and
 * cuMemRetainAllocationHandle treat it as any handle. A bind ties physical memory to it: the
 * memory stays counted once, under its own handle, which the binding holds as a mapping does
 * (maps) until the device's range is unbound or the object goes (docs/analysis.md). */
#include "cmt_grow.h"
#include "replay_books.h"

/* The mapping that contains address: the one that starts there, else a scan (binds are rare
 * next to the mappings a program keeps). */
static const struct cmt__entry *mapping_containing(const cmt_replay *rp, uint64_t address)
{
    const struct cmt__entry *m = cmt__map_find(&rp->mappings, address);
    for (size_t i = 0; !m && i < rp->mappings.count; i++) {
        const struct cmt__entry *e = &rp->mappings.entries[i];
        if (address - e->key < e->size)
            m = e;
    }
    return m;
}

/* The physical handle behind a bind's ptr: the handle itself (bind_mem) or the handle mapped
 * where that address lies (bind_addr); 0 when the replay holds none (memory of a pool, say). */
static uint64_t bound_handle(cmt_replay *rp, const struct cmt_replay_step *st)
{
    uint64_t ptr = st->rec.u.event.v[CMT_FIELD_PTR];
    if (st->op == CMT_OP_MULTICAST_BIND_MEM)
        return cmt__map_find(&rp->handles, ptr) ? ptr : 0;
    const struct cmt__entry *m = mapping_containing(rp, ptr);
    return m && cmt__map_find(&rp->handles, m->aux) ? m->aux : 0;
}

/* Lets bind i's memory go (the caller no longer holds rp->binds[i] afterwards). */
static void unbind_at(cmt_replay *rp, struct cmt_replay_step *st, size_t i)
{
    uint64_t handle = rp->binds[i].handle;
    rp->binds[i] = rp->binds[--rp->bind_count];
    struct cmt__entry *h = handle ? cmt__map_find(&rp->handles, handle) : NULL;
    if (!h || !h->maps)
        return;
    if (h->maps != 255)
        h->maps--;
    if (st) {
        cmt__handle_unref(rp, st, h);
    } else if (!h->refs && !h->maps) { /* a reset: no step to describe it */
        cmt__drop(rp, h);
        cmt__map_remove(&rp->handles, h);
    }
}

static void bind(cmt_replay *rp, struct cmt_replay_step *st)
{
    const struct cmt_event *e = &st->rec.u.event;
    uint64_t multicast = e->v[CMT_FIELD_HANDLE];
    if (!(e->fields & CMT_F(HANDLE)) || !(e->fields & CMT_F(PTR)) ||
        !cmt__map_find(&rp->handles, multicast))
        return;
    uint64_t handle = bound_handle(rp, st);
    struct cmt__entry *h = handle ? cmt__map_find(&rp->handles, handle) : NULL;
    if (CMT_GROW(rp->binds, rp->bind_cap, rp->bind_count + 1, 4) != 0) {
        rp->failed = 1;
        return;
    }
    rp->binds[rp->bind_count++] = (struct cmt__bind){.multicast = multicast,
                                                     .offset = e->v[CMT_FIELD_OFFSET],
                                                     .size = e->v[CMT_FIELD_SIZE],
                                                     .handle = handle,
                                                     .dev = h ? h->dev : e->dev};
    if (h && h->maps != 255)
        h->maps++;
    st->kind = CMT_KIND_MULTICAST;
    st->key = multicast;
}

/* cuMulticastUnbind: the device's bindings that start inside [offset, offset + size). */
static void unbind(cmt_replay *rp, struct cmt_replay_step *st)
{
    const struct cmt_event *e = &st->rec.u.event;
    uint64_t multicast = e->v[CMT_FIELD_HANDLE], offset = e->v[CMT_FIELD_OFFSET];
    uint64_t end = offset + e->v[CMT_FIELD_SIZE];
    st->kind = CMT_KIND_MULTICAST;
    st->key = multicast;
    for (size_t i = 0; i < rp->bind_count;) {
        const struct cmt__bind *b = &rp->binds[i];
        if (b->multicast == multicast && b->dev == e->dev && b->offset >= offset && b->offset < end)
            unbind_at(rp, st, i); /* moves the last binding into i */
        else
            i++;
    }
}

/* ---- the handlers of CMT_REPLAY_OPS for multicast objects (replay_ops.h); a failed call
 * changes nothing ---- */

void cmt__apply_multicast_create(cmt_replay *rp, struct cmt_replay_device *d,
                                 struct cmt_replay_step *st, int kind)
{
    (void)d, (void)kind;
    const struct cmt_event *e = &st->rec.u.event;
    if (e->result == 0 && (e->fields & CMT_F(HANDLE)))
        cmt__add_object(rp, st, &rp->handles, e->v[CMT_FIELD_HANDLE], CMT_KIND_MULTICAST,
                        e->v[CMT_FIELD_SIZE], 0);
}

void cmt__apply_multicast_bind(cmt_replay *rp, struct cmt_replay_device *d,
                               struct cmt_replay_step *st, int kind)
{
    (void)d, (void)kind;
    if (st->rec.u.event.result == 0)
        bind(rp, st);
}

void cmt__apply_multicast_unbind(cmt_replay *rp, struct cmt_replay_device *d,
                                 struct cmt_replay_step *st, int kind)
{
    (void)d, (void)kind;
    if (st->rec.u.event.result == 0)
        unbind(rp, st);
}

void cmt__multicast_forget(cmt_replay *rp, struct cmt_replay_step *st, uint64_t multicast)
{
    for (size_t i = 0; i < rp->bind_count;) {
        if (rp->binds[i].multicast == multicast)
            unbind_at(rp, st, i);
        else
            i++;
    }
}

void cmt__multicast_reset(cmt_replay *rp, struct cmt_replay_step *st, int32_t dev)
{
    for (size_t i = 0; i < rp->bind_count;) {
        const struct cmt__bind *b = &rp->binds[i];
        if (b->dev == dev) /* the device's memory went with the reset */
            rp->binds[i] = rp->binds[--rp->bind_count];
        else if (!cmt__map_find(&rp->handles, b->multicast)) /* so did the object */
            unbind_at(rp, st, i);
        else
            i++;
    }
}
