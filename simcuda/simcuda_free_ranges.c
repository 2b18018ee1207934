/* The free ranges of an address space, for first fit in O(log n) of the live ranges: a treap
 * keyed by begin, each node a maximal free range, augmented with the longest range in its
 * subtree, so the search skips every subtree too short for the request. The sorted array of
 * used ranges (simcuda_space.c) stays the source of truth and the order the other files
 * iterate; these ranges are its gaps, built from it on first use. */
#include "simcuda_internal.h"

#include <stdlib.h>

struct simcuda__free_range {
    uint64_t begin, end; /* [begin, end), never empty */
    uint64_t longest;    /* the longest end - begin in this subtree */
    uint32_t priority;
    struct simcuda__free_range *left, *right;
};

static uint64_t longest_of(const struct simcuda__free_range *n)
{
    return n ? n->longest : 0;
}

static void update(struct simcuda__free_range *n)
{
    uint64_t l = longest_of(n->left), r = longest_of(n->right), own = n->end - n->begin;
    n->longest = own > l ? (own > r ? own : r) : (l > r ? l : r);
}

/* Splits t into the ranges that begin below key (*low) and the rest (*high). */
static void split(struct simcuda__free_range *t, uint64_t key, struct simcuda__free_range **low,
                  struct simcuda__free_range **high)
{
    if (!t) {
        *low = *high = NULL;
    } else if (t->begin < key) {
        split(t->right, key, &t->right, high);
        update(t);
        *low = t;
    } else {
        split(t->left, key, low, &t->left);
        update(t);
        *high = t;
    }
}

/* Joins low and high, every range of low below every range of high. */
static struct simcuda__free_range *merge(struct simcuda__free_range *low,
                                         struct simcuda__free_range *high)
{
    if (!low || !high)
        return low ? low : high;
    if (low->priority > high->priority) {
        low->right = merge(low->right, high);
        update(low);
        return low;
    }
    high->left = merge(low, high->left);
    update(high);
    return high;
}

static uint32_t next_priority(struct simcuda__va_space *space)
{
    uint64_t x = space->free_seed += 0x9E3779B97F4A7C15ull; /* splitmix64: deterministic */
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)(x ^ (x >> 31));
}

static bool add(struct simcuda__va_space *space, uint64_t begin, uint64_t end)
{
    struct simcuda__free_range *n = malloc(sizeof(*n));
    if (!n)
        return false;
    *n = (struct simcuda__free_range){begin, end, end - begin, next_priority(space), NULL, NULL};
    struct simcuda__free_range *low, *high;
    split(space->free_root, begin, &low, &high);
    space->free_root = merge(merge(low, n), high);
    return true;
}

/* Detaches the range that begins at begin. @return it, or NULL. */
static struct simcuda__free_range *take(struct simcuda__va_space *space, uint64_t begin)
{
    struct simcuda__free_range *low, *mid, *high;
    split(space->free_root, begin, &low, &high);
    split(high, begin + 1, &mid, &high);
    space->free_root = merge(low, high);
    return mid;
}

/* The range containing address, or ending exactly at it (a left neighbour); NULL if none. */
static struct simcuda__free_range *floor_range(struct simcuda__free_range *t, uint64_t address)
{
    struct simcuda__free_range *best = NULL;
    while (t) {
        if (t->begin <= address) {
            best = t;
            t = t->right;
        } else {
            t = t->left;
        }
    }
    return best && address <= best->end ? best : NULL;
}

static void free_all(struct simcuda__free_range *t)
{
    if (!t)
        return;
    free_all(t->left);
    free_all(t->right);
    free(t);
}

bool simcuda__free_ranges_ready(struct simcuda__va_space *space)
{
    if (space->free_built)
        return true;
    uint64_t begin = space->start;
    for (size_t i = 0; i <= space->count; i++) {
        uint64_t end = i == space->count ? space->start + space->size : space->entries[i].base;
        if (end > begin && !add(space, begin, end)) {
            free_all(space->free_root);
            space->free_root = NULL;
            return false;
        }
        if (i < space->count)
            begin = space->entries[i].base + space->entries[i].size;
    }
    space->free_built = true;
    return true;
}

static uint64_t align_up(uint64_t value, uint64_t alignment)
{
    return (value + alignment - 1) / alignment * alignment;
}

/* Leftmost range of t where an aligned block of size fits at or above floor. */
static const struct simcuda__free_range *fit(const struct simcuda__free_range *t, uint64_t size,
                                             uint64_t alignment, uint64_t floor, CUdeviceptr *at)
{
    if (!t || t->longest < size)
        return NULL;
    if (t->end > floor) { /* else this range and all those left of it lie below floor */
        const struct simcuda__free_range *found = fit(t->left, size, alignment, floor, at);
        if (found)
            return found;
        uint64_t candidate = align_up(t->begin > floor ? t->begin : floor, alignment);
        if (candidate < t->end && t->end - candidate >= size) {
            *at = candidate;
            return t;
        }
    }
    return fit(t->right, size, alignment, floor, at);
}

bool simcuda__free_ranges_fit(const struct simcuda__va_space *space, uint64_t size,
                              uint64_t alignment, uint64_t floor, CUdeviceptr *out)
{
    return fit(space->free_root, size, alignment, floor, out) != NULL;
}

bool simcuda__free_ranges_holds(const struct simcuda__va_space *space, uint64_t base, uint64_t size)
{
    const struct simcuda__free_range *r = floor_range(space->free_root, base);
    return r && base < r->end && r->end - base >= size;
}

bool simcuda__free_ranges_use(struct simcuda__va_space *space, uint64_t base, uint64_t size)
{
    struct simcuda__free_range *r = floor_range(space->free_root, base);
    if (!r || base >= r->end || r->end - base < size)
        return false;
    uint64_t begin = r->begin, end = r->end;
    r = take(space, begin);
    if (base + size < end) { /* the part above stays free: reuse the node */
        r->begin = base + size;
        r->left = r->right = NULL;
        update(r);
        struct simcuda__free_range *low, *high;
        split(space->free_root, r->begin, &low, &high);
        space->free_root = merge(merge(low, r), high);
    } else {
        free(r);
    }
    return begin < base ? add(space, begin, base) : true;
}

bool simcuda__free_ranges_give_back(struct simcuda__va_space *space, uint64_t base, uint64_t size)
{
    uint64_t begin = base, end = base + size;
    struct simcuda__free_range *left = floor_range(space->free_root, base);
    if (left && left->end == base) { /* coalesce with the free range below */
        begin = left->begin;
        free(take(space, begin));
    }
    struct simcuda__free_range *right = take(space, end);
    if (right) { /* and the one above */
        end = right->end;
        free(right);
    }
    return add(space, begin, end);
}

void simcuda__free_ranges_clear(struct simcuda__va_space *space)
{
    free_all(space->free_root);
    space->free_root = NULL;
    space->free_built = false;
}
