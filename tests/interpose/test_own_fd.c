/* interpose/own_fd.c: the shim's descriptors out of the program's way. A program that closes
 * the shim's descriptor or dup2's its own file over it never has that file written or closed
 * by the shim, and the shim gets its own file back. Criterion runs each test in a process of
 * its own. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "own_fd.h"

static char dir[] = "/tmp/cmt-own-fd.XXXXXX";

static void make_dir(void)
{
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(chdir(dir), 0);
}

static void remove_dir(void)
{
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(own_fd, .init = make_dir, .fini = remove_dir);

/* The shim's file "ours" (relative path: kept absolute), taken. */
static void take(struct cmt__own_fd *o)
{
    memset(o, 0, sizeof *o);
    int fd = open("ours", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(cmt__own_fd_take(o, fd, "ours", O_WRONLY | O_APPEND), 0);
}

static size_t file_size(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    return (size_t)st.st_size;
}

Test(own_fd, is_moved_high_and_close_on_exec)
{
    struct cmt__own_fd o;
    take(&o);
    cr_assert_gt(o.fd, 255, "fd %d: a program's dup2 over 3..255 reaches it", o.fd);
    cr_assert(fcntl(o.fd, F_GETFD) & FD_CLOEXEC);
    cr_assert_eq(o.path[0], '/', "kept absolute: %s", o.path);
    cr_assert_eq(cmt__own_fd_get(&o), o.fd);
    cr_assert_eq(o.reopens, 0);
}

Test(own_fd, a_program_file_dup2ed_over_it_is_never_written)
{
    struct cmt__own_fd o;
    take(&o);
    int mine = open("program", O_RDWR | O_CREAT, 0644);
    cr_assert_geq(mine, 0);
    int taken = o.fd;
    cr_assert_eq(dup2(mine, taken), taken);
    int fd = cmt__own_fd_get(&o);
    cr_assert_geq(fd, 0);
    cr_assert_neq(fd, taken);
    cr_assert_eq(o.reopens, 1);
    cr_assert_eq(write(fd, "chunk", 5), 5);
    cr_assert_eq(file_size("ours"), 5);
    cr_assert_eq(file_size("program"), 0);
    cmt__own_fd_close(&o);
    cr_assert_eq(fcntl(taken, F_GETFD), 0, "the program's descriptor was closed");
}

Test(own_fd, a_closed_descriptor_is_opened_again)
{
    struct cmt__own_fd o;
    take(&o);
    cr_assert_eq(write(o.fd, "one", 3), 3);
    close(o.fd);
    int fd = cmt__own_fd_get(&o);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "two", 3), 3); /* appended */
    cr_assert_eq(file_size("ours"), 6);
}

/* Taken, its descriptor closed by the program, and the file moved to `to`. */
static void moved_away(struct cmt__own_fd *o, const char *to)
{
    take(o);
    close(o->fd);
    cr_assert_eq(rename("ours", to), 0);
}

Test(own_fd, a_file_replaced_at_the_path_is_refused)
{
    struct cmt__own_fd o;
    moved_away(&o, "moved");
    int planted = open("ours", O_WRONLY | O_CREAT, 0644);
    cr_assert_geq(planted, 0);
    close(planted);
    errno = 0;
    cr_assert_eq(cmt__own_fd_get(&o), -1);
    cr_assert_eq(errno, ESTALE);
    cr_assert_eq(file_size("ours"), 0);
}

Test(own_fd, a_symlink_at_the_path_is_never_followed)
{
    struct cmt__own_fd o;
    moved_away(&o, "real");
    cr_assert_eq(symlink("real", "ours"), 0); /* the same file, but through a link */
    cr_assert_eq(cmt__own_fd_get(&o), -1);
}
