/* whatif.c — extract a tensor-level stream from a trace and judge its shape.
 * The replays and the recommendation are in whatif_run.c. */
#include "whatif.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"

#define MIB ((uint64_t)1 << 20)

/* ---- an open-addressing map u64 -> u32 (linear probing, backward-shift
 * deletion), for device pointers and stack ids ------------------------- */

struct map_slot {
  uint64_t key; /* 0 = empty (neither pointers nor stack ids are 0) */
  uint32_t value;
};

struct map {
  struct map_slot *slots;
  size_t mask, count;
};

static uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

static int map_grow(struct map *m) {
  size_t cap = m->slots ? (m->mask + 1) * 2 : 1024;
  struct map_slot *slots = calloc(cap, sizeof *slots);
  if (!slots)
    return -1;
  if (m->slots) {
    for (size_t i = 0; i <= m->mask; i++) {
      if (!m->slots[i].key)
        continue;
      size_t j = mix(m->slots[i].key) & (cap - 1);
      while (slots[j].key)
        j = (j + 1) & (cap - 1);
      slots[j] = m->slots[i];
    }
  }
  free(m->slots);
  m->slots = slots;
  m->mask = cap - 1;
  return 0;
}

/* @return the slot of key, or NULL. */
static struct map_slot *map_find(const struct map *m, uint64_t key) {
  if (!m->slots)
    return NULL;
  for (size_t j = mix(key) & m->mask;; j = (j + 1) & m->mask) {
    if (m->slots[j].key == key)
      return &m->slots[j];
    if (!m->slots[j].key)
      return NULL;
  }
}

/* Insert or overwrite. @return 0 or -1 (host memory). */
static int map_put(struct map *m, uint64_t key, uint32_t value) {
  if (!m->slots || (m->count + 1) * 4 > (m->mask + 1) * 3)
    if (map_grow(m))
      return -1;
  size_t j = mix(key) & m->mask;
  while (m->slots[j].key && m->slots[j].key != key)
    j = (j + 1) & m->mask;
  if (!m->slots[j].key)
    m->count++;
  m->slots[j].key = key;
  m->slots[j].value = value;
  return 0;
}

static void map_erase(struct map *m, struct map_slot *s) {
  size_t i = (size_t)(s - m->slots);
  for (size_t j = (i + 1) & m->mask; m->slots[j].key; j = (j + 1) & m->mask) {
    size_t home = mix(m->slots[j].key) & m->mask;
    /* Move j into the hole at i when its home is not in (i, j]. */
    if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
      m->slots[i] = m->slots[j];
      i = j;
    }
  }
  m->slots[i].key = 0;
  m->count--;
}

/* ---- the stream being built -------------------------------------------- */

struct builder {
  struct cmt_whatif_stream *s;
  size_t event_capacity, site_capacity;
  struct map live;  /* device pointer -> id */
  struct map sites; /* stack leaf -> site index */
  uint32_t *free_ids; /* ids whose allocation was freed, for reuse */
  size_t free_id_count, free_id_capacity;
  /* Shape of the allocations, for the caching detector. */
  uint64_t segment_shaped;
  uint64_t last_failed_size;
  bool freed_since_failure;
  bool retry_signature;
  uint64_t retry_size;
};

static int push_event(struct builder *b, const struct cmt_whatif_event *e) {
  struct cmt_whatif_stream *s = b->s;
  if (s->event_count == b->event_capacity) {
    size_t cap = b->event_capacity ? b->event_capacity * 2 : 4096;
    struct cmt_whatif_event *grown = realloc(s->events, cap * sizeof *grown);
    if (!grown)
      return -1;
    s->events = grown;
    b->event_capacity = cap;
  }
  s->events[s->event_count++] = *e;
  return 0;
}

static int push_site(struct builder *b, const char *text, uint32_t *index) {
  struct cmt_whatif_stream *s = b->s;
  if (s->site_count == b->site_capacity) {
    size_t cap = b->site_capacity ? b->site_capacity * 2 : 64;
    char **grown = realloc(s->sites, cap * sizeof *grown);
    if (!grown)
      return -1;
    s->sites = grown;
    b->site_capacity = cap;
  }
  char *copy = strdup(text);
  if (!copy)
    return -1;
  *index = s->site_count;
  s->sites[s->site_count++] = copy;
  return 0;
}

