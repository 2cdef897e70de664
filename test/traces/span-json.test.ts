import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceRepository } from '../../src/modules/traces/repo.js';
import { span, spanSummary, traceDetail, type TraceDetail } from '../../src/modules/traces/schemas.js';
import { spansJson, type SpansKind } from '../../src/modules/traces/span-json.js';
import { toSpan, toSpanSummary } from '../../src/modules/traces/stored.js';
import { nanosToClickHouse } from '../../src/platform/time.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext } from '../helpers/app.js';
import { ingestTraces } from '../helpers/trace-api.js';

/**
 * The detail's span text made from ClickHouse's RowBinary answer (span-json.ts) against what the
 * schema serializer makes of the same stored spans read as JSON rows (toSpan): the same bytes, or
 * no text at all (undefined) for the values only the JSON path reproduces.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

const at = (iso: string, plusMs: number) => new Date(Date.parse(iso) + plusMs).toISOString();
const repo = () => traceRepository(ctx.stores.ch);

/** What the schema serializer writes for the spans (of the detail, or of the tree) as the JSON path reads them. */
async function schemaText(tenantId: string, projectId: string, traceId: string, kind: SpansKind = 'detail'): Promise<string> {
  if (kind === 'tree') return JSON.stringify(z.array(spanSummary).encode((await repo().spanSummaries(tenantId, projectId, traceId, 'primary')).map(toSpanSummary)));
  return JSON.stringify(z.array(span).encode((await repo().spans(tenantId, projectId, traceId, 'primary')).map(toSpan)));
}

async function fastText(tenantId: string, projectId: string, traceId: string, kind: SpansKind = 'detail'): Promise<string | undefined> {
  const rowBinary = await repo().spansRowBinaryFromPrimary(tenantId, projectId, traceId, kind);
  const spans = spansJson(rowBinary.data, kind);
  rowBinary.release();
  const text = spans && `[${spans.text.toString('utf8')}]`;
  spans?.release();
  return text;
}

interface StoredSpanRow {
  span_id: string;
  parent_span_id: string | null;
  name: string;
  type: string;
  input: string;
  output: string;
  model: string;
  start_time: string;
  end_time: string;
  latency_ms: string;
  prompt_tokens: string;
  completion_tokens: string;
  cost: number;
  error: string | null;
  failure_type: string;
  metadata: string;
  otel_trace_id: string;
  otel_span_id: string;
  created_at: string;
}

/** Writes spans as ingest would, but any values: the fast path must take what the table holds. */
async function store(rows: StoredSpanRow[]): Promise<{ tenantId: string; projectId: string; traceId: string }> {
  const ids = { tenantId: randomUUID(), projectId: randomUUID(), traceId: randomUUID() };
  await ctx.stores.ch.insert(
    'spans',
    rows.map((r) => ({ ...r, tenant_id: ids.tenantId, project_id: ids.projectId, trace_id: ids.traceId, status_code: 0, version: 1 })),
  );
  return ids;
}

// Characters where JSON.stringify and ClickHouse's JSON writer differ, or that need escaping at all.
const tricky = fc.constantFrom('\u2028', '\u2029', '\u000b', '\u001f', '\u0000', '\n', '"', '\\', '/', '\u007f', '\u0080', 'é', '🙂', '中', '\ufffd', '\\u000B');
const text = fc
  .array(fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), tricky), { maxLength: 6 })
  .map((parts) => parts.join('').replace(/\p{Cs}/gu, '?')); // lone surrogates cannot be stored (tested below as bytes)
// Mostly integers a double holds exactly: a trace with any other is declined, and most traces should not be.
const uint64 = fc
  .oneof({ arbitrary: fc.bigInt({ min: 0n, max: 2n ** 53n - 1n }), weight: 19 }, { arbitrary: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), weight: 1 })
  .map(String);
const nanos = fc.bigInt({ min: 946_684_800_000_000_000n, max: 4_102_444_799_999_999_999n }); // 2000-2099
const metadata = fc.oneof(
  fc.json({ maxDepth: 2 }),
  fc.constantFrom('', 'not json', '[1,2]', '{ "b" : 1.50, "a": [] }', '{"2":"two","1":"one","b":1}', '{"__proto__":{"x":1},"k":"v"}', '{"a":{"__proto__":2}}', '{"a":1,"a":2}'),
);
const optionalId = fc.option(fc.uuid(), { nil: null });
const spanRow: fc.Arbitrary<StoredSpanRow> = fc.record({
  span_id: fc.uuid(),
  parent_span_id: optionalId,
  name: text,
  type: fc.constantFrom('llm', 'tool', 'chain', ''),
  input: text,
  output: text,
  model: text,
  start_time: nanos.map(nanosToClickHouse),
  end_time: nanos.map(nanosToClickHouse),
  latency_ms: uint64,
  prompt_tokens: uint64,
  completion_tokens: uint64,
  cost: fc.double({ noNaN: true, noDefaultInfinity: true }),
  error: fc.option(text, { nil: null }),
  failure_type: fc.constantFrom('', 'timeout', 'rate_limit'),
  metadata,
  otel_trace_id: fc.constantFrom('', '0af7651916cd43dd8448eb211c80319c'),
  otel_span_id: fc.constantFrom('', 'b7ad6b7169203331'),
  created_at: nanos.map((ns) => nanosToClickHouse(ns).slice(0, 23)),
});

