/* caching_model.c — the malloc/free paths of the caching-allocator model.
 *
 * Follows DeviceCachingAllocator in c10/cuda/CUDACachingAllocator.cpp:
 * malloc = round_size -> get_free_block -> [garbage_collect] -> alloc_block
 * -> release_available_cached_blocks + alloc_block -> release_cached_blocks +
 * alloc_block (a retry) -> OOM; then alloc_found_block (split) ... free_block
 * (merge). Function names mirror PyTorch's so the two can be read side by
 * side. The device is a counter: a segment of s bytes fits while
 * reserved + s <= capacity. */
#include "model_internal.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_debug.h"

#define CMT__ONE_EIB ((uint64_t)1 << 60)

/* ---- block slots ---------------------------------------------------- */

/* Slots on the free list are always covered by the sets' chunks: the sets grow first. */
static int reserve_slots(struct cmt_model *m, uint64_t need)
{
    if (m->unused_count >= need)
        return 0;
    uint64_t missing = need - m->unused_count;
    if ((uint64_t)m->block_count + missing > CMT__NIL - 1)
        return CMT_EMODEL_NOMEM;
    uint32_t wanted = m->block_count + (uint32_t)missing;
    if (wanted > m->block_capacity) {
        uint64_t cap = m->block_capacity ? m->block_capacity : 64;
        while (cap < wanted)
            cap *= 2;
        if (cap > CMT__NIL - 1)
            cap = CMT__NIL - 1;
        struct cmt__block *grown = realloc(m->blocks, cap * sizeof *grown);
        if (!grown)
            return CMT_EMODEL_NOMEM;
        m->blocks = grown;
        m->block_capacity = (uint32_t)cap;
    }
    int rc = cmt__sets_reserve(m, m->block_capacity);
    if (rc != 0)
        return rc;
    while (m->block_count < wanted) {
        struct cmt__block *b = &m->blocks[m->block_count];
        memset(b, 0, sizeof *b);
        b->where = CMT__UNUSED;
        b->next = m->unused_head;
        m->unused_head = m->block_count++;
        m->unused_count++;
    }
    return 0;
}

/* Takes a slot reserved earlier by reserve_slots; never fails. */
uint32_t cmt__block_new(struct cmt_model *m)
{
    uint32_t i = m->unused_head;
    struct cmt__block *b = cmt__b(m, i);
    m->unused_head = b->next;
    m->unused_count--;
    uint32_t generation = b->generation;
    memset(b, 0, sizeof *b);
    b->generation = generation;
    b->prev = b->next = CMT__NIL;
    b->expandable = CMT__NIL;
    b->mapped = 1;
    b->where = CMT__LOOSE;
    return i;
}

void cmt__block_release(struct cmt_model *m, uint32_t i)
{
    struct cmt__block *b = cmt__b(m, i);
    b->where = CMT__UNUSED;
    b->generation++;
    b->next = m->unused_head;
    m->unused_head = i;
    m->unused_count++;
}

/* Slots an operation may need: a split remainder, and for expandable
 * segments up to two pieces per unmapped free block plus a new reservation. */
static uint64_t slots_needed(const struct cmt_model *m)
{
    uint64_t need = 8;
    if (m->config.expandable_segments || m->live_segments > 0)
        need += 2 * (m->pools[0].free_count + m->pools[1].free_count);
    return need;
}

static int reserve_scratch(struct cmt_model *m)
{
    uint64_t need = m->pools[0].free_count + m->pools[1].free_count + 1;
    if (need <= m->scratch_capacity)
        return 0;
    if (need > UINT32_MAX)
        return CMT_EMODEL_NOMEM;
    uint32_t *grown = realloc(m->scratch, need * 2 * sizeof *grown);
    if (!grown)
        return CMT_EMODEL_NOMEM;
    m->scratch = grown;
    m->scratch_capacity = (uint32_t)(need * 2 > UINT32_MAX ? UINT32_MAX : need * 2);
    return 0;
}

