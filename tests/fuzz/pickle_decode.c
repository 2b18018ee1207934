/* pickle_decode.c — fuzz target: any bytes given to the pickle decoder, the snapshot parser
 * and the conversion to a trace must neither crash nor leak nor hang; a conversion that
 * succeeds must give a trace the reader reads to its end without damage.
 * Built as a libFuzzer target with -DCMT_FUZZ=ON (clang), and always as a corpus replayer
 * (seed corpus: tests/fuzz/corpus/pickle_decode, from tests/tools/snapshot/make_fixtures.py).
 *
 * The first byte, when it is not a pickle's 0x80, picks tight decoder limits for the rest, so
 * that the limit paths are reached too. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pickle.h"
#include "reader.h"
#include "snapshot_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Touches every node reachable from the root, at most `budget` of them (the tree may share
 * nodes and hold cycles), so that a bad pointer in it shows. */
static void walk(const struct cmt_pickle_value *root, size_t budget)
{
    const struct cmt_pickle_value **stack = malloc(budget * sizeof *stack);
    size_t n = 0, seen = 0;
    uint64_t sink = 0;
    if (!stack)
        return;
    stack[n++] = root;
    while (n && seen++ < budget) {
        const struct cmt_pickle_value *v = stack[--n];
        switch (v->type) {
        case CMT_PICKLE_STR:
        case CMT_PICKLE_BYTES:
            for (uint32_t k = 0; k < v->n; k++)
                sink += (unsigned char)v->u.s[k];
            break;
        case CMT_PICKLE_LIST:
        case CMT_PICKLE_TUPLE:
        case CMT_PICKLE_SET:
        case CMT_PICKLE_DICT:
            for (uint32_t k = 0; k < v->n * (v->type == CMT_PICKLE_DICT ? 2u : 1u) && n < budget;
                 k++)
                stack[n++] = v->u.items[k];
            break;
        default: sink += v->u.u;
        }
    }
    free(stack);
    if (sink == 42) /* keep the reads */
        __asm__ volatile("" ::: "memory");
}

static void decode(const uint8_t *data, size_t size, const struct cmt_pickle_limits *limits)
{
    cmt_pickle *doc;
    struct cmt_err err;
    uint64_t at;
    if (cmt_pickle_decode(&doc, data, size, limits, &err, &at) == 0) {
        walk(cmt_pickle_root(doc), 4096);
        (void)cmt_pickle_dict_get(cmt_pickle_root(doc), "segments");
        cmt_pickle_free(doc);
    }
}

static void convert(const uint8_t *data, size_t size)
{
    struct cmt_membuf mb = {0};
    struct cmt_err err;
    if (cmt_snapshot_import(data, size, "fuzz.pickle", cmt_membuf_sink, &mb, &err, NULL) == 0) {
        cmt_reader *r;
        if (cmt_reader_open_memory(&r, mb.data, mb.len) != 0)
            abort(); /* our own writer's output must open */
        struct cmt_record rec;
        int rc;
        while ((rc = cmt_reader_next(r, &rec)) == 1)
            ;
        if (rc != 0)
            abort(); /* ... and read to its end without damage */
        cmt_reader_close(r);
    }
    cmt_membuf_free(&mb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size && data[0] != 0x80) {
        struct cmt_pickle_limits tight = {
            .max_stack = 1u + (data[0] & 0x0f), .max_marks = 1u + (data[0] >> 4), .max_values = 64};
        decode(data + 1, size - 1, &tight);
        return 0;
    }
    decode(data, size, NULL);
    convert(data, size);
    return 0;
}
