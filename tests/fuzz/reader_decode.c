/* reader_decode.c — fuzz target: any bytes given to the reader and the replay engine (and every
 * analysis on top: oom, timeline, report, diff, fragmentation, whatif's stream; with
 * CMT_FUZZ_CLI the commands and their printers too) must neither crash nor leak nor hang.
 * Built as a libFuzzer target with -DCMT_FUZZ=ON (clang), and always as a corpus replayer.
 *
 * Two kinds of input (fuzz_wrap.h). One that starts like a trace (the magic's first byte, 0x89)
 * is read as a whole file: headers, chunk framing, compression, damage. Any other is taken as
 * the records of one chunk (after its first byte), compressed into a well-formed trace. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "allocator.h"
#include "cmt_format.h"
#include "diff.h"
#include "fuzz_wrap.h"
#include "oom.h"
#include "reader.h"
#include "replay.h"
#include "report.h"
#include "timeline.h"
#include "varint.h"
#include "whatif.h"
#include "whatif_blocks.h"

#ifdef CMT_FUZZ_CLI
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "commands.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every analysis as an observer of one replay: oom, timeline, report, diff and whatif's stream
 * collection (the pass the CLI runs), then what the commands ask of the finished state. */
static void analyses(cmt_reader *r)
{
    cmt_replay *rp = NULL;
    cmt_oom *oom = NULL;
    struct cmt_whatif_collector *wc = NULL;
    struct cmt_whatif_stream stream;
    struct cmt_timeline tl;
    struct cmt_report report;
    struct cmt_diff_side side = {0};
    cmt_alloc *alloc = NULL;
    struct cmt_whatif_block_collector *bc = NULL;
    struct cmt_whatif_stream blocks;
    struct cmt_whatif_selfcheck check = {0};
    cmt_timeline_init(&tl, 16);
    if (cmt_replay_create(&rp, r) == 0 && cmt_oom_create(&oom) == 0 &&
        cmt_whatif_collector_create(&wc, &stream) == 0 && cmt_alloc_create(&alloc) == 0 &&
        cmt_whatif_block_collector_create(&bc, &blocks, &check) == 0) {
        cmt_oom_set_allocator(oom, alloc);
        cmt_timeline_set_allocator(&tl, alloc);
        struct cmt_observer obs[] = {cmt_alloc_observer(alloc),    cmt_oom_observer(oom),
                                     cmt_timeline_observer(&tl),   cmt_report_observer(&report),
                                     cmt_diff_observer(&side),     cmt_whatif_observer(wc),
                                     cmt_whatif_block_observer(bc)};
        int rc = cmt_replay_run(rp, obs, sizeof obs / sizeof *obs);
        struct cmt_err err = {0};
        if (cmt_whatif_collector_end(wc, rc, &err) == 0)
            cmt_whatif_stream_free(&stream);
        if (cmt_whatif_block_collector_end(bc, rc, &err) == 0) {
            if (blocks.event_count < 100000) /* the model's replay is not what is fuzzed here */
                cmt_whatif_selfcheck_run(&blocks, 1ull << 34, 1ull << 34, &check);
            cmt_whatif_stream_free(&blocks);
        }
        for (size_t i = 0; i < cmt_alloc_device_count(alloc); i++) {
            struct cmt_alloc_view *v = malloc(sizeof *v);
            const struct cmt_alloc_device *ad = cmt_alloc_device_at(alloc, i);
            if (v && cmt_alloc_view(alloc, rp, ad->allocator, ad->dev, 1u << 20, v) == 0)
                cmt_alloc_view_group(r, v);
            free(v);
        }
        for (uint32_t s = 0; s < cmt_replay_device_count(rp); s++) {
            const struct cmt_replay_device *d = cmt_replay_device_slot(rp, s);
            struct cmt_fragmentation f;
            if (d) {
                int now = cmt_replay_fragmentation(rp, d->dev, &f);
                int peak = cmt_replay_peak_fragmentation(rp, d->dev, &f);
                if ((now && now != CMT_ENOMEM) || (peak && peak != CMT_ENOMEM))
                    abort(); /* the measures fail only when memory runs out */
            }
        }
        struct cmt_site_delta *sites = NULL;
        size_t nsites = 0;
        cmt_diff_sites(&side, &side, &sites, &nsites);
        free(sites);
        char frame[256];
        for (uint32_t i = 0; i < cmt_oom_count(oom); i++)
            cmt_reader_format_frame(r, cmt_oom_episode(oom, i)->stack, frame, sizeof frame);
    }
    cmt_whatif_collector_destroy(wc);
    cmt_whatif_block_collector_destroy(bc);
    cmt_whatif_selfcheck_free(&check);
    cmt_alloc_destroy(alloc);
    cmt_diff_side_free(&side);
    cmt_timeline_free(&tl);
    cmt_oom_destroy(oom);
    cmt_replay_destroy(rp);
}