/* ---- pools and statistics ------------------------------------------- */

/* PyTorch's BlockPool::insert_into_blocks: stamps the GC age base. */
void cmt__free_insert(struct cmt_model *m, uint32_t i)
{
    struct cmt__block *b = cmt__b(m, i);
    struct cmt__pool *pool = &m->pools[b->pool];
    b->gc_base = pool->get_free_calls;
    b->where = CMT__FREE;
    cmt__set_insert(m, &pool->free_set, i);
    pool->free_count++;
}

/* Free block `old` leaves the pool and `i` enters it (in old's place when
 * the order allows). old's key fields must still be intact. */
static void free_replace(struct cmt_model *m, uint32_t old, uint32_t i)
{
    struct cmt__block *b = cmt__b(m, i);
    struct cmt__pool *pool = &m->pools[b->pool];
    b->gc_base = pool->get_free_calls;
    b->where = CMT__FREE;
    cmt__b(m, old)->where = CMT__LOOSE;
    cmt__set_replace(m, &pool->free_set, old, i);
}

void cmt__free_erase(struct cmt_model *m, uint32_t i)
{
    struct cmt__block *b = cmt__b(m, i);
    struct cmt__pool *pool = &m->pools[b->pool];
    cmt__set_erase(m, &pool->free_set, i);
    pool->free_count--;
    b->where = CMT__LOOSE;
}

void cmt__reserved_add(struct cmt_model *m, uint64_t bytes)
{
    m->stats.reserved_bytes += bytes;
    if (m->stats.reserved_bytes > m->stats.peak_reserved)
        m->stats.peak_reserved = m->stats.reserved_bytes;
}

bool cmt__device_alloc(struct cmt_model *m, uint64_t address, uint64_t size, uint64_t page)
{
    if (!m->hooks.alloc)
        return true;
    for (uint64_t done = 0; done < size; done += page) {
        uint64_t piece = size - done < page ? size - done : page;
        if (m->hooks.alloc(m->hooks.ctx, address + done, piece) != 0) {
            cmt__device_free(m, address, done, page);
            return false;
        }
    }
    return true;
}

void cmt__device_free(struct cmt_model *m, uint64_t address, uint64_t size, uint64_t page)
{
    if (!m->hooks.free)
        return;
    for (uint64_t done = 0; done < size; done += page) {
        uint64_t piece = size - done < page ? size - done : page;
        m->hooks.free(m->hooks.ctx, address + done, piece);
    }
}

int cmt_model_set_device_hooks(struct cmt_model *model, const struct cmt_model_device_hooks *hooks)
{
    if (!model)
        return CMT_EINVALID;
    if (hooks)
        model->hooks = *hooks;
    else
        memset(&model->hooks, 0, sizeof model->hooks);
    return CMT_EOK;
}

static bool mergeable(const struct cmt_model *m, uint32_t dst, uint32_t src)
{
    if (src == CMT__NIL)
        return false;
    const struct cmt__block *s = cmt__b(m, src);
    return (s->where == CMT__FREE || s->where == CMT__UNMAPPED) &&
           s->mapped == cmt__b(m, dst)->mapped;
}

/* Take neighbour src's range into dst: links and size only; src's own
 * fields (its key) stay as they were. @return the bytes subsumed. */
static uint64_t absorb(struct cmt_model *m, uint32_t dst, uint32_t src)
{
    struct cmt__block *s = cmt__b(m, src);
    struct cmt__block *d = cmt__b(m, dst);
    if (d->prev == src) {
        d->address = s->address;
        d->prev = s->prev;
        if (d->prev != CMT__NIL)
            cmt__b(m, d->prev)->next = dst;
    } else {
        d->next = s->next;
        if (d->next != CMT__NIL)
            cmt__b(m, d->next)->prev = dst;
    }
    d->size += s->size;
    return s->size;
}

/* Merge free neighbour `src` into `dst` (neither may be in a set by key
 * change: src is taken out here, dst must be out already).
 * @return the bytes subsumed, 0 if src cannot merge. */
