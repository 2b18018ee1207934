/* fleet_ledger.c — the ledger over several traces (`report DIR`): each GPU's processes at one
 * moment (the first out-of-memory failure on it, else the earliest end among them), each
 * rank's ledger of that GPU's device then, and the GPU combined: the ranks' bytes, what the
 * GPU held beyond them (contexts, untraced processes), free and the residual. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_cli.h"
#include "print/ledger_print.h"

/* One member of a GPU at the moment: its pass (open while the moment is used) and moment. */
struct member {
    struct cmt__pass pass;
    cmt_ledger *ledger;
    const struct cmt_ledger_moment *m;
    int open;
    int borrowed; /* pass.reader is the fleet's: not closed with the pass */
    int kept;     /* the moment and the whole pass are the fleet's (ledger_guess): none closed */
};

static void member_close(struct member *m)
{
    if (m->kept) {
        memset(m, 0, sizeof *m);
        return;
    }
    if (m->borrowed)
        m->pass.reader = NULL;
    if (m->open || m->borrowed)
        cmt__pass_close(&m->pass);
    cmt_ledger_destroy(m->ledger);
    m->ledger = NULL;
    m->open = m->borrowed = 0;
}

static void member_take(const struct cmt_fleet *f, uint32_t g, uint32_t p, uint64_t mono,
                        struct member *out)
{
    const struct cmt_fleet_process *pr = &f->processes[p];
    int32_t dev = cmt_fleet_gpu_dev(f, g, p);
    memset(out, 0, sizeof *out);
    if (pr->error || mono < pr->start_mono_ns || dev < 0)
        return; /* unreadable, or not started yet: it held nothing on the GPU */
    uint64_t t = mono - pr->start_mono_ns;
    if (cmt_fleet_ledger_at(pr, t, dev, &out->m)) { /* taken in the fleet's replay already */
        out->kept = 1;
        out->pass = (struct cmt__pass){.cmd = "report",
                                       .path = pr->path,
                                       .reader = pr->reader,
                                       .replay = pr->replay,
                                       .alloc = pr->alloc};
        return;
    }
    const struct cmt_ledger_options o = {.times = &t, .time_count = 1};
    if (pr->reader) { /* the fleet's reader: replayed only up to the moment */
        out->borrowed = 1;
        if (cmt__ledger_pass_to(&out->pass, "report", pr->path, pr->reader, t, &out->ledger)) {
            member_close(out);
            return;
        }
    } else if (cmt__ledger_pass(&out->pass, "report", pr->path, 0, &o, 1, &out->ledger, NULL) !=
               0) {
        return;
    }
    out->open = 1;
    out->m = out->ledger ? cmt_ledger_find(out->ledger, CMT_LEDGER_AT_TIME, dev, 0) : NULL;
}

static void text_combined(const struct cmt_fleet *f, const struct cmt_fleet_gpu *gpu,
                          const struct member *ms, const struct cmt_ledger_combined *c)
{
    char a[32], who[256], key[128];
    printf("  %s combined: capacity %s%s\n", cmt__text(gpu->key, key, sizeof key),
           cmt__bytes(c->total_bytes, a), c->free_measured ? ", free measured" : "");
    for (uint32_t k = 0; k < gpu->member_count; k++)
        if (ms[k].m)
            printf("    %10s  %s\n", cmt__bytes(ms[k].m->process_bytes, a),
                   cmt__fleet_who(&f->processes[gpu->members[k]], who, sizeof who));
    printf("    %10s  contexts and untraced processes (total - free - these processes)\n",
           cmt__bytes(c->shared_bytes, a));
    printf("    %10s  free\n", cmt__bytes(c->free_bytes, a));
    uint64_t r = c->residual_bytes < 0 ? (uint64_t)-c->residual_bytes : (uint64_t)c->residual_bytes;
    printf("    %s%s  residual\n", c->residual_bytes < 0 ? "-" : " ", cmt__bytes(r, a));
}

static void json_combined(struct cmt__json *j, const struct cmt_fleet *f,
                          const struct cmt_fleet_gpu *gpu, const struct member *ms,
                          const struct cmt_ledger_combined *c)
{
    cmt__json_array(j, "ranks");
    for (uint32_t k = 0; k < gpu->member_count; k++) {
        if (!ms[k].m)
            continue;
        cmt__json_object(j, NULL);
        cmt__fleet_json_who(j, &f->processes[gpu->members[k]]);
        cmt__ledger_json(j, "ledger", &ms[k].pass, ms[k].m);
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
    cmt__json_object(j, "combined");
    CMT__JSON_U64S(j, {"total_bytes", c->total_bytes}, {"processes_bytes", c->processes_bytes},
                   {"contexts_and_untraced_bytes", c->shared_bytes}, {"free_bytes", c->free_bytes});
    cmt__json_bool(j, "free_measured", c->free_measured);
    cmt__json_i64(j, "residual_bytes", c->residual_bytes);
    cmt__json_end_object(j);
}

/* One GPU: @return 0, or -1 out of memory. */
static int gpu_ledger(const struct cmt_fleet *f, uint32_t g, struct cmt__json *j)
{
    const struct cmt_fleet_gpu *gpu = &f->gpus[g];
    uint64_t mono;
    int64_t oom;
    if (!cmt_fleet_gpu_moment(f, g, &mono, &oom))
        return 0;
    struct member *ms = calloc(gpu->member_count, sizeof *ms);
    const struct cmt_ledger_moment **m = calloc(gpu->member_count, sizeof *m);
    if (!ms || !m) {
        free(ms);
        free(m);
        return -1;
    }
    for (uint32_t k = 0; k < gpu->member_count; k++) {
        member_take(f, g, gpu->members[k], mono, &ms[k]);
        m[k] = ms[k].m;
    }
    struct cmt_ledger_combined c;
    cmt_ledger_combine(m, gpu->member_count, &c);
    char when[320], who[256];
    if (oom >= 0)
        snprintf(when, sizeof when, "the first out-of-memory failure on it (%s)",
                 cmt__fleet_who(&f->processes[oom], who, sizeof who));
    else
        snprintf(when, sizeof when, "the earliest end of its processes");
    if (j) {
        cmt__json_object(j, NULL);
        cmt__json_string(j, "gpu", gpu->key);
        cmt__json_string(j, "at", oom >= 0 ? "oom" : "end");
        json_combined(j, f, gpu, ms, &c);
        cmt__json_end_object(j);
    } else {
        printf("\nledger of GPU %s at %s\n", gpu->key, when);
        for (uint32_t k = 0; k < gpu->member_count; k++)
            if (ms[k].m) {
                printf("  %s:\n", cmt__fleet_who(&f->processes[gpu->members[k]], who, sizeof who));
                cmt__ledger_print(&ms[k].pass, ms[k].m, "that moment", "    ");
            }
        text_combined(f, gpu, ms, &c);
    }
    for (uint32_t k = 0; k < gpu->member_count; k++)
        member_close(&ms[k]);
    free(ms);
    free(m);
    return 0;
}

int cmt__fleet_ledger(const struct cmt_fleet *f, struct cmt__json *j)
{
    int rc = 0;
    if (j)
        cmt__json_array(j, "gpu_ledgers");
    for (uint32_t g = 0; g < f->gpu_count; g++)
        rc |= gpu_ledger(f, g, j);
    if (j)
        cmt__json_end_array(j);
    return rc;
}
