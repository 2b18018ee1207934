/* The ledger on simcuda (tools/analysis/ledger.h): a program with NCCL-like, cuBLAS-like,
 * graph-pool and user memory (progs/ledger_libs.c) is recorded with SIMCUDA_LOG set; the trace
 * matches the log (simcuda_log_check), and at every moment asked (the OOM, the peak, the end,
 * --at) the ledger's rows sum to the device's capacity with residual 0, each owner's row holds
 * the bytes simcuda served to that library, the context row is simcuda's context overhead and
 * no other process is invented. */
#include "e2e_util.h"

#include <inttypes.h>

TestSuite(ledger, .init = e2e_setup, .fini = e2e_teardown);

#define MiB (UINT64_C(1) << 20)
#define CAPACITY (1024 * MiB) /* SIMCUDA_MEMORY */

static void cli(struct run *r, const char *a, const char *b, const char *c, const char *d)
{
    char exe[PATH_MAX];
    char *argv[] = {
        (char *)e2e_path(exe, "bin/cumemtrace"), (char *)a, (char *)b, (char *)c, (char *)d, NULL};
    e2e_run(r, argv);
}

/* What the program printed for one owner: its addresses and handles. */
struct owned {
    uint64_t values[8];
    int handle[8];
    int n;
};

static void owned_by(const char *out, const char *owner, struct owned *o)
{
    char key[64];
    memset(o, 0, sizeof *o);
    snprintf(key, sizeof key, "%s ", owner);
    for (const char *p = out; (p = strstr(p, key)) != NULL && o->n < 8; p++) {
        char what[16];
        unsigned long long v;
        if ((p == out || p[-1] == '\n') &&
            sscanf(p + strlen(key), "%15[a-z]=0x%llx", what, &v) == 2) {
            o->handle[o->n] = strcmp(what, "handle") == 0;
            o->values[o->n++] = v;
        }
    }
    cr_assert_gt(o->n, 0, "the program printed nothing for %s:\n%s", owner, out);
}

/* Bytes simcuda served to the owner's calls (its log lines with result 0), and the rounding
 * of its plain allocations to 2 MiB pages. */
static uint64_t served(const char *log, const struct owned *o, uint64_t *rounding)
{
    uint64_t bytes = 0;
    for (int i = 0; i < o->n; i++) {
        const char *line = NULL;
        for (const char *p = log; (p = strstr(p, "entry=")) != NULL; p++) {
            char entry[64];
            unsigned long long addr, size, handle;
            int result;
            if (sscanf(p, "entry=%63s result=%d address=0x%llx size=%llu handle=0x%llx", entry,
                       &result, &addr, &size, &handle) != 5 ||
                result != 0)
                continue;
            int create = strcmp(entry, "cuMemCreate") == 0;
            if ((o->handle[i] && create && handle == o->values[i]) ||
                (!o->handle[i] && !strcmp(entry, "cuMemAlloc_v2") && addr == o->values[i])) {
                line = p;
                bytes += size;
                if (!create)
                    *rounding += (size + 2 * MiB - 1) / (2 * MiB) * (2 * MiB) - size;
                break;
            }
        }
        cr_assert_not_null(line, "no log line for 0x%" PRIx64 ":\n%s", o->values[i], log);
    }
    return bytes;
}

/* One moment of a --json output: its figures and its rows summed by row and owner. */
struct moment {
    uint64_t total, others, context, free_bytes;
    long long residual;
    uint64_t sum, nccl, cublas, user, graph, rounding;
};

static uint64_t number_after(const char *from, const char *end, const char *key)
{
    const char *p = strstr(from, key);
    cr_assert(p && (!end || p < end), "no %s in %.400s", key, from);
    return strtoull(p + strlen(key), NULL, 10);
}