uint64_t cmt__try_merge(struct cmt_model *m, uint32_t dst, uint32_t src)
{
    if (!mergeable(m, dst, src))
        return 0;
    struct cmt__block *s = cmt__b(m, src);
    if (s->mapped)
        cmt__free_erase(m, src);
    else
        cmt__set_erase(m, &m->pools[s->pool].unmapped_set, src);
    uint64_t subsumed = absorb(m, dst, src);
    cmt__block_release(m, src);
    return subsumed;
}

/* ---- sizing ----------------------------------------------------------- */

static unsigned floor_log2(uint64_t v)
{
    return 63u - (unsigned)__builtin_clzll(v);
}

/* PyTorch's roundup_power2_next_division. */
static uint64_t next_power2_division(uint64_t size, uint64_t divisions)
{
    if ((size & (size - 1)) == 0)
        return size;
    uint64_t floor = (uint64_t)1 << floor_log2(size);
    uint64_t step = floor >> floor_log2(divisions);
    if (step == 0)
        return floor << 1;
    uint64_t down = size & ~(step - 1);
    return down == size ? size : down + step;
}

size_t cmt_model_round_size(const struct cmt_model_config *config, size_t size)
{
    if (size < CMT__MIN_BLOCK_SIZE)
        return CMT__MIN_BLOCK_SIZE;
    uint64_t divisions = 0;
    if (config && config->roundup_power2_per_interval) {
        /* c10's roundup_power2_divisions(size): the interval of log2(size), from 1 MiB. */
        int index = (int)floor_log2(size) - 20;
        if (index < 0)
            index = 0;
        if (index > CMT_MODEL_ROUNDUP_INTERVALS - 1)
            index = CMT_MODEL_ROUNDUP_INTERVALS - 1;
        divisions = config->roundup_power2_intervals[index];
    } else if (config) {
        divisions = config->roundup_power2_divisions;
    }
    if (divisions > 1 && size > CMT__MIN_BLOCK_SIZE * divisions)
        return next_power2_division(size, divisions);
    return CMT__MIN_BLOCK_SIZE * ((size + CMT__MIN_BLOCK_SIZE - 1) / CMT__MIN_BLOCK_SIZE);
}

size_t cmt_model_segment_size(const struct cmt_model_config *config, size_t rounded_size)
{
    (void)config;
    if (rounded_size <= CMT__SMALL_SIZE)
        return CMT__SMALL_BUFFER;
    if (rounded_size < CMT__MIN_LARGE_ALLOC)
        return CMT__LARGE_BUFFER;
    return CMT__ROUND_LARGE * ((rounded_size + CMT__ROUND_LARGE - 1) / CMT__ROUND_LARGE);
}

/* ---- create / destroy ------------------------------------------------- */

int cmt_model_create(const struct cmt_model_config *config, struct cmt_model **out)
{
    if (!config || !out || config->capacity == 0)
        return CMT_EINVALID;
    if (!(config->garbage_collection_threshold >= 0.0 &&
          config->garbage_collection_threshold < 1.0) ||
        !(config->memory_fraction >= 0.0 && config->memory_fraction <= 1.0))
        return CMT_EINVALID;
    struct cmt_model *m = calloc(1, sizeof *m);
    if (!m)
        return CMT_EMODEL_NOMEM;
    m->config = *config;
    if (m->config.max_split_size == 0)
        m->config.max_split_size = SIZE_MAX;
    if (m->config.device_total == 0)
        m->config.device_total = m->config.capacity;
    m->split_limit = m->config.max_split_size == SIZE_MAX ? UINT64_MAX : m->config.max_split_size;
    if (m->config.memory_fraction > 0.0) {
        m->set_fraction = true;
        m->allowed = (uint64_t)(m->config.memory_fraction * (double)m->config.device_total);
    }
    m->unused_head = CMT__NIL;
    for (int p = 0; p < 2; p++)
        m->pools[p].free_set.by_size = CMT__BY_SIZE;
    if ((unsigned)m->config.address_policy >= CMT_MODEL_ADDRESS_POLICY_COUNT) {
        free(m);
        return CMT_EINVALID;
    }
    m->address_top = m->address_high = (uint64_t)1 << 40; /* looks like a device address */
    *out = m;
    return CMT_EOK;
}

