/* Pinned host memory (simcuda_host.c): device pointers and flags under unified addressing. */
#include "simcuda_test_util.h"

Test(host, the_device_pointer_is_the_host_address)
{
    simcuda_test_start("1GiB", "0");
    void *pinned;
    CUdeviceptr device = 0;
    unsigned flags = 0;
    CU_OK(cuMemHostAlloc(&pinned, MiB, CU_MEMHOSTALLOC_DEVICEMAP));
    CU_OK(cuMemHostGetDevicePointer(&device, (char *)pinned + 100, 0));
    cr_assert_eq(device, (CUdeviceptr)(uintptr_t)pinned + 100);
    CU_OK(cuMemHostGetFlags(&flags, pinned));
    cr_assert_eq(flags, CU_MEMHOSTALLOC_DEVICEMAP);
    CU_FAILS(cuMemHostGetDevicePointer(&device, pinned, 1), CUDA_ERROR_INVALID_VALUE);
    /* the device pointer works as one: copies and sets reach the host bytes */
    int in[2] = {4, 5};
    CU_OK(cuMemcpyHtoD(device, in, sizeof in));
    cr_assert_eq(((int *)pinned)[25 + 1], 5);
    CU_OK(cuMemsetD32(device, 7, 1));
    cr_assert_eq(((int *)pinned)[25], 7);
    CU_FAILS(cuMemsetD8(device, 0, MiB), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFreeHost(pinned));
    CU_FAILS(cuMemHostGetDevicePointer(&device, pinned, 0), CUDA_ERROR_INVALID_VALUE);
}

Test(host, registered_memory_has_a_device_pointer_too)
{
    simcuda_test_start("1GiB", "0");
    static char buffer[1 << 16];
    CUdeviceptr device = 0;
    unsigned flags = 0;
    CU_FAILS(cuMemHostGetFlags(&flags, buffer), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemHostRegister(buffer, sizeof buffer, CU_MEMHOSTREGISTER_DEVICEMAP));
    CU_OK(cuMemHostGetDevicePointer(&device, buffer, 0));
    cr_assert_eq(device, (CUdeviceptr)(uintptr_t)buffer);
    CU_OK(cuMemHostGetFlags(&flags, buffer + 10));
    cr_assert_eq(flags, CU_MEMHOSTREGISTER_DEVICEMAP);
    CU_OK(cuMemHostUnregister(buffer));
}
