/* live_million N DEVICES: N cuMemAlloc_v2 allocations of one page (simcuda's 2 MiB), spread
 * evenly over DEVICES devices (each holds 1 TiB of address space, 512k pages), never freed:
 * the program ends with all N live. Exits 1 naming the first call that fails. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    unsigned long n = strtoul(argv[1], NULL, 10);
    int devices = atoi(argv[2]);
    if (n == 0 || devices < 1 || cuInit(0) != CUDA_SUCCESS)
        return 2;
    for (int d = 0; d < devices; d++) {
        CUdevice dev;
        CUcontext ctx;
        if (cuDeviceGet(&dev, d) != CUDA_SUCCESS ||
            cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
            cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
            fprintf(stderr, "live_million: device %d unavailable\n", d);
            return 1;
        }
        unsigned long share = n / (unsigned long)devices + ((unsigned long)d < n % devices);
        for (unsigned long i = 0; i < share; i++) {
            CUdeviceptr p;
            CUresult rc = cuMemAlloc(&p, 4096 + (i % 64) * 512);
            if (rc != CUDA_SUCCESS) {
                fprintf(stderr, "live_million: allocation %lu on device %d failed (%d)\n", i, d,
                        (int)rc);
                return 1;
            }
        }
    }
    printf("%lu live\n", n);
    return 0;
}
