/* Virtual memory management: physical handles, address reservations, mappings.
 *
 * A handle is physical memory (whole pages) with a reference count; cuMemAddressReserve
 * takes address space only. Physical memory is freed after the handle's last cuMemRelease
 * AND its last unmap. Shareable handles (POSIX fd type only) are real descriptors: a memfd
 * holding the exporting process's id and the allocation's, so they pass between processes
 * (SCM_RIGHTS, fork). Importing one in the process that made it takes a new reference on the
 * same physical allocation and returns the same handle value; importing it in another process
 * makes that process's own record of the memory (its pages counted on its device, as the one
 * physical memory is on a real device), the same one for every import of it there. The
 * descriptor itself holds no reference. Errors follow the real driver's list: invalid arguments, unknown handles,
 * overlapping maps and freeing a still-mapped reservation give CUDA_ERROR_INVALID_VALUE.
 */
#include "simcuda_internal.h"
#include "simcuda_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HANDLE_ID_MASK 0x0000ffffffffffffull

static CUmemGenericAllocationHandle handle_of(const struct simcuda__phys *phys)
{
    return SIMCUDA__HANDLE_TAG | phys->id;
}

/* Lock held. The physical allocation behind a handle that still has a reference. */
static struct simcuda__phys *handle_phys(CUmemGenericAllocationHandle handle)
{
    if ((handle & ~HANDLE_ID_MASK) != SIMCUDA__HANDLE_TAG)
        return NULL;
    struct simcuda__phys *phys = simcuda__phys_lookup(handle & HANDLE_ID_MASK);
    return phys && phys->handle_refs > 0 ? phys : NULL;
}

struct simcuda__phys *simcuda__vmm_handle_phys(CUmemGenericAllocationHandle handle)
{
    struct simcuda__phys *phys = handle_phys(handle);
    return phys && phys->vmm ? phys : NULL;
}

static bool prop_valid(const CUmemAllocationProp *prop)
{
    return prop && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
           prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
           simcuda__check_device(prop->location.id) == CUDA_SUCCESS;
}

/* Lock held. The reservation containing address, or NULL. */
static struct simcuda__va_entry *reservation_at(CUdeviceptr address)
{
    struct simcuda__va_entry *entry = simcuda__find_range(address, NULL);
    return entry && entry->kind == SIMCUDA__RANGE_RESERVATION ? entry : NULL;
}

const struct simcuda__mapping *simcuda__vmm_mapping_at(CUdeviceptr address)
{
    struct simcuda__va_entry *entry = reservation_at(address);
    struct simcuda__reservation *reservation = entry ? entry->object : NULL;
    for (size_t i = 0; reservation && i < reservation->count; i++) {
        if (address - reservation->mappings[i].base < reservation->mappings[i].size)
            return &reservation->mappings[i];
    }
    return NULL;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemGetAllocationGranularity(
    size_t *granularity, const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags option)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!granularity || !prop_valid(prop) ||
        (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
         option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = SIMCUDA__PAGE_SIZE;
    return CUDA_SUCCESS;
}

static CUresult mem_create(CUmemGenericAllocationHandle *handle, size_t size,
                           const CUmemAllocationProp *prop, unsigned long long flags)
{
    struct simcuda__phys *phys;
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!handle || size == 0 || size % SIMCUDA__PAGE_SIZE != 0 || flags != 0 || !prop_valid(prop))
        return CUDA_ERROR_INVALID_VALUE;
    simcuda__lock();
    result = simcuda__phys_create(prop->location.id, size, &phys);
    if (result == CUDA_SUCCESS) {
        phys->handle_refs = 1;
        phys->vmm = true;
        phys->prop = *prop;
        *handle = handle_of(phys);
    }
    simcuda__unlock();
    return result;
}

/* Every call is logged, the ones refused before they reach the books too. */
SIMCUDA_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                            const CUmemAllocationProp *prop,
                                            unsigned long long flags)
{
    CUresult result = mem_create(handle, size, prop, flags);
    return SIMCUDA__LOG(result, 0, size, result == CUDA_SUCCESS ? *handle : 0);
}

