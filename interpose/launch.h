/* launch.h — where this process stands in a parallel job, read from the environment its
 * launcher (torchrun, mpirun, srun, ...) set: rank, local rank, world size, job id, host.
 * Read once in the constructor (cmt__config_load); the trace's PROCESS record carries it and
 * the output pattern's %r, %l and %h name it. */
#ifndef CMT_LAUNCH_H
#define CMT_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

/* The variables, in the order they are tried: the first one set to a number wins. One table
 * each; docs/capture.md (Ranks) lists them from here. */
#define CMT_RANK_VARS(X) \
    X(RANK)              \
    X(OMPI_COMM_WORLD_RANK) X(PMI_RANK) X(PMIX_RANK) X(MV2_COMM_WORLD_RANK) X(SLURM_PROCID)
#define CMT_LOCAL_RANK_VARS(X)    \
    X(LOCAL_RANK)                 \
    X(OMPI_COMM_WORLD_LOCAL_RANK) \
    X(MPI_LOCALRANKID) X(MV2_COMM_WORLD_LOCAL_RANK) X(PALS_LOCAL_RANKID) X(SLURM_LOCALID)
#define CMT_WORLD_SIZE_VARS(X) \
    X(WORLD_SIZE)              \
    X(OMPI_COMM_WORLD_SIZE) X(PMI_SIZE) X(MV2_COMM_WORLD_SIZE) X(SLURM_NTASKS)
/* Job ids are strings; TORCHELASTIC_RUN_ID's default value "none" is no id. */
#define CMT_JOB_ID_VARS(X) \
    X(SLURM_JOB_ID)        \
    X(PBS_JOBID) X(LSB_JOBID) X(FLUX_JOB_ID) X(TORCHELASTIC_RUN_ID)

#define CMT__JOB_ID_MAX 128
#define CMT__HOST_MAX 256

struct cmt__launch {
    int32_t rank, local_rank, world_size; /* -1 unknown */
    char job_id[CMT__JOB_ID_MAX];         /* "" unknown */
    char host[CMT__HOST_MAX];             /* gethostname(), "" when it failed */
};
extern struct cmt__launch cmt__launch;

/* Fills cmt__launch from the environment and the host name. A variable set to something that
 * is not a number 0..INT32_MAX is passed over (the next one is tried). */
void cmt__launch_load(void);

/* The value %r (rank), %l (local rank) or %h (host) stands for in an output pattern: the
 * number, "none" when unknown; the host with '/' made '_'. @return what was written (never
 * more than size - 1), or -1 for another letter. */
int cmt__launch_expand(char letter, char *out, size_t size);

#endif
