/* alloc_deep.c — allocates 12,345,678 bytes three calls deep, frees it, exits cleanly.
 * Linked against libcuda.so.1 (simcuda in tests); built without -rdynamic. */
#include <cuda.h>
#include <stdio.h>

static CUdeviceptr level3(void)
{
    CUdeviceptr p = 0;
    CUresult rc = cuMemAlloc(&p, 12345678);
    if (rc != CUDA_SUCCESS)
        fprintf(stderr, "alloc failed: %d\n", rc);
    return p;
}

static __attribute__((noinline)) CUdeviceptr level2(void)
{
    CUdeviceptr p = level3();
    __asm__ volatile("" ::: "memory");
    return p;
}

/* level1 stays global (level2 and level3 are static), so the stack holds both kinds of symbol. */
CUdeviceptr level1(void);

__attribute__((noinline)) CUdeviceptr level1(void)
{
    CUdeviceptr p = level2();
    __asm__ volatile("" ::: "memory");
    return p;
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx))
        return 2;
    CUdeviceptr p = level1();
    if (!p)
        return 3;
    if (cuMemFree(p))
        return 4;
    cuDevicePrimaryCtxRelease(dev);
    return 0;
}