const unsafeInteger = (row: StoredSpanRow) => [row.latency_ms, row.prompt_tokens, row.completion_tokens].some((n) => BigInt(n) > BigInt(Number.MAX_SAFE_INTEGER));

describe('span text from RowBinary', () => {
  it('is the schema serializer text of the same spans, for any stored values it takes', async () => {
    let made = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(spanRow, { minLength: 1, maxLength: 4 }), async (rows) => {
        const ids = await store(rows);
        const fast = await fastText(ids.tenantId, ids.projectId, ids.traceId);
        if (rows.some(unsafeInteger)) expect(fast).toBeUndefined();
        else expect(fast).toBe(await schemaText(ids.tenantId, ids.projectId, ids.traceId));
        const tree = await fastText(ids.tenantId, ids.projectId, ids.traceId, 'tree');
        if (rows.some(unsafeInteger)) expect(tree).toBeUndefined();
        else expect(tree).toBe(await schemaText(ids.tenantId, ids.projectId, ids.traceId, 'tree'));
        if (fast !== undefined) made += 1;
      }),
      { numRuns: 80 },
    );
    expect(made).toBeGreaterThan(20); // the property is not only about declining
  });

  it('declines strings that are not UTF-8 and costs that are not finite, which only the JSON path reproduces', async () => {
    const ok = fc.sample(spanRow, 1)[0]!;
    const plain = { ...ok, latency_ms: '1', prompt_tokens: '2', completion_tokens: '3', cost: 0.5 };
    const ids = await store([plain]);
    expect(await fastText(ids.tenantId, ids.projectId, ids.traceId)).toBe(await schemaText(ids.tenantId, ids.projectId, ids.traceId));
    const where = `tenant_id = '${ids.tenantId}'`;
    // A later version of the span, as a re-send would write it, with what cannot be reproduced.
    for (const [column, value] of [
      ['input', "unhex('61eda080')"], // a UTF-8-encoded lone surrogate
      ['name', "unhex('ff')"],
      ['metadata', "concat('{\"a\":\"', unhex('c0af'), '\"}')"],
      ['cost', 'inf'],
      ['cost', 'nan'],
    ]) {
      await ctx.stores.ch.command(
        'test.span_version',
        `INSERT INTO spans SELECT * REPLACE (${value} AS ${column}, version + 1 AS version) FROM spans FINAL WHERE ${where}`,
      );
      expect(await fastText(ids.tenantId, ids.projectId, ids.traceId), `${column} = ${value}`).toBeUndefined();
      // The tree's text has no input or metadata to decline (input_chars counts what is there, as the JSON path does).
      const tree = await fastText(ids.tenantId, ids.projectId, ids.traceId, 'tree');
      if (column === 'name' || column === 'cost') expect(tree).toBeUndefined();
      else expect(tree).toBe(await schemaText(ids.tenantId, ids.projectId, ids.traceId, 'tree'));
      await ctx.stores.ch.command('test.span_version', `INSERT INTO spans SELECT * REPLACE (version + 1 AS version) FROM (SELECT * REPLACE (${column === 'cost' ? '0.5' : `'x'`} AS ${column}) FROM spans FINAL WHERE ${where})`);
      expect(await fastText(ids.tenantId, ids.projectId, ids.traceId)).toBeDefined();
    }
  });
});

/** RowBinary of one span in SPAN_JSON_SELECT_COLUMNS' order, with `input` as given bytes and the rest plain. */
function oneSpanRowBinary(input: Uint8Array, padding: number): Buffer {
  const string = (bytes: Uint8Array | string) => {
    const data = typeof bytes === 'string' ? Buffer.from(bytes) : Buffer.from(bytes);
    const length: number[] = [];
    for (let n = data.length; ; n = Math.floor(n / 128)) {
      length.push((n & 0x7f) | (n >= 128 ? 0x80 : 0));
      if (n < 128) break;
    }
    return Buffer.concat([Buffer.from(length), data]);
  };
  const uint64 = (n: number) => Buffer.from(new BigUint64Array([BigInt(n)]).buffer);
  const float64 = (n: number) => Buffer.from(new Float64Array([n]).buffer);
  const uuid = Buffer.alloc(16, 0x11);
  const notNull = Uint8Array.of(0);
  const isNull = Uint8Array.of(1);
  const row = Buffer.concat([
    uuid, uint64(1_700_000_000_000), uuid, uuid, string('n'), string('llm'), isNull, string(input), string('out'), string('m'),
    uint64(1), float64(0.5), notNull, string(''), uint64(2), uint64(3), string('{}'), uint64(1_700_000_000_000_000_000), uint64(1_700_000_000_000_000_000),
    string(''), string(''), string(''),
  ]);
  // Shifted by `padding` bytes in its ArrayBuffer: the scan reads four bytes at a time where aligned.
  return Buffer.concat([Buffer.alloc(padding), row]).subarray(padding);
}

