// duckdb_query.cjs PREFIX SQL... -- runs each SQL with DuckDB (@duckdb/node-api installed
// under PREFIX) and prints its rows, one line each, as their values joined by '|' (null: NULL).
// Exit 1 on an error, after printing it.
const [prefix, ...queries] = process.argv.slice(2);
const { DuckDBInstance } = require(require.resolve('@duckdb/node-api', { paths: [prefix] }));

async function main() {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  for (const sql of queries) {
    const rows = (await con.runAndReadAll(sql)).getRowsJson();
    for (const r of rows) console.log(r.map((v) => (v === null ? 'NULL' : String(v))).join('|'));
  }
}
main().catch((err) => { console.log(`duckdb_query: ${err.message}`); process.exit(1); });
