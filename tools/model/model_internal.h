/* model_internal.h — shared between the files of the caching-allocator model.
 * Not installed; nothing outside tools/model includes it. */
#ifndef CMT_MODEL_INTERNAL_H
#define CMT_MODEL_INTERNAL_H

#include "caching_model.h"

#define CMT__NIL UINT32_MAX

/* PyTorch's constants (CUDACachingAllocator.cpp). */
#define CMT__MIN_BLOCK_SIZE ((uint64_t)512)
#define CMT__SMALL_SIZE ((uint64_t)1 << 20)
#define CMT__SMALL_BUFFER ((uint64_t)2 << 20)
#define CMT__MIN_LARGE_ALLOC ((uint64_t)10 << 20)
#define CMT__ROUND_LARGE ((uint64_t)2 << 20)
#define CMT__LARGE_BUFFER ((uint64_t)20 << 20)

enum { CMT__POOL_SMALL = 0, CMT__POOL_LARGE = 1 };

/* Where a block slot is. */
enum cmt__where {
    CMT__UNUSED = 0, /* slot on the host free list */
    CMT__ALLOCATED,  /* handed out */
    CMT__FREE,       /* in its pool's free set (mapped, not allocated) */
    CMT__UNMAPPED,   /* in its pool's unmapped set (expandable segments) */
    CMT__LOOSE       /* between sets during an operation */
};

/* Which order a set keeps. */
enum cmt__order {
    CMT__BY_ADDRESS = 0, /* (stream, address): BlockComparatorAddress */
    CMT__BY_SIZE = 1     /* (stream, size, address): PyTorch's BlockComparatorSize */
};

struct cmt__block {
    uint64_t address;
    uint64_t size;
    uint64_t requested;
    uint64_t stream;
    uint64_t gc_base;    /* pool's get_free_block count when inserted */
    uint32_t prev, next; /* neighbours in the same segment */
    uint32_t generation; /* bumped whenever the slot is recycled */
    uint32_t expandable; /* index in model->segments, or CMT__NIL */
    uint32_t chunk;      /* the set chunk holding its key, while in a set (model_set.c) */
    uint8_t pool;
    uint8_t mapped; /* backed by device memory (always, unless expandable) */
    uint8_t where;  /* enum cmt__where */
};

/* Keys per chunk of a set (model_set.c). */
#define CMT__CHUNK 16

/* A key of a set: (stream, size, address), size 0 in a CMT__BY_ADDRESS set. */
struct cmt__set_key {
    uint64_t stream, size, address;
    uint32_t slot; /* the block */
};

/* An ordered set of blocks: chunks of sorted keys, in key order. The three
 * arrays have the model's chunk_capacity elements. */
struct cmt__set {
    uint32_t *ids;             /* chunk ids (into chunk_entries), in order */
    uint32_t *fill;            /* keys in each chunk, 1..CMT__CHUNK */
    struct cmt__set_key *last; /* the last key of each chunk: the search index */
    uint32_t chunk_count;
    uint32_t hint_chunk, hint_pos; /* where the last search landed */
    uint8_t by_size;               /* CMT__BY_SIZE (1) or CMT__BY_ADDRESS (0) */
    uint64_t count;                /* keys */
};

struct cmt__pool {
    struct cmt__set free_set;     /* (stream, size, address) of free mapped blocks */
    struct cmt__set unmapped_set; /* (stream, address) of unmapped ranges */
    uint64_t get_free_calls;      /* PyTorch's get_free_blocks_call_count */
    uint64_t free_count;          /* blocks in free_set */
};

/* A free range of model addresses below the top (model_address.c). */
struct cmt__hole {
    uint64_t address, size;
};

/* One expandable segment: a virtual reservation mapped page by page. */
struct cmt__segment {
    uint64_t base;
    uint64_t size;
    uint64_t page;
    bool live;
};

struct cmt_model {
    struct cmt_model_config config; /* normalised */
    uint64_t split_limit;           /* S; UINT64_MAX when unlimited */
    uint64_t allowed;               /* fraction cap in bytes (0: none) */
    bool set_fraction;

    struct cmt__block *blocks;
    uint32_t block_count; /* slots in use or on the free list */
    uint32_t block_capacity;
    uint32_t unused_head; /* host free list of slots, through .next */
    uint32_t unused_count;

    struct cmt__pool pools[2];
    struct cmt__segment *segments;
    uint32_t segment_count;
    size_t segment_capacity;
    uint32_t live_segments;

