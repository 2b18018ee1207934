/* own_fd.c — the shim's descriptors, out of the program's way (own_fd.h). */
#include "own_fd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define HIGHEST_TOP 4096 /* a huge limit is not followed: the kernel's table grows to the fd */

/* The top of the range: RLIMIT_NOFILE's soft limit, at most HIGHEST_TOP. Programs get the
 * lowest free numbers, so they rarely reach it. */
static int range_top(void)
{
    struct rlimit r;
    rlim_t top = HIGHEST_TOP;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < top)
        top = r.rlim_cur;
    return (int)top;
}

int cmt__own_fd_move_high(int fd, int below_top)
{
    int top = range_top();
    int base = top > 2 * CMT__OWN_FD_TOP ? top - below_top : top / 2;
    int high = fd < base ? fcntl(fd, F_DUPFD_CLOEXEC, base) : -1;
    if (high < 0) {
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        return fd;
    }
    close(fd);
    return high;
}

static int same_file(int fd, dev_t dev, ino_t ino)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

int cmt__own_fd_take(struct cmt__own_fd *o, int fd, const char *path, int flags)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    atomic_flag_clear(&o->lock); /* (a forked child's copy may have been caught held) */
    o->fd = cmt__own_fd_move_high(fd, CMT__OWN_FD_TOP);
    o->flags = flags & ~(O_CREAT | O_EXCL | O_TRUNC);
    o->dev = st.st_dev;
    o->ino = st.st_ino;
    o->reopens = 0;
    char cwd[PATH_MAX];
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd) ||
        snprintf(o->path, sizeof o->path, "%s/%s", cwd, path) >= (int)sizeof o->path)
        snprintf(o->path, sizeof o->path, "%s", path); /* (too long: relative to the cwd) */
    return 0;
}

int cmt__own_fd_get(struct cmt__own_fd *o)
{
    while (atomic_flag_test_and_set_explicit(&o->lock, memory_order_acquire))
        ;
    int fd = o->fd;
    if (fd >= 0 && !same_file(fd, o->dev, o->ino)) {
        /* closed, or a file of the program's under the number now: open ours again */
        fd = open(o->path, o->flags | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 && !same_file(fd, o->dev, o->ino)) {
            close(fd);
            fd = -1;
            errno = ESTALE;
        }
        o->fd = fd < 0 ? -1 : cmt__own_fd_move_high(fd, CMT__OWN_FD_TOP);
        fd = o->fd;
        o->reopens++;
    } else if (fd < 0) {
        errno = EBADF;
    }
    atomic_flag_clear_explicit(&o->lock, memory_order_release);
    return fd;
}

void cmt__own_fd_close(struct cmt__own_fd *o)
{
    if (same_file(o->fd, o->dev, o->ino))
        close(o->fd);
    o->fd = -1;
}