void cmt_model_destroy(struct cmt_model *model)
{
    if (!model)
        return;
    cmt__sets_destroy(model);
    free(model->blocks);
    free(model->segments);
    free(model->scratch);
    cmt__address_destroy(model);
    free(model);
}

const struct cmt_model_config *cmt_model_get_config(const struct cmt_model *model)
{
    return &model->config;
}

void cmt_model_get_stats(const struct cmt_model *model, struct cmt_model_stats *stats)
{
    *stats = model->stats;
}

const struct cmt_model_stats *cmt_model_stats_view(const struct cmt_model *model)
{
    return &model->stats;
}

const struct cmt_model_oom *cmt_model_last_oom(const struct cmt_model *model)
{
    return model && model->has_oom ? &model->last_oom : NULL;
}

/* ---- finding and allocating blocks ------------------------------------ */

struct cmt__request {
    uint64_t stream;
    uint64_t size;       /* rounded */
    uint64_t alloc_size; /* segment size */
    int pool;
    uint32_t block;
    bool in_pool; /* block is still in the free set (found by get_free_block) */
};

static bool gc_enabled(const struct cmt_model *m)
{
    return m->set_fraction && m->config.garbage_collection_threshold > 0.0;
}

static uint64_t expandable_size(const struct cmt_model *m, uint32_t i)
{
    const struct cmt__block *b = cmt__b(m, i);
    if (b->next != CMT__NIL && !cmt__b(m, b->next)->mapped)
        return b->size + cmt__b(m, b->next)->size;
    return b->size;
}

/* PyTorch's get_free_block: best fit plus the max_split_size refusals. */
static bool get_free_block(struct cmt_model *m, struct cmt__request *r)
{
    struct cmt__pool *pool = &m->pools[r->pool];
    if (gc_enabled(m))
        pool->get_free_calls++;
    uint32_t it = cmt__set_lower_bound(m, &pool->free_set, r->stream, r->size, 0);
    if (it == CMT__NIL || cmt__b(m, it)->stream != r->stream)
        return false;
    if (cmt__b(m, it)->expandable != CMT__NIL) {
        if (m->config.expandable_segments) {
            /* A block that can still grow counts as big as it can grow, so
       * blocks of true size fit first. */
            uint32_t next = cmt__set_after(m, &pool->free_set, it);
            while (cmt__b(m, it)->expandable != CMT__NIL && next != CMT__NIL &&
                   cmt__b(m, next)->stream == r->stream &&
                   expandable_size(m, next) < expandable_size(m, it)) {
                it = next;
                next = cmt__set_after(m, &pool->free_set, it);
            }
        } else {
            do {
                it = cmt__set_after(m, &pool->free_set, it);
            } while (it != CMT__NIL && cmt__b(m, it)->expandable != CMT__NIL &&
                     cmt__b(m, it)->stream == r->stream);
            if (it == CMT__NIL || cmt__b(m, it)->stream != r->stream)
                return false;
        }
    }
    uint64_t block_size = cmt__b(m, it)->size;
    /* Oversize blocks are kept for oversize requests ... */
    if (r->size < m->split_limit && block_size >= m->split_limit)
        return false;
    /* ... and serve those with at most max_non_split_rounding of slack. */
    if (r->size >= m->split_limit &&
        block_size >= r->size + (uint64_t)m->config.max_non_split_rounding)
        return false;
    /* Left in the free set: alloc_found_block takes it out, or swaps in the
   * split remainder in one step. */
    r->block = it;
    r->in_pool = true;
    return true;
}

