/* cmd_record.c — `cumemtrace record`: run a program with the shim preloaded.
 *
 * The shim writes one trace per process that uses CUDA (forked and exec'd children too) and
 * lists each in a manifest file; afterwards every trace is symbolized here, on the machine
 * that ran the program, and reported one line each. Exits with the program's status. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "reader.h"
#include "shim_path.h"
#include "symbolize.h"

static const char usage[] =
    "usage: cumemtrace record [OPTIONS] -- COMMAND [ARGS...]\n\n"
    "Runs COMMAND with libcumemtrace.so preloaded; every process that uses CUDA writes a trace.\n\n"
    "options:\n"
    "  -o, --output PATTERN   trace path, %%p = process id (default cumemtrace.%%p.cmt)\n"
    "  --stack-depth N        frames per call stack, 0 = none (default 64)\n"
    "  --flush-ms N           write buffered events at least this often (default 500)\n"
    "  --no-symbolize         keep raw addresses (run `cumemtrace symbolize` later)\n"
    "  -q, --quiet            print nothing but errors\n"
    "  -h, --help             this text\n";

struct options {
    const char *output, *stack_depth, *flush_ms;
    int symbolize, quiet;
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

/* @return index of COMMAND in argv, or -1 after printing an error. */
static int parse(int argc, char **argv, struct options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            return i + 1 < argc ? i + 1 : -1;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            exit(0);
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--no-symbolize")) {
            o->symbolize = 0;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--stack-depth") ||
                   !strcmp(a, "--flush-ms")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "cumemtrace record: %s needs a value\n", a);
                return -1;
            }
            const char *v = argv[++i];
            if (a[1] == 'o' || a[2] == 'o')
                o->output = v;
            else if (!numeric(v)) {
                fprintf(stderr, "cumemtrace record: %s expects a number, got '%s'\n", a, v);
                return -1;
            } else if (a[2] == 's')
                o->stack_depth = v;
            else
                o->flush_ms = v;
        } else if (a[0] == '-') {
            fprintf(stderr, "cumemtrace record: unknown option '%s' (see --help)\n", a);
            return -1;
        } else {
            return i; /* COMMAND without "--" */
        }
    }
    fprintf(stderr, "cumemtrace record: no command given (usage: cumemtrace record -- CMD ...)\n");
    return -1;
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

/* The path as the user would like to read it: relative to here when it lies below. */
static const char *display_path(const char *path)
{
    char cwd[PATH_MAX];
    size_t n;
    if (getcwd(cwd, sizeof cwd) && (n = strlen(cwd)) > 1 && !strncmp(path, cwd, n) &&
        path[n] == '/')
        return path + n + 1;
    return path;
}

static int setup_env(const struct options *o, const char *shim, const char *manifest)
{
    char preload[PATH_MAX * 4], pattern[PATH_MAX];
    const char *env_output = getenv("CUMEMTRACE_OUTPUT");
    const char *output = o->output ? o->output
                         : env_output && *env_output ? env_output : "cumemtrace.%p.cmt";
    const char *old = getenv("LD_PRELOAD");
    snprintf(preload, sizeof preload, "%s%s%s", shim, old && *old ? ":" : "", old ? old : "");
    return setenv("LD_PRELOAD", preload, 1) || setenv("CUMEMTRACE_MANIFEST", manifest, 1) ||
           setenv("CUMEMTRACE_OUTPUT",
                  absolute_pattern(output, pattern, sizeof pattern), 1) ||
           (o->stack_depth && setenv("CUMEMTRACE_STACK_DEPTH", o->stack_depth, 1)) ||
           (o->flush_ms && setenv("CUMEMTRACE_FLUSH_MS", o->flush_ms, 1));
}

static int run(char **cmd)
{
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "cumemtrace record: cannot fork: %s\n", strerror(errno));
        return 127;
    }
    if (pid == 0) {
        execvp(cmd[0], cmd);
        fprintf(stderr, "cumemtrace record: cannot run %s: %s\n", cmd[0], strerror(errno));
        _exit(127);
    }
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

/* One line per trace: path, events, and how the process ended. */
static void describe(const char *path, const struct options *o)
{
    char err[512] = "";
    struct cmt_symbolize_stats stats = {0};
    if (o->symbolize && cmt_symbolize_file(path, &stats, err, sizeof err) != 0 && !o->quiet)
        fprintf(stderr, "cumemtrace record: %s\n", err);
    cmt_reader *r;
    if (cmt_reader_open_file(&r, path, NULL) != 0) {
        fprintf(stderr, "cumemtrace record: %s was listed but cannot be read\n", path);
        return;
    }
    struct cmt_record rec;
    int rc, signo = 0;
    while ((rc = cmt_reader_next(r, &rec)) > 0)
        if (rec.type == CMT_REC_SIGNAL)
            signo = (int)rec.u.signal.signo;
    if (!o->quiet) {
        printf("cumemtrace: wrote %s (%llu events", display_path(path),
               (unsigned long long)cmt_reader_event_count(r));
        if (signo)
            printf(", process died on signal %d (%s)", signo, strsignal(signo));
        else if (!cmt_reader_clean_exit(r))
            printf(", process ended without a clean exit");
        if (rc < 0)
            printf(", %s", cmt_reader_damage(r));
        printf(")\n");
    }
    cmt_reader_close(r);
}

static int report_traces(const char *manifest, const struct options *o)
{
    FILE *f = fopen(manifest, "r");
    char line[PATH_MAX], **seen = NULL;
    int n = 0, cap = 0;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
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
        describe(line, o);
    }
    for (int i = 0; i < n; i++)
        free(seen[i]);
    free(seen);
    if (f)
        fclose(f);
    if (n == 0 && !o->quiet)
        printf("cumemtrace: no trace written (the program made no CUDA memory calls)\n");
    return n;
}

int cmt_cmd_record(int argc, char **argv)
{
    struct options o = {.symbolize = 1};
    int first = parse(argc, argv, &o);
    if (first < 0)
        return 2;
    char shim[PATH_MAX], manifest[] = "/tmp/cumemtrace-manifest.XXXXXX";
    if (cmt_find_shim(shim, sizeof shim))
        return 2;
    int fd = mkstemp(manifest);
    if (fd < 0) {
        fprintf(stderr, "cumemtrace record: cannot create %s: %s\n", manifest, strerror(errno));
        return 2;
    }
    close(fd);
    if (setup_env(&o, shim, manifest)) {
        fprintf(stderr, "cumemtrace record: cannot set the environment\n");
        unlink(manifest);
        return 2;
    }
    fflush(stdout);
    int status = run(argv + first);
    report_traces(manifest, &o);
    unlink(manifest);
    return status;
}
