/**
 * npm run bench:export -- [--scale 0.1] [--sizes 0.01,0.1,0.5] [--format csv|parquet]
 *
 * GET /v1/traces/export?format=csv (or parquet) on the generated dataset for growing row counts (a started_at
 * window holding the given fraction of the dataset's spans: 100k, 1M, 5M spans at scale 0.1),
 * against the same rows produced by one plain ClickHouse query (FORMAT CSVWithNames, or Parquet) on the same
 * engine in the same run. For each size: rows/s of both, and the server's RSS (VmRSS sampled every
 * 100 ms during the export, VmHWM after; the server is restarted per size so each peak is its own).
 */
import { parseArgs } from 'node:util';
import { datasetDir, readDataset, type Dataset } from './lib/dataset.js';
import { machine, writeResult } from './lib/env.js';
import { generate } from './generate.js';
import { startServer } from './lib/looptrace.js';
import { sampleRss } from './lib/proc.js';
import { parquetRows, rawExporter, type RawFormat, type Window } from './lib/raw-export.js';
import { ratio } from './lib/stats.js';

const { values: args } = parseArgs({
  options: {
    scale: { type: 'string', default: '0.01' },
    sizes: { type: 'string', default: '0.01,0.1,0.5' },
    'max-seconds': { type: 'string', default: '600' },
    format: { type: 'string', default: 'csv' },
  },
});
const FORMAT = args.format as RawFormat;
if (FORMAT !== 'csv' && FORMAT !== 'parquet') throw new Error('--format is csv or parquet');
/** Kept of a Parquet answer to read its row count from the footer. */
const PARQUET_TAIL_BYTES = 32 * 2 ** 20;

/** The newest `fraction` of the dataset: traces are evenly spaced over its window. */
function windowOf(d: Dataset, fraction: number): Window {
  const to = Date.parse(d.window.to);
  const span = (to - Date.parse(d.window.from)) * fraction;
  return { from: new Date(to - span).toISOString(), to: d.window.to };
}

async function apiExport(d: Dataset, window: Window) {
  const server = await startServer(datasetDir(d.scale));
  try {
    const idleRssMiB = server.memory().rssMiB;
    const rss = sampleRss(server.pid, 100);
    const query = new URLSearchParams({ format: FORMAT, ...window }).toString();
    // Bounded: an export still running after --max-seconds is cut off and reported as such.
    const abort = AbortSignal.timeout(Number(args['max-seconds']) * 1000);
    const start = performance.now();
    const res = await fetch(`${server.url}/v1/traces/export?${query}`, { headers: { authorization: `Bearer ${d.api_key}` }, signal: abort });
    if (res.status !== 200) throw new Error(`export: ${res.status} ${(await res.text()).slice(0, 300)}`);
    let rows = -1; // the header line
    let bytes = 0;
    let timedOut = false;
    // The answer's last chunks, at least PARQUET_TAIL_BYTES of them: joined once, at the end (joining
    // on every chunk copied the tail each time and made this client the bottleneck).
    const tail: Uint8Array[] = [];
    let tailBytes = 0;
    try {
      for await (const chunk of res.body!) {
        const data = chunk as Uint8Array;
        bytes += data.byteLength;
        if (FORMAT === 'parquet') {
          tail.push(data);
          tailBytes += data.byteLength;
          while (tailBytes - tail[0]!.byteLength >= PARQUET_TAIL_BYTES) tailBytes -= tail.shift()!.byteLength;
        } else for (let i = data.indexOf(0x0a); i !== -1; i = data.indexOf(0x0a, i + 1)) rows += 1;
      }
      if (FORMAT === 'parquet') rows = (await parquetRows(Buffer.concat(tail))) ?? -1;
    } catch (err) {
      if (!abort.aborted) throw err;
      timedOut = true;
    }
    const seconds = (performance.now() - start) / 1000;
    return { rows, bytes, seconds, timedOut, idleRssMiB, rss: rss.stop() };
  } finally {
    await server.stop();
  }
}