/* PyTorch's release_block: cudaFree a whole free segment. */
static void release_block(struct cmt_model *m, uint32_t i)
{
    struct cmt__block *b = cmt__b(m, i);
    m->stats.device_free_calls++;
    cmt__device_free(m, b->address, b->size, b->size);
    cmt__address_release(m, b->address, b->size);
    m->stats.reserved_bytes -= b->size;
    m->stats.segment--;
    if (b->size >= m->split_limit)
        m->stats.oversize_segments--;
    cmt__free_erase(m, i);
    cmt__block_release(m, i);
}

/* PyTorch's release_available_cached_blocks (only with a finite S). As in
 * PyTorch 2.x, blocks of expandable segments are passed over: a found one
 * sends the search to the oversize path, which skips them without counting
 * them as released. Blocks >= S are never split, so each is a whole segment. */
static bool release_available_cached_blocks(struct cmt_model *m, const struct cmt__request *r)
{
    if (m->split_limit == UINT64_MAX)
        return false;
    struct cmt__pool *pool = &m->pools[r->pool];
    uint64_t key = r->size < m->split_limit ? m->split_limit : r->size;
    uint32_t it = cmt__set_lower_bound(m, &pool->free_set, r->stream, key, 0);
    if (it != CMT__NIL && cmt__b(m, it)->stream == r->stream &&
        cmt__b(m, it)->expandable == CMT__NIL) {
        CMT_ASSERT(!cmt__is_split(m, it));
        release_block(m, it);
        return true;
    }
    /* No single block is large enough: free oversize blocks from the largest
   * down; what is freed stays freed even if it is not enough. */
    uint32_t cur = cmt__set_before(m, &pool->free_set, r->stream, key, 0);
    if (cur == CMT__NIL)
        return false;
    uint64_t released = 0;
    while (cur != CMT__NIL && released < key && cmt__b(m, cur)->size >= m->split_limit &&
           cmt__b(m, cur)->stream == r->stream) {
        const struct cmt__block *b = cmt__b(m, cur);
        uint32_t lower = cmt__set_before(m, &pool->free_set, b->stream, b->size, b->address);
        if (b->expandable == CMT__NIL) {
            CMT_ASSERT(!cmt__is_split(m, cur));
            released += b->size;
            release_block(m, cur);
        }
        cur = lower;
    }
    return released >= key;
}

/* PyTorch's release_blocks for one pool: every whole free segment, on every
 * stream; free pages of expandable blocks are unmapped afterwards. */
static void release_pool_blocks(struct cmt_model *m, int p)
{
    struct cmt__pool *pool = &m->pools[p];
    uint32_t to_unmap = 0;
    uint32_t it = cmt__set_lower_bound(m, &pool->free_set, 0, 0, 0);
    while (it != CMT__NIL) {
        uint32_t next = cmt__set_after(m, &pool->free_set, it);
        if (cmt__b(m, it)->expandable != CMT__NIL)
            m->scratch[to_unmap++] = it;
        else if (!cmt__is_split(m, it))
            release_block(m, it);
        it = next;
    }
    for (uint32_t k = 0; k < to_unmap; k++) {
        cmt__expandable_unmap(m, m->scratch[k]);
        cmt__expandable_drop_if_empty(m, m->scratch[k]);
    }
}

/* PyTorch's release_cached_blocks (also empty_cache). */
static bool release_cached_blocks(struct cmt_model *m)
{
    release_pool_blocks(m, CMT__POOL_LARGE);
    release_pool_blocks(m, CMT__POOL_SMALL);
    return true;
}

/* PyTorch's garbage_collect_cached_blocks. The age of a free block is the
 * number of get_free_block calls on its pool since it was (re)inserted, as in
 * PyTorch. Expandable blocks are never collected here (PyTorch's
 * release_block would reject them). */
