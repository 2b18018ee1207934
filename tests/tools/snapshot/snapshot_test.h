/* snapshot_test.h — helpers of the snapshot tests: the committed fixtures, and a small
 * pickle emitter for snapshots broken on purpose. */
#ifndef CMT_SNAPSHOT_TEST_H
#define CMT_SNAPSHOT_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

/* fixtures/NAME read whole (criterion-asserted). @return malloc'ed bytes. */
unsigned char *fixture_bytes(const char *name, size_t *len);
/* fixtures/NAME parsed into *s (criterion-asserted). */
void fixture_parse(const char *name, struct cmt_snapshot *s);
/* The path of fixtures/NAME (static buffer). */
const char *fixture_path(const char *name);
/* The path of tests/torch/fixtures/NAME, a snapshot real torch wrote (static buffer). */
const char *torch_fixture_path(const char *name);

/* A pickle being written: pk_begin (PROTO 4), values, pk_end (STOP). Containers open with
 * pk_dict/pk_list (the empty container and a MARK) and close with pk_setitems/pk_appends. */
struct pk {
    unsigned char *b;
    size_t n, cap;
};
void pk_begin(struct pk *p);
void pk_end(struct pk *p);
void pk_raw(struct pk *p, const void *bytes, size_t n);
void pk_int(struct pk *p, int64_t v);
void pk_str(struct pk *p, const char *s);
void pk_dict(struct pk *p);
void pk_list(struct pk *p);
void pk_setitems(struct pk *p);
void pk_appends(struct pk *p);
void pk_put(struct pk *p, uint8_t memo); /* BINPUT: memoise the value on top */
void pk_get(struct pk *p, uint8_t memo); /* BINGET: push a memoised value */

#endif
