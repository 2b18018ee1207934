/* fleet.h — many traces as one run: the processes of a parallel job (one trace per rank, on
 * one host or many) side by side.
 *
 * cmt_fleet_load() replays every trace once (in parallel, one thread per trace at a time) and
 * keeps a summary per process: who it was (pid, rank, local rank, world size, host, job id,
 * command line), its peaks (process-wide and per device), its out-of-memory episodes and when
 * it first failed, and a bounded timeline of its busiest device. From those it derives the
 * job's figures: per-rank peaks, the first failing rank, the imbalance, the devices shared by
 * several processes. cmt_fleet_held_by_others() then asks, for each episode, what every other
 * process on the same GPU held at that moment (a second, exact replay of those traces).
 *
 * Times: an event at t_ns of a trace happened at start_wall_ns + t_ns on the wall clock (used
 * across hosts) and at start_mono_ns + t_ns on its host's CLOCK_MONOTONIC (used between the
 * processes of one host: it never jumps). docs/analysis.md (Several traces) defines every
 * figure. Nothing here prints. */
#ifndef CMT_FLEET_H
#define CMT_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "allocator.h"
#include "first_failure.h" /* enum cmt_fleet_failure: when a process failed, which first */
#include "ledger.h"
#include "oom.h"
#include "phases.h"
#include "timeline.h"

/* One device as one process used it. */
struct cmt_fleet_device {
    int32_t dev;
    char *name; /* from its DEVICE record, or NULL */
    char *gpu;  /* the physical GPU, "<host>/<id>": see cmt_fleet_gpu */
    uint64_t total_bytes, peak_live_bytes, peak_t_ns;
    uint64_t alloc_calls, failures, oom_failures;
};

/* An out-of-memory episode of one process (oom.h), without its stacks. */
struct cmt_fleet_episode {
    struct cmt_oom_episode e; /* holders[].stack and .stack refer to the process's trace */
    uint64_t wall_ns, mono_ns;
};

struct cmt_fleet_process {
    char *path;
    int error;               /* 0, or why the trace could not be read at all (CMT_E*) */
    struct cmt_err open_err; /* with error: what cmt_err_message says of it */
    int damage;              /* the code that stopped the replay early (damage), 0 when sound */
    int have_process;        /* a PROCESS record was read: the fields below it are known */
    uint64_t pid, ppid;
    int32_t rank, local_rank, world_size; /* -1 unknown */
    char *host, *job_id, *exe;            /* NULL unknown */
    char *command;                        /* argv joined by spaces (at most 16 arguments) */
    char *visible_devices;                /* CUDA_VISIBLE_DEVICES at start, or NULL */
    uint64_t start_wall_ns, start_mono_ns;
    uint64_t events, duration_ns;
    uint64_t peak_live_bytes, peak_t_ns;
    uint64_t failures, oom_failures;
    int clean_exit, signaled;
    uint32_t signo;
    uint64_t signal_t_ns;
    struct cmt_fleet_device *devices;
    uint32_t device_count;
    struct cmt_fleet_episode *episodes;
    uint32_t episode_count;
    int failure;                       /* enum cmt_fleet_failure (cmt_process_failure) */
    uint64_t failure_t_ns;             /* when (trace time), with failure */
    int32_t busiest_dev;               /* the device of the highest peak (-1 none); its timeline: */
    struct cmt_timeline_point *series; /* `series_count` buckets of `series_width` ns */
    uint32_t series_count;
    uint64_t series_width;
    /* the program's ranges and their memory (phases.h), from the same replay; all zero when
     * the trace has no ranges */
    struct cmt_phases phases;
    /* with keep_readers: the trace's reader after the replay (tables and symbols known;
     * cmt_reader_rewind it to read again), closed by cmt_fleet_free; else NULL */
    cmt_reader *reader;
    /* with ledger_guess: the ledger taken in the same replay at the times the processes of
     * its host read before it suggest (ledger_times, from its start, ascending: their first
     * out-of-memory failures and ends) and at its own (the first failure of each device, its
     * end: cmt_ledger_options.own_times), with the replay and the allocator view it read (at
     * the trace's end); all NULL when it could not be read. cmt_fleet_ledger_at finds one. */
    cmt_ledger *ledger;
    cmt_replay *replay;
    cmt_alloc *alloc;
    uint64_t *ledger_times;
    size_t ledger_time_count;
};

