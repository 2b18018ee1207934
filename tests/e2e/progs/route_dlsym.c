/* route_dlsym.c — reaches the driver only through dlopen + dlsym (not linked to libcuda):
 * dlsym(handle), dlsym(RTLD_DEFAULT) and dlsym(RTLD_NEXT), each allocating a distinct size. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);

static int use(const char *route, alloc_fn a, free_fn f, size_t size)
{
    CUdeviceptr p = 0;
    if (!a || !f) {
        fprintf(stderr, "%s: lookup failed\n", route);
        return 1;
    }
    if (a(&p, size) != CUDA_SUCCESS || f(p) != CUDA_SUCCESS) {
        fprintf(stderr, "%s: call failed\n", route);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *lib = argc > 1 ? argv[1] : "libcuda.so.1";
    void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", lib, dlerror());
        return 2;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    CUresult (*get)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))dlsym(h, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))dlsym(
        h, "cuDevicePrimaryCtxRetain");
    CUresult (*set)(CUcontext) = (CUresult(*)(CUcontext))dlsym(h, "cuCtxSetCurrent");
    CUdevice dev;
    CUcontext ctx;
    if (init(0) || get(&dev, 0) || retain(&ctx, dev) || set(ctx))
        return 3;
    int bad = 0;
    bad |= use("handle", (alloc_fn)dlsym(h, "cuMemAlloc_v2"), (free_fn)dlsym(h, "cuMemFree_v2"),
               1000001);
    bad |= use("default", (alloc_fn)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"),
               (free_fn)dlsym(RTLD_DEFAULT, "cuMemFree_v2"), 1000002);
    bad |= use("next", (alloc_fn)dlsym(RTLD_NEXT, "cuMemAlloc_v2"),
               (free_fn)dlsym(RTLD_NEXT, "cuMemFree_v2"), 1000003);
    /* A name we do not wrap passes through untouched. */
    if (dlsym(h, "cuDeviceGetCount") == NULL)
        bad = 1;
    return bad;
}
