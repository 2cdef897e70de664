import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderClickHouseDdl, splitStatements } from '../../src/stores/migrate.js';
import { TraceFilter } from '../../src/modules/traces/filters.js';
import { traceRepository } from '../../src/modules/traces/repo.js';
import { narrowedBySearch } from '../../src/modules/traces/search-candidates.js';
import { SEARCH_CANDIDATES_MAX } from '../../src/modules/traces/search.js';
import { readNewestFirst } from '../../src/modules/traces/time-slices.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext, type TestTenant } from '../helpers/app.js';
import { getJson, ingestTraces, listAll, withQuery, type QueryValues } from '../helpers/trace-api.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

const base = '2026-05-04T10:00:00.000Z';
const at = (plusMs: number) => new Date(Date.parse(base) + plusMs).toISOString();

/** A trace started `offsetMs` after base whose trace fields and spans are neutral unless overridden. */
function traceAt(offsetMs: number, trace: Record<string, unknown> = {}, spans: Record<string, unknown>[] = [{}]) {
  return {
    ...aTrace({
      name: 'plain trace',
      input: 'plain question',
      output: 'plain answer',
      ended_at: at(offsetMs + 1_000),
      spans: spans.map((s, i) =>
        aSpan({ name: `plain step ${i}`, input: 'plain span question', output: 'plain span answer', start_time: at(offsetMs + i), end_time: at(offsetMs + 500), ...s }),
      ),
      ...trace,
    }),
    started_at: at(offsetMs),
  };
}

async function search(t: TestTenant, query: QueryValues): Promise<string[]> {
  const { status, body } = await getJson(ctx.app, t, '/v1/traces', { limit: 1000, ...query });
  expect(status, JSON.stringify(body)).toBe(200);
  return body.traces.map((x: { id: string }) => x.id);
}

