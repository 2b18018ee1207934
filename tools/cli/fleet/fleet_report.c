/* fleet_report.c — `cumemtrace report [--json] [--jobs N] TRACES... | DIR`: one report over
 * the processes of a run (per-process and per-rank peaks, the first failure, the imbalance,
 * the GPUs several processes shared). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_cli.h"
#include "output.h"

static const char *failure_text(const struct cmt_fleet_process *p, char *buf, size_t size)
{
    if (p->failure == CMT_FLEET_FAILED_SIGNAL) {
        snprintf(buf, size, "died on signal %u", p->signo);
        return buf;
    }
    for (uint32_t i = 0; i < p->episode_count; i++) {
        const struct cmt_oom_episode *e = &p->episodes[i].e;
        if (!e->fatal)
            continue;
        char a[32];
        snprintf(buf, size, "out of memory: %s on GPU %d (%s)", cmt__bytes(e->request_bytes, a),
                 (int)e->dev, cmt_verdict_name(e->verdict));
        return buf;
    }
    snprintf(buf, size, "failed");
    return buf;
}

static void text_summary(const struct cmt_fleet *f)
{
    uint32_t readable = 0, hosts = 0;
    const char *job = NULL;
    int32_t world = -1;
    for (uint32_t p = 0; p < f->count; p++) {
        const struct cmt_fleet_process *pr = &f->processes[p];
        if (pr->error)
            continue;
        readable++;
        int seen = 0; /* hosts: distinct names among the readable processes before p */
        for (uint32_t q = 0; q < p && !seen; q++)
            seen = !f->processes[q].error &&
                   !strcmp(f->processes[q].host ? f->processes[q].host : "",
                           pr->host ? pr->host : "");
        hosts += !seen;
        job = job ? job : pr->job_id;
        world = world >= 0 ? world : pr->world_size;
    }
    char text[256];
    printf("%u trace%s: %u process%s", f->count, f->count == 1 ? "" : "s", readable,
           readable == 1 ? "" : "es");
    if (f->rank_count)
        printf(", %u rank%s (%d..%d)", f->rank_count, f->rank_count == 1 ? "" : "s",
               (int)f->ranks[0].rank, (int)f->ranks[f->rank_count - 1].rank);
    if (world >= 0)
        printf(" of %d", (int)world);
    printf(", on %u host%s", hosts, hosts == 1 ? "" : "s");
    if (job)
        printf(", job %s", cmt__text(job, text, sizeof text));
    printf("\n");
    char who[320], when[40], a[32], b[32];
    if (f->first_failure >= 0) {
        const struct cmt_fleet_process *pr = &f->processes[f->first_failure];
        printf("first failure: %s at %s (%s after the first start): %s\n",
               cmt__fleet_who(pr, who, sizeof who), cmt__wall_time(f->first_failure_wall_ns, when),
               cmt__duration(f->first_failure_wall_ns - f->start_wall_ns, a),
               failure_text(pr, text, sizeof text));
    } else {
        printf("first failure: none (no process ran out of memory or died on a signal)\n");
    }
    printf("peaks: max %s, median %s per %s", cmt__bytes(f->peak_max_bytes, a),
           cmt__bytes(f->peak_median_bytes, b), f->rank_count ? "rank" : "process");
    if (f->peak_median_bytes)
        printf(", imbalance %.2f (max / median)\n", f->imbalance);
    else
        printf(", imbalance unknown (the median is 0)\n");
}