/* Parses every ledger moment of json (each starts with {"dev":). @return how many. */
static int moments(const char *json, struct moment *m, int max)
{
    int n = 0;
    for (const char *p = strstr(json, "{\"dev\":"); p && n < max; n++) {
        const char *next = strstr(p + 1, "{\"dev\":");
        struct moment *x = &m[n];
        memset(x, 0, sizeof *x);
        x->total = number_after(p, next, "\"total_bytes\":");
        x->others = number_after(p, next, "\"others_bytes\":");
        x->context = number_after(p, next, "\"context_bytes\":");
        x->free_bytes = number_after(p, next, "\"free_bytes\":");
        const char *r = strstr(p, "\"residual_bytes\":");
        x->residual = strtoll(r + strlen("\"residual_bytes\":"), NULL, 10);
        for (const char *row = strstr(p, "{\"row\":\""); row && (!next || row < next);
             row = strstr(row + 1, "{\"row\":\"")) {
            uint64_t bytes = number_after(row, next, "\"bytes\":");
            x->sum += bytes;
            const char *end = strstr(row + 1, "{\"row\":\"");
            const char *owner = strstr(row, "\"owner\":\"");
            int mine = owner && (!end || owner < end) && (!next || owner < next);
            if (!strncmp(row + 8, "graph\"", 6))
                x->graph += bytes;
            else if (!strncmp(row + 8, "rounding\"", 9))
                x->rounding += bytes;
            else if (mine && !strncmp(owner + 9, "nccl\"", 5))
                x->nccl += bytes;
            else if (mine && !strncmp(owner + 9, "cublas\"", 7))
                x->cublas += bytes;
            else if (mine && !strncmp(owner + 9, "user\"", 5))
                x->user += bytes;
        }
        p = next;
    }
    return n;
}

static void check(const struct moment *m, const char *what, const char *json, uint64_t nccl,
                  uint64_t cublas, uint64_t user, uint64_t graph, uint64_t rounding)
{
    cr_assert_eq(m->total, CAPACITY, "%s: capacity\n%s", what, json);
    cr_assert_eq(m->sum, m->total, "%s: the rows sum to %" PRIu64 "\n%s", what, m->sum, json);
    cr_assert_eq(m->residual, 0, "%s: residual %lld\n%s", what, m->residual, json);
    cr_assert_eq(m->others, 0, "%s: no other process on simcuda\n%s", what, json);
    cr_assert_eq(m->context, 256 * MiB, "%s: simcuda's context overhead\n%s", what, json);
    cr_assert_eq(m->nccl, nccl, "%s: NCCL %" PRIu64 " != %" PRIu64 "\n%s", what, m->nccl, nccl,
                 json);
    cr_assert_eq(m->cublas, cublas, "%s: cuBLAS\n%s", what, json);
    cr_assert_eq(m->user, user, "%s: user code\n%s", what, json);
    cr_assert_eq(m->graph, graph, "%s: graph memory\n%s", what, json);
    cr_assert_eq(m->rounding, rounding, "%s: rounding\n%s", what, json);
}

Test(ledger, rows_match_simcuda_log_and_sum_to_the_capacity)
{
    static struct run r, oom, report, text, log_check;
    static char log[1 << 16];
    char path[NAME_MAX + 1], log_path[PATH_MAX + 16];
    snprintf(log_path, sizeof log_path, "%s/simcuda.log", e2e_dir);
    setenv("SIMCUDA_LOG", log_path, 1);
    setenv("SIMCUDA_MEMORY", "1GiB", 1);
    e2e_record_one(&r, path, NULL, "tests/progs/ledger_libs", NULL, 0);
    unsetenv("SIMCUDA_LOG");
    unsetenv("SIMCUDA_MEMORY");
    e2e_check_simcuda_log(log_path, &log_check);
    slurp(log_path, log, sizeof log);

    struct owned o;
    uint64_t rounding = 0, nccl, cublas, user, graph = 6 * MiB;
    owned_by(r.out, "nccl", &o);
    nccl = served(log, &o, &rounding);
    owned_by(r.out, "cublas", &o);
    cublas = served(log, &o, &rounding);
    owned_by(r.out, "user", &o);
    user = served(log, &o, &rounding);
    cr_assert(strstr(log, "entry=cuGraphLaunch result=0") && strstr(log, "size=6291456 handle="),
              "simcuda served the graph's 6 MiB:\n%s", log);

    struct moment m[8];
    cli(&oom, "oom", "--json", path, NULL);
    cr_assert_eq(oom.status, 0, "%s", oom.err);
    cr_assert_eq(moments(strstr(oom.out, "\"ledger\":"), m, 8), 1, "%s", oom.out);
    check(&m[0], "at the OOM", oom.out, nccl, cublas, user, graph, rounding);

    cli(&report, "report", "--json", "--at=1000s", path);
    cr_assert_eq(report.status, 0, "%s", report.err);
    const char *ledger = strstr(report.out, "\"ledger\":");
    cr_assert_not_null(ledger, "%s", report.out);
    cr_assert_eq(moments(ledger, m, 8), 3, "peak, end, --at: %s", ledger);
    for (int i = 0; i < 3; i++)
        check(&m[i],
              i == 0   ? "at the peak"
              : i == 1 ? "at the end"
                       : "at 1000 s",
              ledger, nccl, cublas, user, graph, rounding);

    cli(&text, "oom", path, NULL, NULL);
    cr_assert(strstr(text.out, "ledger of GPU 0") && strstr(text.out, "  NCCL (2 allocations)\n") &&
                  strstr(text.out, "  cuBLAS (1 allocation)\n") &&
                  strstr(text.out, "residual  0 B"),
              "%s", text.out);
}

