/* route_getproc.c — libcudart's exact sequence: dlopen, dlsym("cuGetProcAddress_v2"), a probe,
 * cuInit@2000, the self-lookup at 12000 with a NULL status, then every query through the
 * returned pointer: cuMemAlloc@3020, cuMemAllocAsync@11020 with flags 0 and 2. Prints the
 * lookups it checks; exits non-zero when a rule does not hold. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef CUresult (*getproc_v2)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);

#define EXPECT(cond)                                                   \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
            bad = 1;                                                   \
        }                                                              \
    } while (0)

int main(void)
{
    int bad = 0;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h)
        return 2;
    getproc_v2 first = (getproc_v2)dlsym(h, "cuGetProcAddress_v2");
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    first("", &fn, 0, 0, &st); /* probe */
    CUresult (*init)(unsigned) = NULL;
    EXPECT(first("cuInit", (void **)&init, 2000, 0, &st) == CUDA_SUCCESS && init);
    getproc_v2 gp = NULL;
    EXPECT(first("cuGetProcAddress", (void **)&gp, 12000, 0, NULL) == CUDA_SUCCESS && gp);
    EXPECT(gp == (getproc_v2)dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2")); /* our wrapper */
    EXPECT(init(0) == CUDA_SUCCESS);

    CUresult (*dev_get)(CUdevice *, int) = NULL;
    CUresult (*retain)(CUcontext *, CUdevice) = NULL;
    CUresult (*set)(CUcontext) = NULL;
    gp("cuDeviceGet", (void **)&dev_get, 2000, 0, NULL);
    gp("cuDevicePrimaryCtxRetain", (void **)&retain, 7000, 0, NULL);
    gp("cuCtxSetCurrent", (void **)&set, 4000, 0, NULL);
    CUdevice dev;
    CUcontext ctx;
    EXPECT(dev_get && retain && set && !dev_get(&dev, 0) && !retain(&ctx, dev) && !set(ctx));

    CUresult (*alloc)(CUdeviceptr *, size_t) = NULL;
    CUresult (*mfree)(CUdeviceptr) = NULL;
    CUresult (*aasync)(CUdeviceptr *, size_t, CUstream) = NULL,
                                              (*aasync_pt)(CUdeviceptr *, size_t, CUstream) = NULL;
    CUresult (*fasync)(CUdeviceptr, CUstream) = NULL, (*fasync_pt)(CUdeviceptr, CUstream) = NULL;
    EXPECT(gp("cuMemAlloc", (void **)&alloc, 3020, 0, NULL) == CUDA_SUCCESS);
    EXPECT(gp("cuMemFree", (void **)&mfree, 3020, 0, NULL) == CUDA_SUCCESS);
    EXPECT(gp("cuMemAllocAsync", (void **)&aasync, 11020, 0, NULL) == CUDA_SUCCESS);
    EXPECT(gp("cuMemAllocAsync", (void **)&aasync_pt, 11020, 2, NULL) == CUDA_SUCCESS);
    EXPECT(gp("cuMemFreeAsync", (void **)&fasync, 11020, 0, NULL) == CUDA_SUCCESS);
    EXPECT(gp("cuMemFreeAsync", (void **)&fasync_pt, 11020, 2, NULL) == CUDA_SUCCESS);
    EXPECT(alloc == (void *)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
    EXPECT(aasync == (void *)dlsym(RTLD_DEFAULT, "cuMemAllocAsync"));
    EXPECT(aasync_pt == (void *)dlsym(RTLD_DEFAULT, "cuMemAllocAsync_ptsz"));
    EXPECT(aasync != aasync_pt);

    /* Unknown and too-new lookups pass through unchanged. */
    void *none = (void *)1;
    EXPECT(gp("cuNoSuchFunction", &none, 12000, 0, &st) == CUDA_SUCCESS && none == NULL);
    EXPECT(gp("cuMemAlloc", &none, 99000, 0, NULL) == CUDA_ERROR_INVALID_VALUE);

    CUdeviceptr p;
    EXPECT(alloc && !alloc(&p, 2000001) && !mfree(p));
    EXPECT(aasync && !aasync(&p, 2000002, 0) && !fasync(p, 0));
    EXPECT(aasync_pt && !aasync_pt(&p, 2000003, 0) && !fasync_pt(p, 0));
    /* The legacy v1 cuGetProcAddress keeps working through our wrapper too. */
    CUresult (*gp1)(const char *, void **, int, cuuint64_t) = NULL;
    EXPECT(gp("cuGetProcAddress", (void **)&gp1, 11030, 0, NULL) == CUDA_SUCCESS && gp1);
    EXPECT(gp1 == (void *)dlsym(RTLD_DEFAULT, "cuGetProcAddress"));
    void *a2 = NULL;
    EXPECT(gp1 && gp1("cuMemAlloc", &a2, 3020, 0) == CUDA_SUCCESS && a2 == (void *)alloc);
    return bad;
}
