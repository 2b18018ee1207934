/* own_fd.c — the shim's descriptors, out of the program's way (own_fd.h). */
#include "own_fd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOP_SLOTS 64     /* numbers left at the top of the range */
#define HIGHEST_TOP 4096 /* a huge limit is not followed: the kernel's table grows to the fd */

/* The lowest number the shim's descriptors take: TOP_SLOTS below RLIMIT_NOFILE's soft limit
 * (at most HIGHEST_TOP), where programs, which get the lowest free numbers, rarely reach. */
static int high_base(void)
{
    struct rlimit r;
    rlim_t top = HIGHEST_TOP;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < top)
        top = r.rlim_cur;
    return top > 2 * TOP_SLOTS ? (int)(top - TOP_SLOTS) : (int)(top / 2);
}

/* fd moved high and close-on-exec (where the range has no room, it stays where it is). */
static int move_high(int fd)
{
    int base = high_base();
    if (fd >= base) {
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        return fd;
    }
    int high = fcntl(fd, F_DUPFD_CLOEXEC, base);
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
    o->fd = move_high(fd);
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
        o->fd = fd < 0 ? -1 : move_high(fd);
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
