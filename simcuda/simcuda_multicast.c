/* Multicast objects (NVLink SHARP, as NCCL's NVLS transport uses them), simulated.
 *
 * A multicast object holds no device memory of its own: it is a team of devices (numDevices,
 * each added with cuMulticastAddDevice) and a range of `size` bytes into which each device's
 * physical memory (cuMemCreate handles) is bound. A binding holds its physical memory as a
 * mapping does: the memory is freed after its handle's last cuMemRelease, its last unmap AND
 * its last unbind. The object's handle is a CUmemGenericAllocationHandle of its own tag; the
 * VMM calls take it (simcuda_vmm.c): cuMemMap maps it into a reservation (a mapping of it sees
 * the memory bound there), cuMemRelease drops a reference, cuMemExportToShareableHandle and
 * cuMemImportFromShareableHandle pass it as a memfd. The object goes away with its last
 * reference and its last mapping, and its bindings with it. Nothing is broadcast: no kernel
 * runs. What the real driver would block on (a bind or a map before every device of the team
 * was added) returns CUDA_ERROR_NOT_PERMITTED instead, since no other thread or process of a
 * simulated team could ever complete it. */
#include "simcuda_internal.h"
#include "simcuda_log.h"

#include <stdlib.h>
#include <string.h>

#define MULTICAST_ID_MASK 0x0000ffffffffffffull
/* Supported shareable handle types: POSIX file descriptors only (or none). */
#define SUPPORTED_HANDLE_TYPES ((unsigned long long)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)

static struct simcuda__multicast **objects; /* index id - 1; NULL once freed */
static size_t object_count, object_capacity;

CUmemGenericAllocationHandle simcuda__multicast_handle(const struct simcuda__multicast *mc)
{
    return SIMCUDA__MULTICAST_TAG | mc->id;
}

bool simcuda__is_multicast_handle(CUmemGenericAllocationHandle handle)
{
    return (handle & ~MULTICAST_ID_MASK) == SIMCUDA__MULTICAST_TAG;
}

struct simcuda__multicast *simcuda__multicast_lookup(CUmemGenericAllocationHandle handle)
{
    unsigned long long id = handle & MULTICAST_ID_MASK;
    if (!simcuda__is_multicast_handle(handle) || id == 0 || id > object_count)
        return NULL;
    struct simcuda__multicast *mc = objects[id - 1];
    return mc && mc->refs > 0 ? mc : NULL;
}

bool simcuda__multicast_complete(const struct simcuda__multicast *mc)
{
    return mc->device_count == mc->prop.numDevices;
}

static bool in_team(const struct simcuda__multicast *mc, int device)
{
    for (unsigned i = 0; i < mc->device_count; i++)
        if (mc->devices[i] == device)
            return true;
    return false;
}

/* Lock held. Drops binding i (its hold on the physical memory). */
static void unbind_at(struct simcuda__multicast *mc, size_t i)
{
    struct simcuda__phys *phys = mc->bindings[i].phys;
    memmove(&mc->bindings[i], &mc->bindings[i + 1],
            (mc->binding_count - i - 1) * sizeof(*mc->bindings));
    mc->binding_count--;
    phys->map_count--;
    simcuda__phys_maybe_free(phys);
}

void simcuda__multicast_maybe_free(struct simcuda__multicast *mc)
{
    if (mc->refs > 0 || mc->map_count > 0)
        return;
    while (mc->binding_count > 0)
        unbind_at(mc, mc->binding_count - 1);
    objects[mc->id - 1] = NULL;
    free(mc->bindings);
    free(mc);
}

bool simcuda__multicast_bound(const struct simcuda__multicast *mc, uint64_t offset, uint64_t size)
{
    uint64_t cursor = offset, end = offset + size;
    bool advanced = true;
    while (cursor < end && advanced) { /* bindings are few: a pass per covered binding */
        advanced = false;
        for (size_t i = 0; i < mc->binding_count; i++) {
            const struct simcuda__binding *b = &mc->bindings[i];
            if (b->mc_offset <= cursor && cursor < b->mc_offset + b->size) {
                cursor = b->mc_offset + b->size;
                advanced = true;
            }
        }
    }
    return cursor >= end;
}