describe('span text of any input bytes', () => {
  it('writes the string JSON.stringify writes for UTF-8, at any alignment, and declines other bytes', () => {
    const byte = fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0x00, 0x1f, 0x20, 0x22, 0x5c, 0x7f, 0x80, 0xc3, 0xa9, 0xe2, 0x80, 0xa8, 0xf0, 0x9f));
    const plain = fc.stringMatching(/^[a-z ]{0,24}$/);
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 40 }),
      fc.array(byte, { maxLength: 40 }).map((b) => Uint8Array.from(b)),
      fc.string({ unit: 'binary', maxLength: 30 }).map((t) => Buffer.from(t)),
      // One byte of interest anywhere in plain text: each test of the four-byte scan alone.
      fc.tuple(plain, byte, plain).map(([before, b, after]) => Buffer.concat([Buffer.from(before), Uint8Array.of(b), Buffer.from(after)])),
    );
    fc.assert(
      fc.property(bytes, fc.integer({ min: 0, max: 7 }), (input, padding) => {
        const spans = spansJson(oneSpanRowBinary(input, padding));
        if (!isUtf8(input)) {
          expect(spans).toBeUndefined();
        } else {
          const text = spans!.text.toString('utf8');
          spans!.release();
          expect(text).toContain(`"input":${JSON.stringify(Buffer.from(input).toString('utf8'))},"output":"out"`);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('GET /v1/traces/{id}', () => {
  /** What the route's zod serializer answered before the detail was made as text. */
  const schemaJson = (detail: unknown): string => JSON.stringify(traceDetail.encode(detail as TraceDetail));

  it('answers the schema serializer text whether the spans are made from RowBinary or, for a trace it declines, from JSON rows', async () => {
    const t = await createTenant(ctx.app);
    const start = '2026-09-09T09:00:00.000Z';
    const spans = Array.from({ length: 600 }, (_, i) =>
      aSpan({ name: `s${i} \u2028 "q"`, input: `in ${i} 🙂 \u000b`, metadata: i % 7 === 0 ? { i, nested: { a: [1, 2.5] } } : {}, start_time: at(start, i), end_time: at(start, i + 5) }),
    );
    const trace = aTrace({ spans, metadata: { k: 'v' } });
    await ingestTraces(ctx.app, t, [trace]);
    const get = () => ctx.app.inject({ method: 'GET', url: `/v1/traces/${trace.id}`, headers: t.auth });
    const fast = await get();
    expect(fast.statusCode, fast.body).toBe(200);
    expect(fast.json().spans).toHaveLength(600);
    expect(fast.body).toBe(schemaJson(fast.json()));
    expect(await fastText(t.tenantId, t.projectId, trace.id)).toBeDefined();

    // One span's output stops being UTF-8: the whole trace is answered the JSON way.
    await ctx.stores.ch.command(
      'test.span_version',
      `INSERT INTO spans SELECT * REPLACE (concat(output, unhex('ff')) AS output, version + 1 AS version) FROM spans FINAL WHERE tenant_id = '${t.tenantId}' AND name = 's599 \u2028 "q"'`,
    );
    expect(await fastText(t.tenantId, t.projectId, trace.id)).toBeUndefined();
    const slow = await get();
    expect(slow.statusCode, slow.body).toBe(200);
    expect(slow.body).toBe(schemaJson(slow.json()));
    expect(slow.json().spans.at(-1).output).toContain('\ufffd');
    expect({ ...slow.json(), spans: slow.json().spans.slice(0, -1) }).toEqual({ ...fast.json(), spans: fast.json().spans.slice(0, -1) });
  });

  it('answers each request its own text when requests overlap (the text buffers are reused once an answer is sent)', async () => {
    const t = await createTenant(ctx.app);
    const start = '2026-09-10T09:00:00.000Z';
    const traces = ['a', 'b'].map((tag) =>
      aTrace({ spans: Array.from({ length: 300 }, (_, i) => aSpan({ name: `${tag}${i}`, output: `${tag}`.repeat(50 + i), start_time: at(start, i), end_time: at(start, i + 1) })) }),
    );
    await ingestTraces(ctx.app, t, traces);
    const get = async (id: string) => (await ctx.app.inject({ method: 'GET', url: `/v1/traces/${id}`, headers: t.auth })).body;
    const [a, b] = [await get(traces[0]!.id), await get(traces[1]!.id)];
    expect(a).toBe(schemaJson(JSON.parse(a)));
    expect(JSON.parse(b).spans[0].name).toBe('b0');
    for (let round = 0; round < 3; round++) {
      expect(await Promise.all([get(traces[0]!.id), get(traces[1]!.id), get(traces[0]!.id)])).toEqual([a, b, a]);
      expect(await get(traces[1]!.id)).toBe(b);
    }
  });
});
