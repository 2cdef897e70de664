import { isUtf8 } from 'node:buffer';
import { SpareBuffer, sharedBuffer } from '../../stores/reused-buffer.js';
import { metadataJson } from './detail-json.js';
import { ascii, CannotReproduce, JsonText } from './json-text.js';
import { NativeColumns, NativeRow, type NativeColumn } from './native-columns.js';

/**
 * The spans of GET /v1/traces/{id} as JSON text made straight from ClickHouse's Native answer
 * (native-columns.ts), without parsing rows into objects: for a trace of 10,000 spans the JSONEachRow parse, the Span
 * objects, their stringify and the garbage of all three were most of the request.
 *
 * The text is the same as JSON.stringify of the spans toSpan makes (test/traces/span-json.test.ts
 * holds it to the schema serializer's output). Strings arrive as their bytes, checked to be UTF-8
 * (isUtf8) where they have a non-ASCII byte. UTF-8 has no byte below 0x80 inside a multi-byte
 * character, so the only bytes JSON.stringify escapes
 * are the ASCII '"', '\' and controls: a string without them is copied as it is, between quotes;
 * one with them is read one byte per character (latin1), which maps those bytes to themselves and
 * passes every other byte through JSON.stringify unchanged. Numbers, ids and times arrive as binary
 * and are written by JavaScript, as toSpan's Number(), toString and clickHouseToIso and
 * JSON.stringify write them: ClickHouse formatting them as text (concat, toString) had cost a third
 * of the query. What this text cannot
 * reproduce (a string that is not valid UTF-8, which the JSON path decodes to U+FFFD; an integer
 * beyond 2^53; a cost that is not finite; a time before 1970) makes spansJson return undefined, and the trace is
 * answered by the JSON path instead.
 */

/**
 * Which text spansJson makes: the detail's spans (GET /v1/traces/{id}), or the tree's (GET
 * /v1/traces/{id}/tree: no input, output or metadata; input_chars and output_chars last).
 */
export type SpansKind = 'detail' | 'tree';

/**
 * The columns spansJson reads, in its order: the Span schema's, as stored, with their SELECT
 * expressions where they are not the column itself. LowCardinality is read as String (the Native
 * format would write its dictionaries).
 */
const spanColumns = (kind: SpansKind): (NativeColumn & { select?: string })[] => [
  { name: 'span_id', type: 'UUID' },
  { name: 'created_at', type: "DateTime64(3, 'UTC')" },
  { name: 'tenant_id', type: 'UUID' },
  { name: 'trace_id', type: 'UUID' },
  { name: 'name', type: 'String' },
  { name: 'type', type: 'String', select: "CAST(type, 'String')" },
  { name: 'parent_span_id', type: 'Nullable(UUID)' },
  ...(kind === 'detail'
    ? [
        { name: 'input', type: 'String' },
        { name: 'output', type: 'String' },
      ]
    : []),
  { name: 'model', type: 'String', select: "CAST(model, 'String')" },
  { name: 'latency_ms', type: 'UInt64' },
  { name: 'cost', type: 'Float64' },
  { name: 'error', type: 'Nullable(String)' },
  { name: 'prompt_tokens', type: 'UInt64' },
  { name: 'completion_tokens', type: 'UInt64' },
  ...(kind === 'detail' ? [{ name: 'metadata', type: 'String' }] : []),
  { name: 'start_time', type: "DateTime64(9, 'UTC')" },
  { name: 'end_time', type: "DateTime64(9, 'UTC')" },
  { name: 'otel_trace_id', type: 'String' },
  { name: 'otel_span_id', type: 'String' },
  { name: 'failure_type', type: 'String', select: "CAST(failure_type, 'String')" },
  ...(kind === 'tree'
    ? [
        { name: 'input_chars', type: 'UInt64', select: 'lengthUTF8(input)' },
        { name: 'output_chars', type: 'UInt64', select: 'lengthUTF8(output)' },
      ]
    : []),
];

export const SPAN_JSON_COLUMNS: Record<SpansKind, readonly NativeColumn[]> = { detail: spanColumns('detail'), tree: spanColumns('tree') };

/**
 * The SELECT list of the spans' query whose Native answer spansJson reads, in any row order (it
 * orders the spans itself).
 */
export const SPAN_JSON_SELECT_COLUMNS: Record<SpansKind, string> = {
  detail: selectList(spanColumns('detail')),
  tree: selectList(spanColumns('tree')),
};

function selectList(columns: readonly (NativeColumn & { select?: string })[]): string {
  return columns.map(({ name, select }) => (select ? `${select} AS ${name}` : name)).join(', ');
}

