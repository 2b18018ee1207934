/* cudart_malloc.c — a CUDA runtime program (linked against the toolkit's libcudart, shared or
 * static). On simcuda, cudart's init stops at cuGetExportTable (no real GPU driver), after it
 * has looked up every driver entry point through cuGetProcAddress. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
    void *p = NULL;
    cudaError_t rc = cudaMalloc(&p, 1 << 20);
    printf("cudaMalloc: %d (%s)\n", (int)rc, cudaGetErrorName(rc));
    if (rc == cudaSuccess)
        cudaFree(p);
    return 0;
}