CUresult simcuda__multicast_create(const CUmulticastObjectProp *prop, long origin_pid,
                                   unsigned long long origin_id, struct simcuda__multicast **out)
{
    if (object_count == object_capacity) {
        size_t capacity = object_capacity ? object_capacity * 2 : 16;
        struct simcuda__multicast **grown = realloc(objects, capacity * sizeof(*objects));
        if (!grown)
            return CUDA_ERROR_OUT_OF_MEMORY;
        objects = grown;
        object_capacity = capacity;
    }
    struct simcuda__multicast *mc = calloc(1, sizeof(*mc));
    if (!mc)
        return CUDA_ERROR_OUT_OF_MEMORY;
    mc->id = object_count + 1;
    mc->prop = *prop;
    mc->refs = 1;
    mc->origin_pid = origin_pid;
    mc->origin_id = origin_id;
    objects[object_count++] = mc;
    *out = mc;
    return CUDA_SUCCESS;
}

struct simcuda__multicast *simcuda__multicast_imported(long origin_pid,
                                                       unsigned long long origin_id)
{
    for (size_t i = 0; i < object_count; i++) {
        struct simcuda__multicast *mc = objects[i];
        if (mc && mc->origin_pid == origin_pid && mc->origin_id == origin_id)
            return mc;
    }
    return NULL;
}

