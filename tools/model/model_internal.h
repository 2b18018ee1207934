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
  CMT__UNUSED = 0,  /* slot on the host free list */
  CMT__ALLOCATED,   /* handed out */
  CMT__FREE,        /* in its pool's free tree (mapped, not allocated) */
  CMT__UNMAPPED,    /* in its pool's unmapped tree (expandable segments) */
  CMT__LOOSE        /* between trees during an operation */
};

/* Which order a tree keeps. */
enum cmt__order {
  CMT__BY_SIZE = 0, /* (stream, size, address): PyTorch's BlockComparatorSize */
  CMT__BY_ADDRESS   /* (stream, address): BlockComparatorAddress */
};

struct cmt__block {
  uint64_t address;
  uint64_t size;
  uint64_t requested;
  uint64_t stream;
  uint64_t gc_base;    /* pool's get_free_block count when inserted */
  uint32_t prev, next; /* neighbours in the same segment */
  uint32_t left, right;/* tree children */
  uint32_t priority;   /* treap heap key */
  uint32_t generation; /* bumped whenever the slot is recycled */
  uint32_t expandable; /* index in model->segments, or CMT__NIL */
  uint8_t pool;
  uint8_t mapped;      /* backed by device memory (always, unless expandable) */
  uint8_t where;       /* enum cmt__where */
};

struct cmt__pool {
  uint32_t free_root;     /* CMT__BY_SIZE tree of free mapped blocks */
  uint32_t unmapped_root; /* CMT__BY_ADDRESS tree of unmapped ranges */
  uint64_t get_free_calls;/* PyTorch's get_free_blocks_call_count */
  uint64_t free_count;    /* blocks in free_root */
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
  uint32_t block_count;     /* slots in use or on the free list */
  uint32_t block_capacity;
  uint32_t unused_head;     /* host free list of slots, through .next */
  uint32_t unused_count;

  struct cmt__pool pools[2];
  struct cmt__segment *segments;
  uint32_t segment_count, segment_capacity;
  uint32_t live_segments;

  uint32_t *scratch;        /* work list for release paths */
  uint32_t scratch_capacity;

  uint64_t next_address;
  uint32_t rng;
  struct cmt_model_stats stats;
  struct cmt_model_oom last_oom;
  bool has_oom;
  struct cmt_model_device_hooks hooks; /* all NULL: the device is a counter */
};

static inline struct cmt__block *cmt__b(const struct cmt_model *m, uint32_t i) {
  return &m->blocks[i];
}

static inline bool cmt__is_split(const struct cmt_model *m, uint32_t i) {
  return m->blocks[i].prev != CMT__NIL || m->blocks[i].next != CMT__NIL;
}

/* model_tree.c: an intrusive treap over block slots. */
void cmt__tree_insert(struct cmt_model *m, uint32_t *root, uint32_t node,
                      enum cmt__order order);
void cmt__tree_erase(struct cmt_model *m, uint32_t *root, uint32_t node,
                     enum cmt__order order);
/* Smallest node with key >= (stream, size, address). */
uint32_t cmt__tree_lower_bound(const struct cmt_model *m, uint32_t root,
                               uint64_t stream, uint64_t size, uint64_t address,
                               enum cmt__order order);
/* Largest node with key < (stream, size, address). */
uint32_t cmt__tree_before(const struct cmt_model *m, uint32_t root,
                          uint64_t stream, uint64_t size, uint64_t address,
                          enum cmt__order order);
/* The node after `node` (which may already be out of the tree). */
uint32_t cmt__tree_after(const struct cmt_model *m, uint32_t root,
                         uint32_t node, enum cmt__order order);

/* caching_model.c: slots and the pieces the expandable path shares. */
uint32_t cmt__block_new(struct cmt_model *m);
void cmt__block_release(struct cmt_model *m, uint32_t i);
void cmt__free_insert(struct cmt_model *m, uint32_t i);
void cmt__free_erase(struct cmt_model *m, uint32_t i);
uint64_t cmt__try_merge(struct cmt_model *m, uint32_t dst, uint32_t src);
void cmt__reserved_add(struct cmt_model *m, uint64_t bytes);
/* The device callbacks, page by page for expandable segments.
 * @return true when the device gave all `size` bytes (nothing held otherwise). */
bool cmt__device_alloc(struct cmt_model *m, uint64_t address, uint64_t size,
                       uint64_t page);
void cmt__device_free(struct cmt_model *m, uint64_t address, uint64_t size,
                      uint64_t page);

/* model_expandable.c */
uint32_t cmt__expandable_allocate(struct cmt_model *m, int pool, uint64_t stream,
                                  uint64_t size);
uint64_t cmt__expandable_unmap(struct cmt_model *m, uint32_t block);
void cmt__expandable_drop_if_empty(struct cmt_model *m, uint32_t block);

#endif /* CMT_MODEL_INTERNAL_H */
