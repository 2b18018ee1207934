/* prog_driver.h — what the project-written driver-API programs share (test code, header only).
 *
 * Define PROG_NAME (the program's name, for messages) before including it.
 *
 *   CHECK(call)            a driver call that must succeed: else one line on stderr (the call,
 *                          its result, the line) and exit 1
 *   prog_start()           cuInit, device 0's primary context made current; @return the device
 *   prog_send_fd()         a descriptor and a message over a unix socket (SCM_RIGHTS)
 *   prog_receive_fd()      the other end; @return the descriptor (exit 1 when none came)
 *   prog_spawn_child()     a socket pair and `SELF child FD` started with exec; @return its pid
 *   prog_await_child()     its one-byte answer 'd' within 10 s, else it is killed; then reaped.
 *                          @return 1 when it answered, 0 when it was killed; *exited_ok says
 *                          whether it exited with status 0
 * Every program that forks a child this way leaves nothing blocked: a child that hangs is
 * killed after 10 s. */
#ifndef PROG_DRIVER_H
#define PROG_DRIVER_H

#include <cuda.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PROG_NAME
#error "define PROG_NAME before including prog_driver.h"
#endif

#define CHECK(call) prog_check((call), #call, __LINE__)

static inline void prog_check(CUresult result, const char *call, int line)
{
    if (result != CUDA_SUCCESS) {
        fprintf(stderr, PROG_NAME ": %s failed: %d (line %d)\n", call, (int)result, line);
        exit(1);
    }
}

static inline CUdevice prog_start(void)
{
    CUdevice dev;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    return dev;
}

static inline void prog_send_fd(int sock, int fd, const void *data, size_t len)
{
    char control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    memset(control, 0, sizeof control);
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
    if (sendmsg(sock, &msg, 0) != (ssize_t)len) {
        perror(PROG_NAME ": sendmsg");
        exit(1);
    }
}

static inline int prog_receive_fd(int sock, void *data, size_t len)
{
    char control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = data, .iov_len = len};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    struct cmsghdr *cmsg;
    int fd;
    if (recvmsg(sock, &msg, MSG_WAITALL) != (ssize_t)len || !(cmsg = CMSG_FIRSTHDR(&msg)) ||
        cmsg->cmsg_type != SCM_RIGHTS) {
        fprintf(stderr, PROG_NAME ": no descriptor received\n");
        exit(1);
    }
    memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
    return fd;
}

static inline pid_t prog_spawn_child(const char *self, int *sock)
{
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) {
        perror(PROG_NAME ": socketpair");
        exit(1);
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
    *sock = pair[0];
    return pid;
}

static inline int prog_await_child(int sock, pid_t pid, int *exited_ok)
{
    struct pollfd wait_for = {.fd = sock, .events = POLLIN};
    char done = 0;
    int answered = poll(&wait_for, 1, 10000) == 1 && read(sock, &done, 1) == 1 && done == 'd';
    if (!answered)
        kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    close(sock);
    *exited_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!answered)
        fprintf(stderr, PROG_NAME ": the child did not answer in 10 s and was killed\n");
    return answered;
}

#endif