describe('GET /v1/traces?q= full-text search', () => {
  let t: TestTenant;
  let other: TestTenant;
  const traces = {
    traceName: traceAt(0, { name: 'Zebrafield lookup' }),
    traceInput: traceAt(1_000, { input: 'please summarize the QUARTERLY report' }),
    traceOutput: traceAt(2_000, { output: 'результат: Ответ готов' }),
    traceError: traceAt(3_000, { error: 'upstream Gatewayfault (code 502)' }),
    spanName: traceAt(4_000, {}, [{}, { name: 'vectorsearch retrieval' }]),
    spanInput: traceAt(5_000, {}, [{ input: '東京 タワー に行く' }]),
    spanOutput: traceAt(6_000, {}, [{}, { output: 'Un café naïve, s’il vous plaît' }]),
    spanError: traceAt(7_000, {}, [{ error: 'Errors: rate_limited by provider' }]),
    split: traceAt(8_000, { name: 'alphaword' }, [{}, { output: 'betaword' }]),
  };
  const ids = Object.fromEntries(Object.entries(traces).map(([k, v]) => [k, v.id])) as Record<keyof typeof traces, string>;
  const elsewhere = traceAt(0, { name: 'Zebrafield elsewhere' }, [{ output: 'vectorsearch' }]);

  beforeAll(async () => {
    t = await createTenant(ctx.app);
    other = await createTenant(ctx.app);
    await ingestTraces(ctx.app, t, Object.values(traces));
    await ingestTraces(ctx.app, other, [elsewhere]);
  });

  it('finds a token in each searched field of the trace and of its spans, case-insensitively', async () => {
    expect(await search(t, { q: 'zebrafield' })).toEqual([ids.traceName]);
    expect(await search(t, { q: 'Quarterly' })).toEqual([ids.traceInput]);
    expect(await search(t, { q: 'gatewayFAULT' })).toEqual([ids.traceError]);
    expect(await search(t, { q: 'VECTORSEARCH' })).toEqual([ids.spanName]);
    expect(await search(t, { q: 'provider' })).toEqual([ids.spanError]);
  });

  it('finds words of other scripts: Cyrillic and accented Latin by case, CJK by the run between ASCII separators', async () => {
    expect(await search(t, { q: 'ОТВЕТ' })).toEqual([ids.traceOutput]);
    expect(await search(t, { q: 'ответ' })).toEqual([ids.traceOutput]);
    expect(await search(t, { q: 'CAFÉ' })).toEqual([ids.spanOutput]);
    expect(await search(t, { q: 'naïve' })).toEqual([ids.spanOutput]);
    expect(await search(t, { q: '東京' })).toEqual([ids.spanInput]);
    expect(await search(t, { q: 'タワー' })).toEqual([ids.spanInput]);
    // No ASCII separator inside 東京: one token, and a part of it is not.
    expect(await search(t, { q: '東' })).toEqual([]);
  });

  it('matches whole tokens only: no partial words, no other word forms', async () => {
    expect(await search(t, { q: 'zebra' })).toEqual([]);
    expect(await search(t, { q: 'quarter' })).toEqual([]);
    expect(await search(t, { q: 'Ответы' })).toEqual([]);
    // `Errors: rate_limited`: errors, rate and limited are tokens (_ separates), error is not.
    expect(await search(t, { q: 'errors' })).toEqual([ids.spanError]);
    expect(await search(t, { q: 'error' })).toEqual([]);
    expect(await search(t, { q: 'rate_limited' })).toEqual([ids.spanError]);
    expect(await search(t, { q: 'limited' })).toEqual([ids.spanError]);
  });

  it('needs every token, each anywhere in the trace: its own fields or any of its spans', async () => {
    expect(await search(t, { q: 'alphaword betaword' })).toEqual([ids.split]);
    expect(await search(t, { q: 'alphaword, BETAWORD!' })).toEqual([ids.split]);
    expect(await search(t, { q: 'alphaword gammaword' })).toEqual([]);
    expect(await search(t, { q: 'zebrafield vectorsearch' })).toEqual([]);
    // Punctuation only separates: the query is its tokens.
    expect(await search(t, { q: '(code 502)' })).toEqual([ids.traceError]);
  });

  it("never returns another tenant's trace", async () => {
    expect(await search(t, { q: 'zebrafield' })).toEqual([ids.traceName]);
    expect(await search(other, { q: 'zebrafield' })).toEqual([elsewhere.id]);
    expect(await search(other, { q: 'vectorsearch' })).toEqual([elsewhere.id]);
    expect(await search(other, { q: 'quarterly' })).toEqual([]);
    expect(await search(t, { q: 'elsewhere' })).toEqual([]);
  });

  it('combines with the other filters', async () => {
    expect(await search(t, { q: 'plain', name: 'alphaword' })).toEqual([ids.split]);
    expect(await search(t, { q: 'plain', from: at(7_000) })).toEqual([ids.split, ids.spanError]);
    expect(await search(t, { q: 'vectorsearch', project_id: t.projectId })).toEqual([ids.spanName]);
    expect(await search(other, { q: 'vectorsearch', project_id: t.projectId })).toEqual([]);
    expect(await search(t, { q: 'zebrafield', to: at(-1) })).toEqual([]);
  });

  it('finds the same traces without narrowing by the token index first, as it does when every token is common', async () => {
    // The API narrows by candidates (every token here is rare); the plain condition, the one used
    // when every token is held by more than SEARCH_CANDIDATES_MAX traces, must agree with it.
    const repo = traceRepository(ctx.stores.ch);
    const plain = async (tenant: TestTenant, query: { q: string; project_id?: string; from?: string; name?: string }) => {
      const filter = TraceFilter.fromQuery(tenant.tenantId, query);
      const rows = await readNewestFirst(filter.range, null, 1000, Date.now(), (slice, want) => repo.listSlice(filter, slice, want));
      return rows.map((r) => r.id);
    };
    const queries = [{ q: 'zebrafield' }, { q: 'VECTORSEARCH' }, { q: 'alphaword betaword' }, { q: 'alphaword gammaword' }, { q: 'plain', from: at(7_000) }, { q: 'plain', name: 'alphaword' }, { q: 'vectorsearch', project_id: t.projectId }, { q: '東京' }];
    for (const query of queries) expect(await plain(t, query), JSON.stringify(query)).toEqual(await search(t, query));
    expect(await plain(other, { q: 'zebrafield' })).toEqual([elsewhere.id]);
    expect(await plain(t, { q: 'elsewhere' })).toEqual([]);
  });

  it('looks tokens up in the text index of trace_tokens', async () => {
    // The search's lookups (repo.tokenPositions, search.ts) test hasToken(tokens, …) on this table.
    const rows = await ctx.stores.ch.rows<{ explain: string }>(
      'test',
      'EXPLAIN indexes = 1 SELECT trace_id FROM trace_tokens WHERE tenant_id = {t:UUID} AND hasToken(tokens, {w:String})',
      { t: t.tenantId, w: 'zebrafield' },
    );
    const plan = rows.map((r) => r.explain).join('\n');
    expect(plan).toContain('Name: idx_tokens');
    expect(plan).toContain('__text_index_idx_tokens_hasToken');
  });
});

