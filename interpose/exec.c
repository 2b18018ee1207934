/* exec.c — the exec family: the trace so far is finished before the image is replaced.
 *
 * exec keeps the pid but ends every thread, the writer's too: what it had not written yet
 * would be lost, and the new image (the same %p) must not reuse the file. So before the real
 * exec the writer writes everything queued and END, and closes the file; the new image, still
 * preloaded, starts its own trace on its first call (its name exists, so it gets r.1.cmt, see
 * writer_thread.c). When exec fails the program goes on, and so does tracing, in a new file.
 * glibc's exec functions call its internal execve, never these, so each call stops once. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include "recorder.h"

/* The real function `name`, found once (the next definition after the shim: libc's). */
static void *real(void *_Atomic *slot, const char *name)
{
    void *p = atomic_load(slot);
    if (!p) {
        if (!cmt__real_dlsym)
            cmt__resolve_dl();
        p = cmt__real_dlsym ? cmt__real_dlsym(RTLD_NEXT, name) : NULL;
        atomic_store(slot, p);
    }
    return p;
}

#define REAL(type, name)                       \
    static void *_Atomic real_##name;          \
    type fn = (type)real(&real_##name, #name); \
    if (!fn) {                                 \
        errno = ENOSYS;                        \
        return -1;                             \
    }

/* Runs `call` (a real exec) between finishing the trace and, when it returns (it failed),
 * letting tracing start again; the exec's errno is what the program sees. */
#define AROUND_EXEC(call)                  \
    do {                                   \
        int stopped_ = cmt__before_exec(); \
        int rc_ = (call);                  \
        int errno_ = errno;                \
        if (stopped_)                      \
            cmt__after_failed_exec();      \
        errno = errno_;                    \
        return rc_;                        \
    } while (0)

typedef int (*exec_v)(const char *, char *const[]);
typedef int (*exec_ve)(const char *, char *const[], char *const[]);

CMT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    REAL(exec_ve, execve);
    AROUND_EXEC(fn(path, argv, envp));
}

CMT_EXPORT int execv(const char *path, char *const argv[])
{
    REAL(exec_v, execv);
    AROUND_EXEC(fn(path, argv));
}

CMT_EXPORT int execvp(const char *file, char *const argv[])
{
    REAL(exec_v, execvp);
    AROUND_EXEC(fn(file, argv));
}

CMT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    REAL(exec_ve, execvpe);
    AROUND_EXEC(fn(file, argv, envp));
}

CMT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    typedef int (*exec_fd)(int, char *const[], char *const[]);
    REAL(exec_fd, fexecve);
    AROUND_EXEC(fn(fd, argv, envp));
}

#if __GLIBC_PREREQ(2, 34)
CMT_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                        int flags)
{
    typedef int (*exec_at)(int, const char *, char *const[], char *const[], int);
    REAL(exec_at, execveat);
    AROUND_EXEC(fn(dirfd, path, argv, envp, flags));
}
#endif

/* The list forms: the arguments gathered into an array on the stack, as glibc does. */
static size_t count_args(const char *arg, va_list ap)
{
    size_t n = 1;
    while (arg && va_arg(ap, const char *))
        n++;
    return arg ? n + 1 : 1;
}

#define GATHER(arg, argv, n)          \
    va_list ap;                       \
    va_start(ap, arg);                \
    size_t n = count_args(arg, ap);   \
    va_end(ap);                       \
    char *argv[n];                    \
    va_start(ap, arg);                \
    argv[0] = (char *)arg;            \
    for (size_t i_ = 1; i_ < n; i_++) \
        argv[i_] = va_arg(ap, char *);

CMT_EXPORT int execl(const char *path, const char *arg, ...)
{
    GATHER(arg, argv, n);
    va_end(ap);
    return execv(path, argv);
}

CMT_EXPORT int execlp(const char *file, const char *arg, ...)
{
    GATHER(arg, argv, n);
    va_end(ap);
    return execvp(file, argv);
}

CMT_EXPORT int execle(const char *path, const char *arg, ...)
{
    GATHER(arg, argv, n);
    char *const *envp = va_arg(ap, char *const *); /* after the terminating NULL */
    va_end(ap);
    return execve(path, argv, envp);
}