CUresult simcuda__multicast_prop_check(const CUmulticastObjectProp *prop)
{
    if (!prop || prop->numDevices == 0 || prop->size == 0 || prop->size % SIMCUDA__PAGE_SIZE != 0 ||
        prop->flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (prop->numDevices > (unsigned)simcuda__state.device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    if (prop->handleTypes & ~SUPPORTED_HANDLE_TYPES)
        return CUDA_ERROR_NOT_SUPPORTED;
    return CUDA_SUCCESS;
}

/* Minimum: the page (2 MiB); recommended: 512 MiB, what an NVSwitch system reports. */
SIMCUDA_EXPORT CUresult CUDAAPI cuMulticastGetGranularity(size_t *granularity,
                                                          const CUmulticastObjectProp *prop,
                                                          CUmulticastGranularity_flags option)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!granularity || !prop || prop->numDevices == 0 || prop->flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (option == CU_MULTICAST_GRANULARITY_MINIMUM)
        *granularity = SIMCUDA__PAGE_SIZE;
    else if (option == CU_MULTICAST_GRANULARITY_RECOMMENDED)
        *granularity = SIMCUDA__MULTICAST_RECOMMENDED;
    else
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult multicast_create(CUmemGenericAllocationHandle *handle,
                                 const CUmulticastObjectProp *prop)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    if ((result = simcuda__multicast_prop_check(prop)) != CUDA_SUCCESS)
        return result;
    struct simcuda__multicast *mc;
    simcuda__lock();
    result = simcuda__multicast_create(prop, 0, 0, &mc);
    if (result == CUDA_SUCCESS)
        *handle = simcuda__multicast_handle(mc);
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMulticastCreate(CUmemGenericAllocationHandle *mcHandle,
                                                  const CUmulticastObjectProp *prop)
{
    CUresult result = multicast_create(mcHandle, prop);
    return SIMCUDA__LOG(result, 0, prop ? prop->size : 0, result == CUDA_SUCCESS ? *mcHandle : 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMulticastAddDevice(CUmemGenericAllocationHandle mcHandle,
                                                     CUdevice dev)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if ((result = simcuda__check_device(dev)) != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    struct simcuda__multicast *mc = simcuda__multicast_lookup(mcHandle);
    if (!mc || in_team(mc, dev) || simcuda__multicast_complete(mc))
        result = CUDA_ERROR_INVALID_VALUE;
    else
        mc->devices[mc->device_count++] = dev;
    simcuda__unlock();
    return result;
}

/* Lock held. Binds [mem_offset, mem_offset + size) of phys at mc_offset. */
static CUresult bind(struct simcuda__multicast *mc, size_t mc_offset, struct simcuda__phys *phys,
                     uint64_t mem_offset, size_t size)
{
    if (!simcuda__multicast_complete(mc))
        return CUDA_ERROR_NOT_PERMITTED; /* the real driver blocks until the team is complete */
    if (!in_team(mc, phys->device))
        return CUDA_ERROR_INVALID_DEVICE;
    if (mem_offset > phys->size || phys->size - mem_offset < size || mc_offset > mc->prop.size ||
        mc->prop.size - mc_offset < size)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < mc->binding_count; i++) {
        const struct simcuda__binding *b = &mc->bindings[i];
        if (b->device == phys->device && mc_offset < b->mc_offset + b->size &&
            b->mc_offset < mc_offset + size)
            return CUDA_ERROR_INVALID_VALUE; /* that device's range is already bound */
    }
    if (mc->binding_count == mc->binding_capacity) {
        size_t capacity = mc->binding_capacity ? mc->binding_capacity * 2 : 4;
        struct simcuda__binding *grown = realloc(mc->bindings, capacity * sizeof(*grown));
        if (!grown)
            return CUDA_ERROR_OUT_OF_MEMORY;
        mc->bindings = grown;
        mc->binding_capacity = capacity;
    }
    mc->bindings[mc->binding_count++] = (struct simcuda__binding){
        .device = phys->device, .mc_offset = mc_offset, .size = size, .phys = phys};
    phys->map_count++;
    return CUDA_SUCCESS;
}

static bool granular(uint64_t value)
{
    return value % SIMCUDA__PAGE_SIZE == 0;
}

static CUresult bind_mem(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                         CUmemGenericAllocationHandle memHandle, size_t memOffset, size_t size,
                         unsigned long long flags)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (size == 0 || !granular(size) || !granular(mcOffset) || !granular(memOffset) || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    simcuda__lock();
    struct simcuda__multicast *mc = simcuda__multicast_lookup(mcHandle);
    struct simcuda__phys *phys = simcuda__vmm_handle_phys(memHandle);
    result = mc && phys ? bind(mc, mcOffset, phys, memOffset, size) : CUDA_ERROR_INVALID_VALUE;
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMulticastBindMem(CUmemGenericAllocationHandle mcHandle,
                                                   size_t mcOffset,
                                                   CUmemGenericAllocationHandle memHandle,
                                                   size_t memOffset, size_t size,
                                                   unsigned long long flags)
{
    CUresult result = bind_mem(mcHandle, mcOffset, memHandle, memOffset, size, flags);
    return SIMCUDA__LOG(result, memHandle, size, mcHandle);
}

/* The memory must be mapped VMM memory (cuMemCreate), the range inside one mapping; memory of
 * a stream-ordered pool, which the real driver also binds, is not simulated here. */
static CUresult bind_addr(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                          CUdeviceptr memptr, size_t size, unsigned long long flags)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (size == 0 || !granular(size) || !granular(mcOffset) || !granular(memptr) || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    simcuda__lock();
    struct simcuda__multicast *mc = simcuda__multicast_lookup(mcHandle);
    const struct simcuda__mapping *mapping = simcuda__vmm_mapping_at(memptr);
    if (!mc || !mapping || !mapping->phys || mapping->base + mapping->size - memptr < size)
        result = CUDA_ERROR_INVALID_VALUE;
    else
        result = bind(mc, mcOffset, mapping->phys, mapping->offset + (memptr - mapping->base),
                      size);
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMulticastBindAddr(CUmemGenericAllocationHandle mcHandle,
                                                    size_t mcOffset, CUdeviceptr memptr,
                                                    size_t size, unsigned long long flags)
{
    CUresult result = bind_addr(mcHandle, mcOffset, memptr, size, flags);
    return SIMCUDA__LOG(result, memptr, size, mcHandle);
}

/* Unbinds dev's bindings inside [mcOffset, mcOffset + size); one that lies across either end
 * (undefined behaviour for the real driver) is refused. */
static CUresult unbind(CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset,
                       size_t size)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if ((result = simcuda__check_device(dev)) != CUDA_SUCCESS)
        return result;
    if (size == 0 || !granular(size) || !granular(mcOffset))
        return CUDA_ERROR_INVALID_VALUE;
    simcuda__lock();
    struct simcuda__multicast *mc = simcuda__multicast_lookup(mcHandle);
    if (!mc || mcOffset > mc->prop.size || mc->prop.size - mcOffset < size)
        result = CUDA_ERROR_INVALID_VALUE;
    else if (!in_team(mc, dev))
        result = CUDA_ERROR_INVALID_DEVICE;
    for (size_t i = 0; result == CUDA_SUCCESS && i < mc->binding_count; i++) {
        const struct simcuda__binding *b = &mc->bindings[i];
        bool overlaps = mcOffset < b->mc_offset + b->size && b->mc_offset < mcOffset + size;
        if (b->device == dev && overlaps &&
            (b->mc_offset < mcOffset || b->mc_offset + b->size > mcOffset + size))
            result = CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; result == CUDA_SUCCESS && i < mc->binding_count;) {
        const struct simcuda__binding *b = &mc->bindings[i];
        if (b->device == dev && b->mc_offset >= mcOffset && b->mc_offset < mcOffset + size)
            unbind_at(mc, i);
        else
            i++;
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMulticastUnbind(CUmemGenericAllocationHandle mcHandle,
                                                  CUdevice dev, size_t mcOffset, size_t size)
{
    CUresult result = unbind(mcHandle, dev, mcOffset, size);
    return SIMCUDA__LOG(result, 0, size, mcHandle);
}
