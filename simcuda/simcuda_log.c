/* SIMCUDA_LOG (see simcuda_log.h): formatted on the stack, one write(2) per line. */
#include "simcuda_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int log_fd = -1;

void simcuda__log_open(void)
{
    const char *path = getenv("SIMCUDA_LOG");
    if (!path || !*path || log_fd >= 0)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "simcuda: SIMCUDA_LOG=\"%s\" cannot be opened (%s); not logging\n", path,
                strerror(errno));
        return;
    }
    __atomic_store_n(&log_fd, fd, __ATOMIC_RELEASE);
}

CUresult simcuda__log(const char *entry, CUresult result, uint64_t address, uint64_t size,
                      uint64_t handle)
{
    int fd = __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE);
    if (fd < 0)
        return result;
    int saved = errno;
    char line[256];
    int n = snprintf(line, sizeof line,
                     "simcuda pid=%ld entry=%s result=%d address=0x%llx size=%llu handle=0x%llx\n",
                     (long)getpid(), entry, (int)result, (unsigned long long)address,
                     (unsigned long long)size, (unsigned long long)handle);
    if (n > 0 && (size_t)n < sizeof line && write(fd, line, (size_t)n) != n) {
        /* A short write leaves a cut line the comparison will name; nothing else to do. */
    }
    errno = saved;
    return result;
}
