/* memMapIPCDrv's pattern, project-written: the parent makes VMM memory, exports it as a POSIX
 * file descriptor and passes the descriptor over a unix socket to a child it started with
 * exec; the child imports it, maps it, sets it, unmaps and releases it, and answers on the
 * socket. Exit 0 when both sides did all of it; a child that does not answer within 10 s is
 * killed and the parent exits 3, so nothing is ever left blocked.
 *
 *   ipc_fd            the parent (starts `ipc_fd child FD`)
 *   ipc_fd child FD   the child, FD its end of the socket */
#define PROG_NAME "ipc_fd"
#include "prog_driver.h"

#define SIZE (4u << 20)

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

static int child(int sock)
{
    char byte;
    prog_start();
    int fd = prog_receive_fd(sock, &byte, 1);
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
    prog_start();
    CUmemAllocationProp prop = device_prop();
    CUmemGenericAllocationHandle handle;
    int fd = -1;
    CHECK(cuMemCreate(&handle, SIZE, &prop, 0));
    CHECK(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    int sock, exited_ok;
    pid_t pid = prog_spawn_child(self, &sock);
    prog_send_fd(sock, fd, "h", 1);
    close(fd); /* the child has its own copy now */
    int answered = prog_await_child(sock, pid, &exited_ok);
    CHECK(cuMemRelease(handle));
    if (!answered)
        return 3;
    return exited_ok ? 0 : 2;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "child"))
        return child(atoi(argv[2]));
    return parent(argv[0]);
}
