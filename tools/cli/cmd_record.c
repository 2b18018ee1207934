/* cmd_record.c — `cumemtrace record`: run a program with the shim preloaded.
 *
 * The shim writes one trace per process that uses CUDA (forked and exec'd children too) and
 * lists each in a manifest file; afterwards every trace is symbolized here, on the machine
 * that ran the program, and reported one line each, on stderr (the program's stdout stays
 * the program's). Exits with the program's status; when
 * that is 0 but record itself failed (a trace could not be written or read), with 1. Its own
 * failures before the program starts (usage, the output location) exit 2, a program that
 * cannot be run 127 (not found) or 126, as a shell does. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmt_format.h"
#include "commands.h"
#include "options.h"
#include "output.h"
#include "reader.h"
#include "salvage.h"
#include "shim_path.h"
#include "symbolize.h"
#include "torch/torch_capture.h"

#define STRINGIFY(x) #x
#define DEPTH_TEXT(x) STRINGIFY(x)

/* The shim's cap is spliced into the text. */
/* clang-format off */
static const char usage[] =
    "usage: cumemtrace record [OPTIONS] -- COMMAND [ARGS...]\n\n"
    "Runs COMMAND with libcumemtrace.so preloaded; every process that uses CUDA writes a trace.\n"
    "The shim is also NVTX's injection library (NVTX_INJECTION64_PATH, unless already set), so\n"
    "NVTX ranges are recorded as the program's phases.\n\n"
    "options:\n"
    "  -o, --output PATTERN   trace path, %p = process id (default cumemtrace.%p.cmt), %r =\n"
    "                         rank, %l = local rank (\"none\" when unknown), %h = host; an\n"
    "                         existing file is never overwritten\n"
    "  --force                replace an existing output file (never through a symlink)\n"
    "  --stack-depth N        frames per call stack, 0 = none (default 64, at most "
                              DEPTH_TEXT(CMT_MAX_STACK_DEPTH) ")\n"
    "  --flush-ms N           write buffered events at least this often (default 500)\n"
    "  --no-symbolize         keep raw addresses (run `cumemtrace symbolize` later)\n"
    "  --torch                Python processes that use PyTorch on CUDA also keep PyTorch's\n"
    "                         memory history (Python stacks) and dump its snapshot on\n"
    "                         out-of-memory and at exit; each process's goes with its trace\n"
    "  -q, --quiet            print nothing but errors\n"
    "  -h, --help             this text\n"
    "An option's value may follow it or an '=' (--output=run.%p.cmt).\n";
/* clang-format on */

struct options {
    const char *output, *stack_depth, *flush_ms;
    int symbolize, quiet, force, torch;
};

