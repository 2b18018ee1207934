/*
 * whatif.h — replay a recorded tensor-level allocation stream through the
 * caching-allocator model under many settings, and pick one.
 *
 * Three steps, each usable on its own:
 *   1. cmt_whatif_stream_load: read a trace (format/reader.h) and keep the
 *      alloc/free and alloc_async/free_async calls of one device as model
 *      events (failed allocations too: the program asked for them), with their call sites, the device's capacity figures
 *      and a verdict on whether the trace already went through a caching
 *      allocator (then it is not a tensor-level stream).
 *   2. cmt_whatif_run: replay the stream once per setting (in parallel on
 *      several threads), each until its first OOM, collecting the figures
 *      PyTorch's memory_stats() would show.
 *   3. cmt_whatif_recommend: the setting without OOM with the lowest peak
 *      reserved, and the write-up author's rule made exact.
 * The CLI (`cumemtrace whatif`, cmd_whatif.c) prints the result as a table or
 * JSON. Nothing here writes to stdout or stderr.
 */
#ifndef CMT_WHATIF_H
#define CMT_WHATIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "caching_model.h"
#include "reader.h"
#include "replay.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One tensor-level event. `id` is dense from 0; a free names its alloc's id. */
struct cmt_whatif_event {
    uint64_t size;   /* bytes requested (alloc only) */
    uint64_t stream; /* CUstream handle; 0 for plain cuMemAlloc */
    uint64_t t_ns;   /* since the trace started */
    uint64_t seq;    /* the call's seq in the trace (as `cumemtrace dump` shows) */
    uint32_t id;     /* CMT_WHATIF_NEW_ID (push only): a failed request's own id, given later */
    uint32_t site;   /* index into cmt_whatif_stream.sites; 0 = unknown */
    uint8_t is_free;
    /* An allocation that failed in the recorded run (the program ran out of
   * memory there): still a request, replayed like the others. With is_free (id 0):
   * the allocator emptied its cache there (torch.cuda.empty_cache(): every free whole
   * segment released), as a --torch trace shows it; see cmt_whatif_event_empties_cache. */
    uint8_t failed;
};

/* Whether e is an empty_cache() of the recorded run rather than a tensor's free. */
static inline bool cmt_whatif_event_empties_cache(const struct cmt_whatif_event *e)
{
    return e->is_free && e->failed;
}

/* A failed request pushed with this id gets one of its own, after every other id, when the
 * stream is finished (cmt_whatif_stream_finish): it is never freed. */
#define CMT_WHATIF_NEW_ID UINT32_MAX

/* The events of a stream, encoded compactly (whatif_stream.c; about 5 bytes an event for what
 * a replay reads, and 4 more for seq, time and call site, which only reports read). Each byte
 * string is an append-only log whose newest CMT_WHATIF_LOG_TAIL bytes are in memory and older
 * ones in an unlinked temporary file (TMPDIR, else /tmp; in memory after all when no file can be
 * written), so a stream's memory does not grow with its length. Read the events through
 * cmt_whatif_cursor (in order) or cmt_whatif_stream_event (any one). Private. */
#define CMT_WHATIF_LOG_TAIL ((size_t)1 << 20)
struct cmt_whatif_log {
    uint8_t *tail; /* bytes spilled .. len */
    size_t tail_cap;
    size_t len;     /* bytes appended */
    size_t spilled; /* bytes before this offset are in the file */
    int fd;         /* the file; valid only when spilled > 0 */
    bool in_memory; /* no file could be written: the tail keeps every byte */
};
struct cmt_whatif_codec {
    struct cmt_whatif_log replay; /* per event: (id << 4 | flags), then size and stream */
    struct cmt_whatif_log detail; /* per event: seq and time deltas, then the site for allocs */
    struct cmt_whatif_log marks;  /* where every 256th event starts (struct cmt_whatif_mark) */
    uint64_t last_seq, last_t_ns, last_stream;
    uint32_t new_ids; /* failed requests pushed with CMT_WHATIF_NEW_ID */
    bool finished;    /* cmt_whatif_stream_finish ran */
};

struct cmt_whatif_stream {
    struct cmt_whatif_codec codec;
    size_t event_count;
    uint32_t id_count;
    uint32_t new_id_base; /* the id of the first CMT_WHATIF_NEW_ID request (when finished) */
    uint64_t max_request; /* the largest allocation asked for */
    /* Call-site texts ("vae_decode demo_diffusion.c:140"), sites[0] = "". */
    char **sites;
    uint32_t site_count;

    int32_t device;        /* the device whose calls were kept */
    char device_name[128]; /* "" when the trace does not name it */
    uint64_t device_total; /* 0 when unknown */
    uint64_t device_free;  /* free at first use; 0 when unknown */
    bool has_capacity;     /* device_total and device_free are known */

