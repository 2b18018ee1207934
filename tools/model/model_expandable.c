/* model_expandable.c — expandable segments (expandable_segments:True).
 *
 * As in PyTorch's ExpandableSegment: one virtual reservation of about
 * 1.125 x device memory per (stream, pool), mapped from the front in pages of
 * 2 MiB (small pool) or 20 MiB (large pool); every mapped byte counts as
 * reserved. The unmapped rest of a reservation is a block in its pool's
 * unmapped set (ordered by stream, address). Growth maps pages after the
 * free block at the end of the mapped part, which then merges with it;
 * releasing unmaps the whole pages inside a free block. One map or unmap of
 * any number of pages counts as one device call. */
#include "model_internal.h"
#include "cmt_grow.h"

#include <stdlib.h>

static uint64_t page_of(int pool)
{
    return pool == CMT__POOL_SMALL ? CMT__SMALL_BUFFER : CMT__LARGE_BUFFER;
}

static bool allocatable(const struct cmt_model *m, uint32_t i)
{
    return i != CMT__NIL && cmt__b(m, i)->where != CMT__ALLOCATED;
}

/* A new reservation, all of it one unmapped block. @return the block, or
 * CMT__NIL when the host is out of memory. */
static uint32_t new_segment(struct cmt_model *m, int pool, uint64_t stream)
{
    if (CMT_GROW(m->segments, m->segment_capacity, (size_t)m->segment_count + 1, 8) != 0)
        return CMT__NIL;
    uint64_t page = page_of(pool);
    uint64_t total = m->config.device_total;
    uint64_t pages = (total + total / 8 + page - 1) / page;
    struct cmt__segment *seg = &m->segments[m->segment_count];
    seg->size = pages * page;
    seg->base = cmt__address_take(m, seg->size);
    seg->page = page;
    seg->live = true;
    m->live_segments++;

    uint32_t i = cmt__block_new(m);
    struct cmt__block *b = cmt__b(m, i);
    b->address = seg->base;
    b->size = seg->size;
    b->stream = stream;
    b->pool = (uint8_t)pool;
    b->expandable = m->segment_count++;
    b->mapped = 0;
    b->where = CMT__UNMAPPED;
    cmt__set_insert(m, &m->pools[pool].unmapped_set, i);
    return i;
}

/* PyTorch's find_expandable_block: the lowest address where `size` bytes of
 * free and unmapped space follow each other, else a new reservation. */
static uint32_t find_expandable_block(struct cmt_model *m, int pool, uint64_t stream, uint64_t size)
{
    struct cmt__set *unmapped = &m->pools[pool].unmapped_set;
    for (uint32_t it = cmt__set_lower_bound(m, unmapped, stream, 0, 0);
         it != CMT__NIL && cmt__b(m, it)->stream == stream; it = cmt__set_after(m, unmapped, it)) {
        uint32_t c = it;
        if (allocatable(m, cmt__b(m, c)->prev))
            c = cmt__b(m, c)->prev;
        uint64_t bytes = 0;
        for (uint32_t b = c; bytes < size && allocatable(m, b); b = cmt__b(m, b)->next)
            bytes += cmt__b(m, b)->size;
        if (bytes >= size)
            return c;
    }
    return new_segment(m, pool, stream);
}

/* PyTorch's map_block: map the pages covering the first `size` bytes of the
 * unmapped block `i`, merge with free neighbours, put it in the free set. */
static bool map_block(struct cmt_model *m, uint32_t i, uint64_t size)
{
    struct cmt__block *b = cmt__b(m, i);
    uint64_t page = m->segments[b->expandable].page;
    uint64_t bytes = (size + page - 1) / page * page;
    if (bytes > b->size)
        bytes = b->size;
    m->stats.device_alloc_calls++;
    if (m->stats.reserved_bytes + bytes > m->config.capacity ||
        !cmt__device_alloc(m, b->address, bytes, page))
        return false; /* cuMemCreate failed: nothing stays mapped */
    cmt__set_erase(m, &m->pools[b->pool].unmapped_set, i);
    m->stats.num_device_alloc++;
    b->where = CMT__LOOSE;
    b->mapped = 1;
    if (bytes < b->size) {
        uint32_t rest = cmt__block_new(m);
        b = cmt__b(m, i);
        struct cmt__block *r = cmt__b(m, rest);
        r->address = b->address + bytes;
        r->size = b->size - bytes;
        r->stream = b->stream;
        r->pool = b->pool;
        r->expandable = b->expandable;
        r->mapped = 0;
        r->where = CMT__UNMAPPED;
        r->prev = i;
        r->next = b->next;
        if (r->next != CMT__NIL)
            cmt__b(m, r->next)->prev = rest;
        b->next = rest;
        b->size = bytes;
        cmt__set_insert(m, &m->pools[r->pool].unmapped_set, rest);
    }
    cmt__try_merge(m, i, cmt__b(m, i)->prev);
    cmt__try_merge(m, i, cmt__b(m, i)->next);
    cmt__free_insert(m, i);
    cmt__reserved_add(m, bytes);
    return true;
}

