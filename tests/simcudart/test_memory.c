/* simcudart's memory calls beyond cudaMalloc: pitched and 3D memory, pools, managed memory
 * that keeps its bytes, pinned host memory, 2D/3D copies and sets. */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

#define RT_OK(call) cr_assert_eq((call), cudaSuccess, "%s failed", #call)

static void start(void)
{
    setenv("SIMCUDA_MEMORY", "1GiB", 1);
    setenv("SIMCUDA_CONTEXT_OVERHEAD", "0", 1);
}

static size_t free_now(void)
{
    size_t free_bytes = 0, total_bytes = 0;
    RT_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return free_bytes;
}

Test(memory, pitched_and_3d)
{
    start();
    void *pointer = NULL;
    size_t pitch = 0;
    RT_OK(cudaMallocPitch(&pointer, &pitch, 1000, 100));
    cr_assert_eq(pitch, 1024);
    cr_assert_eq(free_now(), 1 * GiB - 2 * MiB);
    RT_OK(cudaMemset2D(pointer, pitch, 0, 1000, 100));
    cr_assert_eq(cudaMemset2D(pointer, pitch, 0, 2000, 2), cudaErrorInvalidPitchValue);
    struct cudaPitchedPtr volume;
    struct cudaExtent extent = {.width = 600, .height = 64, .depth = 32};
    RT_OK(cudaMalloc3D(&volume, extent));
    cr_assert_eq(volume.pitch, 1024);
    cr_assert_eq(volume.ysize, 64);
    RT_OK(cudaMemset3D(volume, 0, extent));
    RT_OK(cudaFree(volume.ptr));
    RT_OK(cudaFree(pointer));
    cr_assert_eq(free_now(), 1 * GiB);
}

Test(memory, pools_of_our_own)
{
    start();
    cudaMemPool_t pool, current;
    struct cudaMemPoolProps props = {.allocType = cudaMemAllocationTypePinned,
                                     .location = {.type = cudaMemLocationTypeDevice, .id = 0}};
    RT_OK(cudaMemPoolCreate(&pool, &props));
    void *pointer = NULL;
    RT_OK(cudaMallocFromPoolAsync(&pointer, 3 * MiB, pool, 0));
    cr_assert_eq(free_now(), 1 * GiB - 4 * MiB);
    RT_OK(cudaFreeAsync(pointer, 0));
    RT_OK(cudaDeviceSetMemPool(0, pool));
    RT_OK(cudaDeviceGetMemPool(&current, 0));
    cr_assert_eq(current, pool);
    RT_OK(cudaStreamSynchronize(0)); /* threshold 0: the retained block goes back */
    cr_assert_eq(free_now(), 1 * GiB);
    RT_OK(cudaMemPoolDestroy(pool));
}

Test(memory, managed_memory_keeps_its_bytes_through_copies)
{
    start();
    int *managed = NULL, *device = NULL;
    RT_OK(cudaMallocManaged((void **)&managed, MiB, cudaMemAttachGlobal));
    RT_OK(cudaMalloc((void **)&device, MiB));
    for (int i = 0; i < 256; i++)
        managed[i] = i;
    int back[256] = {0};
    RT_OK(cudaMemcpy(back, managed, sizeof back, cudaMemcpyDefault));
    cr_assert_eq(back[255], 255);
    RT_OK(cudaMemcpy2D(managed + 1024, 64, managed, 32, 32, 4, cudaMemcpyDefault));
    cr_assert_eq(managed[1024 + 16 + 3], 8 + 3, "row 1 of the source, at the destination's pitch");
    RT_OK(cudaMemcpy(device, managed, 1024, cudaMemcpyHostToDevice));
    RT_OK(cudaMemsetAsync(managed, 0, 16, 0));
    cr_assert_eq(managed[3], 0);
    RT_OK(cudaFree(device));
    RT_OK(cudaFree(managed));
}

Test(memory, copies_check_their_device_side)
{
    start();
    void *device = NULL;
    char host[64];
    RT_OK(cudaMalloc(&device, 4096));
    cr_assert_eq(cudaMemcpy((char *)device + 4090, host, 64, cudaMemcpyHostToDevice),
                 cudaErrorInvalidValue);
    cr_assert_eq(cudaMemcpy(host, device, 64, (enum cudaMemcpyKind)7),
                 cudaErrorInvalidMemcpyDirection);
    struct cudaMemcpy3DParms parms = {0};
    parms.srcArray = (cudaArray_t)1;
    cr_assert_eq(cudaMemcpy3D(&parms), cudaErrorNotSupported, "arrays are not simulated");
    cr_assert_eq(cudaGetLastError(), cudaErrorNotSupported, "the last error is kept");
    RT_OK(cudaGetLastError());
    RT_OK(cudaFree(device));
}

Test(memory, pinned_host_memory)
{
    start();
    void *pinned = NULL, *mapped = NULL, *device_view = NULL;
    static char registered[1 << 16];
    unsigned flags = 0;
    RT_OK(cudaMallocHost(&pinned, MiB));
    RT_OK(cudaHostAlloc(&mapped, MiB, cudaHostAllocMapped));
    RT_OK(cudaHostGetDevicePointer(&device_view, mapped, 0));
    cr_assert_eq(device_view, mapped);
    RT_OK(cudaHostGetFlags(&flags, mapped));
    cr_assert_eq(flags, cudaHostAllocMapped);
    RT_OK(cudaHostRegister(registered, sizeof registered, cudaHostRegisterMapped));
    cr_assert_eq(cudaHostRegister(registered, 4096, 0), cudaErrorHostMemoryAlreadyRegistered);
    struct cudaPointerAttributes attributes;
    RT_OK(cudaPointerGetAttributes(&attributes, registered));
    cr_assert_eq(attributes.type, cudaMemoryTypeHost);
    RT_OK(cudaPointerGetAttributes(&attributes, &flags));
    cr_assert_eq(attributes.type, cudaMemoryTypeUnregistered);
    RT_OK(cudaMemcpy(pinned, registered, 4096, cudaMemcpyHostToHost));
    RT_OK(cudaHostUnregister(registered));
    RT_OK(cudaFreeHost(mapped));
    RT_OK(cudaFreeHost(pinned));
    cr_assert_eq(free_now(), 1 * GiB, "host memory is never counted against the device");
}