describe('GET /v1/traces?q= over traces stored before the token index', () => {
  it('finds them once migration 009 has filled trace_tokens from the stored traces and spans', async () => {
    const t = await createTenant(ctx.app);
    const stored = [traceAt(0, { name: 'Backfilledname' }), traceAt(1_000, {}, [{}, { output: 'backfilled span answer' }])];
    await ingestTraces(ctx.app, t, stored);
    await ctx.stores.ch.command('test', 'DELETE FROM trace_tokens WHERE tenant_id = {t:UUID}', { t: t.tenantId });
    expect(await search(t, { q: 'backfilledname' })).toEqual([]);
    // The migration's own statements that fill the table (it empties it first, then reads every stored trace).
    const migration = readFileSync(new URL('../../clickhouse/009_trace_tokens.sql', import.meta.url), 'utf8');
    const fills = splitStatements(renderClickHouseDdl(migration, ctx.stores.ch.cluster)).filter((s) => /^(TRUNCATE|INSERT)\b/.test(s));
    expect(fills).toHaveLength(3);
    for (const statement of fills) await ctx.stores.ch.command('test', statement);
    expect(await search(t, { q: 'backfilledname' })).toEqual([stored[0]!.id]);
    expect(await search(t, { q: 'BACKFILLED answer' })).toEqual([stored[1]!.id]);
    expect(await search(t, { q: 'plain' })).toEqual([stored[1]!.id, stored[0]!.id]);
  });
});

describe('GET /v1/traces?q= with the cursor and the export', () => {
  let t: TestTenant;
  const matching = Array.from({ length: 7 }, (_, i) => traceAt(i * 1_000, i % 2 === 0 ? { name: 'Pagetoken even' } : {}, [{}, { output: `pagetoken ${i}` }]));
  const others = Array.from({ length: 4 }, (_, i) => traceAt(i * 1_000 + 500));

  beforeAll(async () => {
    t = await createTenant(ctx.app);
    await ingestTraces(ctx.app, t, [...matching, ...others]);
  });

  it('pages through the matches with the keyset cursor, newest first, each once', async () => {
    const pages = await listAll(ctx.app, t, '/v1/traces', 'traces', { q: 'PageToken', limit: 2 });
    expect(pages.map((p) => p.length)).toEqual([2, 2, 2, 1]);
    expect(pages.flat().map((x) => x.id)).toEqual([...matching].reverse().map((x) => x.id));
  });

  it('a cursor continues only the search it came from', async () => {
    const first = await getJson(ctx.app, t, '/v1/traces', { q: 'pagetoken', limit: 2 });
    const next = await getJson(ctx.app, t, '/v1/traces', { q: 'plain', limit: 2, cursor: first.body.next_cursor });
    expect(next.status).toBe(400);
    expect(next.body.code).toBe('invalid_cursor');
  });

  it('the export with q holds the traces the list finds', async () => {
    const listed = await search(t, { q: 'pagetoken even' });
    expect(listed).toHaveLength(4);
    const res = await ctx.app.inject({ method: 'GET', url: withQuery('/v1/traces/export', { q: 'pagetoken even', format: 'jsonl' }), headers: t.auth });
    expect(res.statusCode, res.body).toBe(200);
    const exported = res.body.trimEnd().split('\n').map((line) => JSON.parse(line) as { trace_id: string });
    expect(new Set(exported.map((r) => r.trace_id))).toEqual(new Set(listed));
    expect(exported).toHaveLength(8);
  });
});

describe('GET /v1/traces?q= validation', () => {
  let t: TestTenant;
  beforeAll(async () => {
    t = await createTenant(ctx.app);
  });

  const expect400 = async (path: string, q: string, message: string) => {
    const { status, body } = await getJson(ctx.app, t, path, { q });
    expect(status, JSON.stringify(body)).toBe(400);
    expect(body.code).toBe('bad_request');
    expect(body.details).toEqual([expect.objectContaining({ path: 'query.q', message: expect.stringContaining(message) })]);
  };

  it('refuses an empty q, one without a letter or digit, one too long and one with too many tokens', async () => {
    for (const path of ['/v1/traces', '/v1/traces/export']) {
      await expect400(path, '', '>=1 characters');
      await expect400(path, ' -- !! ', 'letter or digit');
      await expect400(path, 'x'.repeat(501), '<=500 characters');
      await expect400(path, 'a b c d e f g h i j k', 'at most 10 distinct tokens');
    }
    // Repeated tokens count once; 500 characters are allowed.
    expect((await getJson(ctx.app, t, '/v1/traces', { q: 'a A a, b c d e f g h i j' })).status).toBe(200);
    expect((await getJson(ctx.app, t, '/v1/traces', { q: 'x'.repeat(500) })).status).toBe(200);
  });
});

