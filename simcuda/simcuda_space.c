/* Address spaces (a sorted array of used ranges; first fit over their gaps in
 * simcuda_free_ranges.c) and physical pages. */
#include "simcuda_internal.h"

#include <stdlib.h>
#include <string.h>

uint64_t simcuda__pages_for(uint64_t size)
{
    return size / SIMCUDA__PAGE_SIZE + (size % SIMCUDA__PAGE_SIZE != 0);
}

static bool va_insert(struct simcuda__va_space *space, size_t index, struct simcuda__va_entry entry)
{
    if (space->count == space->capacity) {
        size_t capacity = space->capacity ? space->capacity * 2 : 64;
        struct simcuda__va_entry *grown = realloc(space->entries, capacity * sizeof(*grown));
        if (!grown)
            return false;
        space->entries = grown;
        space->capacity = capacity;
    }
    memmove(&space->entries[index + 1], &space->entries[index],
            (space->count - index) * sizeof(*space->entries));
    space->entries[index] = entry;
    space->count++;
    return true;
}

/* Where an entry at base goes in the sorted array: after every entry below it. */
static size_t insert_index(const struct simcuda__va_space *space, CUdeviceptr base);

/* Records [base, base + size) as used: in the sorted array and out of the free ranges. */
static bool va_use(struct simcuda__va_space *space, struct simcuda__va_entry entry)
{
    if (!va_insert(space, insert_index(space, entry.base), entry))
        return false;
    if (!simcuda__free_ranges_use(space, entry.base, entry.size))
        simcuda__free_ranges_clear(space); /* rebuilt from the array on the next call */
    if (entry.base + entry.size > space->high_water)
        space->high_water = entry.base + entry.size;
    return true;
}

/* First fit: the lowest address that fits (aligned; at or above high_water when addresses
 * are never reused), found in O(log n) of the live ranges by the free-range treap. */
CUresult simcuda__va_reserve(struct simcuda__va_space *space, uint64_t size, uint64_t alignment,
                             CUdeviceptr hint, enum simcuda__range_kind kind, void *object,
                             CUdeviceptr *out)
{
    struct simcuda__va_entry entry = {.size = size, .kind = kind, .object = object};
    if (size == 0 || size > space->size || !simcuda__free_ranges_ready(space))
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* A fixed-address hint is honoured when it is aligned and its range is free. */
    if (hint && hint % alignment == 0 && simcuda__free_ranges_holds(space, hint, size))
        entry.base = hint;
    else if (!simcuda__free_ranges_fit(space, size, alignment,
                                       space->never_reuse ? space->high_water : 0, &entry.base))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!va_use(space, entry))
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = entry.base;
    return CUDA_SUCCESS;
}

/* Index of the last entry whose base is <= address, or count when there is none. */
static size_t va_floor(const struct simcuda__va_space *space, CUdeviceptr address)
{
    size_t low = 0, high = space->count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (space->entries[middle].base <= address)
            low = middle + 1;
        else
            high = middle;
    }
    return low == 0 ? space->count : low - 1;
}

static size_t insert_index(const struct simcuda__va_space *space, CUdeviceptr base)
{
    size_t index = va_floor(space, base);
    return index == space->count ? 0 : index + 1;
}

struct simcuda__va_entry *simcuda__va_find(struct simcuda__va_space *space, CUdeviceptr address)
{
    size_t index = va_floor(space, address);
    if (index == space->count)
        return NULL;
    struct simcuda__va_entry *entry = &space->entries[index];
    return address - entry->base < entry->size ? entry : NULL;
}

/* A freed range leaves the array and joins the free ranges (merged with its neighbours). */
void simcuda__va_release(struct simcuda__va_space *space, CUdeviceptr base)
{
    size_t index = va_floor(space, base);
    if (index == space->count || space->entries[index].base != base)
        return;
    uint64_t size = space->entries[index].size;
    memmove(&space->entries[index], &space->entries[index + 1],
            (space->count - index - 1) * sizeof(*space->entries));
    space->count--;
    if (space->free_built && !simcuda__free_ranges_give_back(space, base, size))
        simcuda__free_ranges_clear(space); /* rebuilt from the array on the next call */
}

void simcuda__device_spaces(struct simcuda__device *dev,
                            struct simcuda__va_space *spaces[SIMCUDA__SPACES])
{
    spaces[0] = &dev->va;
    spaces[1] = &dev->legacy_va;
    spaces[2] = &dev->managed_va;
}

