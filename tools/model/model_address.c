/* model_address.c — where the model's device allocations lie (the address policy).
 *
 * Addresses matter only where PyTorch breaks ties: free blocks are ordered by (stream, size,
 * address), so two free blocks of one size are taken lowest address first. A real driver's
 * reuse order is not documented; the policy is a modelling choice (caching_model.h):
 *   never reuse  every range lies above all earlier ones (simcuda's SIMCUDA_REUSE_ADDRESSES=0);
 *   first fit    the lowest free range that holds it, as simcuda's address space does
 *                (SIMCUDA_REUSE_ADDRESSES=1, its default): segment sizes are whole 2 MiB pages,
 *                so simcuda's 2 MiB alignment adds nothing.
 * Both keep the free ranges below the top (holes), so that the model can say when the other
 * policy would have placed a range elsewhere (cmt_model_addresses_diverged): until then both
 * replays are the same. */
#include "model_internal.h"

#include <stdlib.h>
#include <string.h>

#include "cmt_search.h"

int cmt__address_reserve(struct cmt_model *m, uint64_t live_ranges)
{
    /* Holes lie between live ranges: at most one more than there are ranges. */
    uint64_t need = live_ranges + 2;
    if (need <= m->hole_capacity)
        return 0;
    if (need > UINT32_MAX / 2)
        return CMT_EMODEL_NOMEM;
    uint32_t cap = (uint32_t)need * 2;
    struct cmt__hole *grown = realloc(m->holes, (size_t)cap * sizeof *grown);
    if (!grown)
        return CMT_EMODEL_NOMEM;
    m->holes = grown;
    m->hole_capacity = cap;
    return 0;
}

/* First fit: the first hole that holds size, or hole_count (then the top). */
static uint32_t first_fit(const struct cmt_model *m, uint64_t size)
{
    for (uint32_t i = 0; i < m->hole_count; i++)
        if (m->holes[i].size >= size)
            return i;
    return m->hole_count;
}

static bool first_fit_policy(const struct cmt_model *m)
{
    return m->config.address_policy == CMT_MODEL_ADDRESSES_FIRST_FIT;
}

uint64_t cmt__address_peek(const struct cmt_model *m, uint64_t size)
{
    if (first_fit_policy(m)) {
        uint32_t i = first_fit(m, size);
        if (i < m->hole_count)
            return m->holes[i].address;
    }
    return m->address_top;
}

static void remove_hole(struct cmt_model *m, uint32_t i)
{
    memmove(&m->holes[i], &m->holes[i + 1], (m->hole_count - i - 1) * sizeof *m->holes);
    m->hole_count--;
}

uint64_t cmt__address_take(struct cmt_model *m, uint64_t size)
{
    uint64_t address;
    if (first_fit_policy(m)) {
        uint32_t i = first_fit(m, size);
        if (i < m->hole_count) {
            address = m->holes[i].address;
            m->holes[i].address += size;
            m->holes[i].size -= size;
            if (m->holes[i].size == 0)
                remove_hole(m, i);
        } else {
            address = m->address_top;
            m->address_top += size;
        }
        /* Never reuse would have gone above everything handed out so far. */
        if (address < m->address_high)
            m->addresses_diverged = true;
    } else {
        /* First fit would have taken a hole that holds it, or the last hole if it reaches
         * the top (first fit extends it upwards). */
        if (first_fit(m, size) < m->hole_count ||
            (m->hole_count &&
             m->holes[m->hole_count - 1].address + m->holes[m->hole_count - 1].size ==
                 m->address_top))
            m->addresses_diverged = true;
        address = m->address_top;
        m->address_top += size;
    }
    if (address + size > m->address_high)
        m->address_high = address + size;
    return address;
}

void cmt__address_release(struct cmt_model *m, uint64_t address, uint64_t size)
{
    /* The first hole above the range. */
    uint32_t at;
    CMT_LOWER_BOUND(at, m->holes, m->hole_count, .address, address);
    bool with_prev = at > 0 && m->holes[at - 1].address + m->holes[at - 1].size == address;
    bool with_next = at < m->hole_count && address + size == m->holes[at].address;
    if (with_prev && with_next) {
        m->holes[at - 1].size += size + m->holes[at].size;
        remove_hole(m, at);
        at--;
    } else if (with_prev) {
        m->holes[--at].size += size;
    } else if (with_next) {
        m->holes[at].address = address;
        m->holes[at].size += size;
    } else {
        /* cmt__address_reserve made room. */
        memmove(&m->holes[at + 1], &m->holes[at], (m->hole_count - at) * sizeof *m->holes);
        m->holes[at] = (struct cmt__hole){address, size};
        m->hole_count++;
    }
    /* First fit: free space at the top is the top. */
    if (first_fit_policy(m) && m->holes[at].address + m->holes[at].size == m->address_top) {
        m->address_top = m->holes[at].address;
        remove_hole(m, at);
    }
}

void cmt__address_destroy(struct cmt_model *m)
{
    free(m->holes);
    m->holes = NULL;
    m->hole_count = m->hole_capacity = 0;
}

bool cmt_model_addresses_diverged(const struct cmt_model *model)
{
    return model && model->addresses_diverged;
}

const char *cmt_model_address_policy_name(enum cmt_model_address_policy policy)
{
    switch (policy) {
    case CMT_MODEL_ADDRESSES_NEVER_REUSE: return "never-reuse";
    case CMT_MODEL_ADDRESSES_FIRST_FIT: return "first-fit";
    default: break;
    }
    return NULL;
}

int cmt_model_address_policy_parse(const char *name, enum cmt_model_address_policy *out)
{
    if (!name || !out)
        return CMT_EINVALID;
    for (int p = 0; p < CMT_MODEL_ADDRESS_POLICY_COUNT; p++) {
        if (strcmp(name, cmt_model_address_policy_name((enum cmt_model_address_policy)p)) == 0) {
            *out = (enum cmt_model_address_policy)p;
            return CMT_EOK;
        }
    }
    return CMT_EINVALID;
}
