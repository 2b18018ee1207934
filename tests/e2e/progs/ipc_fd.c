/* memMapIPCDrv's pattern, project-written: the parent makes VMM memory, exports it as a POSIX
 * file descriptor and passes the descriptor over a unix socket to a child it started with
 * exec; the child imports it, maps it, sets it, unmaps and releases it, and answers on the
 * socket. Exit 0 when both sides did all of it; a child that does not answer within 10 s is
 * killed and the parent exits 3, so nothing is ever left blocked.
 *
 *   ipc_fd            the parent (starts `ipc_fd child FD`)
 *   ipc_fd child FD   the child, FD its end of the socket */
#include <cuda.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define SIZE (4u << 20)

#define CHECK(call)                                                               \
    do {                                                                          \
        CUresult check_result = (call);                                           \
        if (check_result != CUDA_SUCCESS) {                                       \
            fprintf(stderr, "ipc_fd: %s failed: %d\n", #call, (int)check_result); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

static CUmemAllocationProp device_prop(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
}

static CUcontext start(void)
{
    CUdevice dev;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    return ctx;
}

static void send_fd(int sock, int fd)
{
    char byte = 'h', control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    memset(control, 0, sizeof control);
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
    if (sendmsg(sock, &msg, 0) != 1) {
        perror("ipc_fd: sendmsg");
        exit(1);
    }
}

static int receive_fd(int sock)
{
    char byte, control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    struct cmsghdr *cmsg;
    int fd;
    if (recvmsg(sock, &msg, 0) != 1 || !(cmsg = CMSG_FIRSTHDR(&msg)) ||
        cmsg->cmsg_type != SCM_RIGHTS) {
        fprintf(stderr, "ipc_fd: no descriptor received\n");
        exit(1);
    }
    memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
    return fd;
}

static int child(int sock)
{
    start();
    int fd = receive_fd(sock);
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va;
    CHECK(cuMemImportFromShareableHandle(&handle, (void *)(intptr_t)fd,
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
    CHECK(cuMemAddressReserve(&va, SIZE, 0, 0, 0));
    CHECK(cuMemMap(va, SIZE, 0, handle, 0));
    CHECK(cuMemRelease(handle)); /* the mapping keeps the memory */
    CUmemAccessDesc access = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CHECK(cuMemSetAccess(va, SIZE, &access, 1));
    CHECK(cuMemsetD32(va, 7, SIZE / 4));
    CHECK(cuMemUnmap(va, SIZE));
    CHECK(cuMemAddressFree(va, SIZE));
    char done = 'd';
    return write(sock, &done, 1) == 1 ? 0 : 1;
}

static int parent(const char *self)
{
    int pair[2];
    start();
    CUmemAllocationProp prop = device_prop();
    CUmemGenericAllocationHandle handle;
    int fd = -1;
    CHECK(cuMemCreate(&handle, SIZE, &prop, 0));
    CHECK(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) {
        perror("ipc_fd: socketpair");
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
    send_fd(pair[0], fd);
    close(fd); /* the child has its own copy now */
    struct pollfd wait_for = {.fd = pair[0], .events = POLLIN};
    char done = 0;
    int answered = poll(&wait_for, 1, 10000) == 1 && read(pair[0], &done, 1) == 1 && done == 'd';
    if (!answered)
        kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(cuMemRelease(handle));
    if (!answered) {
        fprintf(stderr, "ipc_fd: the child did not answer in 10 s and was killed\n");
        return 3;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 2;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "child"))
        return child(atoi(argv[2]));
    return parent(argv[0]);
}
