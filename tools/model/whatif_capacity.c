/* whatif_capacity.c — the one choice of a what-if sweep's capacity (whatif_capacity.h). */
#include "whatif_capacity.h"

#include "cmt_error.h"

int cmt_whatif_capacity_choose(const struct cmt_whatif_stream *s, uint64_t given,
                               struct cmt_whatif_capacity *out)
{
    if (!s || !out)
        return CMT_EINVALID;
    if (given) {
        out->capacity = given;
        out->source = CMT_WHATIF_CAPACITY_GIVEN;
    } else if (s->has_capacity) {
        out->capacity = s->device_free;
        out->source = CMT_WHATIF_CAPACITY_TRACE;
    } else {
        /* A snapshot without an `oom` entry, a trace without a memory sample: nothing says
         * what the device had. The settings still compare by what they reserve. */
        out->capacity = CMT_WHATIF_NO_LIMIT;
        out->source = CMT_WHATIF_CAPACITY_UNKNOWN;
    }
    out->device_total = s->device_total > out->capacity ? s->device_total : out->capacity;
    out->oom_own_bytes = out->oom_free_bytes = 0;
    return 0;
}

void cmt_whatif_capacity_held(struct cmt_whatif_capacity *out, uint64_t own_bytes,
                              uint64_t free_bytes)
{
    out->capacity = own_bytes + free_bytes;
    out->source = CMT_WHATIF_CAPACITY_OOM;
    out->oom_own_bytes = own_bytes;
    out->oom_free_bytes = free_bytes;
    if (out->device_total < out->capacity)
        out->device_total = out->capacity;
}

struct cmt_whatif_device cmt_whatif_capacity_device(const struct cmt_whatif_capacity *c)
{
    return (struct cmt_whatif_device){
        .capacity = c->capacity, .device_total = c->device_total, .check_other_policy = true};
}

const char *cmt_whatif_capacity_source_name(enum cmt_whatif_capacity_source source)
{
    switch (source) {
#define CMT__CAPACITY_SOURCE_NAME(name, json) \
    case CMT_WHATIF_CAPACITY_##name: return json;
        CMT_WHATIF_CAPACITY_SOURCES(CMT__CAPACITY_SOURCE_NAME)
#undef CMT__CAPACITY_SOURCE_NAME
    }
    return "unknown";
}
