/* rec_vmm.c — what the wrappers record of virtual memory management: physical handles,
 * mappings, reservations, access, shareable handles, dma-buf range handles and multicast
 * objects (record.h). */
#include "record.h"

void cmt__rec_cuMemCreate(struct cmt_event *e, int ok, CUmemGenericAllocationHandle *handle,
                          size_t size, const CUmemAllocationProp *prop, unsigned long long flags)
{
    if (prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        e->dev = prop->location.id;
    CMT__SET(e, SIZE, size);
    CMT__SET(e, FLAGS, flags);
    CMT__OUT(e, ok, HANDLE, handle);
}

void cmt__rec_cuMemRelease(struct cmt_event *e, int ok, CUmemGenericAllocationHandle handle)
{
    CMT__SET(e, HANDLE, handle);
}

void cmt__rec_cuMemMap(struct cmt_event *e, int ok, CUdeviceptr ptr, size_t size, size_t offset,
                       CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CMT__SET(e, PTR, ptr);
    CMT__SET(e, SIZE, size);
    CMT__SET(e, OFFSET, offset);
    CMT__SET(e, HANDLE, handle);
}

void cmt__rec_cuMemUnmap(struct cmt_event *e, int ok, CUdeviceptr ptr, size_t size)
{
    CMT__SET(e, PTR, ptr);
    CMT__SET(e, SIZE, size);
}

void cmt__rec_cuMemAddressReserve(struct cmt_event *e, int ok, CUdeviceptr *ptr, size_t size,
                                  size_t alignment, CUdeviceptr addr, unsigned long long flags)
{
    CMT__SET(e, SIZE, size);
    CMT__SET(e, ALIGN, alignment);
    CMT__SET(e, FLAGS, flags);
    CMT__OUT(e, ok, PTR, ptr);
    (void)addr;
}

CMT__REC_SAME(cuMemAddressFree, cuMemUnmap);

void cmt__rec_cuMemSetAccess(struct cmt_event *e, int ok, CUdeviceptr ptr, size_t size,
                             const CUmemAccessDesc *desc, size_t count)
{
    CMT__SET(e, PTR, ptr);
    CMT__SET(e, SIZE, size);
    CMT__SET(e, COUNT, count);
    if (desc && count > 0 && desc[0].location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        e->dev = desc[0].location.id;
}

void cmt__rec_cuMemRetainAllocationHandle(struct cmt_event *e, int ok,
                                          CUmemGenericAllocationHandle *handle, void *addr)
{
    CMT__SET(e, PTR, (uintptr_t)addr);
    CMT__OUT(e, ok, HANDLE, handle);
}

void cmt__rec_cuMemImportFromShareableHandle(struct cmt_event *e, int ok,
                                             CUmemGenericAllocationHandle *handle, void *os_handle,
                                             CUmemAllocationHandleType type)
{
    CMT__SET(e, FLAGS, type);
    CMT__OUT(e, ok, HANDLE, handle);
    (void)os_handle;
}

void cmt__rec_cuMemExportToShareableHandle(struct cmt_event *e, int ok, void *shareable,
                                           CUmemGenericAllocationHandle handle,
                                           CUmemAllocationHandleType type, unsigned long long flags)
{
    CMT__SET(e, HANDLE, handle);
    CMT__SET(e, FLAGS, type);
    (void)shareable;
}

void cmt__rec_cuMemGetHandleForAddressRange(struct cmt_event *e, int ok, void *handle,
                                            CUdeviceptr dptr, size_t size,
                                            CUmemRangeHandleType type, unsigned long long flags)
{
    CMT__SET(e, PTR, dptr);
    CMT__SET(e, SIZE, size);
    CMT__SET(e, FLAGS, type);
    if (ok && handle && type == CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD)
        CMT__SET(e, HANDLE, (uint64_t)(int64_t) * (int *)handle);
    (void)flags;
}

/* Multicast objects: handle = the object, ptr = what is bound (the physical handle, or the
 * address of mapped memory), offset = into the object; the device a call names is dev. */
void cmt__rec_cuMulticastCreate(struct cmt_event *e, int ok, CUmemGenericAllocationHandle *handle,
                                const CUmulticastObjectProp *prop)
{
    if (prop) {
        CMT__SET(e, SIZE, prop->size);
        CMT__SET(e, COUNT, prop->numDevices);
        CMT__SET(e, FLAGS, prop->handleTypes);
    }
    CMT__OUT(e, ok, HANDLE, handle);
}

void cmt__rec_cuMulticastAddDevice(struct cmt_event *e, int ok, CUmemGenericAllocationHandle handle,
                                   CUdevice dev)
{
    e->dev = dev;
    CMT__SET(e, HANDLE, handle);
}

static void rec_bind(struct cmt_event *e, CUmemGenericAllocationHandle handle, size_t offset,
                     uint64_t bound, size_t size, unsigned long long flags)
{
    CMT__SET(e, HANDLE, handle);
    CMT__SET(e, OFFSET, offset);
    CMT__SET(e, PTR, bound);
    CMT__SET(e, SIZE, size);
    CMT__SET(e, FLAGS, flags);
}

void cmt__rec_cuMulticastBindMem(struct cmt_event *e, int ok, CUmemGenericAllocationHandle handle,
                                 size_t offset, CUmemGenericAllocationHandle memory,
                                 size_t memory_offset, size_t size, unsigned long long flags)
{
    rec_bind(e, handle, offset, memory, size, flags);
    (void)memory_offset;
}

void cmt__rec_cuMulticastBindAddr(struct cmt_event *e, int ok, CUmemGenericAllocationHandle handle,
                                  size_t offset, CUdeviceptr memory, size_t size,
                                  unsigned long long flags)
{
    rec_bind(e, handle, offset, memory, size, flags);
}

void cmt__rec_cuMulticastUnbind(struct cmt_event *e, int ok, CUmemGenericAllocationHandle handle,
                                CUdevice dev, size_t offset, size_t size)
{
    e->dev = dev;
    CMT__SET(e, HANDLE, handle);
    CMT__SET(e, OFFSET, offset);
    CMT__SET(e, SIZE, size);
}

void cmt__rec_cuMulticastGetGranularity(struct cmt_event *e, int ok, size_t *granularity,
                                        const CUmulticastObjectProp *prop,
                                        CUmulticastGranularity_flags option)
{
    CMT__SET(e, FLAGS, option);
    CMT__OUT(e, ok, SIZE, granularity);
    (void)prop;
}
