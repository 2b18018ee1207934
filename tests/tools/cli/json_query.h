/* json_query.h — reads values out of a JSON text by path, for tests that compare what a command
 * printed by parsed value rather than by key order or spacing. A path is keys and array indexes
 * joined by dots: "results.0.setting", "recommendation.result_index". Keys of an object are
 * found wherever they are in it; the first of duplicate keys wins. */
#ifndef CMT_TEST_JSON_QUERY_H
#define CMT_TEST_JSON_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* @return the start of the value at `path` in `json` (its length in *len), NULL when the text
 * is not valid JSON there or the path leads nowhere. */
const char *jq_find(const char *json, const char *path, size_t *len);
/* @return whether `path` leads to a value. */
bool jq_has(const char *json, const char *path);
/* The value at `path` as text: a string's contents (escapes other than \" and \\ kept as they
 * are), or a number's, true's, false's, null's own text. @return false when absent, or when it
 * is an object or array, or does not fit in `n` bytes. */
bool jq_text(const char *json, const char *path, char *out, size_t n);
/* @return the number at `path` as an unsigned integer; false when absent or not one. */
bool jq_u64(const char *json, const char *path, uint64_t *out);
/* @return the number of elements of the array (or members of the object) at `path`, -1 when
 * absent or neither. */
long jq_count(const char *json, const char *path);
/* @return whether `json` is one valid JSON value (and whitespace). */
bool jq_valid(const char *json);

#endif