static void garbage_collect(struct cmt_model *m)
{
    struct cmt__pool *pool = &m->pools[CMT__POOL_LARGE];
    uint64_t threshold = (uint64_t)(m->config.garbage_collection_threshold * (double)m->allowed);
    if (m->stats.reserved_bytes <= threshold)
        return;
    uint64_t target = m->stats.reserved_bytes - threshold;
    uint64_t total_age = 0, reclaimed = 0, count = 0;
    uint32_t it;
    for (it = cmt__set_lower_bound(m, &pool->free_set, 0, 0, 0); it != CMT__NIL;
         it = cmt__set_after(m, &pool->free_set, it)) {
        if (!cmt__is_split(m, it) && cmt__b(m, it)->expandable == CMT__NIL) {
            total_age += pool->get_free_calls - cmt__b(m, it)->gc_base;
            count++;
        }
    }
    bool freed = true;
    while (reclaimed < target && freed && count > 0) {
        double age_threshold = (double)total_age / (double)count;
        freed = false;
        /* Free every block at least as old as the average; do not stop at the
     * target, so GC does not run again at once. */
        it = cmt__set_lower_bound(m, &pool->free_set, 0, 0, 0);
        while (it != CMT__NIL) {
            uint32_t next = cmt__set_after(m, &pool->free_set, it);
            uint64_t age = pool->get_free_calls - cmt__b(m, it)->gc_base;
            if (!cmt__is_split(m, it) && cmt__b(m, it)->expandable == CMT__NIL &&
                (double)age >= age_threshold) {
                freed = true;
                reclaimed += cmt__b(m, it)->size;
                total_age -= age;
                count--;
                release_block(m, it);
            }
            it = next;
        }
    }
}

/* PyTorch's alloc_block: one device allocation attempt. */
static bool alloc_block(struct cmt_model *m, struct cmt__request *r, bool is_retry)
{
    if (is_retry)
        m->stats.num_alloc_retries++;
    if (m->set_fraction && m->stats.reserved_bytes + r->alloc_size > m->allowed)
        return false;
    if (m->config.expandable_segments) {
        r->block = cmt__expandable_allocate(m, r->pool, r->stream, r->size);
        return r->block != CMT__NIL;
    }
    m->stats.device_alloc_calls++;
    if (m->stats.reserved_bytes + r->alloc_size > m->config.capacity ||
        !cmt__device_alloc(m, cmt__address_peek(m, r->alloc_size), r->alloc_size, r->alloc_size))
        return false;
    uint32_t i = cmt__block_new(m);
    struct cmt__block *b = cmt__b(m, i);
    b->address = cmt__address_take(m, r->alloc_size);
    b->size = r->alloc_size;
    b->stream = r->stream;
    b->pool = (uint8_t)r->pool;
    m->stats.num_device_alloc++;
    m->stats.segment++;
    cmt__reserved_add(m, r->alloc_size);
    if (r->alloc_size >= m->split_limit)
        m->stats.oversize_segments++;
    r->block = i;
    return true;
}

static bool should_split(const struct cmt_model *m, uint32_t i, uint64_t size)
{
    uint64_t remaining = cmt__b(m, i)->size - size;
    if (cmt__b(m, i)->pool == CMT__POOL_SMALL || m->config.expandable_segments)
        return remaining >= CMT__MIN_BLOCK_SIZE;
    return size < m->split_limit && remaining > CMT__SMALL_SIZE;
}

/* PyTorch's alloc_found_block: the front of the block is handed out, the
 * tail (if split) goes back to the pool. */