    /* What the trace held besides the kept stream. */
    uint64_t allocs, frees;       /* kept events */
    uint64_t failed_allocs;       /* allocations that returned an error (replayed: events
                                   * with .failed set, not counted in allocs) */
    uint64_t unmatched_frees;     /* frees of pointers not allocated in the trace */
    uint64_t empty_caches;        /* empty_cache() calls the trace shows (replayed) */
    uint64_t other_device_events; /* alloc/free on other devices (ignored) */

    /* A caching allocator (PyTorch's native one, or similar) sits between the
   * program and the driver: replaying would model caching twice. */
    bool caching_detected;
    char caching_reason[256];

    int damage; /* 0, or the reader's damage code (events before it are kept) */

    /* The PyTorch version the trace says the program used ("1.13.1"; "" when it does not say)
   * and where it says so: an ENV record PYTORCH_VERSION or PYTORCH_BUILD_VERSION (set by
   * PyTorch's and NVIDIA's container images), else a loaded module's path naming
   * torch-X.Y or pytorch-X.Y (pip and conda package directories); an allocator-level stream
   * looks at its ALLOCATOR record first (whatif_blocks.h). */
    char torch_version[32];
    char torch_version_source[64];
};

/**
 * Whether a PyTorch version string ("1.13.1", "2.0.1+cu118", "2.1.0a0+32f93b1") is one that
 * prints the older OOM message (CMT_MODEL_OOM_1X): before 2.1, which brought the 2.x wording.
 * @return true for 0.x, 1.x and 2.0.x; false for later ones and for text that is no version.
 */
bool cmt_whatif_torch_prints_1x(const char *version);

/* Errors: CMT_EWHATIF_* (and the model's codes) from cmt_error.h. */

/**
 * Extract the tensor-level stream from an open trace. The reader is
 * preloaded (so stacks can be named) and rewound by this call. When the trace
 * holds allocations on several devices, the device of the first successful
 * allocation is kept and the others are counted in other_device_events.
 * A damaged trace yields the events before the damage (damage set).
 * @return 0 and *out filled (free it with cmt_whatif_stream_free);
 *         CMT_EWHATIF_EMPTY; CMT_EMODEL_NOMEM; CMT_EINVALID.
 *         On error *err (which may be NULL) says why: print cmt_err_message.
 */
int cmt_whatif_stream_load(cmt_reader *reader, struct cmt_whatif_stream *out, struct cmt_err *err);

/**
 * The same, with more observers run in the same pass before the stream's own (a progress
 * line, say).
 * @return as cmt_whatif_stream_load.
 */
int cmt_whatif_stream_load_observed(cmt_reader *reader, struct cmt_whatif_stream *out,
                                    struct cmt_observer *extra, size_t extra_count,
                                    struct cmt_err *err);

/**
 * The same as a replay observer, so that the stream is collected in one pass with other
 * analyses: create a collector over an (uninitialised) stream, add cmt_whatif_observer(c) to
 * the observers of cmt_replay_run, then call cmt_whatif_collector_end with the run's result.
 * The stream keeps the replay's call-site indices (sites[i] names replay site i).
 * @return (create) 0, CMT_EINVALID, CMT_EMODEL_NOMEM;
 *         (end) as cmt_whatif_stream_load; the stream is freed on error.
 */
struct cmt_whatif_collector;
int cmt_whatif_collector_create(struct cmt_whatif_collector **out,
                                struct cmt_whatif_stream *stream);
struct cmt_observer cmt_whatif_observer(struct cmt_whatif_collector *c);
int cmt_whatif_collector_end(struct cmt_whatif_collector *c, int replay_rc, struct cmt_err *err);
void cmt_whatif_collector_destroy(struct cmt_whatif_collector *c);

/**
 * Build a stream from events already in memory (tests, benchmarks). Copies
 * the events; no sites; the capacity figures are taken as given (0: unknown).
 * @return 0; CMT_EINVALID (an id >= id_count, a free of an id that is
 *         not live); CMT_EMODEL_NOMEM.
 */
int cmt_whatif_stream_from_events(const struct cmt_whatif_event *events, size_t count,
                                  uint32_t id_count, uint64_t device_total, uint64_t device_free,
                                  struct cmt_whatif_stream *out);

/**
 * Append one event to a stream (a source of tensor events other than a trace — allocator-level
 * block events, tests — feeds a stream this way; start from a zeroed struct, or one
 * cmt_whatif_stream_from_events made, and call cmt_whatif_stream_finish at the end). A free
 * names the id of a live allocation (not checked here); CMT_WHATIF_NEW_ID is for failed
 * requests. Keeps event_count and max_request; id_count (ids are below it), allocs, frees and
 * the other fields are the caller's.
 * @return 0; CMT_EINVALID (a free of CMT_WHATIF_NEW_ID, an event after finish);
 *         CMT_EMODEL_NOMEM (the stream is unchanged).
 */
