/* SIMCUDA_LOG (see simcuda_log.h): formatted on the stack, one write(2) per line.
 *
 * The program may close every descriptor above 2 or dup2 its own files over them, so the log's
 * descriptor sits near the top of RLIMIT_NOFILE's range, close-on-exec, and each line is
 * written only after fstat says the number still names the log (device and inode); else the
 * log is opened again by its absolute path (and a descriptor under the old number, the
 * program's now, is left alone). Lines are never written into a program's file. */
#include "simcuda_log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static int log_fd = -1;
static dev_t log_dev;
static ino_t log_ino;
static char log_path[PATH_MAX];
static int reopen_lock; /* one reopen at a time */

/* fd moved to the top of the descriptor range (below 4096), close-on-exec. */
static int move_high(int fd)
{
    struct rlimit r;
    rlim_t top = 4096;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < top)
        top = r.rlim_cur;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, top > 256 ? (int)(top - 96) : (int)(top / 2));
    if (high < 0)
        return fd;
    close(fd);
    return high;
}

static int is_log(int fd)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == log_dev && st.st_ino == log_ino;
}

void simcuda__log_open(void)
{
    const char *path = getenv("SIMCUDA_LOG");
    if (!path || !*path || log_fd >= 0)
        return;
    char cwd[PATH_MAX];
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd) ||
        snprintf(log_path, sizeof log_path, "%s/%s", cwd, path) >= (int)sizeof log_path)
        snprintf(log_path, sizeof log_path, "%s", path);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "simcuda: SIMCUDA_LOG=\"%s\" cannot be opened (%s); not logging\n", path,
                strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    log_dev = st.st_dev;
    log_ino = st.st_ino;
    __atomic_store_n(&log_fd, move_high(fd), __ATOMIC_RELEASE);
}

/* The log's descriptor, checked; opened again when the number no longer names it.
 * @return it, or -1 when the file is gone (then nothing more is logged). */
static int checked_fd(void)
{
    int fd = __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE);
    if (fd < 0 || is_log(fd))
        return fd;
    while (__atomic_exchange_n(&reopen_lock, 1, __ATOMIC_ACQUIRE))
        ;
    fd = __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE);
    if (fd >= 0 && !is_log(fd)) { /* not reopened by another thread meanwhile */
        fd = open(log_path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd >= 0 && !is_log(fd)) {
            close(fd);
            fd = -1;
        }
        if (fd < 0)
            fprintf(stderr, "simcuda: SIMCUDA_LOG=\"%s\" was removed or replaced; not logging\n",
                    log_path);
        fd = fd < 0 ? -1 : move_high(fd);
        __atomic_store_n(&log_fd, fd, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&reopen_lock, 0, __ATOMIC_RELEASE);
    return fd;
}

CUresult simcuda__log(const char *entry, CUresult result, uint64_t address, uint64_t size,
                      uint64_t handle)
{
    if (__atomic_load_n(&log_fd, __ATOMIC_ACQUIRE) < 0)
        return result;
    int saved = errno;
    int fd = checked_fd();
    char line[256];
    int n = snprintf(line, sizeof line,
                     "simcuda pid=%ld entry=%s result=%d address=0x%llx size=%llu handle=0x%llx\n",
                     (long)getpid(), entry, (int)result, (unsigned long long)address,
                     (unsigned long long)size, (unsigned long long)handle);
    /* A program's thread may close the descriptor between the check and the write (a
     * close_range of every fd, test_hostile_fds): EBADF, so check (and reopen) once more. A
     * short write leaves a cut line the comparison will name; nothing else to do. */
    for (int attempt = 0; fd >= 0 && n > 0 && (size_t)n < sizeof line; attempt++) {
        if (write(fd, line, (size_t)n) == n || errno != EBADF || attempt)
            break;
        fd = checked_fd();
    }
    errno = saved;
    return result;
}