/** The constant pieces of a span's text, as bytes. */
const K = {
  comma: ascii(','),
  id: ascii('{"id":"'),
  createdAt: ascii('","created_at":"'),
  tenant: ascii('","tenant_id":"'),
  trace: ascii('","trace_id":"'),
  name: ascii('","name":'),
  quote: ascii('"'),
  startTime: ascii(',"start_time":"'),
  endTime: ascii('","end_time":"'),
  otelTrace: ascii('","otel_trace_id":'),
  type: ascii(',"type":'),
  parent: ascii(',"parent_span_id":'),
  input: ascii(',"input":'),
  output: ascii(',"output":'),
  model: ascii(',"model":'),
  latency: ascii(',"latency_ms":'),
  cost: ascii(',"cost":'),
  error: ascii(',"error":'),
  prompt: ascii(',"prompt_tokens":'),
  completion: ascii(',"completion_tokens":'),
  metadata: ascii(',"metadata":'),
  emptyObject: ascii('{}'),
  otelSpan: ascii(',"otel_span_id":'),
  otelParent: ascii(',"otel_parent_span_id":'),
  failure: ascii(',"failure_type":'),
  inputChars: ascii(',"input_chars":'),
  outputChars: ascii(',"output_chars":'),
  end: ascii('}'),
  null: ascii('null'),
};

/** spansJson's text, in a buffer to give back (release) once the answer is sent. */
export interface SpansText {
  text: Buffer;
  release(): void;
}

/** Which spans, in start order, a text holds: the `index`th of `of` shares as equal as can be (from 0). */
export interface Share {
  index: number;
  of: number;
}

const WHOLE: Share = { index: 0, of: 1 };

/** spansJson's text of the last trace, given back for the next (stores/reused-buffer.ts says why). */
const textSpare = new SpareBuffer(sharedBuffer);

/**
 * The JSON text of the spans of a Native answer of SPAN_JSON_SELECT_COLUMNS (or of a share of
 * them), in start order, joined by commas (UTF-8); undefined when a span holds something only the
 * JSON path reproduces, or the answer's columns are not the expected ones. The text must not be
 * read after its release.
 */
export function spansJson(native: Buffer, kind: SpansKind = 'detail', share: Share = WHOLE): SpansText | undefined {
  const storage = textSpare.take(textBytes(native, share));
  const written = writeSpansJson(native, kind, share, storage);
  if (!written) {
    textSpare.giveBack(storage);
    return undefined;
  }
  return releasable(written.text, textSpare);
}

/** `text` in a buffer of `spare`'s, given back to it once (the first release). */
export function releasable(text: Buffer, spare: SpareBuffer): SpansText {
  let released = false;
  return {
    text,
    release: () => {
      if (!released) spare.giveBack(Buffer.from(text.buffer, text.byteOffset, text.buffer.byteLength - text.byteOffset));
      released = true;
    },
  };
}

/** About the text's size: the keys take about what the Native lengths, numbers and checks do. */
export const textBytes = (native: Buffer, share: Share): number => Math.ceil((native.length * 1.25) / share.of) + 1024;

/**
 * spansJson's text of `share`, written into `storage` from its start (or into a larger buffer of
 * shared memory, when it is too small); undefined when spansJson's is.
 */
export function writeSpansJson(native: Buffer, kind: SpansKind, share: Share, storage: Buffer): { text: Buffer } | undefined {
  const table = NativeColumns.read(native, SPAN_JSON_COLUMNS[kind]);
  if (!table) return undefined;
  const order = inStartOrder(table, kind);
  const [from, to] = [share.index, share.index + 1].map((index) => Math.floor((order.length * index) / share.of)) as [number, number];
  const row = new NativeRow(table);
  const text = new JsonText(storage);
  const metadata = new Map<string, string>();
  try {
    for (let i = from; i < to; i++) writeSpan(row.at(order[i]!), text, i === from, kind === 'detail' ? metadata : undefined);
  } catch (err) {
    if (err instanceof CannotReproduce) return undefined;
    throw err;
  }
  return { text: text.text() };
}

/**
 * The rows in the order of the spans' SQL read (ORDER BY start_time, span_id): the engine sorting
 * them cost more than half again of its read of a big trace, here a few milliseconds. DateTime64
 * ticks compare as signed 64-bit integers; UUIDs as ClickHouse compares them, not as their text:
 * their second half first, then their first, each an unsigned 64-bit integer.
 */
function inStartOrder(table: NativeColumns, kind: SpansKind): Uint32Array {
  const { data, rows } = table;
  const [start, id] = [columnIndex(kind, 'start_time'), columnIndex(kind, 'span_id')];
  const high = new Int32Array(rows);
  const low = new Uint32Array(rows);
  const order = new Uint32Array(rows);
  for (let row = 0; row < rows; row++) {
    const at = table.start(start, row);
    high[row] = data.readInt32LE(at + 4);
    low[row] = data.readUInt32LE(at);
    order[row] = row;
  }
  const compareIds = (a: number, b: number): number => {
    const [x, y] = [table.start(id, a), table.start(id, b)];
    for (const word of ID_WORDS) {
      const difference = data.readUInt32LE(x + word) - data.readUInt32LE(y + word);
      if (difference !== 0) return difference;
    }
    return 0;
  };
  return order.sort((a, b) => high[a]! - high[b]! || low[a]! - low[b]! || compareIds(a, b));
}

