import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceRepository } from '../../src/modules/traces/repo.js';
import { span, spanSummary, traceDetail, type TraceDetail } from '../../src/modules/traces/schemas.js';
import type { NativeColumn } from '../../src/modules/traces/native-columns.js';
import { SPAN_JSON_COLUMNS, spansJson, type SpansKind } from '../../src/modules/traces/span-json.js';
import { scannableSpare } from '../../src/modules/traces/text-scan.js';
import { toSpan, toSpanSummary } from '../../src/modules/traces/stored.js';
import { nanosToClickHouse } from '../../src/platform/time.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext } from '../helpers/app.js';
import { ingestTraces } from '../helpers/trace-api.js';

/**
 * The detail's span text made from ClickHouse's Native answer (span-json.ts) against what the
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
  const native = await repo().spansNativeFromPrimary(tenantId, projectId, traceId, kind);
  const spans = spansJson(native.data, kind);
  native.release();
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
// 2000-2099; a few shared instants, so that spans starting together are ordered by their ids.
const nanos = fc.oneof(fc.bigInt({ min: 946_684_800_000_000_000n, max: 4_102_444_799_999_999_999n }), fc.constantFrom(1_790_000_000_000_000_000n, 1_790_000_000_000_000_001n));
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

describe('span text from the Native answer', () => {
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

/** A LEB128 length and the bytes: a String in ClickHouse's binary formats. */
function binaryString(bytes: Uint8Array | string): Buffer {
  const data = Buffer.from(bytes);
  const length: number[] = [];
  for (let n = data.length; ; n = Math.floor(n / 128)) {
    length.push((n & 0x7f) | (n >= 128 ? 0x80 : 0));
    if (n < 128) break;
  }
  return Buffer.concat([Buffer.from(length), data]);
}

/**
 * A Native block of one span of the detail's columns (SPAN_JSON_COLUMNS), with `input` as given
 * bytes, `id` its span_id's bytes and the rest plain; `columns` to write another header.
 */
function oneSpanNative(
  input: Uint8Array,
  { id = Buffer.alloc(16, 0x11), startNanos = 1_700_000_000_000_000_000n, columns = SPAN_JSON_COLUMNS.detail }: { id?: Uint8Array; startNanos?: bigint; columns?: readonly NativeColumn[] } = {},
): Buffer {
  const uint64 = (n: bigint) => Buffer.from(new BigUint64Array([n]).buffer);
  const float64 = (n: number) => Buffer.from(new Float64Array([n]).buffer);
  const uuid = Buffer.alloc(16, 0x11);
  const values: Record<string, Buffer> = {
    span_id: Buffer.from(id),
    created_at: uint64(1_700_000_000_000n),
    tenant_id: uuid,
    trace_id: uuid,
    name: binaryString('n'),
    type: binaryString('llm'),
    parent_span_id: Buffer.concat([Uint8Array.of(1), uuid]), // null: the null map, then a value all the same
    input: binaryString(input),
    output: binaryString('out'),
    model: binaryString('m'),
    latency_ms: uint64(1n),
    cost: float64(0.5),
    error: Buffer.concat([Uint8Array.of(0), binaryString('')]),
    prompt_tokens: uint64(2n),
    completion_tokens: uint64(3n),
    metadata: binaryString('{}'),
    start_time: uint64(startNanos),
    end_time: uint64(startNanos),
    otel_trace_id: binaryString(''),
    otel_span_id: binaryString(''),
    failure_type: binaryString(''),
  };
  return Buffer.concat([
    Uint8Array.of(columns.length, 1),
    ...columns.flatMap(({ name, type }) => [binaryString(name), binaryString(type), values[name]!]),
  ]);
}

/** `bytes` shifted by `padding` bytes in their ArrayBuffer: the scan reads four bytes at a time where aligned. */
const shifted = (bytes: Buffer, padding: number): Buffer => Buffer.concat([Buffer.alloc(padding), bytes]).subarray(padding);

/** `bytes` copied `padding` bytes into a buffer of scannableSpare's, which the WebAssembly scan reads (text-scan.ts). */
function scannableCopy(bytes: Buffer, padding: number): Buffer {
  const buffer = scannableSpare.take(padding + bytes.length);
  bytes.copy(buffer, padding);
  return buffer.subarray(padding, padding + bytes.length);
}

