/* model_tree.c — ordered sets of blocks for the caching-allocator model.
 *
 * PyTorch keeps free blocks in std::set ordered by (stream, size, address);
 * a replay of millions of events needs the same O(log n) best fit. This is an
 * intrusive treap over block slots (children and priority live in the block),
 * so inserting and erasing allocate nothing. Keys are unique: two blocks of a
 * pool never share an address. */
#include "model_internal.h"

struct cmt__key {
  uint64_t stream, size, address;
};

static struct cmt__key key_of(const struct cmt_model *m, uint32_t i,
                              enum cmt__order order) {
  const struct cmt__block *b = cmt__b(m, i);
  struct cmt__key k = {b->stream, order == CMT__BY_SIZE ? b->size : 0, b->address};
  return k;
}

static int compare(struct cmt__key a, struct cmt__key b) {
  if (a.stream != b.stream)
    return a.stream < b.stream ? -1 : 1;
  if (a.size != b.size)
    return a.size < b.size ? -1 : 1;
  if (a.address != b.address)
    return a.address < b.address ? -1 : 1;
  return 0;
}

/* Split `t` into nodes < key (*less) and nodes >= key (*rest). */
static void split(struct cmt_model *m, uint32_t t, struct cmt__key key,
                  uint32_t *less, uint32_t *rest, enum cmt__order order) {
  if (t == CMT__NIL) {
    *less = *rest = CMT__NIL;
  } else if (compare(key_of(m, t, order), key) < 0) {
    *less = t;
    split(m, cmt__b(m, t)->right, key, &cmt__b(m, t)->right, rest, order);
  } else {
    *rest = t;
    split(m, cmt__b(m, t)->left, key, less, &cmt__b(m, t)->left, order);
  }
}

static uint32_t join(struct cmt_model *m, uint32_t a, uint32_t b) {
  if (a == CMT__NIL)
    return b;
  if (b == CMT__NIL)
    return a;
  if (cmt__b(m, a)->priority > cmt__b(m, b)->priority) {
    cmt__b(m, a)->right = join(m, cmt__b(m, a)->right, b);
    return a;
  }
  cmt__b(m, b)->left = join(m, a, cmt__b(m, b)->left);
  return b;
}

static uint32_t insert_at(struct cmt_model *m, uint32_t t, uint32_t node,
                          enum cmt__order order) {
  if (t == CMT__NIL)
    return node;
  struct cmt__block *n = cmt__b(m, node);
  if (n->priority > cmt__b(m, t)->priority) {
    split(m, t, key_of(m, node, order), &n->left, &n->right, order);
    return node;
  }
  if (compare(key_of(m, node, order), key_of(m, t, order)) < 0)
    cmt__b(m, t)->left = insert_at(m, cmt__b(m, t)->left, node, order);
  else
    cmt__b(m, t)->right = insert_at(m, cmt__b(m, t)->right, node, order);
  return t;
}

void cmt__tree_insert(struct cmt_model *m, uint32_t *root, uint32_t node,
                      enum cmt__order order) {
  struct cmt__block *n = cmt__b(m, node);
  n->left = n->right = CMT__NIL;
  /* xorshift32: priorities only need to look random. */
  m->rng ^= m->rng << 13;
  m->rng ^= m->rng >> 17;
  m->rng ^= m->rng << 5;
  n->priority = m->rng;
  *root = insert_at(m, *root, node, order);
}

void cmt__tree_erase(struct cmt_model *m, uint32_t *root, uint32_t node,
                     enum cmt__order order) {
  struct cmt__key key = key_of(m, node, order);
  uint32_t *link = root;
  while (*link != CMT__NIL) {
    int c = compare(key, key_of(m, *link, order));
    if (c == 0) {
      struct cmt__block *t = cmt__b(m, *link);
      *link = join(m, t->left, t->right);
      t->left = t->right = CMT__NIL;
      return;
    }
    link = c < 0 ? &cmt__b(m, *link)->left : &cmt__b(m, *link)->right;
  }
}

uint32_t cmt__tree_lower_bound(const struct cmt_model *m, uint32_t root,
                               uint64_t stream, uint64_t size, uint64_t address,
                               enum cmt__order order) {
  struct cmt__key key = {stream, order == CMT__BY_SIZE ? size : 0, address};
  uint32_t found = CMT__NIL;
  for (uint32_t t = root; t != CMT__NIL;) {
    if (compare(key_of(m, t, order), key) >= 0) {
      found = t;
      t = cmt__b(m, t)->left;
    } else {
      t = cmt__b(m, t)->right;
    }
  }
  return found;
}

uint32_t cmt__tree_before(const struct cmt_model *m, uint32_t root,
                          uint64_t stream, uint64_t size, uint64_t address,
                          enum cmt__order order) {
  struct cmt__key key = {stream, order == CMT__BY_SIZE ? size : 0, address};
  uint32_t found = CMT__NIL;
  for (uint32_t t = root; t != CMT__NIL;) {
    if (compare(key_of(m, t, order), key) < 0) {
      found = t;
      t = cmt__b(m, t)->right;
    } else {
      t = cmt__b(m, t)->left;
    }
  }
  return found;
}

uint32_t cmt__tree_after(const struct cmt_model *m, uint32_t root,
                         uint32_t node, enum cmt__order order) {
  struct cmt__key key = key_of(m, node, order);
  uint32_t found = CMT__NIL;
  for (uint32_t t = root; t != CMT__NIL;) {
    if (compare(key_of(m, t, order), key) > 0) {
      found = t;
      t = cmt__b(m, t)->left;
    } else {
      t = cmt__b(m, t)->right;
    }
  }
  return found;
}