/** Where a UUID's 32-bit words are in its 16 bytes, in the order ClickHouse compares them (each half little-endian). */
const ID_WORDS = [12, 8, 4, 0];

const columnIndex = (kind: SpansKind, name: string): number => SPAN_JSON_COLUMNS[kind].findIndex((column) => column.name === name);

/** One span, with the Span schema's keys in its order; without `metadata`, a tree's span (SpanSummary). */
function writeSpan(rows: NativeRow, text: JsonText, first: boolean, metadata: Map<string, string> | undefined): void {
  if (!first) text.bytes(K.comma);
  const { data } = rows;
  text.bytes(K.id);
  text.uuid(data, rows.uuid());
  text.bytes(K.createdAt);
  text.iso(rows.millis());
  text.bytes(K.tenant);
  text.uuid(data, rows.uuid());
  text.bytes(K.trace);
  text.uuid(data, rows.uuid());
  text.bytes(K.name);
  text.jsonString(rows.string());
  text.bytes(K.type);
  text.jsonString(rows.string());
  text.bytes(K.parent);
  const parent = rows.isNull() ? -1 : rows.uuid();
  if (parent < 0) text.bytes(K.null);
  else {
    text.bytes(K.quote);
    text.uuid(data, parent);
    text.bytes(K.quote);
  }
  if (metadata) {
    text.bytes(K.input);
    text.jsonString(rows.string());
    text.bytes(K.output);
    text.jsonString(rows.string());
  }
  text.bytes(K.model);
  text.jsonString(rows.string());
  // Pieces written one by one: text made of template strings cost more than the bytes written.
  text.bytes(K.latency);
  text.integer(rows.uint64());
  const cost = rows.float64();
  if (!Number.isFinite(cost)) throw new CannotReproduce();
  text.bytes(K.cost);
  if (Number.isSafeInteger(cost) && !Object.is(cost, -0) && cost >= 0) text.integer(cost);
  else text.latin1(JSON.stringify(cost));
  text.bytes(K.error);
  if (rows.isNull()) text.bytes(K.null);
  else text.jsonStringOrNull(rows.string());
  text.bytes(K.prompt);
  text.integer(rows.uint64());
  text.bytes(K.completion);
  text.integer(rows.uint64());
  if (metadata) {
    text.bytes(K.metadata);
    if (isEmptyObject(rows.string())) text.bytes(K.emptyObject);
    else text.latin1(metadataText(rows, metadata));
  }
  text.bytes(K.startTime);
  text.iso(rows.millisOfNanos());
  text.bytes(K.endTime);
  text.iso(rows.millisOfNanos());
  text.bytes(K.otelTrace);
  text.jsonString(rows.string());
  text.bytes(K.otelSpan);
  const otelSpan = rows.string();
  const isOtel = otelSpan.to > otelSpan.from;
  text.jsonString(otelSpan);
  text.bytes(K.otelParent);
  // toSpan's otelParentOf: an OTel span's parent has the last 16 hex digits of its UUID as OTel id.
  if (isOtel && parent >= 0) {
    text.bytes(K.quote);
    text.uuidLowHex(data, parent);
    text.bytes(K.quote);
  } else text.bytes(K.null);
  text.bytes(K.failure);
  text.jsonStringOrNull(rows.string());
  if (!metadata) {
    text.bytes(K.inputChars);
    text.integer(rows.uint64());
    text.bytes(K.outputChars);
    text.integer(rows.uint64());
  }
  text.bytes(K.end);
}

/** Whether the String just read is `{}`, the metadata of most spans. */
const isEmptyObject = ({ data, from, to }: NativeRow): boolean => to - from === 2 && data[from] === 0x7b && data[from + 1] === 0x7d;

/** metadataJson of the stored text, as latin1 text of its UTF-8; spans of a trace mostly share theirs. */
function metadataText(rows: NativeRow, seen: Map<string, string>): string {
  const stored = rows.data.toString('latin1', rows.from, rows.to);
  let text = seen.get(stored);
  if (text === undefined) {
    if (!isUtf8(rows.data.subarray(rows.from, rows.to))) throw new CannotReproduce();
    text = Buffer.from(metadataJson(Buffer.from(stored, 'latin1').toString('utf8')), 'utf8').toString('latin1');
    seen.set(stored, text);
  }
  return text;
}