static void text_processes(const struct cmt_fleet *f)
{
    char a[32], b[32], host[64], file[512], who[32];
    printf("\nprocesses (peak of device memory, when, failures)\n");
    printf("  %-6s %-6s %-8s %-16s %12s %12s %-8s %8s  %s\n", "rank", "local", "pid", "host",
           "peak", "at", "exit", "failures", "file");
    for (uint32_t p = 0; p < f->count; p++) {
        const struct cmt_fleet_process *pr = &f->processes[p];
        if (pr->error)
            continue;
        char rank[16] = "-", local[16] = "-";
        if (pr->rank >= 0)
            snprintf(rank, sizeof rank, "%d", (int)pr->rank);
        if (pr->local_rank >= 0)
            snprintf(local, sizeof local, "%d", (int)pr->local_rank);
        snprintf(who, sizeof who, "%" PRIu64, pr->pid);
        printf("  %-6s %-6s %-8s %-16s %12s %12s %-8s %8" PRIu64 "  %s\n", rank, local, who,
               pr->host ? cmt__text(pr->host, host, sizeof host) : "?",
               cmt__bytes(pr->peak_live_bytes, a), cmt__duration(pr->peak_t_ns, b),
               pr->clean_exit ? "clean"
               : pr->signaled ? "signal"
                              : "no end",
               pr->failures, cmt__text(pr->path, file, sizeof file));
    }
    int several = 0;
    for (uint32_t r = 0; r < f->rank_count; r++)
        several |= f->ranks[r].process_count > 1;
    if (!several)
        return; /* one process per rank: the table above is the per-rank one */
    printf("\nranks (the highest peak of each rank's processes)\n");
    for (uint32_t r = 0; r < f->rank_count; r++)
        printf("  rank %-6d %12s  %u process%s\n", (int)f->ranks[r].rank,
               cmt__bytes(f->ranks[r].peak_live_bytes, a), f->ranks[r].process_count,
               f->ranks[r].process_count == 1 ? "" : "es");
}

static void text_gpus(const struct cmt_fleet *f)
{
    char a[32], b[32], c[32], key[128], name[128];
    printf("\nGPUs (processes of one host that name the same device; combined peak: at most)\n");
    for (uint32_t g = 0; g < f->gpu_count; g++) {
        const struct cmt_fleet_gpu *gpu = &f->gpus[g];
        printf("  %-20s %s, %s: %u process%s, sum of peaks %s, combined peak %s, %" PRIu64
               " out of memory\n",
               cmt__text(gpu->key, key, sizeof key),
               gpu->name ? cmt__text(gpu->name, name, sizeof name) : "?",
               cmt__bytes(gpu->total_bytes, a), gpu->member_count,
               gpu->member_count == 1 ? "" : "es", cmt__bytes(gpu->sum_of_peaks_bytes, b),
               cmt__bytes(gpu->combined_peak_bytes, c), gpu->oom_failures);
    }
}

static void json_process(struct cmt__json *j, const struct cmt_fleet *f, uint32_t p)
{
    const struct cmt_fleet_process *pr = &f->processes[p];
    cmt__json_object(j, NULL);
    cmt__fleet_json_who(j, pr);
    CMT__JSON_U64S(j, {"start_wall_ns", pr->start_wall_ns}, {"duration_ns", pr->duration_ns},
                   {"events", pr->events}, {"peak_live_bytes", pr->peak_live_bytes},
                   {"peak_t_ns", pr->peak_t_ns}, {"failures", pr->failures},
                   {"oom_failures", pr->oom_failures}, {"oom_episodes", pr->episode_count});
    if (pr->failure) {
        cmt__json_string(j, "failed", cmt_fleet_failure_name(pr->failure));
        cmt__json_u64(j, "failure_wall_ns", pr->start_wall_ns + pr->failure_t_ns);
    } else {
        cmt__json_null(j, "failed");
    }
    cmt__json_bool(j, "clean_exit", pr->clean_exit);
    cmt__json_bool(j, "damaged", pr->damage < 0);
    cmt__json_array(j, "devices");
    for (uint32_t d = 0; d < pr->device_count; d++) {
        const struct cmt_fleet_device *fd = &pr->devices[d];
        cmt__json_object(j, NULL);
        cmt__json_i64(j, "dev", fd->dev);
        if (fd->gpu)
            cmt__json_string(j, "gpu", fd->gpu);
        if (fd->name)
            cmt__json_string(j, "name", fd->name);
        CMT__JSON_U64S(j, {"total_bytes", fd->total_bytes},
                       {"peak_live_bytes", fd->peak_live_bytes}, {"peak_t_ns", fd->peak_t_ns},
                       {"oom_failures", fd->oom_failures});
        cmt__json_end_object(j);
    }
    cmt__json_end_array(j);
    cmt__json_end_object(j);
}

