/**
 * Request bodies for POST /v1/ingest/batch: 100 traces × 10 spans of realistic size (200–800
 * character inputs and outputs, models, tokens, tags, a few failures). A handful of templates is
 * built once; every request then gets ids no other request has by rewriting one id prefix, so a
 * long run needs no gigabytes of pre-built bodies and never sends a duplicate (which would be a 409).
 */
import { randomBytes } from 'node:crypto';
import { traceInput, type TraceInput } from '../../src/modules/ingest/schemas.js';
import { seededRandom } from './random.js';
import {
  CUSTOMERS,
  ENVS,
  FAILURE_ERRORS,
  FAILURE_PERCENT,
  FAILURE_TYPES,
  MODELS,
  PROSE,
  REGIONS,
  SPAN_TYPES,
  TEXT_MIN,
  TEXT_SPREAD,
  TRACE_NAMES,
} from './synthetic.js';

export const TRACES_PER_REQUEST = 100;
export const SPANS_PER_TRACE = SPAN_TYPES.length;
const MARK = 'abcdefab-cdef-abcd'; // replaced per request by `<run>-<request hi>-<request lo>`


const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');

function template(seed: number, nowMs: number): string {
  const rnd = seededRandom(seed);
  const int = (n: number) => Math.floor(rnd() * n);
  const text = () => {
    const length = TEXT_MIN + int(TEXT_SPREAD);
    const from = int(PROSE.length - length);
    return PROSE.slice(from, from + length);
  };
  const traces: TraceInput[] = [];
  for (let t = 0; t < TRACES_PER_REQUEST; t += 1) {
    const traceId = `${MARK}-${hex(t, 4)}-ffffffffffff`;
    const model = MODELS[int(MODELS.length)]!;
    const zeroTokens = int(100) < 5;
    const failure = int(100) < FAILURE_PERCENT ? FAILURE_TYPES[int(FAILURE_TYPES.length)]! : undefined;
    const start = nowMs - 60_000 + int(60_000);
    const step = 10 + int(300);
    traces.push({
      id: traceId,
      name: TRACE_NAMES[int(TRACE_NAMES.length)]!,
      input: text(),
      output: text(),
      session_id: `session-${int(100_000)}`,
      tags: [`customer:c${int(CUSTOMERS)}`, `env:${ENVS[int(ENVS.length)]}`],
      tag_map: { region: REGIONS[int(REGIONS.length)]! },
      metadata: { user_id: `u-${int(50_000)}` },
      spans: SPAN_TYPES.map((type, s) => {
        const llm = type === 'llm';
        const failed = failure !== undefined && s === 1;
        return {
          id: `${MARK}-${hex(t, 4)}-${hex(s, 12)}`,
          parent_span_id: s === 0 ? null : `${MARK}-${hex(t, 4)}-${hex(0, 12)}`,
          name: `${type}-${s}`,
          type,
          input: text(),
          output: text(),
          model: llm ? model : undefined,
          start_time: new Date(start + s * step).toISOString(),
          end_time: new Date(start + (s + 1) * step).toISOString(),
          prompt_tokens: llm && !zeroTokens ? 50 + int(2000) : undefined,
          completion_tokens: llm && !zeroTokens ? 10 + int(500) : undefined,
          error: failed ? FAILURE_ERRORS[failure] : undefined,
          failure_type: failed ? failure : undefined,
          status_code: failed ? 500 : 200,
        };
      }),
    });
  }
  // Check the templates against the ingest schema once, so a drift of the schema fails here, loudly.
  for (const trace of traces) traceInput.parse(trace);
  return JSON.stringify({ traces });
}

export interface BodyFactory {
  /** The JSON body of request number `index`: unique ids, content from template `index % templates`. */
  body(index: number): string;
  bytesPerBody: number;
}

export function bodyFactory(templates = 8, nowMs = Date.now()): BodyFactory {
  const run = hex(randomBytes(4).readUInt32BE(), 8);
  const built = Array.from({ length: templates }, (_, i) => template(i + 1, nowMs));
  return {
    body(index: number) {
      const prefix = `${run}-${hex(Math.floor(index / 65536) % 65536, 4)}-${hex(index % 65536, 4)}`;
      return built[index % templates]!.replaceAll(MARK, prefix);
    },
    bytesPerBody: Math.round(built.reduce((sum, b) => sum + Buffer.byteLength(b), 0) / templates),
  };
}