static CUresult mem_release(CUmemGenericAllocationHandle handle)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    struct simcuda__phys *phys = handle_phys(handle);
    struct simcuda__multicast *mc = simcuda__multicast_lookup(handle);
    if (phys) {
        phys->handle_refs--;
        simcuda__phys_maybe_free(phys);
    } else if (mc) {
        mc->refs--;
        simcuda__multicast_maybe_free(mc);
    } else {
        result = CUDA_ERROR_INVALID_VALUE;
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult result = mem_release(handle);
    return SIMCUDA__LOG(result, 0, 0, handle);
}

/* Reservations come from the address space of the hinted device, else of the current
 * context's device, else of device 0. */
static struct simcuda__va_space *reservation_space(CUdeviceptr *hint, int *device)
{
    struct simcuda__va_space *space = *hint ? simcuda__space_of(*hint, device) : NULL;
    if (space && space == &simcuda__state.devices[*device].va)
        return space;
    *hint = 0;
    struct CUctx_st *ctx = simcuda__current_context();
    *device = ctx && ctx->alive ? ctx->device : 0;
    return &simcuda__state.devices[*device].va;
}

static CUresult address_reserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                unsigned long long flags)
{
    int device;
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!ptr || size == 0 || size % SIMCUDA__PAGE_SIZE != 0 || flags != 0 ||
        (alignment & (alignment - 1)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct simcuda__reservation *reservation = calloc(1, sizeof(*reservation));
    if (!reservation)
        return CUDA_ERROR_OUT_OF_MEMORY;
    simcuda__lock();
    struct simcuda__va_space *space = reservation_space(&addr, &device);
    reservation->device = device;
    result = simcuda__va_reserve(space, size,
                                 alignment > SIMCUDA__PAGE_SIZE ? alignment : SIMCUDA__PAGE_SIZE,
                                 addr, SIMCUDA__RANGE_RESERVATION, reservation, ptr);
    simcuda__unlock();
    if (result != CUDA_SUCCESS)
        free(reservation);
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                                    CUdeviceptr addr, unsigned long long flags)
{
    CUresult result = address_reserve(ptr, size, alignment, addr, flags);
    return SIMCUDA__LOG(result, result == CUDA_SUCCESS ? *ptr : 0, size, 0);
}

static CUresult address_free(CUdeviceptr ptr, size_t size)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    struct simcuda__va_space *space = simcuda__space_of(ptr, NULL);
    struct simcuda__va_entry *entry = reservation_at(ptr);
    struct simcuda__reservation *reservation = entry ? entry->object : NULL;
    if (!entry || entry->base != ptr || entry->size != size || reservation->count > 0) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        simcuda__va_release(space, ptr);
        free(reservation->mappings);
        free(reservation);
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUresult result = address_free(ptr, size);
    return SIMCUDA__LOG(result, ptr, size, 0);
}

static bool overlaps(CUdeviceptr a, uint64_t a_size, CUdeviceptr b, uint64_t b_size)
{
    return a < b + b_size && b < a + a_size;
}

/* Lock held. Inserts keeping mappings sorted by base. */
static CUresult add_mapping(struct simcuda__reservation *reservation,
                            struct simcuda__mapping mapping)
{
    if (reservation->count == reservation->capacity) {
        size_t capacity = reservation->capacity ? reservation->capacity * 2 : 4;
        struct simcuda__mapping *grown = realloc(reservation->mappings,
                                                 capacity * sizeof(*reservation->mappings));
        if (!grown)
            return CUDA_ERROR_OUT_OF_MEMORY;
        reservation->mappings = grown;
        reservation->capacity = capacity;
    }
    size_t index = 0;
    while (index < reservation->count && reservation->mappings[index].base < mapping.base)
        index++;
    memmove(&reservation->mappings[index + 1], &reservation->mappings[index],
            (reservation->count - index) * sizeof(mapping));
    reservation->mappings[index] = mapping;
    reservation->count++;
    return CUDA_SUCCESS;
}

