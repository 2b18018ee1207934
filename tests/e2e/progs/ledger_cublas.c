/* ledger_cublas.c — built as libcublas.so for ledger_libs.c: a cuBLAS-like workspace made
 * when a handle is created. Its function is named like no owner pattern, so only the module
 * names the owner. Test code. */
#define PROG_NAME "libcublas"
#include "prog_driver.h"

#define WORKSPACE ((4u << 20) + 100)

void handle_create_like(void);
void handle_create_like(void)
{
    CUdeviceptr workspace;
    CHECK(cuMemAlloc(&workspace, WORKSPACE));
    printf("cublas address=0x%llx\n", (unsigned long long)workspace);
}
