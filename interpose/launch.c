/* launch.c — the launcher's environment: rank, local rank, world size, job id, host. */
#include "launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cmt__launch cmt__launch = {-1, -1, -1, "", ""};

/* @return the value of the first variable of names[] that holds a number 0..INT32_MAX, -1. */
static int32_t first_number(const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *s = getenv(names[i]);
        char *end;
        if (!s || *s < '0' || *s > '9')
            continue;
        long long v = strtoll(s, &end, 10);
        if (!*end && v >= 0 && v <= INT32_MAX)
            return (int32_t)v;
    }
    return -1;
}

#define CMT__NAME(var) #var,
static const char *const rank_vars[] = {CMT_RANK_VARS(CMT__NAME)};
static const char *const local_rank_vars[] = {CMT_LOCAL_RANK_VARS(CMT__NAME)};
static const char *const world_size_vars[] = {CMT_WORLD_SIZE_VARS(CMT__NAME)};
static const char *const job_id_vars[] = {CMT_JOB_ID_VARS(CMT__NAME)};
#undef CMT__NAME
#define CMT__N(a) (sizeof a / sizeof *a)

void cmt__launch_load(void)
{
    cmt__launch.rank = first_number(rank_vars, CMT__N(rank_vars));
    cmt__launch.local_rank = first_number(local_rank_vars, CMT__N(local_rank_vars));
    cmt__launch.world_size = first_number(world_size_vars, CMT__N(world_size_vars));
    cmt__launch.job_id[0] = 0;
    for (size_t i = 0; i < CMT__N(job_id_vars) && !cmt__launch.job_id[0]; i++) {
        const char *s = getenv(job_id_vars[i]);
        if (s && *s && strcmp(s, "none"))
            snprintf(cmt__launch.job_id, sizeof cmt__launch.job_id, "%s", s);
    }
    if (gethostname(cmt__launch.host, sizeof cmt__launch.host - 1) != 0)
        cmt__launch.host[0] = 0;
    cmt__launch.host[sizeof cmt__launch.host - 1] = 0;
}

int cmt__launch_expand(char letter, char *out, size_t size)
{
    int32_t v;
    if (letter == 'r' || letter == 'l')
        v = letter == 'r' ? cmt__launch.rank : cmt__launch.local_rank;
    else if (letter == 'h') {
        size_t n = 0;
        for (const char *h = cmt__launch.host[0] ? cmt__launch.host : "unknown"; *h && n + 1 < size;
             h++)
            out[n++] = *h == '/' ? '_' : *h;
        if (size)
            out[n] = 0;
        return (int)n;
    } else
        return -1;
    int n = v < 0 ? snprintf(out, size, "none") : snprintf(out, size, "%d", (int)v);
    return n < 0 ? 0 : (size_t)n >= size ? (int)size - 1 : n;
}