int cmt_whatif_stream_push(struct cmt_whatif_stream *stream, const struct cmt_whatif_event *e);

/**
 * Give the failed requests pushed with CMT_WHATIF_NEW_ID their ids (id_count onwards).
 * @return nothing; calling it twice does nothing more.
 */
void cmt_whatif_stream_finish(struct cmt_whatif_stream *stream);

/**
 * Decode event `index` (every field).
 * @return 0; CMT_EINVALID for an index >= event_count.
 */
int cmt_whatif_stream_event(const struct cmt_whatif_stream *stream, size_t index,
                            struct cmt_whatif_event *out);

/* Reads the events in order through a window of the replay bytes (its own, so cursors on
 * several threads read one stream at once). Only size, stream, id, is_free and failed are
 * decoded (what a replay needs); seq, t_ns and site read 0. */
#define CMT_WHATIF_WINDOW 16384
struct cmt_whatif_cursor {
    const struct cmt_whatif_log *log;
    size_t next;             /* the log offset the window ends at */
    const uint8_t *at, *end; /* the window's unread bytes */
    uint64_t stream;
    uint32_t new_id;
    int error; /* 0, or CMT_EIO: the temporary file could not be read back (the cursor ends) */
    uint8_t window[CMT_WHATIF_WINDOW];
};
void cmt_whatif_cursor_init(struct cmt_whatif_cursor *c, const struct cmt_whatif_stream *stream);
/** @return true and *out, or false after the last event (or a read error: c->error). */
bool cmt_whatif_cursor_next(struct cmt_whatif_cursor *c, struct cmt_whatif_event *out);

/** Bytes of the stream's encoding (in memory and in its temporary file; not the sites). */
size_t cmt_whatif_stream_bytes(const struct cmt_whatif_stream *stream);

/** Bytes of the stream's encoding held in memory (at most 3 x CMT_WHATIF_LOG_TAIL, unless no
 * temporary file could be written). */
size_t cmt_whatif_stream_memory(const struct cmt_whatif_stream *stream);

/** Free what a stream holds (not the struct itself). NULL is allowed. */
void cmt_whatif_stream_free(struct cmt_whatif_stream *stream);

/**
 * Run the caching-allocator detector over a stream's figures again (after
 * cmt_whatif_stream_from_events, which does not). Sets caching_detected and
 * caching_reason. Exposed for tests.
 */
void cmt_whatif_detect_caching(struct cmt_whatif_stream *stream);

/* One setting to replay: a value for each entry of CMT_MODEL_SETTINGS
 * (model_settings.h), in table order: max_split_size (bytes; UINT64_MAX =
 * unlimited), expandable_segments, roundup_power2_divisions (0 = off),
 * garbage_collection_threshold (0 = off). A zero field means PyTorch's
 * default; start from cmt_whatif_setting_default() to have the defaults
 * spelled out. */
struct cmt_whatif_setting {
    CMT_MODEL_SETTING_FIELDS
};

/**
 * Fill *setting with PyTorch's default for every setting (the table's
 * defaults: max_split_size UINT64_MAX, the others off).
 * @return nothing; setting must not be NULL.
 */
void cmt_whatif_setting_default(struct cmt_whatif_setting *setting);

/* What one replay found. */
struct cmt_whatif_result {
    struct cmt_whatif_setting setting;
    int error; /* 0, or a CMT_E* code that stopped the replay */
    bool oom;
    size_t oom_event; /* index in the stream of the failing alloc */
    struct cmt_model_oom oom_info;
    size_t events_replayed;
    uint64_t peak_reserved, peak_allocated;
    /* At the moment reserved first reached its peak. */
    uint64_t allocated_at_peak, inactive_split_at_peak;
    uint64_t alloc_retries, device_alloc_calls, device_free_calls;
    uint64_t oversize_segments;
    double seconds; /* wall time of this replay */
    /* The model's statistics where the replay stopped (PyTorch's memory_stats()). */
    struct cmt_model_stats stats;
    /* The address policy the figures above were replayed under. */
    enum cmt_model_address_policy address_policy;
    /* The other policy would have placed some device allocation elsewhere before the replay
     * stopped (cmt_model_addresses_diverged): ties between equal-size free blocks may break
     * differently, so the other policy's replay may differ. */
    bool addresses_diverged;
    /* Replayed under the other policy as well (cmt_whatif_device.check_other_policy, and the
     * addresses diverged); then its verdict, where it stopped and its peak reserved. */
    bool other_checked;
    bool other_oom;
    size_t other_oom_event;
    uint64_t other_peak_reserved;
    /* other_checked and the OOM verdict differs between the policies: whether this setting
     * avoids the OOM depends on the driver's address reuse, which is not documented. */
    bool borderline;
};

