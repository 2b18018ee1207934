/* progress.c — see progress.h. */
#include "progress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output.h"

void cmt__progress_init(struct cmt__progress *p, FILE *f, const char *cmd, const char *path,
                        int terminal, uint64_t total, uint64_t now_ns)
{
    memset(p, 0, sizeof *p);
    p->f = f;
    p->cmd = cmd;
    p->path = path;
    p->terminal = terminal;
    p->total = total;
    p->start_ns = now_ns;
    p->next_ns = now_ns + CMT__PROGRESS_DELAY_NS;
    p->countdown = 1;
}

const char *cmt__progress_text(char *buf, size_t size, const char *cmd, const char *path, int stage,
                               int stages, uint64_t done, uint64_t total, uint64_t elapsed_ns)
{
    char a[32], b[32], bar[24], name[48];
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (stages > 1)
        snprintf(name, sizeof name, "%.20s pass %d of %d", base, stage, stages);
    else
        snprintf(name, sizeof name, "%.20s", base);
    base = name;
    if (size > 101)
        size = 101; /* 100 columns and the NUL */
    if (total) {
        if (done > total)
            done = total;
        int percent = (int)(done * 100 / total), filled = (int)(done * 20 / total);
        memset(bar, '#', (size_t)filled);
        memset(bar + filled, ' ', (size_t)(20 - filled));
        bar[20] = 0;
        snprintf(buf, size, "cumemtrace %s: %.34s %3d%% [%s] %s of %s, %.1f s", cmd, base, percent,
                 bar, cmt__bytes(done, a), cmt__bytes(total, b), (double)elapsed_ns / 1e9);
    } else {
        snprintf(buf, size, "cumemtrace %s: %.34s %s read, %.1f s", cmd, base, cmt__bytes(done, a),
                 (double)elapsed_ns / 1e9);
    }
    return buf;
}

int cmt__progress_update(struct cmt__progress *p, uint64_t done, uint64_t now_ns)
{
    if (!p->terminal || now_ns < p->next_ns)
        return 0;
    char line[128];
    cmt__progress_text(line, sizeof line, p->cmd, p->path, p->stage, p->stages, done, p->total,
                       now_ns - p->start_ns);
    fprintf(p->f, "\r%s\033[K", line); /* over the last line, the rest of it cleared */
    fflush(p->f);
    p->shown = 1;
    p->next_ns = now_ns + CMT__PROGRESS_EVERY_NS;
    return 1;
}

void cmt__progress_done(struct cmt__progress *p)
{
    if (p->shown) {
        fputs("\r\033[K", p->f);
        fflush(p->f);
        p->shown = 0;
    }
}

uint64_t cmt__progress_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int cmt__progress_wanted(FILE *f)
{
    const char *env = getenv("CUMEMTRACE_PROGRESS");
    return isatty(fileno(f)) && !(env && !strcmp(env, "0"));
}

static unsigned step(struct cmt_observer *self, const cmt_replay *rp,
                     const struct cmt_replay_step *st)
{
    (void)rp;
    struct cmt__progress *p = self->ctx;
    if (--p->countdown == 0) {
        p->countdown = 4096;
        cmt__progress_update(p, st->rec.offset, cmt__progress_now_ns());
    }
    return CMT_OBSERVE_ALL;
}

static int finish(struct cmt_observer *self, const cmt_replay *rp)
{
    (void)rp;
    cmt__progress_done(self->ctx);
    return 0;
}

struct cmt_observer cmt__progress_observer(struct cmt__progress *p)
{
    return (struct cmt_observer){
        .wants = CMT_OBSERVE_ALL, .step = step, .finish = finish, .ctx = p};
}
