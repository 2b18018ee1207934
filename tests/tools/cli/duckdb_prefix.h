/* duckdb_prefix.h — the tests that read the exports with DuckDB (test_export_duckdb.c,
 * test_parquet_writer.c): @duckdb/node-api, installed with npm under the build tree at the
 * first run. */
#ifndef CMT_TEST_DUCKDB_PREFIX_H
#define CMT_TEST_DUCKDB_PREFIX_H

/* @return the @duckdb/node-api prefix (for require.resolve's paths), installing it when
 * missing; skips the test (fails it in CI, CI=true) when it cannot be had. */
const char *duckdb_prefix(void);

#endif
