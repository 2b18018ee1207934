// duckdb_check.cjs PREFIX DIR FORMAT EXPECTED_JSON DOCS_FLEET_MD [CSV_DIR] -- reads a partitioned export
// (cumemtrace export --partitioned DIR) with DuckDB (@duckdb/node-api installed under PREFIX)
// and checks its peaks and verdicts against `report --json` and `oom --json` of the same
// traces (EXPECTED_JSON: [{run, pid, report, oom}] with the paths of their outputs); runs the
// DuckDB queries of docs/fleet.md over it and checks their figures; with CSV_DIR (the same
// traces' csv export), checks that every table holds the same rows. Exit 1 on any mismatch.
const fs = require('fs');
const path = require('path');
const [prefix, dir, format, expectedPath, fleetDoc, csvDir] = process.argv.slice(2);
const { DuckDBInstance } = require(require.resolve('@duckdb/node-api', { paths: [prefix] }));

const problems = [];
const need = (cond, what) => { if (!cond) problems.push(what); return cond; };
// the parts are zstd-compressed (export's default): DuckDB reads csv and jsonl by their .zst
// name; parquet's pages are compressed inside the file
const ext = { csv: 'csv.zst', jsonl: 'jsonl.zst', parquet: 'parquet' }[format];
const readFn = { csv: 'read_csv', jsonl: 'read_json_auto', parquet: 'read_parquet' }[format];
const reader = (table) =>
  `${readFn}('${dir}/${table}/*/*.${ext}', hive_partitioning = true, union_by_name = true)`;

