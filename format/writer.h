/* writer.h — encodes records into zstd-compressed chunks and hands them to a sink.
 *
 * One writer per trace; not thread-safe (the shim drives it from its writer thread).
 * Records are buffered until the chunk is full or cmt_writer_flush() is called; each chunk
 * is an independent zstd frame with a checksum, so a reader keeps everything before damage.
 * Every function returns 0 or a negative CMT_E* code (cmt_error.h). After a sink error the
 * writer stays failed and every call returns CMT_ESINK. */
#ifndef CMT_WRITER_H
#define CMT_WRITER_H

#include "cmt_error.h"
#include "cmt_format.h"

typedef struct cmt_writer cmt_writer;

/* Receives the file header and each finished chunk. @return 0, or negative to fail the writer. */
typedef int (*cmt_sink_fn)(void *ctx, const void *data, size_t len);

/* Where a writer's memory comes from: `alloc` returns `size` bytes (NULL when none), `free`
 * releases them (NULL does nothing); both get `ctx`. Laid out as zstd's ZSTD_customMem, which
 * the compressor gets too. The shim's writer thread passes its own, so that glibc never gives
 * that thread a malloc arena (64 MB of address space) of its own. */
struct cmt_allocator {
    void *(*alloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *p);
    void *ctx;
};

struct cmt_writer_options {
    int level; /* zstd level; 0 = default (3) */
    /* 1: zstd leaves literals (the bytes no match covers) uncompressed: compressing and
     * decompressing get faster, and the file larger (docs/capture.md has the figures). */
    int raw_literals;
    size_t chunk_bytes; /* raw bytes per chunk before it is compressed; 0 = 1 MiB */
    int append;         /* 1: write no file header (adding chunks to an existing trace) */
    const struct cmt_allocator *allocator; /* NULL: malloc and free */
};

/* Creates a writer and writes the file header through the sink.
 * @return 0; CMT_ENOMEM; CMT_ESINK when the sink refuses the header. */
CMT_MUST_USE int cmt_writer_create(cmt_writer **out, cmt_sink_fn sink, void *ctx,
                                   const struct cmt_writer_options *options);

/* Frees the writer without flushing (a forked child drops its parent's writer this way). */
void cmt_writer_destroy(cmt_writer *w);

/* Compresses the buffered records into one chunk and passes it to the sink (no-op when empty).
 * @return 0; CMT_ECOMPRESS; CMT_ESINK. */
int cmt_writer_flush(cmt_writer *w);

/* Record appenders (see docs/trace-format.md for each record's fields). Strings are copied.
 * @return 0; CMT_ENOMEM; CMT_ESINK/CMT_ECOMPRESS when a full chunk could not be flushed. */
int cmt_writer_process(cmt_writer *w, const struct cmt_process *p);
int cmt_writer_env(cmt_writer *w, const char *name, const char *value);
int cmt_writer_api(cmt_writer *w, const struct cmt_api *a);
int cmt_writer_string(cmt_writer *w, uint32_t id, const char *s);
int cmt_writer_module(cmt_writer *w, const struct cmt_module *m);
int cmt_writer_stack_node(cmt_writer *w, const struct cmt_stack_node *n);
int cmt_writer_thread(cmt_writer *w, const struct cmt_thread *t);
int cmt_writer_device(cmt_writer *w, const struct cmt_device *d);
int cmt_writer_event(cmt_writer *w, const struct cmt_event *e);
int cmt_writer_meminfo(cmt_writer *w, const struct cmt_meminfo *m);
int cmt_writer_note(cmt_writer *w, const struct cmt_note *n);
int cmt_writer_signal(cmt_writer *w, const struct cmt_signal *s);
int cmt_writer_end(cmt_writer *w, const struct cmt_end *e);
int cmt_writer_symbol(cmt_writer *w, const struct cmt_symbol *s);
int cmt_writer_alloc_info(cmt_writer *w, const struct cmt_alloc_info *a);
int cmt_writer_alloc_event(cmt_writer *w, const struct cmt_alloc_event *e); /* v[] by fields */
/* The same ALLOC_EVENT with its values packed: packed[i] is the value of the i-th set bit of
 * e->fields, in bit order (e->v is not read). The shim's rings hold them so: no unpacking. */
int cmt_writer_alloc_event_packed(cmt_writer *w, const struct cmt_alloc_event *e,
                                  const uint64_t *packed);
int cmt_writer_range(cmt_writer *w, const struct cmt_range *g);

/* Appends one record as a reader returned it (struct cmt_record of reader.h): a trace copied
 * record by record, or changed on the way (the snapshot merge of `record --torch`, `redact`). */
struct cmt_record;
int cmt_writer_record(cmt_writer *w, const struct cmt_record *rec);

/* Events appended so far. */
uint64_t cmt_writer_event_count(const cmt_writer *w);

/* A sink that appends to a growing memory buffer (tests, tools). */
struct cmt_membuf {
    uint8_t *data;
    size_t len, cap;
};
int cmt_membuf_sink(void *membuf, const void *data, size_t len);
void cmt_membuf_free(struct cmt_membuf *b);

/* A sink that write()s to a file descriptor (ctx points to an int), retrying short writes. */
int cmt_fd_sink(void *fd_ptr, const void *data, size_t len);

#endif