/* The device and the options every replay of a sweep shares. */
struct cmt_whatif_device {
    uint64_t capacity;     /* bytes the allocator can obtain (required, > 0) */
    uint64_t device_total; /* the device's memory; 0 or less than capacity: = capacity */
    /* torch.cuda.set_per_process_memory_fraction: the cap is fraction x device_total, refused
     * before any device call; 0: none. As in PyTorch, garbage_collection_threshold acts only
     * with a fraction. */
    double memory_fraction;
    enum cmt_model_address_policy address_policy; /* of the results' figures */
    /* Where the addresses diverged, replay under the other policy too (other_*, borderline). */
    bool check_other_policy;
};

/**
 * Replay the stream once per setting on the device (copied per replay). Each replay stops at
 * its first OOM (PyTorch raises there). Settings run on up to `threads` threads (0: the number
 * of online CPUs); a replay keeps one handle per stream id, so its memory is the model's live
 * set plus 8 bytes an id, whatever the stream's length.
 * @return 0 (every result filled; per-setting failures are in .error);
 *         CMT_EINVALID for bad arguments (a fraction outside [0, 1], an unknown policy).
 */
int cmt_whatif_run_on(const struct cmt_whatif_stream *stream, const struct cmt_whatif_device *dev,
                      const struct cmt_whatif_setting *settings, size_t count, unsigned threads,
                      struct cmt_whatif_result *results);

/**
 * cmt_whatif_run_on with no fraction, never-reused addresses and no check of the other policy
 * (so a garbage_collection_threshold has no effect, as in PyTorch without a fraction).
 * @return as cmt_whatif_run_on.
 */
int cmt_whatif_run(const struct cmt_whatif_stream *stream, uint64_t capacity, uint64_t device_total,
                   const struct cmt_whatif_setting *settings, size_t count, unsigned threads,
                   struct cmt_whatif_result *results);

struct cmt_whatif_recommendation {
    /* Index of the setting without OOM with the lowest peak reserved (ties:
   * the one closest to PyTorch's defaults, then the larger split size; a borderline
   * setting only when no setting avoids the OOM under both address policies);
   * -1 when every setting ran out of memory. */
    long best;
    /* The author's rule: the smallest allocation that failed in any setting
   * (its segment size, PyTorch's "Tried to allocate"; 0 when none failed),
   * the largest finite max_split_size among the settings tried that is at or
   * below it and had no OOM (-1 when none), and the exact bound: the largest
   * whole MiB value at or below it (0 when it is not above 20 MiB, as c10 requires). With such a value the
   * failing allocation's cached block is oversize, so smaller tensors never
   * split it; whether that avoids every OOM is for a replay to say. */
    uint64_t smallest_failing_request;
    long rule;
    uint64_t exact_max_split_mb;
};

/**
 * Pick the recommendation from finished results.
 * @return nothing; every pointer must be valid.
 */
void cmt_whatif_recommend(const struct cmt_whatif_result *results, size_t count,
                          struct cmt_whatif_recommendation *out);

/**
 * The default max_split_size_mb ladder around a failing request: the
 * multiple of a step (1 GiB for requests >= 3 GiB, smaller below) at or
 * below it, two steps down and two up (values up to 20 MiB dropped: c10 wants > 20), ascending.
 * For the write-up's 6.18 GiB: 4096, 5120, 6144, 7168, 8192.
 * @return the number of values written to mb (at most 5).
 */
size_t cmt_whatif_default_ladder(uint64_t failing_request, uint64_t mb[5]);

/**
 * The default max_split_size list when the user gives none: unlimited, then
 * the ladder (cmt_whatif_default_ladder) around the request the unlimited
 * replay of `base` (its other fields) fails on, or around the largest
 * request when it does not fail.
 * @return the number of split sizes written to split (bytes; UINT64_MAX =
 *         unlimited; at most 6).
 */
size_t cmt_whatif_default_splits(const struct cmt_whatif_stream *stream, uint64_t capacity,
                                 uint64_t device_total, const struct cmt_whatif_setting *base,
                                 uint64_t split[6]);

/**
 * The same on a device with a fraction and an address policy (cmt_whatif_run_on).
 * @return as cmt_whatif_default_splits.
 */
size_t cmt_whatif_default_splits_on(const struct cmt_whatif_stream *stream,
                                    const struct cmt_whatif_device *dev,
                                    const struct cmt_whatif_setting *base, uint64_t split[6]);

/**
 * Write a setting as a PYTORCH_CUDA_ALLOC_CONF value ("" for the defaults),
 * e.g. "max_split_size_mb:6144,expandable_segments:True".
 * @return the length of the full string (as snprintf).
 */
int cmt_whatif_setting_conf(const struct cmt_whatif_setting *setting, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* CMT_WHATIF_H */
