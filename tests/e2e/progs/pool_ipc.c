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
#include <cuda.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define SIZE (3u << 20)

#define CHECK(call)                                                                 \
    do {                                                                            \
        CUresult check_result = (call);                                             \
        if (check_result != CUDA_SUCCESS) {                                         \
            fprintf(stderr, "pool_ipc: %s failed: %d\n", #call, (int)check_result); \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

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
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    return stream;
}

/* The share data as the message, the pool's descriptor beside it. */
static void send_pool(int sock, int fd, const CUmemPoolPtrExportData *share)
{
    char control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = (void *)share, .iov_len = sizeof *share};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    memset(control, 0, sizeof control);
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
    if (sendmsg(sock, &msg, 0) != (ssize_t)sizeof *share) {
        perror("pool_ipc: sendmsg");
        exit(1);
    }
}

static int receive_pool(int sock, CUmemPoolPtrExportData *share)
{
    char control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = share, .iov_len = sizeof *share};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    struct cmsghdr *cmsg;
    int fd;
    if (recvmsg(sock, &msg, MSG_WAITALL) != (ssize_t)sizeof *share ||
        !(cmsg = CMSG_FIRSTHDR(&msg)) || cmsg->cmsg_type != SCM_RIGHTS) {
        fprintf(stderr, "pool_ipc: no pool received\n");
        exit(1);
    }
    memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
    return fd;
}

static int child(int sock)
{
    CUstream stream = start();
    CUmemPoolPtrExportData share;
    int fd = receive_pool(sock, &share);
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
    int fd = -1, pair[2];
    CHECK(cuMemPoolCreate(&pool, &props));
    CHECK(cuMemAllocFromPoolAsync(&ptr, SIZE, pool, stream));
    fill('p');
    CHECK(cuMemcpyHtoD(ptr, bytes, SIZE));
    CHECK(cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CHECK(cuMemPoolExportPointer(&share, ptr));
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) {
        perror("pool_ipc: socketpair");
        return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        char number[16];
        close(pair[0]);
        snprintf(number, sizeof number, "%d", pair[1]);
        execl(self, self, "child", number, (char *)NULL);
        _exit(127);
    }
    close(pair[1]);
    send_pool(pair[0], fd, &share);
    close(fd); /* the child has its own copy now */
    struct pollfd wait_for = {.fd = pair[0], .events = POLLIN};
    char done = 0;
    int answered = poll(&wait_for, 1, 10000) == 1 && read(pair[0], &done, 1) == 1 && done == 'd';
    if (!answered)
        kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!answered) {
        fprintf(stderr, "pool_ipc: the child did not answer in 10 s and was killed\n");
        return 3;
    }
    CHECK(cuMemcpyDtoH(bytes, ptr, SIZE));
    int seen = holds('c');
    CHECK(cuMemFreeAsync(ptr, stream));
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemPoolDestroy(pool));
    if (!seen) {
        fprintf(stderr, "pool_ipc: the parent does not see the child's bytes\n");
        return 4;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 2;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "child"))
        return child(atoi(argv[2]));
    return parent(argv[0]);
}
