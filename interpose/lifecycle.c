/* lifecycle.c — start on first use, fork, fatal signals, exit.
 *
 * Nothing happens until the program's first intercepted call: a process that never uses CUDA
 * gets no file and no thread. A forked child drops what it inherited (the parent writes its
 * own events) and starts its own trace on its own first call. On SIGSEGV, SIGBUS, SIGABRT,
 * SIGTERM and SIGINT the queued events reach the file before the program's own handler or
 * the default action runs; so do they before _exit. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "recorder.h"

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGTERM, SIGINT};
#define NSIG_FATAL (sizeof fatal_signals / sizeof *fatal_signals)
static struct sigaction previous[NSIG_FATAL];
static int handlers_installed;
static atomic_flag start_lock = ATOMIC_FLAG_INIT;
static int atfork_registered;

static void on_fatal_signal(int signo, siginfo_t *info, void *uctx)
{
    int saved = errno;
    size_t i = 0;
    while (i < NSIG_FATAL && fatal_signals[i] != signo)
        i++;
    if (atomic_load(&cmt__rec.state) == CMT__RUNNING &&
        atomic_load(&cmt__rec.writer_tid) != cmt__gettid()) {
        int none = 0;
        atomic_compare_exchange_strong(&cmt__rec.fatal_signo, &none, signo);
        atomic_store(&cmt__rec.fatal_tid, cmt__gettid());
        cmt__drop_pending();
        cmt__wait_flushed(cmt__now_seq(), 2000);
    }
    errno = saved;
    if (i == NSIG_FATAL)
        return;
    const struct sigaction *old = &previous[i];
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction)
            old->sa_sigaction(signo, info, uctx);
        return;
    }
    if (old->sa_handler == SIG_IGN)
        return;
    if (old->sa_handler != SIG_DFL) {
        old->sa_handler(signo);
        return;
    }
    /* Default action: restore it; a fault re-executes and dies, anything else is re-raised. */
    sigaction(signo, old, NULL);
    if (!((signo == SIGSEGV || signo == SIGBUS) && info && info->si_code > 0))
        raise(signo);
}

static void install_signal_handlers(void)
{
    if (handlers_installed)
        return;
    handlers_installed = 1;
    for (size_t i = 0; i < NSIG_FATAL; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        if (sigaction(fatal_signals[i], NULL, &previous[i]) == 0)
            sigaction(fatal_signals[i], &sa, NULL);
    }
}

atomic_int cmt__dl_users, cmt__dl_forking;

void cmt__dl_wait_fork(void)
{
    while (atomic_load(&cmt__dl_forking))
        sched_yield();
}

static void before_fork(void)
{
    /* no thread inside dl_iterate_phdr (the loader's lock) when the process is copied */
    atomic_fetch_add(&cmt__dl_forking, 1);
    while (atomic_load(&cmt__dl_users))
        sched_yield();
    cmt__stack_atfork_prepare();
}

static void after_fork_parent(void)
{
    cmt__stack_atfork_release();
    atomic_fetch_sub(&cmt__dl_forking, 1);
}

/* Back to the state before the first call, so the next one starts a new trace. What the
 * rings hold is dropped (`threads_gone`: their owners are gone too). */
static void reset_for_new_trace(int threads_gone)
{
    for (struct cmt__thread *t = atomic_load(&cmt__rec.threads); t; t = t->next) {
        atomic_store(&t->tail, atomic_load(&t->head));
        atomic_store(&t->released, atomic_load(&t->head));
        if (threads_gone) {
            atomic_store(&t->pending, CMT__NO_PENDING);
            atomic_store(&t->alive, 0);
        }
    }
    cmt__own_fd_close(&cmt__rec.trace); /* the parent's, unless the program took the number */
    for (int d = 0; d < CMT_MAX_DEVICES; d++)
        atomic_store(&cmt__rec.devices[d].state, 0);
    atomic_store(&cmt__rec.flush_want, 0);
    atomic_store(&cmt__rec.flushed, 0);
    atomic_store(&cmt__rec.stop, 0);
    atomic_store(&cmt__rec.state, CMT__IDLE);
}

/* The child inherits the parent's rings and writer state, but not its writer thread: drop
 * them all, so it never re-emits the parent's events, and start afresh on its first call. */
