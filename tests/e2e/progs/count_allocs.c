/* count_allocs TALLY [lib]: allocates and frees in a loop until killed, writing the number of
 * successful cuMemAlloc calls to TALLY after each one (the program's own count, which a
 * SIGKILL test compares with the trace). With `lib`: one 1 GiB allocation, then a call into
 * lib that the loader cannot bind (it ends the process with _exit(127), never through the
 * shim's _exit). */
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    CUcontext ctx;
    CUdevice dev;
    cuInit(0);
    cuDeviceGet(&dev, 0);
    cuDevicePrimaryCtxRetain(&ctx, dev);
    cuCtxSetCurrent(ctx);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    unsigned long n = 0;
    if (argc > 2) {
        CUdeviceptr big;
        if (cuMemAlloc(&big, 1ul << 30) == CUDA_SUCCESS)
            n++;
        if (pwrite(fd, &n, sizeof n, 0) != sizeof n)
            return 1;
        void *lib = dlopen(argv[2], RTLD_LAZY);
        void (*call)(void) = lib ? (void (*)(void))dlsym(lib, "call_missing") : NULL;
        if (call)
            call();
        return 2;
    }
    for (;;) {
        CUdeviceptr p;
        if (cuMemAlloc(&p, 4096 + (n % 7) * 1024) == CUDA_SUCCESS) {
            n++;
            if (pwrite(fd, &n, sizeof n, 0) != sizeof n)
                return 1;
            cuMemFree(p);
        }
    }
}
