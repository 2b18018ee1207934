/* export_partitioned.c — fuzz target: `export --partitioned` of any input (fuzz_wrap.h: a whole
 * file, or the records of one chunk) writes its tables into a fresh temporary directory, in
 * CSV, and in JSON lines and Parquet with the events table, and must neither crash nor leak
 * nor write outside that directory. Built as a libFuzzer target with -DCMT_FUZZ=ON (clang), and always
 * as a corpus replayer. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "commands.h"
#include "fuzz_wrap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *quiet_err;
    static int quiet = -1;
    if (quiet < 0) { /* once: what the command prints goes nowhere */
        quiet = open("/dev/null", O_WRONLY);
        if (quiet >= 0 && !getenv("CMT_FUZZ_VERBOSE")) {
            dup2(quiet, 1);
            quiet_err = fdopen(dup(quiet), "w");
        }
    }
    uint8_t *wrapped = cmt_fuzz_wrap(&data, &size);
    if (!size)
        return 0;
    char dir[] = "/tmp/cmt-fuzz-export-XXXXXX";
    int fd = memfd_create("fuzz.cmt", 0);
    if (fd >= 0 && write(fd, data, size) == (ssize_t)size && mkdtemp(dir)) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        const char *runs[][10] = {
            {"export", "-f", "csv", "--partitioned", dir, "--run", "fuzz", path, NULL},
            {"export", "-f", "jsonl", "--partitioned", dir, "--events", "--run", "fuzz", path,
             NULL},
            {"export", "-f", "parquet", "--partitioned", dir, "--events", "--run", "fuzz", path,
             NULL}};
        /* the commands' stderr stream, not fd 2: a sanitizer's report and libFuzzer's own
         * lines still reach the terminal */
        FILE *err = stderr;
        stderr = quiet_err ? quiet_err : err;
        for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
            int argc = 0;
            while (runs[i][argc])
                argc++;
            cmt_cmd_export(argc, (char **)runs[i]);
            fflush(stdout);
            fflush(stderr);
        }
        stderr = err;
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    if (fd >= 0)
        close(fd);
    free(wrapped);
    return 0;
}