async function main() {
  const expected = JSON.parse(fs.readFileSync(expectedPath, 'utf8')).map((e) => ({
    ...e,
    report: JSON.parse(fs.readFileSync(e.report, 'utf8')),
    oom: JSON.parse(fs.readFileSync(e.oom, 'utf8')),
  }));
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const rows = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJson();

  const procs = await rows(`SELECT run, pid, peak_live_bytes, live_bytes_at_end, episodes,
      fatal_episodes FROM ${reader('processes')} ORDER BY run, pid`);
  need(procs.length === expected.length, `${procs.length} process rows, ${expected.length} traces`);
  const eps = await rows(`SELECT run, pid, episode, verdict, request_bytes, fatal
      FROM ${reader('episodes')} ORDER BY run, pid, episode`);
  for (const e of expected) {
    const p = procs.find((r) => String(r.run) === e.run && String(r.pid) === String(e.pid));
    if (!need(p, `no process row for run ${e.run} pid ${e.pid}`)) continue;
    need(String(p.peak_live_bytes) === String(e.report.peak_live_bytes),
      `${e.run}/${e.pid}: peak ${p.peak_live_bytes}, report ${e.report.peak_live_bytes}`);
    need(String(p.live_bytes_at_end) === String(e.report.live_bytes_at_end),
      `${e.run}/${e.pid}: at the end ${p.live_bytes_at_end}, report ${e.report.live_bytes_at_end}`);
    const mine = eps.filter((r) => String(r.run) === e.run && String(r.pid) === String(e.pid));
    const want = e.oom.episodes;
    need(String(p.episodes) === String(want.length), `${e.run}/${e.pid}: episode count`);
    need(JSON.stringify(mine.map((r) => r.verdict)) === JSON.stringify(want.map((w) => w.verdict)),
      `${e.run}/${e.pid}: verdicts ${mine.map((r) => r.verdict)} != oom --json ${want.map((w) => w.verdict)}`);
    // as doubles: JSON.parse reads oom --json's integers so (a request past 2^63 stays positive)
    need(JSON.stringify(mine.map((r) => Number(r.request_bytes))) ===
      JSON.stringify(want.map((w) => Number(w.request_bytes))), `${e.run}/${e.pid}: requests`);
  }
  const events = await rows(`SELECT run, pid, count(*) AS n FROM ${reader('events')}
      GROUP BY run, pid ORDER BY run, pid`);
  need(events.length === expected.length, `events of ${events.length} processes, ${expected.length} traces`);
  const runs = await rows(`SELECT run, traces, events, max_peak_live_bytes, episodes FROM ${reader('runs')}`);
  for (const run of new Set(expected.map((e) => e.run))) {
    const mine = expected.filter((e) => e.run === run);
    const r = runs.find((x) => String(x.run) === run);
    if (!need(r, `no runs row for ${run}`)) continue;
    const max = mine.map((e) => BigInt(e.report.peak_live_bytes)).reduce((a, b) => (a > b ? a : b));
    need(String(r.max_peak_live_bytes) === String(max), `${run}: max peak ${r.max_peak_live_bytes} != ${max}`);
    need(String(r.traces) === String(mine.length), `${run}: traces`);
    const rowsOfRun = events.filter((x) => String(x.run) === run).reduce((a, x) => a + Number(x.n), 0);
    need(String(r.events) === String(rowsOfRun), `${run}: ${rowsOfRun} event rows, runs says ${r.events}`);
  }

  // parquet: every table holds the csv export's rows, cell for cell (CSV_DIR given)
  if (csvDir) {
    for (const table of ['events', 'sites', 'episodes', 'processes', 'runs']) {
      const csv = `read_csv('${csvDir}/${table}/*/*.csv.zst', hive_partitioning = true, union_by_name = true)`;
      // the doubles: csv writes 6 significant digits, parquet the exact value
      const cols = (await rows(`SELECT column_name FROM (DESCRIBE SELECT * FROM ${reader(table)})
          WHERE column_type <> 'DOUBLE'`)).map((r) => r.column_name).join(', ');
      const diff = await rows(`SELECT count(*) AS n FROM (SELECT ${cols} FROM ${reader(table)}
          EXCEPT ALL SELECT ${cols} FROM ${csv})`);
      const n = await rows(`SELECT (SELECT count(*) FROM ${reader(table)}) AS a,
          (SELECT count(*) FROM ${csv}) AS b`);
      need(String(diff[0].n) === '0' && n[0].a === n[0].b,
        `${table}: ${diff[0].n} of ${n[0].a} parquet rows are not the csv's ${n[0].b}`);
    }
  }

  // docs/fleet.md's DuckDB queries, over this export
  const doc = fs.readFileSync(fleetDoc, 'utf8');
  const blocks = [...doc.matchAll(/```sql duckdb\n([\s\S]*?)```/g)].map((m) => m[1]);
  need(blocks.length >= 2, 'docs/fleet.md has the two DuckDB queries');
  const sql = (b) => b.replaceAll("'fleet/", `'${dir}/`).replaceAll('.csv.zst', `.${ext}`)
    .replaceAll('read_csv(', `${readFn}(`);
  const byVerdict = await rows(sql(blocks[0]));
  const tally = {};
  for (const e of expected) for (const ep of e.oom.episodes) {
    tally[ep.verdict] = tally[ep.verdict] || { episodes: 0, runs: new Set() };
    tally[ep.verdict].episodes++;
    tally[ep.verdict].runs.add(e.run);
  }
  need(byVerdict.length === Object.keys(tally).length, `OOMs by verdict: ${JSON.stringify(byVerdict)}`);
  for (const r of byVerdict) {
    const t = tally[r.verdict];
    if (!need(t, `OOMs by verdict: unexpected ${r.verdict}`)) continue;
    need(String(r.episodes) === String(t.episodes), `OOMs by verdict: ${r.verdict} episodes`);
    need(String(r.runs) === String(t.runs.size), `OOMs by verdict: ${r.verdict} runs`);
  }
  const frag = await rows(sql(blocks[1]));
  const confs = new Set(expected.map((e) => e.conf || '(default)'));
  need(frag.length === confs.size, `worst fragmentation: ${frag.length} configurations, want ${confs.size}`);
  for (const r of frag) need(confs.has(r.configuration), `worst fragmentation: ${r.configuration}`);
  for (const p of problems.slice(0, 20)) console.log(`duckdb_check ${format}: ${p}`);
  process.exit(problems.length ? 1 : 0);
}
main().catch((err) => { console.log(`duckdb_check ${format}: ${err.message}`); process.exit(1); });
