/* streamOrderedAllocationIPC's pattern, project-written: the parent makes an IPC-capable pool
 * (handle type POSIX fd), allocates from it on a stream, writes a pattern into the block,
 * exports the pool as a descriptor and the pointer as share data, and passes both over a unix
 * socket to a child it started with exec. The child imports the pool and the pointer, checks
 * the parent's bytes, writes its own, frees the imported pointer (cuMemFreeAsync) and
 * destroys the imported pool, and answers on the socket; the parent then reads the child's
 * bytes, frees the block and destroys the pool. Exit 0 when both sides did all of it and saw
 * each other's bytes; a child that does not answer within 10 s is killed and the parent exits
 * 3, so nothing is ever left blocked.
 *
 *   pool_ipc            the parent (starts `pool_ipc child FD`)
 *   pool_ipc child FD   the child, FD its end of the socket */
#define PROG_NAME "pool_ipc"
#include "prog_driver.h"

#define SIZE (3u << 20)

static unsigned char bytes[SIZE];

static void fill(unsigned char seed)
{
    for (size_t i = 0; i < SIZE; i++)
        bytes[i] = (unsigned char)(seed + i * 7);
}

static int holds(unsigned char seed)
{
    for (size_t i = 0; i < SIZE; i++)
        if (bytes[i] != (unsigned char)(seed + i * 7))
            return 0;
    return 1;
}

static CUstream start(void)
{
    CUstream stream;
    prog_start();
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    return stream;
}

static int child(int sock)
{
    CUstream stream = start();
    CUmemPoolPtrExportData share;
    int fd = prog_receive_fd(sock, &share, sizeof share); /* the share data beside it */
    CUmemoryPool pool;
    CUdeviceptr ptr;
    CHECK(cuMemPoolImportFromShareableHandle(&pool, (void *)(intptr_t)fd,
                                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    close(fd);
    CHECK(cuMemPoolImportPointer(&ptr, pool, &share));
    CHECK(cuMemcpyDtoH(bytes, ptr, SIZE));
    if (!holds('p')) {
        fprintf(stderr, "pool_ipc: the child does not see the parent's bytes\n");
        return 1;
    }
    fill('c');
    CHECK(cuMemcpyHtoD(ptr, bytes, SIZE));
    CHECK(cuMemFreeAsync(ptr, stream)); /* unmaps it here; the parent's block stays */
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemPoolDestroy(pool));
    char done = 'd';
    return write(sock, &done, 1) == 1 ? 0 : 1;
}

static int parent(const char *self)
{
    CUstream stream = start();
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool pool;
    CUdeviceptr ptr;
    CUmemPoolPtrExportData share;
    int fd = -1;
    CHECK(cuMemPoolCreate(&pool, &props));
    CHECK(cuMemAllocFromPoolAsync(&ptr, SIZE, pool, stream));
    fill('p');
    CHECK(cuMemcpyHtoD(ptr, bytes, SIZE));
    CHECK(cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CHECK(cuMemPoolExportPointer(&share, ptr));
    int sock, exited_ok;
    pid_t pid = prog_spawn_child(self, &sock);
    prog_send_fd(sock, fd, &share, sizeof share);
    close(fd); /* the child has its own copy now */
    if (!prog_await_child(sock, pid, &exited_ok))
        return 3;
    CHECK(cuMemcpyDtoH(bytes, ptr, SIZE));
    int seen = holds('c');
    CHECK(cuMemFreeAsync(ptr, stream));
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemPoolDestroy(pool));
    if (!seen) {
        fprintf(stderr, "pool_ipc: the parent does not see the child's bytes\n");
        return 4;
    }
    return exited_ok ? 0 : 2;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "child"))
        return child(atoi(argv[2]));
    return parent(argv[0]);
}