/* A physical GPU that one or more processes used. Identity: the host name and the device's
 * entry in the process's CUDA_VISIBLE_DEVICES (its ordinal when that is unset or does not
 * name it), so processes of one host that name the same GPU are grouped. */
struct cmt_fleet_gpu {
    char *key; /* "<host>/<id>" */
    const char *host, *name;
    uint64_t total_bytes;
    uint32_t *members; /* process indexes */
    uint32_t member_count;
    uint64_t sum_of_peaks_bytes;
    /* the most the members held at once, from their timelines on a common clock: an upper
     * bound (each bucket's peak is taken as if it lasted the whole bucket) */
    uint64_t combined_peak_bytes;
    uint64_t oom_failures;
};

struct cmt_fleet_rank {
    int32_t rank;
    uint64_t peak_live_bytes; /* the highest of its processes' peaks */
    uint32_t process;         /* the process index of that peak */
    uint32_t process_count;   /* processes with this rank (more than 1: restarts) */
};

struct cmt_fleet {
    struct cmt_fleet_process *processes; /* sorted: rank (unknown last), host, pid, path */
    uint32_t count;
    struct cmt_fleet_rank *ranks; /* by rank */
    uint32_t rank_count;
    struct cmt_fleet_gpu *gpus; /* by key */
    uint32_t gpu_count;
    /* the process that failed first (cmt_first_failure_offer), -1 when none failed */
    int64_t first_failure;
    uint64_t first_failure_wall_ns;
    /* per-rank peaks (per-process when no rank is known): max, median, max / median */
    uint64_t peak_max_bytes, peak_median_bytes;
    double imbalance;                    /* 0 when the median is 0 */
    uint64_t start_wall_ns, end_wall_ns; /* earliest start, latest end */
};

/* The most traces whose readers cmt_fleet_load keeps (keep_readers): each holds its tables,
 * a decompression context and a chunk's buffer besides the file's mapping. */
#define CMT_FLEET_KEEP_READERS_MAX 256

#define CMT_FLEET_NO_SERIES UINT32_MAX

struct cmt_fleet_options {
    unsigned jobs; /* traces replayed at once; 0: the online processors */
    /* timeline buckets per process; 0: 512; CMT_FLEET_NO_SERIES: none (no timeline is
     * replayed; every series_count is 0 and a GPU's combined_peak_bytes is its bound, the
     * members' sum of peaks there) */
    uint32_t series_points;
    /* keep each trace's reader after its replay (cmt_fleet_process.reader), for a second
     * replay that needs the symbols at the trace's end without reading it whole again; only
     * up to CMT_FLEET_KEEP_READERS_MAX traces */
    int keep_readers;
    /* with keep_readers: take each process's ledger in its first replay at the moments its
     * GPU may be looked at (cmt_fleet_gpu_moment), guessed from the processes of its host
     * read before it: the first out-of-memory failure of each of their devices and their
     * ends, and the process's own first failures and end. The traces are read in the order
     * of their start (the first started is the one most likely to fail first); a guess that
     * proves wrong costs only the second replay cmt_fleet_ledger_at's caller makes without
     * it. */
    int ledger_guess;
};

/* Expands the inputs: a directory gives its *.cmt files (not its subdirectories), in name
 * order; a file is taken as it is. @return 0 with *paths (free each and the array) and *count
 * set; CMT_EIO with *bad the input that cannot be listed; CMT_ENOMEM. */
int cmt_fleet_paths(const char *const *inputs, size_t n, char ***paths, size_t *count,
                    const char **bad);

/* Replays every trace and fills *fleet. A trace that cannot be read is kept with its error
 * (the others are still read); a damaged one with what came before the damage.
 * @return 0, or CMT_ENOMEM (*fleet is then freed). */
int cmt_fleet_load(struct cmt_fleet *fleet, const char *const *paths, size_t n,
                   const struct cmt_fleet_options *options);
void cmt_fleet_free(struct cmt_fleet *fleet);

