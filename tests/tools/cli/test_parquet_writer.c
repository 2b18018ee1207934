/* The parquet writer (tools/cli/export/parquet_writer.c): the file's frame (magic, footer and
 * its length), and columns of every type, with nulls, extremes, repeated and unique strings
 * and more rows than a row group holds, read back by DuckDB (duckdb_prefix.h) and compared
 * row by row (file_row_number) with the same values computed in SQL; a monotone column is
 * delta-encoded, strings dictionary-encoded; an unsigned column holds values past INT64_MAX. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "duckdb_prefix.h"
#include "export/parquet_writer.h"

static const char *const names[] = {"i", "q", "s", "b", "d", "n", "u"};
static const char types[] = "iisbdiu";

/* Row r's cells; the SQL below computes the same from r. */
static void write_row(struct cmt__parquet *w, int64_t r)
{
    if (r % 3 == 0)
        cmt__parquet_null(w);
    else if (r % 7 == 1)
        cmt__parquet_i64(w, r % 2 ? INT64_MAX : INT64_MIN);
    else
        cmt__parquet_i64(w, r * r % 1000003 - 500000);
    cmt__parquet_i64(w, r * 1000 + r % 5);
    char s[32];
    if (r % 5 == 0) {
        cmt__parquet_null(w);
    } else {
        if (r % 11 == 3)
            snprintf(s, sizeof s, "u%lld", (long long)r);
        else if (r % 13 == 4)
            s[0] = 0;
        else
            snprintf(s, sizeof s, "k%lld\xc3\xa9", (long long)(r % 17));
        cmt__parquet_string(w, s, strlen(s));
    }
    if (r % 4 == 0)
        cmt__parquet_null(w);
    else
        cmt__parquet_bool(w, r % 3 == 1);
    if (r % 6 == 0)
        cmt__parquet_null(w);
    else
        cmt__parquet_double(w, (double)r / 4);
    cmt__parquet_null(w);
    /* unsigned: past INT64_MAX (a read as signed would be negative), a run that crosses 2^63 */
    cmt__parquet_u64(w, r % 5 == 1 ? UINT64_MAX - (uint64_t)r
                                   : (uint64_t)INT64_MAX - 500 + (uint64_t)r);
    cmt__parquet_row_end(w);
}

static const char expected_sql[] =
    "SELECT count(*) FROM (SELECT *, file_row_number AS r "
    "FROM read_parquet('@', file_row_number = true)) WHERE "
    "i IS DISTINCT FROM (CASE WHEN r % 3 = 0 THEN NULL WHEN r % 7 = 1 THEN (CASE WHEN r % 2 = 1 "
    "THEN 9223372036854775807 ELSE -9223372036854775807 - 1 END) ELSE r * r % 1000003 - 500000 "
    "END) OR q IS DISTINCT FROM r * 1000 + r % 5 "
    "OR s IS DISTINCT FROM (CASE WHEN r % 5 = 0 THEN NULL WHEN r % 11 = 3 THEN 'u' || r "
    "WHEN r % 13 = 4 THEN '' ELSE 'k' || (r % 17) || 'é' END) "
    "OR b IS DISTINCT FROM (CASE WHEN r % 4 = 0 THEN NULL ELSE r % 3 = 1 END) "
    "OR d IS DISTINCT FROM (CASE WHEN r % 6 = 0 THEN NULL ELSE r::DOUBLE / 4 END) "
    "OR n IS NOT NULL "
    "OR u IS DISTINCT FROM (CASE WHEN r % 5 = 1 THEN 18446744073709551615::HUGEINT - r "
    "ELSE 9223372036854775807::HUGEINT - 500 + r END)";

/* sql with its '@' replaced by path, into out. */
static void with_path(char *out, size_t size, const char *sql, const char *path)
{
    const char *at = strchr(sql, '@');
    cr_assert_not_null(at);
    int n = snprintf(out, size, "%.*s%s%s", (int)(at - sql), sql, path, at + 1);
    cr_assert(n > 0 && (size_t)n < size);
}

/* Writes `rows` rows to path. */
static void write_file(const char *path, int64_t rows, int zstd)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    struct cmt__parquet *w = cmt__parquet_open(f, names, types, 7, zstd);
    cr_assert_not_null(w);
    for (int64_t r = 0; r < rows; r++)
        write_row(w, r);
    cr_assert_eq(cmt__parquet_close(w), 0);
    cr_assert_eq(fclose(f), 0);
}

