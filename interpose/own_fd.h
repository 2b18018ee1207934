/* own_fd.h — the descriptors the shim keeps open (the trace, the salvage state file), out of
 * the program's way (internal).
 *
 * A program may close every descriptor above 2, or dup2 its own files over them (daemons,
 * sandboxes and test harnesses do). So the shim's descriptors sit near the top of the range
 * RLIMIT_NOFILE allows (a program gets the lowest free number), close-on-exec, and before each
 * use the shim checks (fstat: device and inode) that the number still names its file. A number
 * that no longer does is never written, mapped or closed: it may be the program's now. The
 * file is opened again by its absolute path, and used only when it is still the same file. */
#ifndef CMT__OWN_FD_H
#define CMT__OWN_FD_H

#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

struct cmt__own_fd {
    int fd;    /* -1: none */
    int flags; /* open(2) flags that open the file again (no O_CREAT) */
    dev_t dev;
    ino_t ino;
    uint32_t reopens;    /* how often it was opened again */
    atomic_flag lock;    /* one check or reopen at a time */
    char path[PATH_MAX]; /* absolute */
};

/* Where the shim's descriptors go: the trace and the state file from CMT__OWN_FD_TOP below the
 * top of the range (RLIMIT_NOFILE's soft limit, at most 4096), libunwind's pipe (stack.c) from
 * CMT__UNWIND_FD_TOP below it, so that neither takes the other's number. */
#define CMT__OWN_FD_TOP 64
#define CMT__UNWIND_FD_TOP 8

/* Moves fd to the lowest free number at least `below_top` under the top of the range,
 * close-on-exec (the old number closed); where there is no room it stays, close-on-exec.
 * @return the descriptor's number. */
int cmt__own_fd_move_high(int fd, int below_top);

/* Makes fd, just opened on `path`, the shim's: moved high, close-on-exec, its device and
 * inode and absolute path kept; `flags` open it again. On failure (fstat) fd is closed.
 * @return 0, or -1 (errno set). */
int cmt__own_fd_take(struct cmt__own_fd *o, int fd, const char *path, int flags);

/* The descriptor, checked: when o->fd no longer names the file taken (closed, or another
 * file dup2'ed over it), the file is opened again (reopens counts it) and moved high. Never
 * on the application's hot path: a syscall each time.
 * @return the descriptor, or -1 when there is none, or the path no longer leads to the file
 * (removed or replaced: errno ESTALE). */
int cmt__own_fd_get(struct cmt__own_fd *o);

/* Closes o->fd if it still names the file (a program's descriptor under that number is left
 * alone); o->fd becomes -1. */
void cmt__own_fd_close(struct cmt__own_fd *o);

#endif