/* @return the index of the process with this rank that has the highest peak, -1 when none. */
int64_t cmt_fleet_find_rank(const struct cmt_fleet *fleet, int32_t rank);
/* The moment a GPU's processes are looked at together (the ledger's combined view): the
 * first out-of-memory failure on it (*oom_process its process), else the earliest end among
 * them (every one still in its trace), on the host's monotonic clock (*mono_ns).
 * @return 1, or 0 when the GPU has no member. */
int cmt_fleet_gpu_moment(const struct cmt_fleet *fleet, uint32_t g, uint64_t *mono_ns,
                         int64_t *oom_process);
/* The moment of process p's ledger (ledger_guess) at time t of its trace for device dev:
 * exactly what a replay of the trace to t with the ledger asked for t alone gives (the state
 * after every event at or before t). @return 1 with *m (NULL when the device was not seen by
 * then), or 0 when no such moment was taken. */
int cmt_fleet_ledger_at(const struct cmt_fleet_process *p, uint64_t t, int32_t dev,
                        const struct cmt_ledger_moment **m);
/* The device ordinal process p used GPU g as, or -1. */
int32_t cmt_fleet_gpu_dev(const struct cmt_fleet *fleet, uint32_t g, uint32_t p);

/* @return the GPU that device of process p is on, NULL when unknown. */
const struct cmt_fleet_gpu *cmt_fleet_gpu_of(const struct cmt_fleet *fleet, uint32_t p,
                                             int32_t dev);

/* What another process held on the GPU of an episode at its moment. */
struct cmt_fleet_holder {
    uint32_t process;    /* index into fleet->processes */
    int32_t dev;         /* its ordinal for that GPU */
    uint64_t held_bytes; /* live device memory + what its pools retained, at that moment */
};

/* The holders at one episode: list[0 .. count), most first. */
struct cmt_fleet_holders {
    struct cmt_fleet_holder *list;
    size_t count;
};

/* For every episode of every process ((*out)[p][e] for processes[p].episodes[e]): every other
 * process on the same GPU that was alive at that moment (host clock) and held memory there,
 * most first. Replays each holder's trace again (exact), once for all the episodes it is asked
 * about. @return 0 with *out (cmt_fleet_holders_free()); CMT_ENOMEM; CMT_EIO when a trace that
 * was read before cannot be opened again. */
int cmt_fleet_held_by_others(const struct cmt_fleet *fleet, struct cmt_fleet_holders ***out);
/* A replay of process p's trace the caller makes for its own ends (cmd_oom: its printing
 * pass), asked of it for every process in turn: with `held` (the observer that answers what p
 * held, to be run among the caller's; NULL when nobody asks p anything). @return 1 when it ran
 * p's trace with held (or chose not to read p, held NULL), 0 to have p read here, or a negative
 * code (CMT_EIO, CMT_ENOMEM) that stops cmt_fleet_held_by_others_in. */
typedef int (*cmt_fleet_replay_fn)(void *ctx, uint32_t p, const struct cmt_observer *held);
/* cmt_fleet_held_by_others, with the replays replay() makes: each trace read once for both. */
int cmt_fleet_held_by_others_in(const struct cmt_fleet *fleet, struct cmt_fleet_holders ***out,
                                cmt_fleet_replay_fn replay, void *ctx);
void cmt_fleet_holders_free(const struct cmt_fleet *fleet, struct cmt_fleet_holders **h);

/* Buckets on one clock for every process: `count` buckets of width_ns from fleet->start_wall_ns;
 * values[p * count + b] = the most process p held in bucket b (its busiest device; the value
 * it last had when no event fell in the bucket; 0 outside its life). @return 0 with *values
 * (free() it) and *width_ns; CMT_ENOMEM; CMT_EINVALID for count 0. */
int cmt_fleet_grid(const struct cmt_fleet *fleet, uint32_t count, uint64_t **values,
                   uint64_t *width_ns);

/* Pairs the processes of two fleets by rank (ranks known on both sides), else by their order.
 * @return 0 with *pairs ([2*i] index in a or -1, [2*i+1] index in b or -1; free() it) and
 * *count; CMT_ENOMEM. */
int cmt_fleet_pair(const struct cmt_fleet *a, const struct cmt_fleet *b, int64_t **pairs,
                   size_t *count);

#endif
