/* annotate.c — the shim's side of include/cumemtrace/annotate.h: the entry points a
 * sub-allocator (and a program naming its phases) finds with dlsym. Declarations go to a fixed table (no allocation); events
 * take the driver events' path (recorder.c: the thread's ring, a seq of their own). */
#include <errno.h>
#include <string.h>

#include "cumemtrace/annotate.h"
#include "recorder.h"

/* annotate.h is self-contained: its numbers are the format's, checked here. */
#define CMT__SAME_ACTION(name, value, text) \
    _Static_assert((int)CMT_ANNOTATE_##name == (int)CMT_AA_##name, "annotate.h action " #name);
CMT_ALLOC_ACTIONS(CMT__SAME_ACTION)
#undef CMT__SAME_ACTION
#define CMT__SAME_FIELD(name, bit, member)                                                 \
    _Static_assert(CMT_AFIELD_##name == CMT_AFIELD_SEQ || (int)CMT_ANNOTATE_##name == bit, \
                   "annotate.h field " #name);
#define CMT_ANNOTATE_SEQ CMT_AFIELD_SEQ /* the writer's field, not the program's */
CMT_ALLOC_FIELDS(CMT__SAME_FIELD)
#undef CMT__SAME_FIELD
_Static_assert((int)CMT_ANNOTATE_NFIELDS == (int)CMT_AFIELD_SEQ, "annotate.h reports all but SEQ");
_Static_assert((int)CMT_ANNOTATE_RANGE_PUSH == (int)CMT_RA_PUSH &&
                   (int)CMT_ANNOTATE_RANGE_POP == (int)CMT_RA_POP &&
                   (int)CMT_ANNOTATE_RANGE_START == (int)CMT_RA_START &&
                   (int)CMT_ANNOTATE_RANGE_END == (int)CMT_RA_END &&
                   (int)CMT_ANNOTATE_RANGE_MARK == (int)CMT_RA_MARK,
               "annotate.h range actions");
_Static_assert(CMT_ANNOTATE_FLAG_BEFORE == CMT_AFLAG_BEFORE &&
                   CMT_ANNOTATE_FLAG_EXPANDABLE == CMT_AFLAG_EXPANDABLE &&
                   CMT_ANNOTATE_FLAG_SMALL == CMT_AFLAG_SMALL,
               "annotate.h flags");

/* The entry points, as annotate.h's cmt_annotate_allocator_fn and cmt_annotate_event_fn. */
CMT_EXPORT uint32_t cumemtrace_annotate_allocator_v1(const char *name, const char *version,
                                                     const char *conf);
CMT_EXPORT void cumemtrace_annotate_event_v1(uint32_t allocator, uint32_t action, int32_t dev,
                                             uint32_t fields, const uint64_t *v);
CMT_EXPORT uint64_t cumemtrace_annotate_range_v1(uint32_t action, uint64_t id, const char *message);

struct cmt__allocator_decl cmt__allocators[CMT__MAX_ALLOCATORS];
_Atomic uint32_t cmt__allocator_count;

static void copy(char *to, size_t size, const char *from)
{
    size_t n = from ? strnlen(from, size - 1) : 0;
    memcpy(to, from ? from : "", n);
    to[n] = 0;
}

CMT_EXPORT uint32_t cumemtrace_annotate_allocator_v1(const char *name, const char *version,
                                                     const char *conf)
{
    int saved = errno;
    uint32_t id = 0;
    if (cmt__ensure_running() && atomic_load(&cmt__allocator_count) < CMT__MAX_ALLOCATORS) {
        uint32_t slot = atomic_fetch_add(&cmt__allocator_count, 1);
        if (slot < CMT__MAX_ALLOCATORS) {
            struct cmt__allocator_decl *d = &cmt__allocators[slot];
            d->dev = -1;
            d->t_ticks = cmt__ticks(); /* absolute: a forked child's trace starts later */
            copy(d->name, sizeof d->name, name);
            copy(d->version, sizeof d->version, version);
            copy(d->conf, sizeof d->conf, conf);
            atomic_store_explicit(&d->ready, 1, memory_order_release);
            cmt__shared_allocator(slot);
            id = slot + 1;
        } else {
            atomic_store(&cmt__allocator_count, CMT__MAX_ALLOCATORS);
        }
    }
    errno = saved;
    return id;
}

CMT_EXPORT void cumemtrace_annotate_event_v1(uint32_t allocator, uint32_t action, int32_t dev,
                                             uint32_t fields, const uint64_t *v)
{
    int saved = errno;
    cmt__alloc_event(allocator, action, dev, fields, v);
    errno = saved;
}

static _Atomic uint32_t next_annotate_range = 1u << 31; /* apart from NVTX's ids (nvtx.c) */

CMT_EXPORT uint64_t cumemtrace_annotate_range_v1(uint32_t action, uint64_t id, const char *message)
{
    int saved = errno;
    if (action == CMT_RA_START)
        id = atomic_fetch_add_explicit(&next_annotate_range, 1, memory_order_relaxed);
    if (action >= CMT_RA_PUSH && action <= CMT_RA_MARK)
        cmt__range_event(action, 0, 0, (uint32_t)id, message,
                         message ? strnlen(message, CMT__RANGE_TEXT) : 0);
    errno = saved;
    return action == CMT_RA_START ? id : 0;
}
