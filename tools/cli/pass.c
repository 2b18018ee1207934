/* pass.c — the shared replay pass of the analysis commands. */
#include "pass.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cmt_error.h"
#include "output.h"
#include "progress.h"
#include "timeline.h"

int cmt__pass_run(struct cmt__pass *p, const char *cmd, const char *path, unsigned want,
                  struct cmt_timeline *timeline)
{
    if (cmt__pass_open(p, cmd, path) != 0)
        return 1;
    return cmt__pass_replay(p, want, timeline, NULL, 0);
}

int cmt__pass_open(struct cmt__pass *p, const char *cmd, const char *path)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->path = path;
    return cmt__open_trace(cmd, path, &p->reader) != 0 ? 1 : 0;
}

int cmt__pass_replay(struct cmt__pass *p, unsigned want, struct cmt_timeline *timeline,
                     const struct cmt_observer *extra, size_t nextra)
{
    const char *cmd = p->cmd, *path = p->path;
    p->timeline = timeline;
    if (cmt_replay_create(&p->replay, p->reader) != 0 ||
        (!p->alloc && cmt_alloc_create(&p->alloc) != 0) ||
        ((want & CMT__PASS_OOM) && cmt_oom_create(&p->oom) != 0)) {
        fprintf(stderr, "cumemtrace %s: %s: out of memory\n", cmd, path);
        cmt__pass_close(p);
        return 1;
    }
    struct cmt_observer obs[10]; /* progress, alloc, phases, oom, timeline, report, diff, 3 extra */
    size_t n = 0;
    struct cmt__progress progress; /* a line on a terminal when the pass takes a while */
    struct stat st;
    if (!p->quiet_progress && cmt__progress_wanted(stderr)) {
        cmt__progress_init(&progress, stderr, cmd, path, 1,
                           stat(path, &st) == 0 ? (uint64_t)st.st_size : 0, cmt__progress_now_ns());
        progress.stage = p->stage;
        progress.stages = p->stages;
        obs[n++] = cmt__progress_observer(&progress);
    }
    obs[n++] = cmt_alloc_observer(p->alloc);    /* before the observers that query it */
    obs[n++] = cmt_phases_observer(&p->phases); /* so is this (an event's phase) */
    if (p->oom) {
        cmt_oom_set_allocator(p->oom, p->alloc);
        obs[n++] = cmt_oom_observer(p->oom);
    }
    if (timeline) {
        cmt_timeline_set_allocator(timeline, p->alloc);
        obs[n++] = cmt_timeline_observer(timeline);
    }
    if (want & CMT__PASS_REPORT)
        obs[n++] = cmt_report_observer(&p->report);
    if (want & CMT__PASS_DIFF)
        obs[n++] = cmt_diff_observer(&p->diff);
    for (size_t i = 0; i < nextra && n < sizeof obs / sizeof *obs; i++)
        obs[n++] = extra[i];
    int rc = cmt_replay_run(p->replay, obs, n);
    if (n && obs[0].ctx == &progress)
        cmt__progress_done(&progress); /* also when damage stopped the replay */
    p->damage = rc;
    if (!p->quiet_damage)
        cmt__warn_damage(cmd, path, p->reader, rc);
    return 0;
}

int cmt__pass_status(const struct cmt__pass *p)
{
    return p->reader ? cmt__damage_status(p->reader, p->damage) : p->damage < 0;
}

void cmt__pass_close(struct cmt__pass *p)
{
    cmt_diff_side_free(&p->diff);
    cmt_phases_free(&p->phases);
    cmt_oom_destroy(p->oom);
    cmt_alloc_destroy(p->alloc);
    cmt_replay_destroy(p->replay);
    cmt_reader_close(p->reader);
    memset(p, 0, sizeof *p);
}

const char *cmt__device_label(const cmt_replay *rp, int32_t dev, char *buf, size_t size)
{
    const struct cmt_replay_device *d = cmt_replay_device(rp, dev);
    if (dev < 0)
        snprintf(buf, size, "device ?");
    else if (d && d->name) {
        char name[128];
        snprintf(buf, size, "GPU %d (%s)", dev, cmt__text(d->name, name, sizeof name));
    } else
        snprintf(buf, size, "GPU %d", dev);
    return buf;
}

int cmt__pass_from_args(struct cmt__pass *p, int argc, char **argv, const char *cmd,
                        const char *usage, unsigned want, int *json, int *status)
{
    const char *path;
    int rc = cmt__parse_json_file(argc, argv, cmd, usage, json, &path);
    if (rc) {
        *status = rc < 0 ? 0 : rc;
        return 0;
    }
    if (cmt__pass_run(p, cmd, path, want, NULL) != 0) {
        *status = 1;
        return 0;
    }
    return 1;
}
