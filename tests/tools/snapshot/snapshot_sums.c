/* snapshot_sums.c — prints what PyTorch's own accounting in a snapshot's `segments` says at
 * dump time, as this project's parser reads it: per file, the segments, the sum of active
 * block sizes and the sum of segment total_size, the trace entries and the frames.
 * check_real_snapshots.sh prints the same figures computed by python3 beside them.
 *
 * usage: snapshot_sums SNAPSHOT... */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "snapshot.h"

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = n > 0 ? (size_t)n : 0;
    return b;
}

int main(int argc, char **argv)
{
    int status = 0;
    for (int i = 1; i < argc; i++) {
        size_t len;
        unsigned char *b = slurp(argv[i], &len);
        struct cmt_snapshot s;
        struct cmt_snapshot_error err;
        if (!b) {
            fprintf(stderr, "snapshot_sums: %s: cannot read\n", argv[i]);
            status = 1;
            continue;
        }
        if (cmt_snapshot_parse(&s, b, len, &err) != 0) {
            fprintf(stderr, "snapshot_sums: %s: %s\n", argv[i], err.text);
            free(b);
            status = 1;
            continue;
        }
        uint64_t active = 0, reserved = 0;
        for (size_t k = 0; k < s.nsegments; k++)
            reserved += s.segments[k].total_size;
        for (size_t k = 0; k < s.nblocks; k++)
            if (s.blocks[k].state != CMT_SNAPSHOT_INACTIVE)
                active += s.blocks[k].size;
        printf("%s segments=%zu active=%" PRIu64 " reserved=%" PRIu64 " entries=%zu frames=%zu\n",
               argv[i], s.nsegments, active, reserved, s.nentries, s.nframes);
        cmt_snapshot_free(&s);
        free(b);
    }
    return status;
}
