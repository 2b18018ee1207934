/* fuzz_wrap.h — the fuzz targets' way into the records: an input that does not start like a
 * trace (the magic's first byte, 0x89) is taken as the records of one chunk after its first
 * byte, and wrapped into a well-formed trace, so that mutations reach the record decoder and
 * what reads the records instead of dying at the chunk's checksum. */
#ifndef CMT_FUZZ_WRAP_H
#define CMT_FUZZ_WRAP_H

#include <stddef.h>
#include <stdint.h>

/* The trace to read for a fuzz input: *data itself when it starts like a trace, else a
 * malloc'ed trace holding data[1..] as its only chunk (*data and *size replaced).
 * @return what to free afterwards (NULL: nothing), or NULL with *size 0 when the wrapping
 * failed (skip the input). */
uint8_t *cmt_fuzz_wrap(const uint8_t **data, size_t *size);

#endif