describe('GET /v1/traces?q= over candidates read by key, a batch at a time', () => {
  let t: TestTenant;
  // 40 traces with the token, 5 at each of 8 milliseconds (ties ordered by ClickHouse's UUID
  // order, not the text's), every third named `kept`: pages of 3 need several batches (2 × 4 keys,
  // then 4 × that), each extended to the end of its millisecond.
  const matching = Array.from({ length: 40 }, (_, i) =>
    traceAt(100_000 + Math.floor(i / 5) * 1_000, { name: i % 3 === 0 ? 'kept' : 'plain trace' }, [{ input: 'tiedbatchtoken here' }]),
  );

  beforeAll(async () => {
    t = await createTenant(ctx.app);
    await ingestTraces(ctx.app, t, [...matching, traceAt(99_000), traceAt(200_000)]);
  });

  const plain = async (query: { q: string; name?: string }) => {
    const filter = TraceFilter.fromQuery(t.tenantId, query);
    const rows = await readNewestFirst(filter.range, null, 1000, Date.now(), (slice, want) => traceRepository(ctx.stores.ch).listSlice(filter, slice, want));
    return rows.map((r) => r.id);
  };

  for (const query of [{ q: 'tiedbatchtoken' }, { q: 'tiedbatchtoken', name: 'kept' }]) {
    it(`pages in the plain listing's order, ties included: ${JSON.stringify(query)}`, async () => {
      const expected = await plain(query);
      expect(expected).toHaveLength(query.name ? 14 : 40);
      const pages = await listAll(ctx.app, t, '/v1/traces', 'traces', { ...query, limit: 3 });
      expect(pages.flat().map((x) => x.id)).toEqual(expected);
      expect(await search(t, query)).toEqual(expected);
    });
  }

  it('keeps to the time range and the cursor of the listing', async () => {
    const from = at(102_000);
    const to = at(104_000);
    const expected = (await plain({ q: 'tiedbatchtoken' })).filter((id) => {
      const started = Date.parse(matching.find((m) => m.id === id)!.started_at);
      return started >= Date.parse(from) && started <= Date.parse(to);
    });
    expect(expected).toHaveLength(15);
    const pages = await listAll(ctx.app, t, '/v1/traces', 'traces', { q: 'tiedbatchtoken', from, to, limit: 4 });
    expect(pages.flat().map((x) => x.id)).toEqual(expected);
  });
});

describe(`GET /v1/traces?q= with a token in more than ${SEARCH_CANDIDATES_MAX} traces`, () => {
  let t: TestTenant;
  // Newest first, one per 7 minutes back from now: the first hour's slice, then the day's, hold them.
  const now = Date.now();
  const crowded = Array.from({ length: SEARCH_CANDIDATES_MAX + 40 }, (_, i) => {
    const startMs = now - 60_000 - i * 7 * 60_000;
    const trace = aTrace({
      name: i % 4 === 0 ? 'kept' : 'plain trace',
      ended_at: new Date(startMs + 1_000).toISOString(),
      spans: [aSpan({ input: i % 9 === 0 ? 'crowdedword and scarceword' : 'crowdedword only', start_time: new Date(startMs).toISOString(), end_time: new Date(startMs + 500).toISOString() })],
    });
    return { ...trace, started_at: new Date(startMs).toISOString() };
  });
  const ids = (keep: (i: number) => boolean) => crowded.filter((_, i) => keep(i)).map((x) => x.id);

  beforeAll(async () => {
    t = await createTenant(ctx.app);
    for (let i = 0; i < crowded.length; i += 100) await ingestTraces(ctx.app, t, crowded.slice(i, i + 100));
  });

  it('reads newest first when every token is that common, and narrows by the rarer token otherwise', async () => {
    const repo = traceRepository(ctx.stores.ch);
    expect((await narrowedBySearch(repo, t.tenantId, { q: 'crowdedword' })).candidates).toBeNull();
    const narrowed = await narrowedBySearch(repo, t.tenantId, { q: 'crowdedword scarceword' });
    expect(narrowed.candidates?.map((c) => c.id).sort()).toEqual(ids((i) => i % 9 === 0).sort());
  });

  for (const [query, keep] of [
    [{ q: 'crowdedword' }, () => true],
    [{ q: 'crowdedword', name: 'kept' }, (i: number) => i % 4 === 0],
    [{ q: 'CROWDEDWORD scarceword' }, (i: number) => i % 9 === 0],
    [{ q: 'crowdedword scarceword', name: 'kept' }, (i: number) => i % 36 === 0],
  ] as const) {
    it(`pages through every match once, newest first: ${JSON.stringify(query)}`, async () => {
      const pages = await listAll(ctx.app, t, '/v1/traces', 'traces', { ...query, limit: 60 });
      expect(pages.flat().map((x) => x.id)).toEqual(ids(keep));
    });
  }
});