    /* Chunks of every set: chunk_capacity x CMT__CHUNK keys, and a stack of
   * the ids not in use. */
    struct cmt__set_key *chunk_entries;
    uint32_t *chunk_position; /* per chunk id: its index in its set's sequence */
    uint32_t *chunk_free;
    uint32_t chunk_free_count, chunk_capacity;

    uint32_t *scratch; /* work list for release paths */
    uint32_t scratch_capacity;

    /* Addresses (model_address.c): every range handed out lies below address_top; holes are
     * the ranges given back below it, in address order, merged. Under first fit the last hole
     * never reaches address_top (the top comes down instead). */
    uint64_t address_top;
    uint64_t address_high; /* the end of the highest range ever handed out */
    struct cmt__hole *holes;
    uint32_t hole_count, hole_capacity;
    bool addresses_diverged; /* the other policy would have placed a range elsewhere */
    struct cmt_model_stats stats;
    struct cmt_model_oom last_oom;
    bool has_oom;
    struct cmt_model_device_hooks hooks; /* all NULL: the device is a counter */
};

static inline struct cmt__block *cmt__b(const struct cmt_model *m, uint32_t i)
{
    return &m->blocks[i];
}

static inline bool cmt__is_split(const struct cmt_model *m, uint32_t i)
{
    return m->blocks[i].prev != CMT__NIL || m->blocks[i].next != CMT__NIL;
}

/* model_set.c: ordered sets of block slots; nothing here allocates. */
void cmt__set_insert(struct cmt_model *m, struct cmt__set *s, uint32_t node);
void cmt__set_erase(struct cmt_model *m, struct cmt__set *s, uint32_t node);
/* Erase `old` (its key fields still intact) and insert `node`, in place when
 * node's key sorts where old's was, within old's chunk when it still belongs there. */
void cmt__set_replace(struct cmt_model *m, struct cmt__set *s, uint32_t old, uint32_t node);
/* Smallest node with key >= (stream, size, address); CMT__NIL if none.
 * Searches remember where they landed (the set's hint), hence not const. */
uint32_t cmt__set_lower_bound(const struct cmt_model *m, struct cmt__set *s, uint64_t stream,
                              uint64_t size, uint64_t address);
/* Largest node with key < (stream, size, address). */
uint32_t cmt__set_before(const struct cmt_model *m, const struct cmt__set *s, uint64_t stream,
                         uint64_t size, uint64_t address);
/* The node after `node` (which may already be out of the set). */
uint32_t cmt__set_after(const struct cmt_model *m, struct cmt__set *s, uint32_t node);
/* Make room for the sets of a model with `slots` block slots.
 * @return 0 or CMT_EMODEL_NOMEM (the sets stay usable as they were). */
int cmt__sets_reserve(struct cmt_model *m, uint64_t slots);
void cmt__sets_destroy(struct cmt_model *m);

/* caching_model.c: slots and the pieces the expandable path shares. */
uint32_t cmt__block_new(struct cmt_model *m);
void cmt__block_release(struct cmt_model *m, uint32_t i);
void cmt__free_insert(struct cmt_model *m, uint32_t i);
void cmt__free_erase(struct cmt_model *m, uint32_t i);
uint64_t cmt__try_merge(struct cmt_model *m, uint32_t dst, uint32_t src);
void cmt__reserved_add(struct cmt_model *m, uint64_t bytes);
/* The device callbacks, page by page for expandable segments.
 * @return true when the device gave all `size` bytes (nothing held otherwise). */
bool cmt__device_alloc(struct cmt_model *m, uint64_t address, uint64_t size, uint64_t page);
void cmt__device_free(struct cmt_model *m, uint64_t address, uint64_t size, uint64_t page);

/* model_address.c: the address policy (cmt_model_config.address_policy). */
/* Room for the holes one operation can make (one per live range). @return 0 or
 * CMT_EMODEL_NOMEM. */
int cmt__address_reserve(struct cmt_model *m, uint64_t live_ranges);
/* The address a range of `size` bytes gets, without taking it. */
uint64_t cmt__address_peek(const struct cmt_model *m, uint64_t size);
/* Take the range cmt__address_peek(m, size) named. @return its address. */
uint64_t cmt__address_take(struct cmt_model *m, uint64_t size);
/* Give a range back. */
void cmt__address_release(struct cmt_model *m, uint64_t address, uint64_t size);
void cmt__address_destroy(struct cmt_model *m);

/* model_expandable.c */
uint32_t cmt__expandable_allocate(struct cmt_model *m, int pool, uint64_t stream, uint64_t size);
uint64_t cmt__expandable_unmap(struct cmt_model *m, uint32_t block);
void cmt__expandable_drop_if_empty(struct cmt_model *m, uint32_t block);

#endif /* CMT_MODEL_INTERNAL_H */