#ifdef CMT_FUZZ_CLI
/* The commands themselves on the input, their output to /dev/null: every printer (text, JSON,
 * CSV, SVG) over what the analyses returned. */
static void commands(const uint8_t *data, size_t size)
{
    static FILE *quiet_err;
    static int quiet = -1;
    if (quiet < 0) { /* once: stdout and stderr of the commands go nowhere */
        quiet = open("/dev/null", O_WRONLY);
        if (quiet >= 0 && !getenv("CMT_FUZZ_VERBOSE")) {
            dup2(quiet, 1);
            quiet_err = fdopen(dup(quiet), "w");
        }
    }
    int fd = memfd_create("fuzz.cmt", 0);
    if (fd < 0)
        return;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    /* the commands' stderr stream, not fd 2: a sanitizer's report still reaches the terminal */
    FILE *err = stderr;
    stderr = quiet_err ? quiet_err : err;
    struct {
        int (*fn)(int, char **);
        const char *argv[12];
    } runs[] = {
        {cmt_cmd_report, {"report", path}},
        {cmt_cmd_report, {"report", "--json", path}},
        {cmt_cmd_oom, {"oom", path}},
        {cmt_cmd_oom, {"oom", "--json", path}},
        {cmt_cmd_timeline, {"timeline", path}},
        {cmt_cmd_timeline, {"timeline", "--csv", path}},
        {cmt_cmd_timeline, {"timeline", "--json", path}},
        {cmt_cmd_timeline, {"timeline", "--svg", "/dev/null", path}},
        {cmt_cmd_diff, {"diff", path, path}},
        {cmt_cmd_diff, {"diff", "--json", path, path}},
        {cmt_cmd_dump, {"dump", "--all", "--stacks", path}},
        {cmt_cmd_html, {"html", "-o", "/dev/null", path}},
        {cmt_cmd_html, {"html", "-o", "/dev/null", "--no-whatif", path, path}},
        {cmt_cmd_whatif,
         {"whatif", "--jobs", "1", "--max-split-size-mb", "inf,64", "--capacity", "1GiB", path}},
        {cmt_cmd_whatif, {"whatif", "--json", "--jobs", "1", "--max-split-size-mb", "inf", path}},
        {cmt_cmd_export, {"export", "-f", "perfetto", "--min-slice", "0", "-o", "/dev/null", path}},
        {cmt_cmd_export, {"export", "-f", "collapsed", "-o", "/dev/null", path}},
        {cmt_cmd_export, {"export", "-f", "memory-viz", "-o", "/dev/null", path}},
        {cmt_cmd_export, {"export", "-f", "csv", "-o", "/dev/null", path}},
        {cmt_cmd_export, {"export", "-f", "jsonl", "--table", "sites", "-o", "/dev/null", path}},
        {cmt_cmd_export, {"export", "-f", "csv", "--table", "processes", "-o", "/dev/null", path}},
    };
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        int argc = 0;
        while (runs[i].argv[argc])
            argc++;
        runs[i].fn(argc, (char **)runs[i].argv);
        fflush(stdout);
        fflush(stderr);
    }
    stderr = err;
    close(fd);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *wrapped = cmt_fuzz_wrap(&data, &size);
    if (!size)
        return 0;
    cmt_reader *r;
    if (cmt_reader_open_memory(&r, data, size) == 0) {
        analyses(r);
        cmt_reader_close(r);
    }
#ifdef CMT_FUZZ_CLI
    commands(data, size);
#endif
    free(wrapped);
    return 0;
}
