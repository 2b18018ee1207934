/* parquet_writer.h — internal: writes an Apache Parquet file of flat, nullable columns, for the
 * partitioned export's .parquet parts (export_partitioned.c through cmt__rows), written from
 * the Parquet format spec (parquet.thrift). What it writes:
 *   - "PAR1", row groups of up to CMT__PARQUET_GROUP_ROWS rows, the footer (FileMetaData in
 *     Thrift's compact protocol, thrift_compact.h), its length (4 bytes, little-endian), "PAR1";
 *   - every column OPTIONAL (an empty cell is a null), one column chunk per row group and one
 *     data page (v1) per chunk: definition levels (RLE / bit-packed hybrid, width 1), then the
 *     non-null values;
 *   - INT64, signed or with the unsigned 64-bit INTEGER logical type (UINT_64), as PLAIN or
 *     DELTA_BINARY_PACKED, whichever compresses smaller (tried on a sample); BOOLEAN and
 *     DOUBLE as PLAIN; strings as BYTE_ARRAY with the STRING (UTF8) logical type, dictionary
 *     encoded (a PLAIN dictionary page, RLE_DICTIONARY indices);
 *   - each page compressed with zstd (codec ZSTD) unless the writer is opened uncompressed.
 * No statistics, no page index, no bloom filters: DuckDB, Spark and pyarrow need none.
 * Values are given row by row, column by column, like cmt__rows. A failed write or allocation
 * sticks: later calls do nothing and cmt__parquet_close() reports it. */
#ifndef CMT__PARQUET_WRITER_H
#define CMT__PARQUET_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The most rows a row group holds (its columns are kept in memory until it is written). */
#define CMT__PARQUET_GROUP_ROWS (1u << 18)
/* How many values of an INT64 column chunk are encoded both ways to choose its encoding. */
#define CMT__PARQUET_INT64_SAMPLE 16384
/* The zstd level of the pages. */
#define CMT__PARQUET_ZSTD_LEVEL 1

/* A column's type, as one character of the types string given to cmt__parquet_open(). */
enum cmt__parquet_type {
    CMT__PARQUET_INT64 = 'i',
    CMT__PARQUET_UINT64 = 'u', /* INT64 holding the bits of a uint64_t: INTEGER(64, unsigned) */
    CMT__PARQUET_BOOLEAN = 'b',
    CMT__PARQUET_DOUBLE = 'd',
    CMT__PARQUET_STRING = 's',
};

struct cmt__parquet;

/* Starts a file on f (open for writing, at its start): ncolumns columns named names[i] (kept
 * by reference until close), of types[i] (enum cmt__parquet_type); zstd: compress the pages.
 * @return the writer, or NULL when out of memory or a type is unknown. */
struct cmt__parquet *cmt__parquet_open(FILE *f, const char *const *names, const char *types,
                                       unsigned ncolumns, int zstd);
/* The next cell of the current row. A value of another type than its column's is a bug
 * (asserted; a null in release builds), except an integer in a DOUBLE column. */
void cmt__parquet_i64(struct cmt__parquet *w, int64_t v);
void cmt__parquet_u64(struct cmt__parquet *w, uint64_t v);
void cmt__parquet_bool(struct cmt__parquet *w, int v);
void cmt__parquet_double(struct cmt__parquet *w, double v);
/* A string of n bytes (kept as given: Parquet's readers expect UTF-8). */
void cmt__parquet_string(struct cmt__parquet *w, const char *s, size_t n);
void cmt__parquet_null(struct cmt__parquet *w);
/* Ends the row (every column given); writes the row group when it is full. */
void cmt__parquet_row_end(struct cmt__parquet *w);
/* Writes what is left and the footer, and frees the writer (f stays open).
 * @return 0, or -1 when a write or an allocation failed. */
int cmt__parquet_close(struct cmt__parquet *w);

#endif