/* The frame a call site is named by, as report and oom name it (frames.h), as text ("" without
 * a stack). */
static void site_text(const cmt_reader *r, uint32_t leaf, char *buf, size_t size) {
  buf[0] = 0;
  uint32_t node = cmt__call_site_node(r, leaf);
  if (node)
    cmt_reader_format_frame(r, node, buf, size);
}

static int site_of(struct builder *b, const cmt_reader *r, uint32_t stack, uint32_t *out) {
  *out = 0;
  if (!stack)
    return 0;
  struct map_slot *hit = map_find(&b->sites, stack);
  if (hit) {
    *out = hit->value;
    return 0;
  }
  char text[512];
  site_text(r, stack, text, sizeof text);
  uint32_t index = 0;
  if (text[0] && push_site(b, text, &index))
    return -1;
  if (map_put(&b->sites, stack, index))
    return -1;
  *out = index;
  return 0;
}

static uint32_t take_id(struct builder *b) {
  if (b->free_id_count)
    return b->free_ids[--b->free_id_count];
  return b->s->id_count++;
}

static int give_id(struct builder *b, uint32_t id) {
  if (b->free_id_count == b->free_id_capacity) {
    size_t cap = b->free_id_capacity ? b->free_id_capacity * 2 : 1024;
    uint32_t *grown = realloc(b->free_ids, cap * sizeof *grown);
    if (!grown)
      return -1;
    b->free_ids = grown;
    b->free_id_capacity = cap;
  }
  b->free_ids[b->free_id_count++] = id;
  return 0;
}

static bool segment_shaped(uint64_t size) {
  return size == 2 * MIB || (size >= 20 * MIB && size % (2 * MIB) == 0);
}

/* A failed allocation, then (after frees, or directly) the same size again:
 * PyTorch's release-and-retry path. */
static void note_failure(struct builder *b, uint64_t size) {
  if (b->last_failed_size == size && !b->retry_signature) {
    b->retry_signature = true;
    b->retry_size = size;
  }
  b->last_failed_size = size;
  b->freed_since_failure = false;
}

static void note_success(struct builder *b, uint64_t size) {
  if (b->last_failed_size == size && b->freed_since_failure && !b->retry_signature) {
    b->retry_signature = true;
    b->retry_size = size;
  }
  b->last_failed_size = 0;
}

static int on_alloc(struct builder *b, const cmt_reader *r, const struct cmt_event *ev,
                    bool async) {
  struct cmt_whatif_stream *s = b->s;
  uint64_t size = ev->v[CMT_FIELD_SIZE];
  if (ev->result != 0) {
    s->failed_allocs++;
    note_failure(b, size);
    return 0;
  }
  if (!(ev->fields & CMT_F(PTR)) || !ev->v[CMT_FIELD_PTR])
    return 0;
  if (s->allocs == 0)
    s->device = ev->dev;
  if (ev->dev != s->device) {
    s->other_device_events++;
    return 0;
  }
  note_success(b, size);
  struct cmt_whatif_event e = {.size = size,
                               .stream = async ? ev->v[CMT_FIELD_STREAM] : 0,
                               .t_ns = ev->t_ns,
                               .seq = ev->seq};
  if (site_of(b, r, ev->stack, &e.site))
    return -1;
  /* A pointer allocated again without a recorded free: drop the old one. */
  struct map_slot *old = map_find(&b->live, ev->v[CMT_FIELD_PTR]);
  if (old) {
    struct cmt_whatif_event f = {.id = old->value, .t_ns = ev->t_ns, .seq = ev->seq,
                                 .is_free = 1};
    if (push_event(b, &f) || give_id(b, old->value))
      return -1;
    map_erase(&b->live, old);
  }
  e.id = take_id(b);
  if (map_put(&b->live, ev->v[CMT_FIELD_PTR], e.id) || push_event(b, &e))
    return -1;
  s->allocs++;
  if (segment_shaped(size))
    b->segment_shaped++;
  return 0;
}