describe('the Native answer', () => {
  it('is read across blocks, its spans in start order and then by id as ClickHouse orders UUIDs, and declined when its columns are not the expected ones', () => {
    // ClickHouse compares a UUID's second half first: 22…22-11…11 sorts before 11…11-22…22.
    const id = (first: number, second: number) => Buffer.concat([Buffer.alloc(8, first), Buffer.alloc(8, second)]);
    const block = (input: string, ids: Buffer, startNanos: bigint) => oneSpanNative(Buffer.from(input), { id: ids, startNanos });
    const spans = spansJson(Buffer.concat([block('c', id(0x11, 0x22), 2n * 10n ** 18n), block('a', id(0x33, 0x33), 10n ** 18n), block('b', id(0x22, 0x11), 2n * 10n ** 18n)]));
    const text = JSON.parse(`[${spans!.text.toString('utf8')}]`) as { id: string; input: string; start_time: string }[];
    spans!.release();
    expect(text.map((span) => span.input)).toEqual(['a', 'b', 'c']);
    expect(text.map((span) => span.start_time)).toEqual(['2001-09-09T01:46:40.000Z', '2033-05-18T03:33:20.000Z', '2033-05-18T03:33:20.000Z']);
    expect(text[1]!.id).toBe('22222222-2222-2222-1111-111111111111');

    const retyped = SPAN_JSON_COLUMNS.detail.map((column) => (column.name === 'cost' ? { ...column, type: 'Float32' } : column));
    expect(spansJson(oneSpanNative(Buffer.from('x'), { columns: retyped }))).toBeUndefined();
    expect(spansJson(oneSpanNative(Buffer.from('x'), { columns: SPAN_JSON_COLUMNS.detail.slice(1) }))).toBeUndefined();
    const none = spansJson(Buffer.alloc(0))!;
    expect(none.text.length).toBe(0);
    none.release();
    expect(() => spansJson(oneSpanNative(Buffer.from('x')).subarray(0, -3))).toThrow(RangeError);
  });
});

describe('span text of any input bytes', () => {
  it('writes the string JSON.stringify writes for UTF-8, at any alignment, and declines other bytes', () => {
    const byte = fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0x00, 0x1f, 0x20, 0x22, 0x5c, 0x7f, 0x80, 0xc3, 0xa9, 0xe2, 0x80, 0xa8, 0xf0, 0x9f));
    const plain = fc.stringMatching(/^[a-z ]{0,24}$/);
    // Long enough for the WebAssembly scan (strings of 64 bytes or more, in an answer it can read).
    const long = fc.stringMatching(/^[a-z ]{40,90}$/);
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 40 }),
      fc.array(byte, { maxLength: 40 }).map((b) => Uint8Array.from(b)),
      fc.array(byte, { minLength: 64, maxLength: 100 }).map((b) => Uint8Array.from(b)),
      fc.string({ unit: 'binary', maxLength: 30 }).map((t) => Buffer.from(t)),
      // One byte of interest anywhere in plain text: each test of the four- and sixteen-byte scans alone.
      fc.tuple(plain, byte, plain).map(([before, b, after]) => Buffer.concat([Buffer.from(before), Uint8Array.of(b), Buffer.from(after)])),
      fc.tuple(long, byte, long).map(([before, b, after]) => Buffer.concat([Buffer.from(before), Uint8Array.of(b), Buffer.from(after)])),
    );
    fc.assert(
      fc.property(bytes, fc.integer({ min: 0, max: 17 }), fc.boolean(), (input, padding, inWasmMemory) => {
        const native = shifted(oneSpanNative(input), padding);
        const answer = inWasmMemory ? scannableCopy(native, padding) : native;
        const spans = spansJson(answer);
        if (!isUtf8(input)) {
          expect(spans).toBeUndefined();
        } else {
          const text = spans!.text.toString('utf8');
          spans!.release();
          expect(text).toContain(`"input":${JSON.stringify(Buffer.from(input).toString('utf8'))},"output":"out"`);
        }
        // Each copy's memory back to the spare: a WebAssembly memory per run is costly to make.
        if (inWasmMemory) scannableSpare.giveBack(Buffer.from(answer.buffer, 0, answer.byteOffset + answer.length));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('GET /v1/traces/{id}', () => {
  /** What the route's zod serializer answered before the detail was made as text. */
  const schemaJson = (detail: unknown): string => JSON.stringify(traceDetail.encode(detail as TraceDetail));

  it('answers the schema serializer text whether the spans are made from the Native answer or, for a trace it declines, from JSON rows', async () => {
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