static void json_report(const struct cmt_fleet *f)
{
    struct cmt__json j;
    cmt__json_init(&j, stdout);
    cmt__json_object(&j, NULL);
    cmt__json_u64(&j, "traces", f->count);
    cmt__json_array(&j, "processes");
    for (uint32_t p = 0; p < f->count; p++)
        if (!f->processes[p].error)
            json_process(&j, f, p);
    cmt__json_end_array(&j);
    cmt__json_array(&j, "unreadable");
    for (uint32_t p = 0; p < f->count; p++)
        if (f->processes[p].error)
            cmt__json_string(&j, NULL, f->processes[p].path);
    cmt__json_end_array(&j);
    cmt__json_array(&j, "ranks");
    for (uint32_t r = 0; r < f->rank_count; r++) {
        cmt__json_object(&j, NULL);
        cmt__json_i64(&j, "rank", f->ranks[r].rank);
        CMT__JSON_U64S(&j, {"peak_live_bytes", f->ranks[r].peak_live_bytes},
                       {"pid", f->processes[f->ranks[r].process].pid},
                       {"processes", f->ranks[r].process_count});
        cmt__json_end_object(&j);
    }
    cmt__json_end_array(&j);
    const struct cmt_fleet_process *first = f->first_failure >= 0 ? &f->processes[f->first_failure]
                                                                  : NULL;
    cmt__json_i64_or_null(&j, "first_failing_rank", first ? first->rank : -1);
    if (first) {
        cmt__json_object(&j, "first_failure");
        cmt__fleet_json_who(&j, first);
        cmt__json_string(&j, "failed", cmt_fleet_failure_name(first->failure));
        cmt__json_u64(&j, "wall_ns", f->first_failure_wall_ns);
        cmt__json_u64(&j, "after_first_start_ns", f->first_failure_wall_ns - f->start_wall_ns);
        cmt__json_end_object(&j);
    } else {
        cmt__json_null(&j, "first_failure");
    }
    cmt__json_object(&j, "imbalance");
    cmt__json_string(&j, "over", f->rank_count ? "ranks" : "processes");
    cmt__json_u64(&j, "max_peak_bytes", f->peak_max_bytes);
    cmt__json_u64(&j, "median_peak_bytes", f->peak_median_bytes);
    if (f->peak_median_bytes)
        cmt__json_double(&j, "ratio", f->imbalance);
    else
        cmt__json_null(&j, "ratio");
    cmt__json_end_object(&j);
    cmt__json_array(&j, "gpus");
    for (uint32_t g = 0; g < f->gpu_count; g++) {
        const struct cmt_fleet_gpu *gpu = &f->gpus[g];
        cmt__json_object(&j, NULL);
        cmt__json_string(&j, "gpu", gpu->key);
        if (gpu->host)
            cmt__json_string(&j, "host", gpu->host);
        if (gpu->name)
            cmt__json_string(&j, "name", gpu->name);
        cmt__json_u64(&j, "total_bytes", gpu->total_bytes);
        cmt__json_array(&j, "pids");
        for (uint32_t m = 0; m < gpu->member_count; m++)
            cmt__json_u64(&j, NULL, f->processes[gpu->members[m]].pid);
        cmt__json_end_array(&j);
        CMT__JSON_U64S(&j, {"sum_of_peaks_bytes", gpu->sum_of_peaks_bytes},
                       {"combined_peak_bytes_at_most", gpu->combined_peak_bytes},
                       {"oom_failures", gpu->oom_failures});
        cmt__json_end_object(&j);
    }
    cmt__json_end_array(&j);
    if (cmt__fleet_ledger(f, &j) != 0)
        fprintf(stderr, "cumemtrace report: out of memory: a GPU's ledger is missing\n");
    cmt__fleet_phases(f, &j);
    cmt__json_end_object(&j);
    cmt__json_finish(&j);
}

int cmt__fleet_report(int argc, char **argv, const char *usage)
{
    struct cmt__fleet_args a;
    struct cmt_fleet f;
    int rc = cmt__fleet_parse_open(argc, argv, "report", usage, CMT__FA_JSON | CMT__FA_KEEP_READERS,
                                   &a, &f);
    if (rc >= 0)
        return rc;
    if (a.json) {
        json_report(&f);
    } else {
        text_summary(&f);
        text_processes(&f);
        text_gpus(&f);
        if (cmt__fleet_ledger(&f, NULL) != 0)
            fprintf(stderr, "cumemtrace report: out of memory: a GPU's ledger is missing\n");
        cmt__fleet_phases(&f, NULL);
    }
    rc = 0;
    for (uint32_t p = 0; p < f.count; p++) /* as one trace's report: partial figures */
        rc |= f.processes[p].error != 0;
    cmt_fleet_free(&f);
    return rc;
}