static int numeric(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

enum {
    OPT_HELP = 1,
    OPT_QUIET,
    OPT_FORCE,
    OPT_TORCH,
    OPT_NO_SYMBOLIZE,
    OPT_OUTPUT,
    OPT_STACK_DEPTH,
    OPT_FLUSH_MS
};

const struct cmt__option cmt_cmd_record_options[] = {
    CMT__OPTION_HELP(OPT_HELP),
    {"-q", "--quiet", 0, OPT_QUIET, NULL},
    {NULL, "--force", 0, OPT_FORCE, NULL},
    {NULL, "--torch", 0, OPT_TORCH, NULL},
    {NULL, "--no-symbolize", 0, OPT_NO_SYMBOLIZE, NULL},
    {"-o", "--output", 1, OPT_OUTPUT, "a PATTERN"},
    {NULL, "--stack-depth", 1, OPT_STACK_DEPTH, "a number"},
    {NULL, "--flush-ms", 1, OPT_FLUSH_MS, "a number"},
    {0},
};

/* --stack-depth or --flush-ms's value. @return 0 or 2 after a usage error. */
static int number_option(const struct cmt__opts *p, struct options *o)
{
    const char *v = p->value, *name = p->option->long_name;
    int depth = p->option->id == OPT_STACK_DEPTH;
    if (!numeric(v))
        return cmt__usage_error("record", "%s expects a number, got '%s'", name, v);
    if (depth && (strlen(v) > 9 || atoi(v) > CMT_MAX_STACK_DEPTH))
        return cmt__usage_error("record",
                                "--stack-depth %s is more than the tracer's cap of %d "
                                "frames",
                                v, CMT_MAX_STACK_DEPTH);
    if (depth)
        o->stack_depth = v;
    else
        o->flush_ms = v;
    return 0;
}

/* @return -1 with *first the index of COMMAND in argv; otherwise the exit status: 0 after
 * printing --help, 2 after a usage error. */
static int parse(int argc, char **argv, struct options *o, int *first)
{
    struct cmt__opts p; /* COMMAND, or "--", ends the options */
    int opt;
    cmt__opts_init(&p, "record", argc, argv, cmt_cmd_record_options,
                   CMT__OPTS_IN_ORDER | CMT__OPTS_DASHDASH);
    while ((opt = cmt__opts_next(&p)) != CMT__OPT_END) {
        switch (opt) {
        case OPT_HELP: fputs(usage, stdout); return 0;
        case OPT_QUIET: o->quiet = 1; break;
        case OPT_FORCE: o->force = 1; break;
        case OPT_TORCH: o->torch = 1; break;
        case OPT_NO_SYMBOLIZE: o->symbolize = 0; break;
        case OPT_OUTPUT:
            if (!*p.value)
                return cmt__opts_needs(&p);
            o->output = p.value;
            break;
        case OPT_STACK_DEPTH:
        case OPT_FLUSH_MS:
            if (number_option(&p, o) != 0)
                return 2;
            break;
        case CMT__OPT_ARG:
            if (!p.dashdash && !strcmp(p.value, "-"))
                return cmt__usage_error("record", "unknown option '%s'", p.value);
            return *first = p.index, -1; /* COMMAND, after "--" or without it */
        default: return 2;
        }
    }
    if (p.dashdash)
        return cmt__usage_error("record", "nothing after '--': give the COMMAND to run, "
                                          "e.g. record -- ./my_program args");
    return cmt__usage_error("record", "no COMMAND given: cumemtrace record [OPTIONS] -- COMMAND "
                                      "[ARGS...]");
}

/* The program may chdir before it first uses CUDA: anchor a relative pattern here. */
static const char *absolute_pattern(const char *pattern, char *buf, size_t size)
{
    char cwd[PATH_MAX];
    if (pattern[0] == '/' || !getcwd(cwd, sizeof cwd))
        return pattern;
    int n = snprintf(buf, size, "%s/%s", cwd, pattern);
    return n > 0 && (size_t)n < size ? buf : pattern;
}

static const char *output_pattern(const struct options *o)
{
    const char *env_output = getenv("CUMEMTRACE_OUTPUT");
    return o->output ? o->output : env_output && *env_output ? env_output : "cumemtrace.%p.cmt";
}

/* The one path a pattern without %p, %r, %l or %h names (%% is %). @return 0 when it has
 * one of them (each process, rank or host may name another file). */
static int fixed_path(const char *pattern, char *out, size_t size)
{
    size_t n = 0;
    for (const char *p = pattern; *p; p++) {
        if (p[0] == '%' && p[1] && strchr("prlh", p[1]))
            return 0;
        if (p[0] == '%' && p[1] == '%')
            p++;
        if (n + 1 < size)
            out[n++] = *p;
    }
    out[n] = 0;
    return 1;
}

/* A fixed output name that exists is refused (the shim would write r.1.cmt beside it), or
 * with --force removed first: unlink removes a symlink itself, never its target, and the shim
 * creates the new file with O_EXCL. @return 0, or -1 after printing why not. */
/* The directory the traces go to must exist and be writable before the program runs (unless
 * it depends on the pid). @return 0, or -1 after printing why not. */
static int check_output_dir(const char *pattern)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(pattern, '/');
    if (!slash)
        return 0; /* absolute_pattern failed (no cwd): let the shim find out */
    int len = slash == pattern ? 1 : (int)(slash - pattern);
    char prefix[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%.*s", len, pattern);
    if (!fixed_path(prefix, dir, sizeof dir))
        return 0;
    struct stat st;
    const char *why = stat(dir, &st) != 0             ? strerror(errno)
                      : !S_ISDIR(st.st_mode)          ? "not a directory"
                      : access(dir, W_OK | X_OK) != 0 ? strerror(errno)
                                                      : NULL;
    if (!why)
        return 0;
    fprintf(stderr, "cumemtrace record: cannot write traces in %s: %s\n", dir, why);
    return -1;
}

static int claim_output(const struct options *o, const char *pattern)
{
    char path[PATH_MAX];
    struct stat st;
    if (!fixed_path(pattern, path, sizeof path) || lstat(path, &st) != 0)
        return 0;
    if (!o->force) {
        fprintf(stderr, "cumemtrace record: %s exists; not overwriting it (--force replaces it)\n",
                cmt__display_path(path));
        return -1;
    }
    if (S_ISDIR(st.st_mode) || unlink(path) != 0) {
        fprintf(stderr, "cumemtrace record: cannot replace %s: %s\n", cmt__display_path(path),
                S_ISDIR(st.st_mode) ? "it is a directory" : strerror(errno));
        return -1;
    }
    return 0;
}

static int setup_env(const struct options *o, const char *shim, const char *manifest,
                     const char *dir)
{
    char preload[PATH_MAX * 4], pattern[PATH_MAX];
    const char *output = output_pattern(o);
    const char *old = getenv("LD_PRELOAD");
    snprintf(preload, sizeof preload, "%s%s%s", shim, old && *old ? ":" : "", old ? old : "");
    return setenv("LD_PRELOAD", preload, 1) || setenv("CUMEMTRACE_MANIFEST", manifest, 1) ||
           setenv("CUMEMTRACE_SALVAGE_DIR", dir, 1) ||
           setenv("CUMEMTRACE_OUTPUT", absolute_pattern(output, pattern, sizeof pattern), 1) ||
           (o->stack_depth && setenv("CUMEMTRACE_STACK_DEPTH", o->stack_depth, 1)) ||
           (o->flush_ms && setenv("CUMEMTRACE_FLUSH_MS", o->flush_ms, 1)) ||
           /* NVTX ranges: the shim is the injection library, unless a tool (Nsight) is */
           setenv("NVTX_INJECTION64_PATH", shim, 0);
}

/* Runs cmd and waits. *ran = 0 when it could not even be started (said on stderr).
 * @return its status, 128 + signal; 127 (not found) or 126 when it could not be run. */
static int run(char **cmd, int *ran)
{
    int pipefd[2];
    *ran = 0;
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        fprintf(stderr, "cumemtrace record: cannot run %s: %s\n", cmd[0], strerror(errno));
        return 126;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "cumemtrace record: cannot fork: %s\n", strerror(errno));
        close(pipefd[0]);
        close(pipefd[1]);
        return 126;
    }
    if (pid == 0) { /* the pipe closes on a successful exec; a failure sends its errno */
        close(pipefd[0]);
        execvp(cmd[0], cmd);
        int err = errno;
        ssize_t w = write(pipefd[1], &err, sizeof err);
        (void)w;
        _exit(127);
    }
    close(pipefd[1]);
    int exec_errno = 0;
    ssize_t got;
    while ((got = read(pipefd[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR)
        ;
    close(pipefd[0]);
    if (got == (ssize_t)sizeof exec_errno) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        fprintf(stderr, "cumemtrace record: cannot run %s: %s\n", cmd[0], strerror(exec_errno));
        return exec_errno == ENOENT ? 127 : 126;
    }
    *ran = 1;
    /* Like system(): the terminal's ^C reaches the program; we stay to write the report. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit;
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

/* One line per trace: path, events, and how the process ended. @return 0, or -1 when the
 * trace cannot be read at all. */
static int describe(const char *path, const struct options *o)
{
    struct cmt_err err = {0};
    struct cmt_symbolize_stats stats = {0};
    if (o->symbolize && cmt_symbolize_file(path, &stats, &err) != 0 && !o->quiet)
        fprintf(stderr, "cumemtrace record: %s\n", cmt_err_message(&err));
    cmt_reader *r;
    if (cmt_reader_open_file(&r, path, NULL) != 0) {
        fprintf(stderr, "cumemtrace record: %s was listed but cannot be read\n", path);
        return -1;
    }
    struct cmt_record rec;
    int rc, signo = 0;
    while ((rc = cmt_reader_next(r, &rec)) > 0)
        if (rec.type == CMT_REC_SIGNAL)
            signo = (int)rec.u.signal.signo;
    if (!o->quiet) {
        /* on stderr, one write: the program's stdout is the program's alone */
        char line[PATH_MAX + 512];
        size_t n = (size_t)snprintf(line, sizeof line, "cumemtrace: wrote %s (%llu events",
                                    cmt__display_path(path),
                                    (unsigned long long)cmt_reader_event_count(r));
        const struct cmt_process *proc = cmt_reader_process(r);
        char host[256];
        if (proc && proc->rank >= 0 && n < sizeof line) /* rank-less traces: as before */
            n += (size_t)snprintf(line + n, sizeof line - n, ", rank %d%s%s", (int)proc->rank,
                                  proc->hostname && *proc->hostname ? " on " : "",
                                  proc->hostname ? cmt__text(proc->hostname, host, sizeof host)
                                                 : "");
        if (signo && n < sizeof line)
            n += (size_t)snprintf(line + n, sizeof line - n, ", process died on signal %d (%s)",
                                  signo, strsignal(signo));
        else if (!cmt_reader_clean_exit(r) && n < sizeof line)
            n += (size_t)snprintf(line + n, sizeof line - n,
                                  ", process ended without a clean exit");
        if (rc < 0 && n < sizeof line)
            n += (size_t)snprintf(line + n, sizeof line - n, ", %s", cmt_reader_damage(r));
        fprintf(stderr, "%s)\n", line);
    }
    cmt_reader_close(r);
    return 0;
}

static void salvaged(void *ctx, const struct cmt_salvage_result *r, const char *err)
{
    const struct options *o = ctx;
    if (!r)
        fprintf(stderr, "cumemtrace record: %s\n", err);
    else if (!o->quiet)
        fprintf(stderr, "cumemtrace: %s: the process died; recovered its last %llu events\n",
                cmt__display_path(r->trace), (unsigned long long)r->events);
}

/* Every process that died without writing all it recorded (SIGKILL, the OOM killer, the
 * loader's _exit) left its state file in dir: its trace gets the rest. Then the files go.
 * @return the traces that could not be completed. */
static int salvage_traces(const char *dir, const struct options *o)
{
    int failures = cmt_salvage_dir(dir, salvaged, (void *)o);
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) /* what salvage could not read either */
        if (!strncmp(de->d_name, "trace-", 6))
            unlinkat(dirfd(d), de->d_name, 0);
    if (d)
        closedir(d);
    return failures;
}

/* Describes every trace the manifest lists. The shim lists a failure as "!" and what went
 * wrong (it has said so on stderr already). @return the failures: traces not written or not
 * readable. */
static int report_traces(const char *manifest, const struct options *o)
{
    int failures = 0;
    FILE *f = fopen(manifest, "r");
    char line[PATH_MAX], **seen = NULL;
    int n = 0, cap = 0;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (line[0] == '!') {
            failures++;
            continue;
        }
        int dup = 0;
        for (int i = 0; i < n && !dup; i++)
            dup = !strcmp(seen[i], line);
        if (dup || !*line)
            continue;
        if (n == cap) { /* a program that forks many CUDA children writes many traces */
            char **grown = realloc(seen, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *seen);
            if (!grown)
                break;
            seen = grown;
        }
        if (!(seen[n] = strdup(line)))
            break;
        n++;
        failures += describe(line, o) != 0;
    }
    for (int i = 0; i < n; i++)
        free(seen[i]);
    free(seen);
    if (f)
        fclose(f);
    if (n == 0 && failures)
        fprintf(stderr, "cumemtrace record: no trace written (see the error above)\n");
    else if (n == 0 && !o->quiet)
        fprintf(stderr, "cumemtrace: no trace written (the program made no CUDA memory calls)\n");
    return failures;
}

