import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { foldSpans, traceFields, type OtlpTraceState, type SpanFacts } from '../../../src/modules/ingest/otlp/trace-state.js';

/**
 * The fold behind OTLP trace rows: whatever the order in which a trace's spans arrive, however they
 * are split into group commits, and however often a span is sent again, the row is the same.
 */
const spanFacts = fc.record({
  n: fc.integer({ min: 1, max: 0xffff }),
  parentless: fc.boolean(),
  name: fc.constantFrom('root', 'llm call', 'tool', 'retrieve'),
  type: fc.constantFrom('llm', 'tool', 'span'),
  model: fc.constantFrom('', 'gpt-4o-mini', 'claude-3-5-haiku'),
  startMs: fc.integer({ min: 0, max: 50 }),
  durationMs: fc.integer({ min: 0, max: 100 }),
  promptTokens: fc.integer({ min: 0, max: 1_000 }),
  completionTokens: fc.integer({ min: 0, max: 1_000 }),
  cost: fc.constantFrom(0, 0.001, 0.25),
  error: fc.constantFrom(null, 'timed out', 'rate limited'),
  failureType: fc.constantFrom('', 'timeout', 'rate_limit'),
  session: fc.constantFrom('', 's-1', 's-2'),
  tags: fc.subarray(['a', 'b', 'env:prod', 'team:x']),
  tagMap: fc.dictionary(fc.constantFrom('team', 'env'), fc.constantFrom('x', 'y')),
});


function facts(raw: { n: number; startMs: number; durationMs: number } & Omit<SpanFacts, 'spanId' | 'startNs' | 'endNs'>): SpanFacts {
  const { n, startMs, durationMs, ...rest } = raw;
  const hex = n.toString(16).padStart(16, '0');
  return { ...rest, spanId: `00000000-0000-0000-${hex.slice(0, 4)}-${hex.slice(4)}`, startNs: BigInt(startMs) * 1_000_000n, endNs: BigInt(startMs + durationMs) * 1_000_000n };
}

function foldInChunks(spans: readonly SpanFacts[], cuts: readonly number[]): OtlpTraceState {
  let state: OtlpTraceState | null = null;
  let at = 0;
  for (const cut of [...cuts, spans.length]) {
    const chunk = spans.slice(at, Math.max(at, Math.min(cut, spans.length)));
    at = Math.max(at, Math.min(cut, spans.length));
    if (chunk.length === 0 && state === null) continue;
    state = foldSpans(state, chunk).state;
  }
  return state!;
}

describe('foldSpans', () => {
  it('gives the same trace fields for any arrival order, split and repetition of the spans', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(spanFacts, { minLength: 1, maxLength: 12, selector: (s) => s.n }),
        fc.array(fc.nat(12), { maxLength: 4 }),
        fc.integer(),
        (raw, cuts, seed) => {
          const spans = raw.map(facts);
          const reference = traceFields(foldSpans(null, spans).state);
          const shuffled = [...spans].sort((x, y) => ((x.spanId.charCodeAt(30) * seed) % 7) - ((y.spanId.charCodeAt(30) * seed) % 7));
          const resent = [...shuffled, ...shuffled.slice(0, Math.abs(seed) % (shuffled.length + 1))];
          const state = foldInChunks(resent, [...cuts].sort((x, y) => x - y));
          expect(traceFields(state)).toEqual(reference);
          expect(state.spans).toHaveLength(spans.length);
        },
      ),
    );
  });

  it('names the trace after the earliest span without a parent, else the earliest span', () => {
    const span = (n: number, startMs: number, parentless: boolean, name: string) =>
      facts({ n, startMs, durationMs: 10, parentless, name, type: 'span', model: '', promptTokens: 0, completionTokens: 0, cost: 0, error: null, failureType: '', session: '', tags: [], tagMap: {} });
    const children = foldSpans(null, [span(2, 5, false, 'late child'), span(3, 1, false, 'early child')]).state;
    expect(traceFields(children).name).toBe('early child');
    const withRoot = foldSpans(children, [span(1, 3, true, 'root')]).state;
    expect(traceFields(withRoot)).toMatchObject({ name: 'root', startNs: 1_000_000n, endNs: 15_000_000n, spanCount: 3 });
  });

  it('keeps only text Postgres can store in the state', () => {
    const state = foldSpans(null, [
      facts({ n: 1, startMs: 0, durationMs: 1, parentless: true, name: 'a\u0000b\uD800', type: 'llm', model: 'm', promptTokens: 0, completionTokens: 0, cost: 0, error: 'x\u0000', failureType: '', session: '\uDC00s', tags: ['ok', 'bad\uD800'], tagMap: {} }),
    ]).state;
    expect(JSON.stringify(state)).not.toMatch(/\\u0000|\\ud[89a-f][0-9a-f]{2}/i);
    expect(traceFields(state)).toMatchObject({ name: 'a\uFFFDb\uFFFD', error: 'x\uFFFD', sessionId: '\uFFFDs', tags: ['ok'] });
  });
});
