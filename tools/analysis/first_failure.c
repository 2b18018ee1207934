/* first_failure.c — when a process failed and which failed first (first_failure.h). */
#include "first_failure.h"

static unsigned signal_step(struct cmt_observer *self, const cmt_replay *rp,
                            const struct cmt_replay_step *st)
{
    (void)rp;
    struct cmt_signal_seen *s = self->ctx;
    if (st->rec.type == CMT_REC_SIGNAL && !s->seen) {
        s->t_ns = st->rec.u.signal.t_ns;
        s->seen = 1;
    }
    return CMT_OBSERVE_RECORD;
}

struct cmt_observer cmt_signal_observer(struct cmt_signal_seen *seen)
{
    return (struct cmt_observer){.wants = CMT_OBSERVE_RECORD, .step = signal_step, .ctx = seen};
}

int cmt_process_failure(const cmt_oom *oom, const struct cmt_replay_totals *totals,
                        const struct cmt_signal_seen *signal, uint64_t *t_ns)
{
    uint32_t n = oom ? cmt_oom_count(oom) : 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct cmt_oom_episode *e = cmt_oom_episode(oom, i);
        if (e->fatal) {
            *t_ns = e->t_ns;
            return CMT_FLEET_FAILED_OOM;
        }
    }
    if (totals && totals->signaled) {
        *t_ns = signal && signal->seen ? signal->t_ns : totals->last_t_ns;
        return CMT_FLEET_FAILED_SIGNAL;
    }
    return CMT_FLEET_NO_FAILURE;
}

const char *cmt_fleet_failure_name(int failure)
{
    return failure == CMT_FLEET_FAILED_OOM      ? "out_of_memory"
           : failure == CMT_FLEET_FAILED_SIGNAL ? "signal"
                                                : "none";
}

void cmt_first_failure_init(struct cmt_first_failure *first)
{
    *first = (struct cmt_first_failure){.index = -1, .rank = -1};
}

/* Unknown ranks (-1) after every known one. */
static int rank_before(int32_t a, int32_t b)
{
    if (a < 0 || b < 0)
        return a >= 0 && b < 0;
    return a < b;
}

int cmt_first_failure_offer(struct cmt_first_failure *first, int64_t index,
                            const struct cmt_failure_candidate *c)
{
    if (c->failure == CMT_FLEET_NO_FAILURE || !c->have_start)
        return 0;
    /* a trace's times are untrusted: saturate rather than wrap */
    uint64_t when = c->start_wall_ns > UINT64_MAX - c->t_ns ? UINT64_MAX
                                                            : c->start_wall_ns + c->t_ns;
    if (first->index >= 0) {
        int earlier = when < first->wall_ns ||
                      (when == first->wall_ns && (rank_before(c->rank, first->rank) ||
                                                  (c->rank == first->rank && c->pid < first->pid)));
        if (!earlier)
            return 0;
    }
    *first = (struct cmt_first_failure){index, when, c->rank, c->pid, c->failure};
    return 1;
}