static CUresult mem_map(CUdeviceptr ptr, size_t size, size_t offset,
                        CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (size == 0 || size % SIMCUDA__PAGE_SIZE != 0 || offset % SIMCUDA__PAGE_SIZE != 0 ||
        flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    simcuda__lock();
    struct simcuda__phys *phys = handle_phys(handle);
    struct simcuda__multicast *mc = simcuda__multicast_lookup(handle);
    uint64_t handle_size = phys ? phys->size : mc ? mc->prop.size : 0;
    struct simcuda__va_entry *entry = reservation_at(ptr);
    struct simcuda__reservation *reservation = entry ? entry->object : NULL;
    if ((!phys && !mc) || offset > handle_size || handle_size - offset < size || !entry ||
        entry->base + entry->size - ptr < size)
        result = CUDA_ERROR_INVALID_VALUE;
    else if (mc && !simcuda__multicast_complete(mc))
        result = CUDA_ERROR_NOT_PERMITTED; /* the real driver blocks until the team is complete */
    for (size_t i = 0; result == CUDA_SUCCESS && i < reservation->count; i++) {
        if (overlaps(ptr, size, reservation->mappings[i].base, reservation->mappings[i].size))
            result = CUDA_ERROR_INVALID_VALUE;
    }
    if (result == CUDA_SUCCESS) {
        struct simcuda__mapping mapping = {
            .base = ptr, .size = size, .offset = offset, .phys = phys, .multicast = mc};
        result = add_mapping(reservation, mapping);
    }
    if (result == CUDA_SUCCESS && phys)
        phys->map_count++;
    else if (result == CUDA_SUCCESS)
        mc->map_count++;
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                         CUmemGenericAllocationHandle handle,
                                         unsigned long long flags)
{
    CUresult result = mem_map(ptr, size, offset, handle, flags);
    return SIMCUDA__LOG(result, ptr, size, handle);
}

/* The range must consist of whole mappings (one or more) and nothing unmapped. */
static CUresult mem_unmap(CUdeviceptr ptr, size_t size)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    simcuda__lock();
    struct simcuda__va_entry *entry = reservation_at(ptr);
    struct simcuda__reservation *reservation = entry ? entry->object : NULL;
    uint64_t covered = 0;
    if (!entry || size == 0 || entry->base + entry->size - ptr < size)
        result = CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; result == CUDA_SUCCESS && i < reservation->count; i++) {
        const struct simcuda__mapping *mapping = &reservation->mappings[i];
        if (!overlaps(ptr, size, mapping->base, mapping->size))
            continue;
        if (mapping->base < ptr || mapping->base + mapping->size > ptr + size)
            result = CUDA_ERROR_INVALID_VALUE;
        covered += mapping->size;
    }
    if (result == CUDA_SUCCESS && covered != size)
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS) {
        size_t kept = 0;
        for (size_t i = 0; i < reservation->count; i++) {
            struct simcuda__mapping mapping = reservation->mappings[i];
            if (overlaps(ptr, size, mapping.base, mapping.size) && mapping.phys) {
                mapping.phys->map_count--;
                simcuda__phys_maybe_free(mapping.phys);
            } else if (overlaps(ptr, size, mapping.base, mapping.size)) {
                mapping.multicast->map_count--;
                simcuda__multicast_maybe_free(mapping.multicast);
            } else {
                reservation->mappings[kept++] = mapping;
            }
        }
        reservation->count = kept;
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult result = mem_unmap(ptr, size);
    return SIMCUDA__LOG(result, ptr, size, 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size,
                                               const CUmemAccessDesc *desc, size_t count)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!desc || count == 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            simcuda__check_device(desc[i].location.id) != CUDA_SUCCESS ||
            (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
             desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
             desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            return CUDA_ERROR_INVALID_VALUE;
    }
    simcuda__lock();
    if (!reservation_at(ptr) || simcuda__check_device_range(ptr, size) != CUDA_SUCCESS)
        result = CUDA_ERROR_INVALID_VALUE;
    simcuda__unlock();
    return result;
}