static void alloc_found_block(struct cmt_model *m, const struct cmt__request *r, uint64_t requested)
{
    uint32_t i = r->block;
    bool already_split = cmt__is_split(m, i);
    bool expandable = cmt__b(m, i)->expandable != CMT__NIL;
    struct cmt_model_stats *s = &m->stats;
    if (should_split(m, i, r->size)) {
        uint32_t rest = cmt__block_new(m);
        struct cmt__block *b = cmt__b(m, i), *t = cmt__b(m, rest);
        t->address = b->address + r->size;
        t->size = b->size - r->size;
        t->stream = b->stream;
        t->pool = b->pool;
        t->expandable = b->expandable;
        t->prev = i;
        t->next = b->next;
        if (r->in_pool)
            free_replace(m, i, rest); /* before b's key changes */
        else
            cmt__free_insert(m, rest);
        if (t->next != CMT__NIL)
            cmt__b(m, t->next)->prev = rest;
        b->next = rest;
        b->size = r->size;
        if (already_split && !expandable) {
            s->inactive_split_bytes -= r->size;
        } else if (!expandable) {
            s->inactive_split_bytes += cmt__b(m, rest)->size;
            s->inactive_split++;
        }
    } else {
        if (r->in_pool)
            cmt__free_erase(m, i);
        if (already_split && !expandable) {
            s->inactive_split_bytes -= cmt__b(m, i)->size;
            s->inactive_split--;
        }
    }
    struct cmt__block *b = cmt__b(m, i);
    b->where = CMT__ALLOCATED;
    b->requested = requested;
    s->allocation++;
    s->allocated_bytes += b->size;
    if (s->allocated_bytes > s->peak_allocated)
        s->peak_allocated = s->allocated_bytes;
    s->active++;
    s->active_bytes += b->size;
    s->requested_bytes += requested;
    if (b->size >= m->split_limit)
        s->oversize_allocations++;
}

static void record_oom(struct cmt_model *m, const struct cmt__request *r, uint64_t requested)
{
    struct cmt_model_oom *o = &m->last_oom;
    o->requested = requested;
    o->rounded = r->size;
    o->alloc_size = r->alloc_size;
    o->stream = r->stream;
    o->allocated = m->stats.allocated_bytes;
    o->reserved = m->stats.reserved_bytes;
    o->device_free = m->config.capacity > m->stats.reserved_bytes
                         ? m->config.capacity - m->stats.reserved_bytes
                         : 0;
    o->device_total = m->config.device_total;
    o->capacity = m->config.capacity;
    o->allowed = m->set_fraction ? m->allowed : 0;
    o->device = m->config.device_index;
    m->has_oom = true;
    m->stats.num_ooms++;
}

static uint64_t handle_of(const struct cmt_model *m, uint32_t i)
{
    return ((uint64_t)cmt__b(m, i)->generation << 32) | ((uint64_t)i + 1);
}

/* @return the slot of a live allocation, or CMT__NIL. */
static uint32_t slot_of(const struct cmt_model *m, cmt_model_handle h)
{
    uint64_t low = h & 0xffffffffu;
    if (low == 0 || low > m->block_count)
        return CMT__NIL;
    uint32_t i = (uint32_t)(low - 1);
    const struct cmt__block *b = cmt__b(m, i);
    if (b->where != CMT__ALLOCATED || b->generation != (uint32_t)(h >> 32))
        return CMT__NIL;
    return i;
}

int cmt_model_alloc(struct cmt_model *m, size_t size, uint64_t stream, cmt_model_handle *handle)
{
    if (!m || !handle || (uint64_t)size >= CMT__ONE_EIB)
        return CMT_EINVALID;
    if (size == 0) {
        *handle = 0;
        return CMT_EOK;
    }
    if (reserve_slots(m, slots_needed(m)) != 0 || reserve_scratch(m) != 0 ||
        cmt__address_reserve(m, m->stats.segment + m->live_segments) != 0)
        return CMT_EMODEL_NOMEM;
    struct cmt__request r = {.stream = stream, .block = CMT__NIL};
    r.size = cmt_model_round_size(&m->config, size);
    r.pool = r.size <= CMT__SMALL_SIZE ? CMT__POOL_SMALL : CMT__POOL_LARGE;
    r.alloc_size = cmt_model_segment_size(&m->config, r.size);

    bool found = get_free_block(m, &r);
    if (!found) {
        if (gc_enabled(m))
            garbage_collect(m);
        found = alloc_block(m, &r, false) ||
                (release_available_cached_blocks(m, &r) && alloc_block(m, &r, false)) ||
                (release_cached_blocks(m) && alloc_block(m, &r, true));
    }
    if (!found) {
        record_oom(m, &r, size);
        return CMT_EMODEL_OOM;
    }
    alloc_found_block(m, &r, size);
    *handle = handle_of(m, r.block);
    return CMT_EOK;
}

