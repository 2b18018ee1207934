/* e2e_util.h — run programs under `cumemtrace record` in a scratch directory and read the
 * traces back with the reader library. */
#ifndef CMT_E2E_UTIL_H
#define CMT_E2E_UTIL_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmt_error.h"
#include "reader.h"

extern char **environ;

struct run {
    int status; /* exit status, or 128 + signal */
    char out[1 << 20];
    char err[1 << 16];
};

static char e2e_dir[PATH_MAX];

static inline const char *build_dir(void)
{
    const char *b = getenv("CMT_BUILD_DIR");
    cr_assert(b, "CMT_BUILD_DIR is not set (run through ctest)");
    return b;
}

/* path of a build artefact: e2e_path(buf, "bin/cumemtrace") */
static inline const char *e2e_path(char *buf, const char *rel)
{
    int n = snprintf(buf, PATH_MAX, "%s/%s", build_dir(), rel);
    cr_assert_lt(n, PATH_MAX, "path too long");
    return buf;
}

static inline void e2e_setup(void)
{
    snprintf(e2e_dir, sizeof e2e_dir, "/tmp/cmt-e2e.XXXXXX");
    cr_assert_not_null(mkdtemp(e2e_dir));
    cr_assert_eq(chdir(e2e_dir), 0);
    char lib[PATH_MAX];
    setenv("LD_LIBRARY_PATH", e2e_path(lib, "lib/simcuda"), 1);
    unsetenv("CUMEMTRACE_OUTPUT");
    unsetenv("LD_PRELOAD");
}

static inline void e2e_teardown(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", e2e_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", e2e_dir);
}

/* Reads a whole file into buf; a file that does not fit fails the test (an assertion over a
 * cut output would fail or pass by chance). */
static inline void slurp(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : 0;
    buf[n > 0 ? n : 0] = 0;
    char more;
    int cut = fd >= 0 && n == (ssize_t)size - 1 && read(fd, &more, 1) == 1;
    if (fd >= 0)
        close(fd);
    cr_assert(!cut, "%s is larger than the %zu bytes the test keeps", path, size - 1);
}

#define E2E_TIMEOUT_S 60 /* a run that takes longer hangs: the test fails, naming it */

/* Runs argv (NULL-terminated) in the scratch directory with stdout/stderr captured, in a
 * process group of its own; after E2E_TIMEOUT_S the group is killed and the test fails with
 * the command line and what it printed, instead of hanging the whole suite. */
static inline void e2e_run(struct run *r, char *const argv[])
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "stdout.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, "stderr.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid;
    cr_assert_eq(posix_spawn(&pid, argv[0], &fa, &attr, argv, environ), 0, "spawn %s", argv[0]);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    int st = 0;
    pid_t got = 0;
    for (int ms = 0; ms < E2E_TIMEOUT_S * 1000 && (got = waitpid(pid, &st, WNOHANG)) == 0; ms += 5)
        usleep(5000);
    if (got == 0) {
        kill(-pid, SIGKILL);
        waitpid(pid, &st, 0);
        slurp("stdout.txt", r->out, sizeof r->out);
        slurp("stderr.txt", r->err, sizeof r->err);
        char cmd[1024] = "";
        for (int i = 0; argv[i]; i++)
            snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s%s", i ? " " : "", argv[i]);
        cr_assert_fail("hung for %d s, killed: %s\nstdout: %s\nstderr: %s", E2E_TIMEOUT_S, cmd,
                       r->out, r->err);
    }
    cr_assert_eq(got, pid);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    slurp("stdout.txt", r->out, sizeof r->out);
    slurp("stderr.txt", r->err, sizeof r->err);
}

/* cumemtrace record [opts...] -- prog args... ; `record_args` ends at "--". */
#define E2E_MAX_ARGS 32
static inline void e2e_record(struct run *r, const char *const record_args[], const char *prog,
                              const char *const prog_args[])
{
    char cli[PATH_MAX], progpath[PATH_MAX];
    char *argv[E2E_MAX_ARGS];
    int n = 0;
    argv[n++] = (char *)e2e_path(cli, "bin/cumemtrace");
    argv[n++] = "record";
    for (int i = 0; record_args && record_args[i]; i++)
        argv[n++] = (char *)record_args[i];
    argv[n++] = "--";
    argv[n++] = (char *)(prog[0] == '/' ? prog : e2e_path(progpath, prog));
    for (int i = 0; prog_args && prog_args[i]; i++)
        argv[n++] = (char *)prog_args[i];
    argv[n] = NULL;
    e2e_run(r, argv);
}

/* Runs prog with the shim preloaded directly (no `record`), CUMEMTRACE_OUTPUT = output. */
static inline void e2e_run_bare(struct run *r, const char *output, const char *prog,
                                const char *const args[])
{
    char shim[PATH_MAX], progpath[PATH_MAX];
    char *argv[E2E_MAX_ARGS];
    int n = 0;
    argv[n++] = (char *)(prog[0] == '/' ? prog : e2e_path(progpath, prog));
    for (int i = 0; args && args[i]; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    setenv("LD_PRELOAD", e2e_path(shim, "lib/libcumemtrace.so"), 1);
    setenv("CUMEMTRACE_OUTPUT", output, 1);
    e2e_run(r, argv);
    unsetenv("LD_PRELOAD");
    unsetenv("CUMEMTRACE_OUTPUT");
}

/* Trace files (*.cmt) in the scratch directory, sorted. @return count. */
static inline int e2e_traces(char names[][NAME_MAX + 1], int max)
{
    DIR *d = opendir(".");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".cmt") && n < max)
            snprintf(names[n++], NAME_MAX + 1, "%s", e->d_name);
    }
    if (d)
        closedir(d);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[NAME_MAX + 1];
            memcpy(t, names[j], sizeof t);
            memcpy(names[j], names[j - 1], sizeof t);
            memcpy(names[j - 1], t, sizeof t);
        }
    return n;
}