uint32_t cmt__expandable_allocate(struct cmt_model *m, int pool, uint64_t stream, uint64_t size)
{
    uint32_t c = find_expandable_block(m, pool, stream, size);
    if (c == CMT__NIL)
        return CMT__NIL;
    if (!cmt__b(m, c)->mapped) {
        uint64_t want = cmt__b(m, c)->size < size ? cmt__b(m, c)->size : size;
        if (!map_block(m, c, want))
            return CMT__NIL;
    }
    while (cmt__b(m, c)->size < size) {
        /* c is free and followed by unmapped space: map some, which merges
     * into the newly mapped block. */
        uint64_t remaining = size - cmt__b(m, c)->size;
        uint32_t next = cmt__b(m, c)->next;
        uint64_t want = cmt__b(m, next)->size < remaining ? cmt__b(m, next)->size : remaining;
        if (!map_block(m, next, want))
            return CMT__NIL;
        c = next;
    }
    cmt__free_erase(m, c);
    return c;
}

/* PyTorch's unmap_block. @return bytes unmapped (0: no whole free page). */
uint64_t cmt__expandable_unmap(struct cmt_model *m, uint32_t i)
{
    struct cmt__block *b = cmt__b(m, i);
    const struct cmt__segment *seg = &m->segments[b->expandable];
    uint64_t page = seg->page;
    uint64_t begin = (b->address - seg->base + page - 1) / page * page;
    uint64_t end = (b->address + b->size - seg->base) / page * page;
    if (begin >= end)
        return 0;
    uint64_t unmap_address = seg->base + begin, unmap_size = end - begin;
    cmt__free_erase(m, i);
    b = cmt__b(m, i);
    uint64_t before = unmap_address - b->address;
    uint64_t after = b->size - before - unmap_size;
    if (before > 0) {
        uint32_t f = cmt__block_new(m);
        b = cmt__b(m, i);
        struct cmt__block *fb = cmt__b(m, f);
        fb->address = b->address;
        fb->size = before;
        fb->stream = b->stream;
        fb->pool = b->pool;
        fb->expandable = b->expandable;
        fb->prev = b->prev;
        fb->next = i;
        if (fb->prev != CMT__NIL)
            cmt__b(m, fb->prev)->next = f;
        b->prev = f;
        cmt__free_insert(m, f);
    }
    if (after > 0) {
        uint32_t f = cmt__block_new(m);
        b = cmt__b(m, i);
        struct cmt__block *fb = cmt__b(m, f);
        fb->address = unmap_address + unmap_size;
        fb->size = after;
        fb->stream = b->stream;
        fb->pool = b->pool;
        fb->expandable = b->expandable;
        fb->prev = i;
        fb->next = b->next;
        if (fb->next != CMT__NIL)
            cmt__b(m, fb->next)->prev = f;
        b->next = f;
        cmt__free_insert(m, f);
    }
    b = cmt__b(m, i);
    b->address = unmap_address;
    b->size = unmap_size;
    b->mapped = 0;
    cmt__try_merge(m, i, b->prev);
    cmt__try_merge(m, i, cmt__b(m, i)->next);
    cmt__b(m, i)->where = CMT__UNMAPPED;
    cmt__set_insert(m, &m->pools[cmt__b(m, i)->pool].unmapped_set, i);
    cmt__device_free(m, unmap_address, unmap_size, page);
    m->stats.reserved_bytes -= unmap_size;
    m->stats.device_free_calls++;
    return unmap_size;
}

/* PyTorch's release_expandable_segment, when nothing of it is mapped. */
void cmt__expandable_drop_if_empty(struct cmt_model *m, uint32_t i)
{
    struct cmt__block *b = cmt__b(m, i);
    if (b->where != CMT__UNMAPPED || b->prev != CMT__NIL || b->next != CMT__NIL)
        return;
    m->segments[b->expandable].live = false;
    cmt__address_release(m, m->segments[b->expandable].base, m->segments[b->expandable].size);
    m->live_segments--;
    cmt__set_erase(m, &m->pools[b->pool].unmapped_set, i);
    cmt__block_release(m, i);
}
