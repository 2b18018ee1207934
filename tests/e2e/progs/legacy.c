/* legacy.c — the driver's legacy ABI (the unsuffixed names: 32-bit sizes and pointers, v1
 * array descriptors), reached by each route a program has: linked, dlsym, cuGetProcAddress at
 * version 2000 (the variant of CUDA 2.0). Written for the tests; linked against libcuda.so.1
 * (simcuda). Each route allocates its own sizes (route r: r + 1 MiB, pitched, host, arrays
 * scaled alike), so a test can tell the routes apart. Prints "legacy ok". */
#define __CUDA_API_VERSION_INTERNAL 1 /* the prototypes of the legacy names */
#define PROG_NAME "legacy"
#include "prog_driver.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

struct legacy {
    CUresult(CUDAAPI *mem_alloc)(CUdeviceptr_v1 *, unsigned int);
    CUresult(CUDAAPI *mem_alloc_pitch)(CUdeviceptr_v1 *, unsigned int *, unsigned int, unsigned int,
                                       unsigned int);
    CUresult(CUDAAPI *mem_free)(CUdeviceptr_v1);
    CUresult(CUDAAPI *mem_get_info)(unsigned int *, unsigned int *);
    CUresult(CUDAAPI *mem_alloc_host)(void **, unsigned int);
    CUresult(CUDAAPI *array_create)(CUarray *, const CUDA_ARRAY_DESCRIPTOR_v1 *);
    CUresult(CUDAAPI *array_3d_create)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR_v1 *);
};

static const char *const names[] = {"cuMemAlloc",     "cuMemAllocPitch", "cuMemFree",
                                    "cuMemGetInfo",   "cuMemAllocHost",  "cuArrayCreate",
                                    "cuArray3DCreate"};

static void fill(struct legacy *l, void *const fns[])
{
    void **slots[] = {(void **)&l->mem_alloc,      (void **)&l->mem_alloc_pitch,
                      (void **)&l->mem_free,       (void **)&l->mem_get_info,
                      (void **)&l->mem_alloc_host, (void **)&l->array_create,
                      (void **)&l->array_3d_create};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (!fns[i]) {
            fprintf(stderr, "legacy: %s not found\n", names[i]);
            exit(2);
        }
        *slots[i] = fns[i];
    }
}

/* One route's calls; sizes scaled by (route + 1). */
static void use(const struct legacy *l, unsigned route)
{
    unsigned scale = route + 1, pitch, free_bytes, total_bytes;
    CUdeviceptr_v1 plain, pitched;
    void *host;
    CUarray plane, volume;
    CHECK(l->mem_alloc(&plain, scale << 20));
    CHECK(l->mem_alloc_pitch(&pitched, &pitch, 1000 * scale, 100, 4));
    CHECK(l->mem_get_info(&free_bytes, &total_bytes));
    CHECK(l->mem_alloc_host(&host, scale << 16));
    CUDA_ARRAY_DESCRIPTOR_v1 d2 = {
        .Width = 256 * scale, .Height = 64, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CHECK(l->array_create(&plane, &d2));
    CUDA_ARRAY3D_DESCRIPTOR_v1 d3 = {.Width = 32 * scale,
                                     .Height = 32,
                                     .Depth = 8,
                                     .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                     .NumChannels = 4};
    CHECK(l->array_3d_create(&volume, &d3));
    CHECK(cuArrayDestroy(volume));
    CHECK(cuArrayDestroy(plane));
    CHECK(cuMemFreeHost(host));
    CHECK(l->mem_free(pitched));
    CHECK(l->mem_free(plain));
}

int main(void)
{
    CUdevice dev = prog_start();

    /* route 0: the linked symbols */
    struct legacy linked = {cuMemAlloc,     cuMemAllocPitch, cuMemFree,      cuMemGetInfo,
                            cuMemAllocHost, cuArrayCreate,   cuArray3DCreate};
    use(&linked, 0);

    /* route 1: dlsym of the exact names */
    void *found[sizeof names / sizeof *names];
    struct legacy by_dlsym, by_getproc;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        found[i] = dlsym(RTLD_DEFAULT, names[i]);
    fill(&by_dlsym, found);
    use(&by_dlsym, 1);

    /* route 2: cuGetProcAddress of the base names at CUDA 2.0, whose variants they were */
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        CUdriverProcAddressQueryResult status;
        CHECK(cuGetProcAddress_v2(names[i], &found[i], 2000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
    }
    fill(&by_getproc, found);
    use(&by_getproc, 2);

    CHECK(cuDevicePrimaryCtxRelease(dev));
    printf("legacy ok\n");
    return 0;
}
