/* model_check.c — recount everything and compare (tests and fuzzers). */
#include "model_internal.h"

/* Every key in order, matching its block, chunks filled as model_set.c
 * promises. @return the number of keys, or UINT64_MAX when something is off. */
static uint64_t walk_set(const struct cmt_model *m, const struct cmt__set *s, enum cmt__where where,
                         int pool)
{
    uint64_t count = 0;
    const struct cmt__set_key *prev = NULL;
    if (s->chunk_count > m->chunk_capacity)
        return UINT64_MAX;
    for (uint32_t c = 0; c < s->chunk_count; c++) {
        uint32_t n = s->fill[c];
        if (s->ids[c] >= m->chunk_capacity || n == 0 || n > CMT__CHUNK ||
            (c > 0 && s->fill[c - 1] + n <= CMT__CHUNK / 2))
            return UINT64_MAX;
        const struct cmt__set_key *e = &m->chunk_entries[(size_t)s->ids[c] * CMT__CHUNK];
        for (uint32_t k = 0; k < n; k++, count++) {
            const struct cmt__set_key *x = &e[k];
            if (x->slot >= m->block_count)
                return UINT64_MAX;
            const struct cmt__block *b = cmt__b(m, x->slot);
            if (b->where != where || b->pool != pool || x->stream != b->stream ||
                x->size != (s->by_size ? b->size : 0) || x->address != b->address)
                return UINT64_MAX;
            if (prev) {
                bool greater = x->stream != prev->stream ? x->stream > prev->stream
                               : x->size != prev->size   ? x->size > prev->size
                                                         : x->address > prev->address;
                if (!greater)
                    return UINT64_MAX;
            }
            prev = x;
        }
        const struct cmt__set_key *l = &s->last[c];
        if (l->stream != prev->stream || l->size != prev->size || l->address != prev->address ||
            l->slot != prev->slot)
            return UINT64_MAX;
        /* The chunk hints: the chunk's position, its blocks' chunk. */
        if (m->chunk_position[s->ids[c]] != c)
            return UINT64_MAX;
        for (uint32_t k = 0; k < n; k++)
            if (cmt__b(m, e[k].slot)->chunk != s->ids[c])
                return UINT64_MAX;
    }
    return count == s->count ? count : UINT64_MAX;
}

static bool chain_ok(const struct cmt_model *m, uint32_t i)
{
    const struct cmt__block *b = cmt__b(m, i);
    if (b->prev != CMT__NIL) {
        const struct cmt__block *p = cmt__b(m, b->prev);
        if (b->prev >= m->block_count || p->next != i || p->address + p->size != b->address ||
            p->stream != b->stream || p->pool != b->pool || p->expandable != b->expandable)
            return false;
    }
    if (b->next != CMT__NIL) {
        if (b->next >= m->block_count || cmt__b(m, b->next)->prev != i)
            return false;
        /* Two free neighbours of the same kind would have merged. */
        const struct cmt__block *n = cmt__b(m, b->next);
        if (b->where != CMT__ALLOCATED && n->where == b->where)
            return false;
    }
    return b->size > 0 && (b->where == CMT__UNMAPPED) == !b->mapped;
}

int cmt_model_check(const struct cmt_model *m)
{
    if (!m)
        return CMT_EINVALID;
    struct cmt_model_stats s = {0};
    uint64_t free_blocks[2] = {0, 0}, unmapped_blocks[2] = {0, 0}, unused = 0;
    for (uint32_t i = 0; i < m->block_count; i++) {
        const struct cmt__block *b = cmt__b(m, i);
        if (b->where == CMT__UNUSED) {
            unused++;
            continue;
        }
        if (b->where == CMT__LOOSE || b->pool > 1 || !chain_ok(m, i))
            return CMT_EMODEL_CORRUPT;
        bool expandable = b->expandable != CMT__NIL;
        if (expandable && (b->expandable >= m->segment_count || !m->segments[b->expandable].live))
            return CMT_EMODEL_CORRUPT;
        if (b->mapped)
            s.reserved_bytes += b->size;
        if (!expandable && b->prev == CMT__NIL)
            s.segment++;
        if (b->where == CMT__ALLOCATED) {
            s.allocation++;
            s.allocated_bytes += b->size;
            s.requested_bytes += b->requested;
        } else if (b->where == CMT__FREE) {
            free_blocks[b->pool]++;
            if (!expandable && cmt__is_split(m, i)) {
                s.inactive_split++;
                s.inactive_split_bytes += b->size;
            }
        } else {
            unmapped_blocks[b->pool]++;
        }
    }
    const struct cmt_model_stats *t = &m->stats;
    if (unused != m->unused_count || s.reserved_bytes != t->reserved_bytes ||
        s.segment != t->segment || s.allocation != t->allocation ||
        s.allocated_bytes != t->allocated_bytes || s.requested_bytes != t->requested_bytes ||
        s.inactive_split != t->inactive_split ||
        s.inactive_split_bytes != t->inactive_split_bytes ||
        t->active_bytes != t->allocated_bytes || t->reserved_bytes > m->config.capacity ||
        t->peak_reserved < t->reserved_bytes || t->peak_allocated < t->allocated_bytes)
        return CMT_EMODEL_CORRUPT;
    uint64_t chunks = m->chunk_free_count;
    for (int p = 0; p < 2; p++) {
        const struct cmt__pool *pool = &m->pools[p];
        uint64_t n = walk_set(m, &pool->free_set, CMT__FREE, p);
        if (n != free_blocks[p] || n != pool->free_count || !pool->free_set.by_size)
            return CMT_EMODEL_CORRUPT;
        n = walk_set(m, &pool->unmapped_set, CMT__UNMAPPED, p);
        if (n != unmapped_blocks[p] || pool->unmapped_set.by_size)
            return CMT_EMODEL_CORRUPT;
        chunks += pool->free_set.chunk_count + pool->unmapped_set.chunk_count;
    }
    if (chunks != m->chunk_capacity)
        return CMT_EMODEL_CORRUPT;
    return CMT_EOK;
}