static void after_fork_child(void)
{
    cmt__stack_atfork_release();
    atomic_store(&cmt__dl_users, 0); /* the other threads are gone */
    atomic_store(&cmt__dl_forking, 0);
    cmt__shared_forget(); /* before anything writes: the parent's salvage file is the parent's */
    if (atomic_load(&cmt__rec.state) != CMT__RUNNING)
        return;
    cmt__forget_self();
    reset_for_new_trace(1);
}

int cmt__start(void)
{
    while (atomic_flag_test_and_set_explicit(&start_lock, memory_order_acquire))
        ;
    if (atomic_load(&cmt__rec.state) == CMT__IDLE) {
        struct timespec wall;
        clock_gettime(CLOCK_REALTIME, &wall);
        cmt__rec.start_wall_ns = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec;
        cmt__clock_init();
        cmt__rec.start_mono_ns = cmt__mono_ns();
        cmt__rec.start_ticks = cmt__ticks();
        cmt__rec.pid = getpid();
        if (!atfork_registered) {
            atfork_registered = 1;
            pthread_atfork(before_fork, after_fork_parent, after_fork_child);
        }
        cmt__shared_start();
        atomic_store(&cmt__rec.state, CMT__RUNNING);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 1 << 20);
        if (pthread_create(&cmt__rec.writer, &attr, cmt__writer_main, NULL) != 0) {
            cmt__warn("cannot start the writer thread; tracing stopped");
            atomic_store(&cmt__rec.state, CMT__OFF);
        } else {
            install_signal_handlers();
            cmt__shared_wait_open();
        }
        pthread_attr_destroy(&attr);
    }
    atomic_flag_clear_explicit(&start_lock, memory_order_release);
    return atomic_load(&cmt__rec.state) == CMT__RUNNING;
}

/* The writer writes everything queued and END, closes the file and ends. */
static void stop_writer(void)
{
    atomic_store(&cmt__rec.stop, 1);
    cmt__kick();
    if (atomic_load(&cmt__rec.state) == CMT__RUNNING || cmt__rec.trace.fd >= 0)
        pthread_join(cmt__rec.writer, NULL);
    atomic_store(&cmt__rec.state, CMT__OFF);
}

__attribute__((destructor)) static void cmt__at_exit(void)
{
    if (atomic_load(&cmt__rec.state) == CMT__IDLE)
        return;
    stop_writer();
}

int cmt__before_exec(void)
{
    /* Not in a vfork child (Python's subprocess, posix_spawn): it shares the parent's memory
     * and the parent's writer goes on after the exec. */
    if (atomic_load(&cmt__rec.state) != CMT__RUNNING || cmt__rec.pid != getpid() ||
        atomic_load(&cmt__rec.writer_tid) == cmt__gettid())
        return 0;
    while (atomic_flag_test_and_set_explicit(&start_lock, memory_order_acquire))
        ;
    int stopped = atomic_load(&cmt__rec.state) == CMT__RUNNING;
    if (stopped)
        stop_writer();
    atomic_flag_clear_explicit(&start_lock, memory_order_release);
    return stopped;
}

void cmt__after_failed_exec(void)
{
    while (atomic_flag_test_and_set_explicit(&start_lock, memory_order_acquire))
        ;
    if (atomic_load(&cmt__rec.state) == CMT__OFF)
        reset_for_new_trace(0);
    atomic_flag_clear_explicit(&start_lock, memory_order_release);
}

/* _exit skips destructors; programs (Python's os._exit in worker processes, forked children)
 * use it to leave at once. Write what is queued first, then leave exactly as _exit would. */
static _Noreturn void leave_now(int status)
{
    if (atomic_load(&cmt__rec.state) == CMT__RUNNING &&
        atomic_load(&cmt__rec.writer_tid) != cmt__gettid()) {
        cmt__drop_pending();
        cmt__wait_flushed(cmt__now_seq(), 2000);
    }
    for (;;)
        syscall(SYS_exit_group, status);
}

CMT_EXPORT void _exit(int status)
{
    leave_now(status);
}

CMT_EXPORT void _Exit(int status)
{
    leave_now(status);
}
