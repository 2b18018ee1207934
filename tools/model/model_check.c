/* model_check.c — recount everything and compare (tests and fuzzers). */
#include "model_internal.h"

struct walk {
  uint64_t count;
  bool ok;
  bool have_last;
  uint64_t last[3];
};

static void walk_tree(const struct cmt_model *m, uint32_t t, enum cmt__order order,
                      enum cmt__where where, int pool, uint32_t parent_priority,
                      struct walk *w) {
  if (t == CMT__NIL || !w->ok)
    return;
  if (t >= m->block_count) {
    w->ok = false;
    return;
  }
  const struct cmt__block *b = cmt__b(m, t);
  if (b->where != where || b->pool != pool || b->priority > parent_priority ||
      w->count > m->block_count) {
    w->ok = false;
    return;
  }
  walk_tree(m, b->left, order, where, pool, b->priority, w);
  uint64_t key[3] = {b->stream, order == CMT__BY_SIZE ? b->size : 0, b->address};
  if (w->have_last) {
    bool greater = key[0] != w->last[0] ? key[0] > w->last[0]
                   : key[1] != w->last[1] ? key[1] > w->last[1]
                                          : key[2] > w->last[2];
    if (!greater)
      w->ok = false;
  }
  w->have_last = true;
  for (int k = 0; k < 3; k++)
    w->last[k] = key[k];
  w->count++;
  walk_tree(m, b->right, order, where, pool, b->priority, w);
}

static bool chain_ok(const struct cmt_model *m, uint32_t i) {
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

int cmt_model_check(const struct cmt_model *m) {
  if (!m)
    return CMT_MODEL_E_INVALID;
  struct cmt_model_stats s = {0};
  uint64_t free_blocks[2] = {0, 0}, unmapped_blocks[2] = {0, 0}, unused = 0;
  for (uint32_t i = 0; i < m->block_count; i++) {
    const struct cmt__block *b = cmt__b(m, i);
    if (b->where == CMT__UNUSED) {
      unused++;
      continue;
    }
    if (b->where == CMT__LOOSE || b->pool > 1 || !chain_ok(m, i))
      return CMT_MODEL_E_CORRUPT;
    bool expandable = b->expandable != CMT__NIL;
    if (expandable && (b->expandable >= m->segment_count || !m->segments[b->expandable].live))
      return CMT_MODEL_E_CORRUPT;
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
    return CMT_MODEL_E_CORRUPT;
  for (int p = 0; p < 2; p++) {
    struct walk w = {0, true, false, {0, 0, 0}};
    walk_tree(m, m->pools[p].free_root, CMT__BY_SIZE, CMT__FREE, p, UINT32_MAX, &w);
    if (!w.ok || w.count != free_blocks[p] || w.count != m->pools[p].free_count)
      return CMT_MODEL_E_CORRUPT;
    struct walk u = {0, true, false, {0, 0, 0}};
    walk_tree(m, m->pools[p].unmapped_root, CMT__BY_ADDRESS, CMT__UNMAPPED, p, UINT32_MAX,
              &u);
    if (!u.ok || u.count != unmapped_blocks[p])
      return CMT_MODEL_E_CORRUPT;
  }
  return CMT_MODEL_E_OK;
}
