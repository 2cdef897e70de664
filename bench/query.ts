/**
 * npm run bench:query -- [--scale 0.1] [--requests 200] [--page 100]
 *
 * Latency of GET /v1/traces on the generated dataset (10M traces at scale 1.0), through the real
 * server: the first page unfiltered, the first page with latency + token + tag filters, and page
 * 100 of that filtered query (cursors walked once, then page 100 fetched again and again with its
 * saved cursor). The three are interleaved so that they share whatever else the machine is doing.
 */
import { parseArgs } from 'node:util';
import { datasetServer } from './lib/dataset-server.js';
import { machine, writeResult } from './lib/env.js';
import { QUERY_FILTER } from './lib/synthetic.js';
import { ratio, summary } from './lib/stats.js';

const { values: args } = parseArgs({
  options: {
    scale: { type: 'string', default: '0.01' },
    requests: { type: 'string', default: '200' },
    page: { type: 'string', default: '100' },
    warmup: { type: 'string', default: '10' },
  },
});
const REQUESTS = Number(args.requests);
const PAGE = Number(args.page);

interface TracePage {
  traces: { latency_ms: number; total_token_count: number; tags: string[] }[];
  has_more: boolean;
  next_cursor: string | null;
}

const filtered = new URLSearchParams(QUERY_FILTER).toString();

async function main() {
  const host = machine(); // before the bench adds its own load
  const { dataset, server, get } = await datasetServer(Number(args.scale));
  const page = async (path: string): Promise<{ ms: number; body: TracePage }> => {
    const start = performance.now();
    const res = await get(path);
    const text = await res.text();
    const ms = performance.now() - start;
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${text.slice(0, 300)}`);
    return { ms, body: JSON.parse(text) as TracePage };
  };
  try {
    const first = await page(`/v1/traces?${filtered}`);
    // The filters must really filter, or the numbers measure another query.
    for (const t of first.body.traces) {
      const tagged = t.tags.includes(`${QUERY_FILTER.tag_key}:${QUERY_FILTER.tag_value}`);
      if (t.latency_ms < Number(QUERY_FILTER.latency_min) || t.total_token_count < Number(QUERY_FILTER.token_count_min) || !tagged) {
        throw new Error(`GET /v1/traces returned a trace outside the filter: ${JSON.stringify(t).slice(0, 300)}`);
      }
    }
    // Page k's next_cursor opens page k + 1: walk pages 1..PAGE-1 to hold the cursor of page PAGE.
    let cursor = first.body.next_cursor;
    let reached = 1;
    for (; reached < PAGE - 1 && cursor; reached += 1) {
      cursor = (await page(`/v1/traces?${filtered}&cursor=${encodeURIComponent(cursor)}`)).body.next_cursor;
    }
    if (!cursor) throw new Error(`the filtered query has only ${reached} pages; use a larger --scale or a smaller --page`);
    const queries = {
      first_page_unfiltered: '/v1/traces',
      first_page_filtered: `/v1/traces?${filtered}`,
      [`page_${PAGE}_filtered`]: `/v1/traces?${filtered}&cursor=${encodeURIComponent(cursor)}`,
    };
    const pageSize = first.body.traces.length;
    const latencies: Record<string, number[]> = Object.fromEntries(Object.keys(queries).map((k) => [k, []]));
    for (let i = 0; i < Number(args.warmup); i += 1) for (const path of Object.values(queries)) await page(path);
    for (let i = 0; i < REQUESTS; i += 1) {
      for (const [name, path] of Object.entries(queries)) latencies[name]!.push((await page(path)).ms);
    }
    const results = Object.fromEntries(Object.entries(latencies).map(([k, v]) => [k, summary(v)]));
    const p1 = results.first_page_filtered!;
    const pN = results[`page_${PAGE}_filtered`]!;
    const result = {
      bench: 'query',
      date: new Date().toISOString(),
      machine: host,
      dataset: { scale: dataset.scale, traces: dataset.traces, spans: dataset.spans, filter: QUERY_FILTER, filter_selectivity: dataset.filter_selectivity },
      page_size: pageSize,
      requests_each: REQUESTS,
      latency: results,
      [`ratio_page_${PAGE}_to_page_1`]: { p50: ratio(pN.p50_ms, p1.p50_ms), p99: ratio(pN.p99_ms, p1.p99_ms) },
      server_rss_mib: server.memory(),
      targets: { p99_ms_at_full_scale: '<= 150', ratio_page_100_to_page_1: '<= 1.5' },
    };
    const file = writeResult('query', result);
    console.log(JSON.stringify(result, null, 2));
    console.log(`results: ${file}`);
  } finally {
    await server.stop();
  }
}

await main();
process.exit(0);