async function main() {
  const host = machine(); // before the bench adds its own load
  const scale = Number(args.scale);
  let dataset = readDataset(scale);
  if (!dataset) dataset = await generate(scale);
  const d = dataset;
  const fractions = args.sizes.split(',').map(Number);

  console.log(`raw: one ClickHouse query per size, FORMAT ${FORMAT === 'csv' ? 'CSVWithNames' : 'Parquet'}, in this process (server stopped)`);
  const raw = await rawExporter(datasetDir(scale), d.tenant_id, d.project_id);
  const rawRuns = [];
  try {
    await raw.warm();
    for (const f of fractions) {
      const rss = sampleRss(process.pid, 100);
      const r = await raw.run(windowOf(d, f), FORMAT);
      rawRuns.push({ ...r, benchMaxSampledRssMiB: rss.stop().maxSampledRssMiB });
      console.log(`  ${r.rows.toLocaleString()} rows in ${r.seconds.toFixed(2)} s: ${Math.round(r.rows / r.seconds).toLocaleString()} rows/s`);
    }
  } finally {
    await raw.close();
  }

  console.log(`API: GET /v1/traces/export?format=${FORMAT}, a fresh server per size`);
  const sizes = [];
  for (const [i, f] of fractions.entries()) {
    const window = windowOf(d, f);
    const api = await apiExport(d, window);
    const r = rawRuns[i]!;
    const apiRate = api.rows / api.seconds;
    const rawRate = r.rows / r.seconds;
    console.log(
      `  ${api.rows.toLocaleString()} rows in ${api.seconds.toFixed(2)} s: ${Math.round(apiRate).toLocaleString()} rows/s, ` +
        `ratio ${ratio(apiRate, rawRate)}, server peak RSS ${api.rss.peakRssMiB.toFixed(0)} MiB${api.timedOut ? ' (cut off at --max-seconds)' : ''}`,
    );
    if (!api.timedOut && api.rows !== r.rows) throw new Error(`API exported ${api.rows} rows, the raw query ${r.rows}`);
    sizes.push({
      fraction: f,
      window,
      rows: r.rows,
      api: {
        rows: api.rows,
        seconds: +api.seconds.toFixed(3),
        rows_per_s: Math.round(apiRate),
        mib: +(api.bytes / 2 ** 20).toFixed(1),
        cut_off_at_max_seconds: api.timedOut,
      },
      raw: {
        seconds: +r.seconds.toFixed(3),
        rows_per_s: Math.round(rawRate),
        mib: +(r.bytes / 2 ** 20).toFixed(1),
        bench_process_max_sampled_rss_mib: +r.benchMaxSampledRssMiB.toFixed(1),
      },
      ratio_api_to_raw: ratio(apiRate, rawRate),
      server_rss_mib: {
        before_export: +api.idleRssMiB.toFixed(1),
        max_sampled: +api.rss.maxSampledRssMiB.toFixed(1),
        peak_vmhwm: +api.rss.peakRssMiB.toFixed(1),
        samples: api.rss.samples,
      },
    });
  }

  const result = {
    bench: 'export',
    format: FORMAT,
    date: new Date().toISOString(),
    machine: host,
    dataset: { scale: d.scale, traces: d.traces, spans: d.spans },
    sizes,
    targets: { ratio_api_to_raw: '>= 0.50', server_rss: 'flat as rows grow' },
  };
  const file = writeResult(FORMAT === 'csv' ? 'export' : 'export-parquet', result);
  console.log(JSON.stringify(sizes.map((s) => ({ rows: s.rows, ratio: s.ratio_api_to_raw, api_rows_per_s: s.api.rows_per_s, raw_rows_per_s: s.raw.rows_per_s, peak_rss_mib: s.server_rss_mib.peak_vmhwm })), null, 2));
  console.log(`results: ${file}`);
}

await main();
process.exit(0);