/* Takes a new reference, which needs its own cuMemRelease. */
static CUresult retain_handle(CUmemGenericAllocationHandle *handle, void *addr)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr address = (CUdeviceptr)(uintptr_t)addr;
    simcuda__lock();
    struct simcuda__va_entry *entry = reservation_at(address);
    struct simcuda__reservation *reservation = entry ? entry->object : NULL;
    result = CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; reservation && i < reservation->count; i++) {
        struct simcuda__mapping *mapping = &reservation->mappings[i];
        if (address - mapping->base < mapping->size && mapping->phys) {
            mapping->phys->handle_refs++;
            *handle = handle_of(mapping->phys);
            result = CUDA_SUCCESS;
            break;
        } else if (address - mapping->base < mapping->size) {
            mapping->multicast->refs++;
            *handle = simcuda__multicast_handle(mapping->multicast);
            result = CUDA_SUCCESS;
            break;
        }
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle,
                                                            void *addr)
{
    CUresult result = retain_handle(handle, addr);
    return SIMCUDA__LOG(result, (uintptr_t)addr, 0, result == CUDA_SUCCESS ? *handle : 0);
}

/* What a shareable handle's memfd holds. */
struct shareable {
    char magic[8];
    int64_t pid; /* the exporting process */
    uint64_t id; /* its physical allocation (or multicast object) there */
    uint64_t size;
    CUmemAllocationProp prop;
    CUmulticastObjectProp multicast; /* a multicast object's (magic shareable_multicast) */
};

static const char shareable_magic[8] = "SIMCUDA";
static const char shareable_multicast[8] = "SIMCUMC";