static int on_free(struct builder *b, const struct cmt_event *ev) {
  struct cmt_whatif_stream *s = b->s;
  if (ev->result != 0 || !ev->v[CMT_FIELD_PTR])
    return 0;
  struct map_slot *hit = map_find(&b->live, ev->v[CMT_FIELD_PTR]);
  if (!hit) {
    if (s->allocs && ev->dev != s->device && ev->dev >= 0)
      s->other_device_events++;
    else
      s->unmatched_frees++;
    return 0;
  }
  struct cmt_whatif_event e = {.id = hit->value, .t_ns = ev->t_ns, .seq = ev->seq,
                               .is_free = 1};
  if (push_event(b, &e) || give_id(b, hit->value))
    return -1;
  map_erase(&b->live, hit);
  s->frees++;
  b->freed_since_failure = true;
  return 0;
}

/* The verdict: PyTorch's retry signature, or allocations nearly all shaped
 * like segments with few frees (a tensor-level stream frees most of what it
 * allocates; a caching allocator frees only on its release paths). */
static void judge_caching(struct cmt_whatif_stream *s, uint64_t shaped, bool retry,
                          uint64_t retry_size) {
  s->caching_detected = false;
  s->caching_reason[0] = 0;
  if (retry) {
    char size[32];
    cmt_model_format_size(retry_size, size, sizeof size);
    s->caching_detected = true;
    snprintf(s->caching_reason, sizeof s->caching_reason,
             "a failed allocation of %s was retried with the same size after releasing "
             "memory (PyTorch's release-and-retry path)",
             size);
  } else if (s->allocs >= 4 && shaped * 10 >= s->allocs * 9 && s->frees * 10 <= s->allocs) {
    s->caching_detected = true;
    snprintf(s->caching_reason, sizeof s->caching_reason,
             "%" PRIu64 " of %" PRIu64 " allocations are 2 MiB or whole multiples of 2 MiB "
             "of at least 20 MiB, and only %" PRIu64 " were freed (segment-sized)",
             shaped, s->allocs, s->frees);
  }
}

static void set_err(char *err, size_t len, const char *msg) {
  if (len)
    snprintf(err, len, "%s", msg);
}

/* Device figures: the DEVICE record of the kept device, else its first
 * MEMINFO baseline. Both are only known after the device is chosen, so they
 * are gathered per device first. */
struct device_info {
  bool seen;
  char name[128];
  uint64_t total, free;
};
#define MAX_DEVICES 64

static void remember_device(struct device_info *d, const struct cmt_record *rec) {
  if (rec->type == CMT_REC_DEVICE) {
    int32_t dev = rec->u.device.dev;
    if (dev < 0 || dev >= MAX_DEVICES || d[dev].seen)
      return;
    d[dev].seen = true;
    snprintf(d[dev].name, sizeof d[dev].name, "%s",
             rec->u.device.name ? rec->u.device.name : "");
    d[dev].total = rec->u.device.total_bytes;
    d[dev].free = rec->u.device.free_bytes;
  } else if (rec->type == CMT_REC_MEMINFO &&
             rec->u.meminfo.reason == CMT_MEMINFO_BASELINE) {
    int32_t dev = rec->u.meminfo.dev;
    if (dev < 0 || dev >= MAX_DEVICES || d[dev].seen)
      return;
    d[dev].seen = true;
    d[dev].total = rec->u.meminfo.total_bytes;
    d[dev].free = rec->u.meminfo.free_bytes;
  }
}

static int read_events(struct builder *b, cmt_reader *r, struct device_info *devices) {
  struct cmt_record rec;
  int rc;
  while ((rc = cmt_reader_next(r, &rec)) == 1) {
    if (rec.type != CMT_REC_EVENT) {
      remember_device(devices, &rec);
      continue;
    }
    const struct cmt_api *api = cmt_reader_api(r, rec.u.event.api);
    if (!api)
      continue;
    int failed = 0;
    switch (api->op) {
    case CMT_OP_ALLOC:
      failed = on_alloc(b, r, &rec.u.event, false);
      break;
    case CMT_OP_ALLOC_ASYNC:
      failed = on_alloc(b, r, &rec.u.event, true);
      break;
    case CMT_OP_FREE:
    case CMT_OP_FREE_ASYNC:
      failed = on_free(b, &rec.u.event);
      break;
    default:
      break;
    }
    if (failed)
      return CMT_EMODEL_NOMEM;
  }
  b->s->damage = rc < 0 ? rc : 0;
  return 0;
}