/* Records prog, expects exit `status` and exactly one trace; its name goes to `path`. */
static inline void e2e_record_one(struct run *r, char path[NAME_MAX + 1], const char *const opts[],
                                  const char *prog, const char *const args[], int status)
{
    e2e_record(r, opts, prog, args);
    cr_assert_eq(r->status, status, "%s: status %d: %s", prog, r->status, r->err);
    char names[4][NAME_MAX + 1];
    cr_assert_eq(e2e_traces(names, 4), 1, "%s: one trace expected: %s", prog, r->out);
    memcpy(path, names[0], NAME_MAX + 1);
}

/* Runs simcuda_log_check over every trace in the scratch directory against simcuda's own log
 * (SIMCUDA_LOG=log): every memory call simcuda served is in a trace, and nothing else. On a
 * mismatch the test fails with the checker's report. The report goes to `report` (may be
 * NULL). */
static inline void e2e_check_simcuda_log(const char *log, struct run *report)
{
    static struct run own;
    struct run *r = report ? report : &own;
    char checker[PATH_MAX], cli[PATH_MAX], names[64][NAME_MAX + 1];
    char *argv[E2E_MAX_ARGS + 64];
    int n = 0, traces = e2e_traces(names, 64);
    cr_assert_gt(traces, 0, "no trace to compare with %s", log);
    argv[n++] = (char *)e2e_path(checker, "tests/progs/simcuda_log_check");
    argv[n++] = (char *)e2e_path(cli, "bin/cumemtrace");
    argv[n++] = (char *)log;
    for (int i = 0; i < traces; i++)
        argv[n++] = names[i];
    argv[n] = NULL;
    e2e_run(r, argv);
    cr_assert_eq(r->status, 0, "the traces differ from simcuda's log %s:\n%s%s", log, r->out,
                 r->err);
}

/* A trace read back whole. */
struct trace {
    cmt_reader *r;
    struct cmt_event *ev;
    size_t n;
    struct cmt_meminfo mem[64];
    int nmem;
    int ndevices;
    int signo;
    int rc; /* final reader code: 0 sound, <0 damaged */
    const struct cmt_process *process;
};

static inline void trace_load(struct trace *t, const char *path)
{
    memset(t, 0, sizeof *t);
    cr_assert_eq(cmt_reader_open_file(&t->r, path, NULL), 0, "cannot open %s", path);
    int preloaded = cmt_reader_preload(t->r); /* damage: the reads below meet it again */
    size_t cap = 1024;
    t->ev = malloc(cap * sizeof *t->ev);
    struct cmt_record rec;
    while ((t->rc = cmt_reader_next(t->r, &rec)) > 0) {
        if (rec.type == CMT_REC_EVENT) {
            if (t->n == cap)
                t->ev = realloc(t->ev, (cap *= 2) * sizeof *t->ev);
            t->ev[t->n++] = rec.u.event;
        } else if (rec.type == CMT_REC_MEMINFO && t->nmem < 64) {
            t->mem[t->nmem++] = rec.u.meminfo;
        } else if (rec.type == CMT_REC_DEVICE) {
            t->ndevices++;
        } else if (rec.type == CMT_REC_SIGNAL) {
            t->signo = (int)rec.u.signal.signo;
        }
    }
    cr_assert(preloaded == 0 || preloaded == t->rc,
              "%s: the preload met damage (%d) the read did not (%d)", path, preloaded, t->rc);
    t->process = cmt_reader_process(t->r);
}

static inline void trace_free(struct trace *t)
{
    free(t->ev);
    cmt_reader_close(t->r);
}

static inline const char *api_of(const struct trace *t, const struct cmt_event *e)
{
    const struct cmt_api *a = cmt_reader_api(t->r, e->api);
    return a ? a->name : "?";
}

/* Events whose API is `name` (and, when size != 0, whose size field equals it). */
static inline size_t count_api(const struct trace *t, const char *name, uint64_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(api_of(t, &t->ev[i]), name) &&
            (!size || ((t->ev[i].fields & CMT_F(SIZE)) && t->ev[i].v[CMT_FIELD_SIZE] == size)))
            n++;
    return n;
}

/* Does stack `leaf` have a frame whose text contains `needle`? */
static inline int stack_has(const struct trace *t, uint32_t leaf, const char *needle)
{
    struct cmt_stack_node node;
    for (uint32_t id = leaf; id && cmt_reader_stack_node(t->r, id, &node) == 0; id = node.parent) {
        char frame[512];
        cmt_reader_format_frame(t->r, id, frame, sizeof frame);
        if (strstr(frame, needle))
            return 1;
    }
    return 0;
}

#endif
