/* cmd_demo.c — `cumemtrace demo`: the whole story on a simulated 24 GiB card.
 *
 * Runs the bundled demo_diffusion program on simcuda under `cumemtrace
 * record` (the Stable Diffusion OOM of the write-up), caching on as users run
 * it: its allocator reports its blocks through cumemtrace/annotate.h, so that
 * one ordinary run gives `oom` its fragmentation verdict, `timeline` the
 * allocator's series and `whatif` the tensor stream and its self-check. Then it
 * records again with the recommended setting and runs `diff`. An aside shows
 * the caching-off re-run a program without allocator events needs.
 * Every step runs this executable again as a user would type it, so what the
 * demo shows is what the commands print. Files stay in ./cumemtrace-demo/. */
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "options.h"
#include "output.h"
#include "shim_path.h"
#include "whatif.h"
#include "whatif_blocks.h"

extern char **environ;

#define CMD "demo"

static const char usage[] =
    "usage: cumemtrace demo [--dir DIR]\n"
    "\n"
    "Runs a Stable Diffusion-like inpainting program on a simulated 24 GiB card (simcuda, no\n"
    "GPU needed) and walks through cumemtrace: record its 6.18 GiB out-of-memory failure with\n"
    "PyTorch's caching on, pinpoint it (oom: fragmentation), draw memory over time (timeline),\n"
    "replay the same run's tensors under other PYTORCH_CUDA_ALLOC_CONF settings (whatif), and\n"
    "check the fix (diff); as an aside, the caching-off re-run of a program whose allocator\n"
    "reports nothing.\n"
    "\n"
    "  --dir DIR   where the traces and the chart go (default ./cumemtrace-demo)\n";

struct demo_ctx {
    char self[PATH_MAX];    /* this executable */
    char program[PATH_MAX]; /* demo_diffusion */
    char simcuda[PATH_MAX]; /* directory holding libcuda.so.1 */
    int color;
    int step, steps;
};

/* ---- presentation ------------------------------------------------------ */