/* Every driver-API test program, recorded on simcuda (no other process): at the peak, the end,
 * a time past the end and every out-of-memory failure, each device's rows sum to its capacity,
 * the residual is 0 and no other process is invented (annotate_pool's allocator reports an
 * OOM with free/total figures of its own making: there others are what it claims). */
Test(ledger, every_test_program_adds_up_with_residual_0)
{
    static const char *const programs[][2] = {{"alloc_deep", NULL},
                                              {"graph_memory", NULL},
                                              {"graph_capture", NULL},
                                              {"graph_capture_fork", NULL},
                                              {"nvls", NULL},
                                              {"legacy", NULL},
                                              {"annotate_pool", NULL},
                                              {"scenarios", "all-apis"},
                                              {"scenarios", "cache-oom"},
                                              {"ipc_fd", NULL},
                                              {"pool_ipc", NULL},
                                              {"ledger_libs", NULL}};
    static struct run r, out;
    int checked = 0;
    for (size_t p = 0; p < sizeof programs / sizeof *programs; p++) {
        char dir[64], prog[PATH_MAX];
        snprintf(dir, sizeof dir, "p%zu", p);
        cr_assert_eq(mkdir(dir, 0755), 0);
        cr_assert_eq(chdir(dir), 0);
        snprintf(prog, sizeof prog, "tests/progs/%s", programs[p][0]);
        const char *args[] = {programs[p][1], NULL};
        e2e_record(&r, NULL, prog, args);
        char names[4][NAME_MAX + 1];
        int n = e2e_traces(names, 4);
        cr_assert_gt(n, 0, "%s: no trace: %s", prog, r.err);
        for (int t = 0; t < n; t++) {
            static const char *const cmds[][2] = {{"report", "--at=1000s"}, {"oom", NULL}};
            for (size_t c = 0; c < 2; c++) {
                cli(&out, cmds[c][0], "--json", names[t], cmds[c][1]);
                cr_assert_eq(out.status, 0, "%s %s: %s", cmds[c][0], prog, out.err);
                const char *ledger = strstr(out.out, "\"ledger\":");
                if (!ledger)
                    continue; /* oom without a failure */
                struct moment m[16];
                int k = moments(ledger, m, 16);
                for (int i = 0; i < k; i++) {
                    cr_assert_eq(m[i].sum, m[i].total, "%s %s: the rows sum to %" PRIu64 "\n%s",
                                 prog, cmds[c][0], m[i].sum, ledger);
                    cr_assert_eq(m[i].residual, 0, "%s: residual\n%s", prog, ledger);
                    cr_assert(m[i].others == 0 || !strcmp(programs[p][0], "annotate_pool"),
                              "%s: others\n%s", prog, ledger);
                    checked++;
                }
            }
        }
        cr_assert_eq(chdir(".."), 0);
    }
    cr_assert_gt(checked, 30, "moments checked: %d", checked);
}