/* PyTorch's free_block: merge with free neighbours, back into the pool. */
static void free_block(struct cmt_model *m, uint32_t i)
{
    struct cmt__block *b = cmt__b(m, i);
    uint64_t original_size = b->size, requested = b->requested;
    int64_t split_blocks = 0, split_bytes = 0;
    b->where = CMT__LOOSE;
    /* The merged block takes the place of the first free neighbour in the
   * free set (in place when the order allows): one search instead of an
   * erase and an insert. An allocated block is mapped, so its mergeable
   * neighbours are all in the free set. */
    uint32_t candidates[2] = {b->prev, b->next};
    uint32_t keep = CMT__NIL;
    for (int k = 0; k < 2; k++) {
        uint32_t c = candidates[k];
        if (!mergeable(m, i, c))
            continue;
        if (keep == CMT__NIL)
            keep = c;
        else
            cmt__free_erase(m, c);
        split_blocks -= 1;
        split_bytes -= (int64_t)absorb(m, i, c);
        if (c != keep)
            cmt__block_release(m, c);
    }
    if (keep != CMT__NIL) {
        free_replace(m, keep, i);
        cmt__block_release(m, keep);
    } else {
        cmt__free_insert(m, i);
    }
    if (cmt__is_split(m, i)) {
        split_blocks += 1;
        split_bytes += (int64_t)cmt__b(m, i)->size;
    }
    struct cmt_model_stats *s = &m->stats;
    if (cmt__b(m, i)->expandable == CMT__NIL) {
        s->inactive_split = (uint64_t)((int64_t)s->inactive_split + split_blocks);
        s->inactive_split_bytes = (uint64_t)((int64_t)s->inactive_split_bytes + split_bytes);
    }
    s->active--;
    s->active_bytes -= original_size;
    s->requested_bytes -= requested;
}

int cmt_model_free(struct cmt_model *m, cmt_model_handle handle)
{
    if (!m)
        return CMT_EINVALID;
    if (handle == 0)
        return CMT_EOK;
    uint32_t i = slot_of(m, handle);
    if (i == CMT__NIL)
        return CMT_EMODEL_BAD_HANDLE;
    struct cmt__block *b = cmt__b(m, i);
    b->generation++; /* the handle dies even if the slot is handed out again */
    m->stats.allocation--;
    m->stats.allocated_bytes -= b->size;
    if (b->size >= m->split_limit)
        m->stats.oversize_allocations--;
    free_block(m, i);
    return CMT_EOK;
}

int cmt_model_empty_cache(struct cmt_model *m)
{
    if (!m)
        return CMT_EINVALID;
    if (reserve_slots(m, slots_needed(m)) != 0 || reserve_scratch(m) != 0 ||
        cmt__address_reserve(m, m->stats.segment + m->live_segments) != 0)
        return CMT_EMODEL_NOMEM;
    release_cached_blocks(m);
    return CMT_EOK;
}

int cmt_model_block_info(const struct cmt_model *m, cmt_model_handle handle,
                         struct cmt_model_block *out)
{
    if (!m || !out)
        return CMT_EINVALID;
    uint32_t i = slot_of(m, handle);
    if (i == CMT__NIL)
        return CMT_EMODEL_BAD_HANDLE;
    const struct cmt__block *b = cmt__b(m, i);
    uint32_t head = i;
    while (cmt__b(m, head)->prev != CMT__NIL)
        head = cmt__b(m, head)->prev;
    out->address = b->address;
    out->size = b->size;
    out->requested = b->requested;
    out->stream = b->stream;
    out->segment_offset = b->address - cmt__b(m, head)->address;
    out->expandable = b->expandable != CMT__NIL;
    out->small_pool = b->pool == CMT__POOL_SMALL;
    return CMT_EOK;
}
