/* interpose/launch.c: the launcher's variables (rank, local rank, world size, job id) and the
 * output pattern's %r, %l, %h. Criterion runs each test in a process of its own. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch.h"

static void clear(void)
{
#define CMT__UNSET(var) unsetenv(#var);
    CMT_RANK_VARS(CMT__UNSET)
    CMT_LOCAL_RANK_VARS(CMT__UNSET)
    CMT_WORLD_SIZE_VARS(CMT__UNSET)
    CMT_JOB_ID_VARS(CMT__UNSET)
#undef CMT__UNSET
}

TestSuite(launch, .init = clear);

Test(launch, nothing_set_is_unknown)
{
    cmt__launch_load();
    cr_assert_eq(cmt__launch.rank, -1);
    cr_assert_eq(cmt__launch.local_rank, -1);
    cr_assert_eq(cmt__launch.world_size, -1);
    cr_assert_str_eq(cmt__launch.job_id, "");
    char out[32];
    cr_assert_eq(cmt__launch_expand('r', out, sizeof out), 4);
    cr_assert_str_eq(out, "none");
    cmt__launch_expand('l', out, sizeof out);
    cr_assert_str_eq(out, "none");
}

Test(launch, torchrun_s_variables)
{
    setenv("RANK", "12", 1);
    setenv("LOCAL_RANK", "4", 1);
    setenv("WORLD_SIZE", "16", 1);
    setenv("TORCHELASTIC_RUN_ID", "abc", 1);
    cmt__launch_load();
    cr_assert_eq(cmt__launch.rank, 12);
    cr_assert_eq(cmt__launch.local_rank, 4);
    cr_assert_eq(cmt__launch.world_size, 16);
    cr_assert_str_eq(cmt__launch.job_id, "abc");
    char out[32];
    cmt__launch_expand('r', out, sizeof out);
    cr_assert_str_eq(out, "12");
    cmt__launch_expand('l', out, sizeof out);
    cr_assert_str_eq(out, "4");
    cr_assert_eq(cmt__launch_expand('x', out, sizeof out), -1);
}

Test(launch, the_first_variable_with_a_number_wins)
{
    setenv("RANK", "", 1);                      /* empty: passed over */
    setenv("OMPI_COMM_WORLD_RANK", "seven", 1); /* not a number: passed over */
    setenv("PMI_RANK", "-3", 1);                /* negative: passed over */
    setenv("SLURM_PROCID", "5", 1);
    setenv("SLURM_LOCALID", "1", 1);
    setenv("SLURM_NTASKS", "8", 1);
    setenv("SLURM_JOB_ID", "991", 1);
    setenv("TORCHELASTIC_RUN_ID", "later", 1);
    cmt__launch_load();
    cr_assert_eq(cmt__launch.rank, 5);
    cr_assert_eq(cmt__launch.local_rank, 1);
    cr_assert_eq(cmt__launch.world_size, 8);
    cr_assert_str_eq(cmt__launch.job_id, "991", "SLURM_JOB_ID comes first");
}

Test(launch, torchelastic_s_default_run_id_is_no_id)
{
    setenv("TORCHELASTIC_RUN_ID", "none", 1);
    cmt__launch_load();
    cr_assert_str_eq(cmt__launch.job_id, "");
}

Test(launch, the_host_is_the_host_name_without_slashes)
{
    cmt__launch_load();
    char host[256] = "", out[256];
    gethostname(host, sizeof host - 1);
    cmt__launch_expand('h', out, sizeof out);
    for (char *c = host; *c; c++)
        if (*c == '/')
            *c = '_';
    cr_assert_str_eq(out, host);
    strcpy(cmt__launch.host, "a/b");
    cmt__launch_expand('h', out, 3); /* cut to the room there is */
    cr_assert_str_eq(out, "a_");
}