/* Runs the queries with DuckDB. @return their rows, one a line (free it). */
static char *duckdb(const char *q1, const char *q2, const char *q3)
{
    const char *prefix = duckdb_prefix(), *src = getenv("CMT_SOURCE_DIR");
    size_t n = strlen(q1) + strlen(q2) + strlen(q3) + 4096;
    char *cmd = malloc(n), *out = calloc(1, 1 << 16);
    cr_assert(cmd && out);
    snprintf(cmd, n, "node %s/tests/tools/cli/duckdb_query.cjs '%s' \"%s\" \"%s\" \"%s\"",
             src ? src : ".", prefix, q1, q2, q3);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t got = fread(out, 1, (1 << 16) - 1, p);
    out[got] = 0;
    cr_expect_eq(pclose(p), 0, "%s", out);
    free(cmd);
    return out;
}

Test(parquet_writer, frames_the_file_with_magic_and_a_footer_of_the_length_it_says)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    struct cmt__parquet *w = cmt__parquet_open(f, names, types, 7, 1);
    for (int64_t r = 0; r < 100; r++)
        write_row(w, r);
    cr_assert_eq(cmt__parquet_close(w), 0);
    fclose(f);
    cr_assert_gt(size, 12u);
    cr_expect_eq(memcmp(buf, "PAR1", 4), 0);
    cr_expect_eq(memcmp(buf + size - 4, "PAR1", 4), 0);
    const unsigned char *u = (const unsigned char *)buf + size - 8;
    size_t len = (size_t)u[0] | (size_t)u[1] << 8 | (size_t)u[2] << 16 | (size_t)u[3] << 24;
    cr_assert_lt(len, size - 12);
    const unsigned char *footer = (const unsigned char *)buf + size - 8 - len;
    cr_expect_eq(footer[0], 0x15, "FileMetaData field 1 (version), an i32");
    cr_expect_eq(footer[1], 0x02, "version 1, zigzag");
    cr_expect_eq(footer[len - 1], 0, "the struct's stop byte ends the footer");
    cr_expect(memmem(footer, len, "cumemtrace", 10), "created_by");
    free(buf);
}

Test(parquet_writer, refuses_an_unknown_type_or_a_type_count_that_is_not_the_columns)
{
    cr_expect_null(cmt__parquet_open(stdout, names, "iisbdix", 7, 1));
    cr_expect_null(cmt__parquet_open(stdout, names, "iis", 7, 1));
}

Test(parquet_writer, duckdb_reads_every_cell_back_over_two_row_groups)
{
    char path[256], q[4096];
    int64_t rows = CMT__PARQUET_GROUP_ROWS + 1000;
    for (int zstd = 1; zstd >= 0; zstd--) {
        snprintf(path, sizeof path, "/tmp/cmt_parquet_%d_%d.parquet", (int)getpid(), zstd);
        write_file(path, rows, zstd);
        with_path(q, sizeof q, expected_sql, path);
        char count[512], groups[512];
        snprintf(count, sizeof count, "SELECT count(*) FROM read_parquet('%s')", path);
        snprintf(groups, sizeof groups,
                 "SELECT count(DISTINCT row_group_id), min(compression), "
                 "min(encodings) FILTER (path_in_schema = 'q'), "
                 "min(encodings) FILTER (path_in_schema = 's') FROM parquet_metadata('%s')",
                 path);
        char *out = duckdb(q, count, groups);
        char want[256];
        snprintf(want, sizeof want,
                 "0\n%lld\n2|%s|RLE, PLAIN, DELTA_BINARY_PACKED|RLE, PLAIN, RLE_DICTIONARY\n",
                 (long long)rows, zstd ? "ZSTD" : "UNCOMPRESSED");
        cr_expect_str_eq(out, want, "zstd %d", zstd);
        free(out);
        remove(path);
    }
}

Test(parquet_writer, an_empty_file_keeps_its_schema)
{
    char path[256], describe[768], count[512], logical[512];
    snprintf(path, sizeof path, "/tmp/cmt_parquet_empty_%d.parquet", (int)getpid());
    write_file(path, 0, 1);
    snprintf(describe, sizeof describe,
             "SELECT string_agg(column_name || ' ' || column_type, ', ') "
             "FROM (DESCRIBE SELECT * FROM read_parquet('%s'))",
             path);
    snprintf(count, sizeof count, "SELECT count(*) FROM read_parquet('%s')", path);
    /* both the converted and the logical type (DuckDB prints the i8 bitWidth 64 as '@') */
    snprintf(logical, sizeof logical,
             "SELECT converted_type || ' ' || logical_type FROM parquet_schema('%s') "
             "WHERE name = 'u'",
             path);
    char *out = duckdb(describe, count, logical);
    cr_expect_str_eq(out,
                     "i BIGINT, q BIGINT, s VARCHAR, b BOOLEAN, d DOUBLE, n BIGINT, u UBIGINT\n0\n"
                     "UINT_64 IntType(bitWidth=@, isSigned=0)\n");
    free(out);
    remove(path);
}