static int payload_fd(const struct shareable *payload)
{
    int fd = memfd_create("simcuda-shareable-handle", MFD_CLOEXEC);
    if (fd >= 0 && pwrite(fd, payload, sizeof(*payload), 0) != (ssize_t)sizeof(*payload)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Lock held. A memfd describing phys; -1 (errno set) when the system gives none. */
static int shareable_fd(const struct simcuda__phys *phys)
{
    struct shareable payload = {.pid = phys->origin_pid ? phys->origin_pid : (int64_t)getpid(),
                                .id = phys->origin_pid ? phys->origin_id : phys->id,
                                .size = phys->size,
                                .prop = phys->prop};
    memcpy(payload.magic, shareable_magic, sizeof(payload.magic));
    return payload_fd(&payload);
}

/* Lock held. A memfd describing a multicast object; -1 (errno set) when the system gives none. */
static int multicast_fd(const struct simcuda__multicast *mc)
{
    struct shareable payload = {.pid = mc->origin_pid ? mc->origin_pid : (int64_t)getpid(),
                                .id = mc->origin_pid ? mc->origin_id : mc->id,
                                .size = mc->prop.size,
                                .multicast = mc->prop};
    memcpy(payload.magic, shareable_multicast, sizeof(payload.magic));
    return payload_fd(&payload);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemExportToShareableHandle(void *shareableHandle,
                                                             CUmemGenericAllocationHandle handle,
                                                             CUmemAllocationHandleType handleType,
                                                             unsigned long long flags)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!shareableHandle || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    simcuda__lock();
    struct simcuda__phys *phys = handle_phys(handle);
    struct simcuda__multicast *mc = simcuda__multicast_lookup(handle);
    int fd = -1;
    if (!phys && !mc)
        result = CUDA_ERROR_INVALID_VALUE;
    else if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
             (mc && !(mc->prop.handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)))
        result = CUDA_ERROR_NOT_SUPPORTED;
    else if ((fd = phys ? shareable_fd(phys) : multicast_fd(mc)) < 0)
        result = CUDA_ERROR_OPERATING_SYSTEM;
    else
        *(int *)shareableHandle = fd;
    simcuda__unlock();
    return result;
}

/* Lock held. This process's record of memory another process exported, made on first import. */
static CUresult imported_phys(const struct shareable *payload, struct simcuda__phys **out)
{
    for (size_t i = 0; i < simcuda__state.phys_count; i++) {
        struct simcuda__phys *phys = simcuda__state.phys[i];
        if (phys && phys->origin_pid == payload->pid && phys->origin_id == payload->id) {
            *out = phys;
            return CUDA_SUCCESS;
        }
    }
    if (!prop_valid(&payload->prop) || payload->size == 0 ||
        payload->size % SIMCUDA__PAGE_SIZE != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = simcuda__phys_create(payload->prop.location.id, payload->size, out);
    if (result == CUDA_SUCCESS) {
        (*out)->vmm = true;
        (*out)->prop = payload->prop;
        (*out)->origin_pid = (long)payload->pid;
        (*out)->origin_id = payload->id;
    }
    return result;
}

/* In the process that made it: a new reference on the object. In another: that process's own
 * record of it, made at the first import (its team is completed by that process's adds). */
static CUresult import_multicast(CUmemGenericAllocationHandle *handle,
                                 const struct shareable *payload)
{
    CUresult result = CUDA_SUCCESS;
    struct simcuda__multicast *mc;
    simcuda__lock();
    if (payload->pid == (int64_t)getpid()) {
        mc = simcuda__multicast_lookup(SIMCUDA__MULTICAST_TAG | payload->id);
        result = mc ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
        if (mc)
            mc->refs++;
    } else if ((mc = simcuda__multicast_imported((long)payload->pid, payload->id))) {
        mc->refs++;
    } else if ((result = simcuda__multicast_prop_check(&payload->multicast)) == CUDA_SUCCESS) {
        result = simcuda__multicast_create(&payload->multicast, (long)payload->pid, payload->id,
                                           &mc);
    }
    if (result == CUDA_SUCCESS)
        *handle = simcuda__multicast_handle(mc);
    simcuda__unlock();
    return result;
}

static CUresult import_handle(CUmemGenericAllocationHandle *handle, void *osHandle,
                              CUmemAllocationHandleType type)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    struct shareable payload;
    int fd = (int)(intptr_t)osHandle;
    if (pread(fd, &payload, sizeof(payload), 0) != (ssize_t)sizeof(payload))
        return CUDA_ERROR_INVALID_VALUE;
    if (memcmp(payload.magic, shareable_multicast, sizeof(shareable_multicast)) == 0)
        return import_multicast(handle, &payload);
    if (memcmp(payload.magic, shareable_magic, sizeof(shareable_magic)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    simcuda__lock();
    struct simcuda__phys *phys = NULL;
    if (payload.pid == (int64_t)getpid())
        phys = simcuda__phys_lookup(payload.id);
    else
        result = imported_phys(&payload, &phys);
    if (result == CUDA_SUCCESS && phys && phys->vmm) {
        phys->handle_refs++;
        *handle = handle_of(phys);
    } else if (result == CUDA_SUCCESS) {
        result = CUDA_ERROR_INVALID_VALUE;
    }
    simcuda__unlock();
    return result;
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemImportFromShareableHandle(
    CUmemGenericAllocationHandle *handle, void *osHandle, CUmemAllocationHandleType shHandleType)
{
    CUresult result = import_handle(handle, osHandle, shHandleType);
    return SIMCUDA__LOG(result, 0, 0, result == CUDA_SUCCESS ? *handle : 0);
}

SIMCUDA_EXPORT CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(
    CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)
{
    CUresult result = simcuda__require_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    simcuda__lock();
    struct simcuda__phys *phys = handle_phys(handle);
    if (phys)
        *prop = phys->prop;
    else
        result = CUDA_ERROR_INVALID_VALUE;
    simcuda__unlock();
    return result;
}