struct simcuda__va_space *simcuda__space_of(CUdeviceptr address, int *device)
{
    for (int d = 0; d < simcuda__state.device_count; d++) {
        struct simcuda__va_space *spaces[SIMCUDA__SPACES];
        simcuda__device_spaces(&simcuda__state.devices[d], spaces);
        for (int s = 0; s < SIMCUDA__SPACES; s++) {
            if (address >= spaces[s]->start && address - spaces[s]->start < spaces[s]->size) {
                if (device)
                    *device = d;
                return spaces[s];
            }
        }
    }
    return NULL;
}

struct simcuda__va_entry *simcuda__find_range(CUdeviceptr address, int *device)
{
    struct simcuda__va_space *space = simcuda__space_of(address, device);
    return space ? simcuda__va_find(space, address) : NULL;
}

CUresult simcuda__phys_create(int device, uint64_t size, struct simcuda__phys **out)
{
    uint64_t pages = simcuda__pages_for(size);
    if (pages > simcuda__free_bytes(device) / SIMCUDA__PAGE_SIZE)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (simcuda__state.phys_count == simcuda__state.phys_capacity) {
        size_t capacity = simcuda__state.phys_capacity ? simcuda__state.phys_capacity * 2 : 256;
        struct simcuda__phys **grown = realloc(simcuda__state.phys,
                                               capacity * sizeof(*simcuda__state.phys));
        if (!grown)
            return CUDA_ERROR_OUT_OF_MEMORY;
        simcuda__state.phys = grown;
        simcuda__state.phys_capacity = capacity;
    }
    struct simcuda__phys *phys = calloc(1, sizeof(*phys));
    if (!phys)
        return CUDA_ERROR_OUT_OF_MEMORY;
    phys->id = simcuda__state.phys_count + 1;
    phys->device = device;
    phys->size = size;
    phys->pages = pages;
    phys->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    phys->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    phys->prop.location.id = device;
    simcuda__state.phys[simcuda__state.phys_count++] = phys;
    simcuda__state.devices[device].pages_in_use += pages;
    *out = phys;
    return CUDA_SUCCESS;
}

struct simcuda__phys *simcuda__phys_lookup(unsigned long long id)
{
    if (id == 0 || id > simcuda__state.phys_count)
        return NULL;
    return simcuda__state.phys[id - 1];
}

void simcuda__phys_maybe_free(struct simcuda__phys *phys)
{
    if (phys->handle_refs > 0 || phys->map_count > 0)
        return;
    simcuda__state.devices[phys->device].pages_in_use -= phys->pages;
    simcuda__state.phys[phys->id - 1] = NULL;
    free(phys);
}

/* Whether [address, address + size) lies inside one live allocation, or inside mapped parts
 * of one reservation. Used by the copy and set calls, which move no data. */
CUresult simcuda__check_device_range(CUdeviceptr address, uint64_t size)
{
    struct simcuda__va_entry *entry = simcuda__find_range(address, NULL);
    if (!entry)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t offset = address - entry->base;
    switch (entry->kind) {
    case SIMCUDA__RANGE_ALLOC: {
        struct simcuda__alloc *alloc = entry->object;
        return offset <= alloc->size && alloc->size - offset >= size ? CUDA_SUCCESS
                                                                     : CUDA_ERROR_INVALID_VALUE;
    }
    case SIMCUDA__RANGE_POOL_BLOCK: {
        struct simcuda__pool_block *block = entry->object;
        if (!block->live)
            return CUDA_ERROR_INVALID_VALUE;
        return offset <= block->size && block->size - offset >= size ? CUDA_SUCCESS
                                                                     : CUDA_ERROR_INVALID_VALUE;
    }
    case SIMCUDA__RANGE_RESERVATION: {
        struct simcuda__reservation *reservation = entry->object;
        uint64_t cursor = address, end = address + size;
        /* Mappings are kept sorted by base, so one pass checks contiguous coverage. */
        for (size_t i = 0; i < reservation->count && cursor < end; i++) {
            const struct simcuda__mapping *mapping = &reservation->mappings[i];
            if (mapping->base + mapping->size <= cursor)
                continue;
            if (mapping->base > cursor)
                break;
            uint64_t stop = mapping->base + mapping->size < end ? mapping->base + mapping->size
                                                                : end;
            /* a mapping of a multicast object reaches only the memory bound there */
            if (mapping->multicast &&
                !simcuda__multicast_bound(
                    mapping->multicast, mapping->offset + (cursor - mapping->base), stop - cursor))
                return CUDA_ERROR_INVALID_VALUE;
            cursor = mapping->base + mapping->size;
        }
        return cursor >= end && end <= entry->base + entry->size ? CUDA_SUCCESS
                                                                 : CUDA_ERROR_INVALID_VALUE;
    }
    case SIMCUDA__RANGE_GRAPH:
        return simcuda__graph_range_valid(entry->object, offset, size) ? CUDA_SUCCESS
                                                                       : CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_ERROR_INVALID_VALUE;
}