int cmt_cmd_record(int argc, char **argv)
{
    struct options o = {.symbolize = 1};
    int first = 0, rc = parse(argc, argv, &o, &first);
    if (rc >= 0)
        return rc;
    char shim[PATH_MAX], pattern[PATH_MAX];
    if (cmt_find_shim(shim, sizeof shim))
        return 2;
    const char *output = absolute_pattern(output_pattern(&o), pattern, sizeof pattern);
    if (check_output_dir(output) || claim_output(&o, output))
        return 2;
    /* The manifest and the shim's salvage state files live in a directory of our own (mode
     * 0700), so nobody else can plant or swap them between our mkdtemp and the shim's use. */
    char dir[] = "/tmp/cumemtrace-record.XXXXXX", manifest[sizeof dir + 16];
    if (!mkdtemp(dir)) {
        fprintf(stderr, "cumemtrace record: cannot create %s: %s\n", dir, strerror(errno));
        return 2;
    }
    snprintf(manifest, sizeof manifest, "%s/manifest", dir);
    int status = 2;
    if (setup_env(&o, shim, manifest, dir)) {
        fprintf(stderr, "cumemtrace record: cannot set the environment\n");
    } else if (!o.torch || cmt__torch_setup(dir) == 0) {
        fflush(stdout);
        int ran;
        status = run(argv + first, &ran);
        int failures = salvage_traces(dir, &o);
        if (ran)
            failures += report_traces(manifest, &o);
        if (ran && o.torch)
            failures += cmt__torch_collect(dir, manifest, output, o.quiet);
        if (ran && failures && status == 0)
            status = 1;
    }
    if (o.torch)
        cmt__torch_cleanup(dir);
    unlink(manifest);
    rmdir(dir);
    return status;
}