static void heading(struct demo_ctx *d, const char *fmt, ...)
{
    char title[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(title, sizeof title, fmt, ap);
    va_end(ap);
    d->step++;
    printf("\n%s== Step %d of %d: %s ", d->color ? "\033[1m" : "", d->step, d->steps, title);
    for (int n = (int)strlen(title) + 18; n < 96; n++)
        putchar('=');
    printf("%s\n", d->color ? "\033[0m" : "");
}

static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

/* Print the command as typed: `env` assignments, then cumemtrace and args. */
static void show(struct demo_ctx *d, const char *env, char *const argv[])
{
    printf("\n%s$ %s%s", d->color ? "\033[36m" : "", env ? env : "", env ? " " : "");
    for (int i = 0; argv[i]; i++) {
        const char *a = argv[i];
        if (i == 0)
            a = "cumemtrace";
        else if (!strcmp(a, d->program))
            a = "demo_diffusion";
        printf("%s%s", i ? " " : "", a);
    }
    printf("%s\n", d->color ? "\033[0m" : "");
    fflush(stdout);
}

/* ---- running steps ---------------------------------------------------- */

/* Run argv (argv[0] ignored: this executable) with `env` ("NAME=value" or
 * NULL) added. @return the exit status, 128+signal, or -1. */
static int run(struct demo_ctx *d, const char *env, char *const argv[])
{
    show(d, env, argv);
    char *copy = env ? strdup(env) : NULL;
    char *eq = copy ? strchr(copy, '=') : NULL;
    if (eq) {
        *eq = 0;
        setenv(copy, eq + 1, 1);
    }
    char *args[32];
    int n = 0;
    args[n++] = d->self;
    for (int i = 1; argv[i] && n < 31; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    pid_t pid;
    int rc = posix_spawn(&pid, d->self, NULL, NULL, args, environ);
    if (eq)
        unsetenv(copy);
    free(copy);
    if (rc != 0) {
        fprintf(stderr, "cumemtrace demo: cannot run %s: %s\n", d->self, strerror(rc));
        return -1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    fflush(stdout);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

static int expect(int got, int want, const char *what)
{
    if (got == want)
        return 0;
    fprintf(stderr, "cumemtrace demo: %s exited with status %d (expected %d); stopping\n", what,
            got, want);
    return 1;
}

/* ---- set-up ----------------------------------------------------------- */

static int find_parts(struct demo_ctx *d)
{
    ssize_t n = readlink("/proc/self/exe", d->self, sizeof d->self - 1);
    if (n <= 0) {
        fprintf(stderr, "cumemtrace demo: cannot find my own executable\n");
        return -1;
    }
    d->self[n] = 0;
    if (cmt_find_companion("demo_diffusion", 1, d->program, sizeof d->program) != 0) {
        fprintf(stderr, "cumemtrace demo: cannot find the demo program demo_diffusion next to "
                        "cumemtrace (../libexec/cumemtrace/); build the demo_diffusion target\n");
        return -1;
    }
    if (cmt_find_companion("simcuda/libcuda.so.1", 0, d->simcuda, sizeof d->simcuda) != 0) {
        fprintf(stderr, "cumemtrace demo: cannot find simcuda (lib/simcuda/libcuda.so.1) next to "
                        "cumemtrace; build the simcuda target\n");
        return -1;
    }
    *strrchr(d->simcuda, '/') = 0;
    char shim[PATH_MAX];
    if (cmt_find_shim(shim, sizeof shim) != 0)
        return -1;
    /* The demo runs on simcuda whatever driver is installed. */
    char path[PATH_MAX * 2];
    const char *old = getenv("LD_LIBRARY_PATH");
    snprintf(path, sizeof path, "%s%s%s", d->simcuda, old && *old ? ":" : "", old ? old : "");
    setenv("LD_LIBRARY_PATH", path, 1);
    static const char *const cleared[] = {
        "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING",
        "SIMCUDA_MEMORY",          "SIMCUDA_USED",       "SIMCUDA_CONTEXT_OVERHEAD",
        "SIMCUDA_DEVICES",         "CUMEMTRACE_OUTPUT"};
    for (size_t i = 0; i < sizeof cleared / sizeof *cleared; i++)
        unsetenv(cleared[i]);
    return 0;
}

static int enter_dir(const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "cumemtrace demo: cannot create %s: %s\n", dir, strerror(errno));
        return -1;
    }
    if (chdir(dir) != 0) {
        fprintf(stderr, "cumemtrace demo: cannot enter %s: %s\n", dir, strerror(errno));
        return -1;
    }
    /* Old traces would be listed twice by `record`'s manifest otherwise. */
    static const char *const files[] = {"sd-oom.cmt", "sd-tensors.cmt", "sd-fixed.cmt",
                                        "sd-oom.svg"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        unlink(files[i]);
    return 0;
}

/* The recommended PYTORCH_CUDA_ALLOC_CONF value, computed as `whatif` does
 * by default. @return 0, or -1 when no setting works. */
static int recommended_conf(const char *trace, char *conf, size_t len)
{
    cmt_reader *r = NULL;
    struct cmt_whatif_stream s;
    struct cmt_whatif_setting settings[6];
    struct cmt_whatif_result results[6];
    struct cmt_whatif_recommendation rec;
    uint64_t split[6];
    int rc = -1;
    if (cmt_reader_open_file(&r, trace, NULL) != 0)
        return -1;
    /* the allocator's own block events when the run has them, else the driver's stream */
    struct cmt_whatif_selfcheck check;
    memset(&check, 0, sizeof check);
    int loaded = cmt_whatif_load_any(r, &s, &check, NULL);
    cmt_whatif_selfcheck_free(&check);
    if (loaded == 0 && !s.has_capacity)
        cmt_whatif_stream_free(&s);
    if (loaded == 0 && s.has_capacity) {
        struct cmt_whatif_setting base;
        cmt_whatif_setting_default(&base);
        size_t n = cmt_whatif_default_splits(&s, s.device_free, s.device_total, &base, split);
        for (size_t i = 0; i < n; i++) {
            settings[i] = base;
            settings[i].max_split_size = split[i];
        }
        cmt_whatif_run(&s, s.device_free, s.device_total, settings, n, 0, results);
        cmt_whatif_recommend(results, n, &rec);
        if (rec.best >= 0) {
            cmt_whatif_setting_conf(&results[rec.best].setting, conf, len);
            rc = 0;
        }
        cmt_whatif_stream_free(&s);
    }
    cmt_reader_close(r);
    return rc;
}

/* ---- the story -------------------------------------------------------- */

static int story(struct demo_ctx *d)
{
    char *const rec_oom[] = {"", "record", "-o", "sd-oom.cmt", "--", d->program, NULL};
    char *const oom[] = {"", "oom", "sd-oom.cmt", NULL};
    char *const timeline[] = {"", "timeline", "sd-oom.cmt", NULL};
    char *const svg[] = {"", "timeline", "--svg", "sd-oom.svg", "sd-oom.cmt", NULL};
    /* the 1.x wording, as the traced program (an older PyTorch) printed it */
    char *const whatif[] = {"", "whatif", "--oom-message", "1.x", "sd-oom.cmt", NULL};
    char *const rec_fixed[] = {"", "record", "-o", "sd-fixed.cmt", "--", d->program, NULL};
    char *const diff[] = {"", "diff", "sd-oom.cmt", "sd-fixed.cmt", NULL};
    char *const rec_tensors[] = {"", "record", "-o", "sd-tensors.cmt", "--", d->program, NULL};

    heading(d, "record the run that fails");
    say("Inpainting two 4096x4096 images on a 24 GiB card, with PyTorch's caching allocator on,\n"
        "as everyone runs it. The second VAE decode fails, as in the write-up. The allocator\n"
        "reports its blocks to cumemtrace (annotate.h), so this one trace has both views.\n");
    if (expect(run(d, NULL, rec_oom), 1, "the recorded run"))
        return 1;

    heading(d, "pinpoint the out-of-memory failure");
    say("The driver saw a 6.18 GiB cuMemAlloc fail; the allocator's own events say why, and\n"
        "the ledger after them accounts for every byte of the card at the failure:\n");
    if (expect(run(d, NULL, oom), 0, "cumemtrace oom"))
        return 1;

    heading(d, "device memory over time");
    if (expect(run(d, NULL, timeline), 0, "cumemtrace timeline") ||
        expect(run(d, NULL, svg), 0, "cumemtrace timeline --svg"))
        return 1;

    heading(d, "what would other allocator settings have done?");
    say("The same trace holds every tensor the program asked for: replay them through a model\n"
        "of the caching allocator for each max_split_size_mb, after checking the model against\n"
        "the segments this run's allocator really made:\n");
    if (expect(run(d, NULL, whatif), 0, "cumemtrace whatif"))
        return 1;

    char conf[160], env[200];
    heading(d, "check the fix");
    if (recommended_conf("sd-oom.cmt", conf, sizeof conf) != 0 || !conf[0]) {
        say("whatif found no setting to recommend; nothing to check.\n");
        return 1;
    }
    snprintf(env, sizeof env, "PYTORCH_CUDA_ALLOC_CONF=%s", conf);
    say("Run it again with the recommended setting, and compare the two runs:\n");
    if (expect(run(d, env, rec_fixed), 0, "the run with the recommended setting") ||
        expect(run(d, NULL, diff), 0, "cumemtrace diff"))
        return 1;

    char off_conf[160];
    say("\nAside: a program whose allocator reports nothing leaves only segments in the trace.\n"
        "Record it once with caching off (every tensor its own cuMemAlloc) and whatif replays\n"
        "the driver's stream instead:\n");
    if (expect(run(d, "PYTORCH_NO_CUDA_MEMORY_CACHING=1", rec_tensors), 0, "the caching-off run"))
        return 1;
    if (recommended_conf("sd-tensors.cmt", off_conf, sizeof off_conf) != 0)
        off_conf[0] = 0;
    say("  whatif on sd-tensors.cmt recommends %s: %s\n", off_conf[0] ? off_conf : "nothing",
        !strcmp(off_conf, conf) ? "the same as the ordinary run's events"
                                : "NOT the ordinary run's recommendation");
    return strcmp(off_conf, conf) != 0;
}

enum { OPT_HELP = 1, OPT_DIR };

const struct cmt__option cmt_cmd_demo_options[] = {
    CMT__OPTION_HELP(OPT_HELP),
    {NULL, "--dir", 1, OPT_DIR, "a folder"},
    {0},
};

/* --dir (cmt__opts_parse; nothing else is taken). @return 0, or 2 after a usage error. */
static int demo_arg(const struct cmt__opts *p, int opt, void *dir)
{
    if (opt != OPT_DIR)
        return cmt__usage_error(
            "demo", p->value[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'",
            p->value);
    if (!*p->value)
        return cmt__opts_needs(p);
    *(const char **)dir = p->value;
    return 0;
}

int cmt_cmd_demo(int argc, char **argv)
{
    const char *dir = "cumemtrace-demo";
    int rc = cmt__opts_parse("demo", argc, argv, cmt_cmd_demo_options, 0, usage, demo_arg, &dir);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct demo_ctx d = {.steps = 5};
    const char *no_color = getenv("NO_COLOR");
    d.color = isatty(STDOUT_FILENO) && !(no_color && *no_color);
    if (find_parts(&d) != 0 || enter_dir(dir) != 0)
        return 1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    printf("cumemtrace demo: a Stable Diffusion inpainting run that runs out of GPU memory,\n"
           "on simcuda, a simulated 24 GiB card (no GPU needed). Files go to %s/.\n",
           dir);
    printf("  demo program: %s\n  driver:       %s/libcuda.so.1\n", d.program, d.simcuda);
    rc = story(&d);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (rc == 0)
        printf("\nDone in %.1f s. The traces (sd-*.cmt) and the chart (sd-oom.svg) are in %s/.\n",
               seconds, dir);
    return rc;
}
