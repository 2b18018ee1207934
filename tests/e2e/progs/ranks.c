/* ranks.c — what one rank of a parallel job does, for the launcher tests; and the two
 * processes of a shared GPU (SIMCUDA_SHARED). Linked against libcuda.so.1 (simcuda).
 * Each uses device LOCAL_RANK (or OMPI_COMM_WORLD_LOCAL_RANK; 0) modulo the device count.
 *   ranks step FAIL_RANKS   rank r (from RANK or OMPI_COMM_WORLD_RANK) allocates (r + 1) ×
 *                           64 MiB in four steps; a rank in the comma list FAIL_RANKS then
 *                           waits (at most 30 s) for the file "failed.K" of the rank before
 *                           it in the list (K = its place - 1) and 1 s more, asks for more
 *                           than the device has (out of memory, retried once), creates
 *                           "failed.PLACE" and exits 1: the failures come in the list's order
 *                           at least 1 s apart, however loaded the machine
 *   ranks hold MIB          allocates MIB, creates the file "held", waits (at most 30 s) for
 *                           the file "done", frees, exits 0
 *   ranks take MIB          waits (at most 30 s) for "held", asks for MIB twice (a retry, as
 *                           PyTorch does), creates "done"; exits 1 when both failed */
#include <cuda.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB (1ull << 20)

/* Device LOCAL_RANK (as torchrun's ranks pick theirs), modulo the devices there are. */
static void init_cuda(void)
{
    CUdevice dev;
    CUcontext ctx;
    int count = 1;
    const char *local = getenv("LOCAL_RANK") ? getenv("LOCAL_RANK")
                                             : getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (cuInit(0) || cuDeviceGetCount(&count) ||
        cuDeviceGet(&dev, (local ? atoi(local) : 0) % (count > 0 ? count : 1)) ||
        cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) {
        fprintf(stderr, "ranks: no CUDA\n");
        exit(10);
    }
}

static void nap_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static int wait_for(const char *file)
{
    for (int i = 0; i < 3000; i++, nap_ms(10))
        if (access(file, F_OK) == 0)
            return 0;
    return -1;
}

static void touch(const char *file)
{
    int fd = open(file, O_WRONLY | O_CREAT, 0644);
    if (fd >= 0)
        close(fd);
}

static int step(const char *fail_ranks)
{
    const char *r = getenv("RANK") ? getenv("RANK") : getenv("OMPI_COMM_WORLD_RANK");
    int rank = r ? atoi(r) : 0, place = 0, fails = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", fail_ranks);
    for (char *tok = strtok(list, ","); tok && !fails; tok = strtok(NULL, ","), place++)
        fails = atoi(tok) == rank;
    init_cuda();
    CUdeviceptr p;
    for (int i = 0; i < 4; i++)
        if (cuMemAlloc(&p, (uint64_t)(rank + 1) * 16 * MIB))
            return 11;
    if (!fails)
        return 0;
    place--; /* (the loop counted past the rank's own place) */
    char before[32], mine[32];
    snprintf(before, sizeof before, "failed.%d", place - 1);
    snprintf(mine, sizeof mine, "failed.%d", place);
    if (place > 0 && wait_for(before))
        return 13;
    if (place > 0)    /* and a second more: each trace's clock is placed by its start time, */
        nap_ms(1000); /* which a loaded machine can get a little wrong */
    size_t free_bytes, total;
    cuMemGetInfo(&free_bytes, &total);
    for (int attempt = 0; attempt < 2; attempt++)
        if (cuMemAlloc(&p, total) == CUDA_SUCCESS)
            return 12;
    touch(mine);
    return 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 2 ? argv[1] : "";
    CUdeviceptr p;
    if (!strcmp(mode, "step"))
        return step(argv[2]);
    if (!strcmp(mode, "hold")) {
        init_cuda();
        if (cuMemAlloc(&p, strtoull(argv[2], NULL, 10) * MIB))
            return 11;
        touch("held");
        int late = wait_for("done");
        cuMemFree(p);
        return late ? 3 : 0;
    }
    if (!strcmp(mode, "take")) {
        if (wait_for("held"))
            return 3;
        init_cuda();
        int failed = 0;
        for (int attempt = 0; attempt < 2; attempt++)
            failed += cuMemAlloc(&p, strtoull(argv[2], NULL, 10) * MIB) != CUDA_SUCCESS;
        touch("done");
        return failed == 2;
    }
    fprintf(stderr, "usage: ranks step FAIL_RANKS | hold MIB | take MIB\n");
    return 2;
}
