/* snapshot_sums.c — prints what PyTorch's own accounting in a snapshot's `segments` says at
 * dump time, as this project's parser reads it: per file, the segments, the sum of active
 * block sizes and the sum of segment total_size, the trace entries. Then the same two sums
 * as the converted trace's allocator events add up at its end (blocks allocated and not
 * free_completed; segments allocated or mapped and not freed or unmapped), read back through
 * the trace reader. check_real_snapshots.sh prints the figures python3 computes beside them.
 *
 * usage: snapshot_sums SNAPSHOT... */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "reader.h"
#include "snapshot_trace.h"

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

/* The end state of the trace the snapshot converts to, from its ALLOC_EVENT records. */
static int trace_sums(const unsigned char *b, size_t len, uint64_t *active, uint64_t *reserved)
{
    struct cmt_membuf mb = {0};
    int rc = cmt_snapshot_import(b, len, "x", cmt_membuf_sink, &mb, NULL, NULL);
    cmt_reader *r = NULL;
    if (!rc)
        rc = cmt_reader_open_memory(&r, mb.data, mb.len);
    *active = *reserved = 0;
    struct cmt_record rec;
    while (!rc && (rc = cmt_reader_next(r, &rec)) == 1) {
        rc = 0;
        if (rec.type != CMT_REC_ALLOC_EVENT)
            continue;
        const struct cmt_alloc_event *e = &rec.u.alloc_event;
        uint64_t size = e->v[CMT_AFIELD_SIZE];
        switch (e->action) {
        case CMT_AA_ALLOC: *active += size; break;
        case CMT_AA_FREE_COMPLETED: *active -= size; break;
        case CMT_AA_SEGMENT_ALLOC:
        case CMT_AA_SEGMENT_MAP: *reserved += size; break;
        case CMT_AA_SEGMENT_FREE:
        case CMT_AA_SEGMENT_UNMAP: *reserved -= size; break;
        }
    }
    cmt_reader_close(r);
    cmt_membuf_free(&mb);
    return rc;
}

int main(int argc, char **argv)
{
    int status = 0;
    for (int i = 1; i < argc; i++) {
        size_t len;
        unsigned char *b = slurp(argv[i], &len);
        struct cmt_snapshot s;
        struct cmt_err err = {0};
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
        printf("%s segments=%zu active=%" PRIu64 " reserved=%" PRIu64 " entries=%zu\n", argv[i],
               s.nsegments, active, reserved, s.nentries);
        uint64_t t_active, t_reserved;
        if (trace_sums(b, len, &t_active, &t_reserved) != 0) {
            fprintf(stderr, "snapshot_sums: %s: the conversion failed\n", argv[i]);
            status = 1;
        } else {
            printf("%s trace: active=%" PRIu64 " reserved=%" PRIu64 "\n", argv[i], t_active,
                   t_reserved);
        }
        cmt_snapshot_free(&s);
        free(b);
    }
    return status;
}