int cmt_whatif_stream_load(cmt_reader *reader, struct cmt_whatif_stream *out, char *err,
                           size_t err_len) {
  if (!reader || !out)
    return CMT_EINVALID;
  memset(out, 0, sizeof *out);
  struct builder b = {.s = out};
  struct device_info *devices = calloc(MAX_DEVICES, sizeof *devices);
  uint32_t none = 0;
  int rc = CMT_EMODEL_NOMEM;
  if (!devices || push_site(&b, "", &none))
    goto fail;
  cmt_reader_preload(reader); /* damage is reported by the pass below */
  cmt_reader_rewind(reader);
  rc = read_events(&b, reader, devices);
  if (rc)
    goto fail;
  if (out->allocs == 0) {
    rc = CMT_EWHATIF_EMPTY;
    set_err(err, err_len,
            out->failed_allocs
                ? "no allocation in the trace succeeded: there is no stream to replay"
                : "the trace holds no device allocations (cuMemAlloc/cuMemAllocAsync)");
    goto fail;
  }
  if (out->device >= 0 && out->device < MAX_DEVICES && devices[out->device].seen) {
    const struct device_info *d = &devices[out->device];
    snprintf(out->device_name, sizeof out->device_name, "%s", d->name);
    out->device_total = d->total;
    out->device_free = d->free;
    out->has_capacity = d->total > 0 && d->free > 0 && d->free <= d->total;
  }
  judge_caching(out, b.segment_shaped, b.retry_signature, b.retry_size);
  rc = 0;
fail:
  free(devices);
  free(b.live.slots);
  free(b.sites.slots);
  free(b.free_ids);
  if (rc) {
    if (rc == CMT_EMODEL_NOMEM)
      set_err(err, err_len, "out of host memory while reading the trace");
    cmt_whatif_stream_free(out);
  }
  return rc;
}

void cmt_whatif_detect_caching(struct cmt_whatif_stream *s) {
  uint64_t shaped = 0;
  for (size_t k = 0; k < s->event_count; k++)
    if (!s->events[k].is_free && segment_shaped(s->events[k].size))
      shaped++;
  judge_caching(s, shaped, false, 0);
}

int cmt_whatif_stream_from_events(const struct cmt_whatif_event *events, size_t count,
                                  uint32_t id_count, uint64_t device_total,
                                  uint64_t device_free, struct cmt_whatif_stream *out) {
  if (!out || (!events && count))
    return CMT_EINVALID;
  memset(out, 0, sizeof *out);
  uint8_t *live = calloc(id_count ? id_count : 1, 1);
  out->events = malloc((count ? count : 1) * sizeof *out->events);
  out->sites = malloc(sizeof *out->sites);
  if (!live || !out->events || !out->sites || !(out->sites[0] = strdup(""))) {
    free(live);
    cmt_whatif_stream_free(out);
    return CMT_EMODEL_NOMEM;
  }
  out->site_count = 1;
  for (size_t k = 0; k < count; k++) {
    const struct cmt_whatif_event *e = &events[k];
    if (e->id >= id_count || (e->is_free ? !live[e->id] : live[e->id])) {
      free(live);
      cmt_whatif_stream_free(out);
      return CMT_EINVALID;
    }
    live[e->id] = !e->is_free;
    out->events[k] = *e;
    out->events[k].site = 0;
    if (e->is_free)
      out->frees++;
    else
      out->allocs++;
  }
  free(live);
  out->event_count = count;
  out->id_count = id_count;
  out->device_total = device_total;
  out->device_free = device_free;
  out->has_capacity = device_total > 0 && device_free > 0 && device_free <= device_total;
  return 0;
}

void cmt_whatif_stream_free(struct cmt_whatif_stream *s) {
  if (!s)
    return;
  for (uint32_t i = 0; i < s->site_count; i++)
    free(s->sites[i]);
  free(s->sites);
  free(s->events);
  s->sites = NULL;
  s->events = NULL;
  s->site_count = 0;
  s->event_count = 0;
}
