import { isUtf8 } from 'node:buffer';
import { SpareBuffer } from '../../stores/reused-buffer.js';
import { metadataJson } from './detail-json.js';
import { NativeColumns, NativeRow, type NativeColumn } from './native-columns.js';
import { wideScanOf, type WideScan } from './text-scan.js';

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
const spanColumns = (kind: SpansKind): SelectedColumn[] => [
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

/** A column spansJson reads, with the SELECT expression that makes it where it is not the stored column itself. */
type SelectedColumn = NativeColumn & { select?: string };

export const SPAN_JSON_COLUMNS: Record<SpansKind, readonly SelectedColumn[]> = { detail: spanColumns('detail'), tree: spanColumns('tree') };

/**
 * The SELECT list of the spans' query whose Native answer spansJson reads, in any row order (it
 * orders the spans itself).
 */
export const SPAN_JSON_SELECT_COLUMNS: Record<SpansKind, string> = {
  detail: selectList(SPAN_JSON_COLUMNS.detail),
  tree: selectList(SPAN_JSON_COLUMNS.tree),
};

function selectList(columns: readonly SelectedColumn[]): string {
  return columns.map(({ name, select }) => (select ? `${select} AS ${name}` : name)).join(', ');
}

class CannotReproduce extends Error {}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Below this many bytes a loop copies faster than a native call. */
const SHORT_COPY = 48;
/**
 * From this many bytes on, a string is scanned by WebAssembly where it can be; shorter ones (names,
 * types, models, ids) by the JavaScript scan, without a call into WebAssembly. Chosen, not tuned.
 */
const WIDE_SCAN_MIN = 64;

/**
 * JSON text written into one buffer that grows as needed, byte by byte from JavaScript: the pieces
 * of a span are short, and a native call per piece cost more than the piece.
 */
class JsonText {
  private length = 0;
  /** The day of the last `iso` and its text (2026-01-02T): a trace's spans share their day. */
  private isoDay = Number.NaN;
  private isoDate: Uint8Array = new Uint8Array(0);
  /** @param wideScan the WebAssembly scan of the answer's memory, when it has one (text-scan.ts). */
  constructor(
    private data: Buffer,
    private readonly wideScan: WideScan | undefined,
  ) {}

  /** Text of one byte per character (ASCII, or UTF-8 bytes read as latin1). */
  latin1(text: string): void {
    this.reserve(text.length);
    const data = this.data;
    let at = this.length;
    for (let i = 0; i < text.length; i++) data[at++] = text.charCodeAt(i);
    this.length = at;
  }

  /** Bytes of a constant (a key and its punctuation), made once by ascii(). */
  bytes(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    const data = this.data;
    let at = this.length;
    for (let i = 0; i < bytes.length; i++) data[at++] = bytes[i]!;
    this.length = at;
  }

  /** A non-negative integer below 2^53, as Number#toString writes it; toSpan's Number() would round a larger one. */
  integer(value: number): void {
    if (!Number.isSafeInteger(value) || value < 0) throw new CannotReproduce();
    let digits = 1;
    for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++;
    this.reserve(digits);
    const data = this.data;
    let rest = value;
    for (let at = this.length + digits - 1; at >= this.length; at--) {
      data[at] = 0x30 + (rest % 10);
      rest = Math.floor(rest / 10);
    }
    this.length += digits;
  }

  /**
   * The UUID whose 16 bytes start at `at`, as ClickHouse's toString writes it: the first eight
   * bytes hold the first 16 hex digits in reverse order, the last eight the others.
   */
  uuid(source: Buffer, at: number): void {
    this.hexPairs(source, at, 0, true);
  }

  /** The last 16 hex digits of the UUID at `at`, without dashes: toSpan's OTel id of a parent span. */
  uuidLowHex(source: Buffer, at: number): void {
    this.hexPairs(source, at, 8, false);
  }

  /** The UUID's hex digits from pair `first` on, with the dashes of its text or without. */
  private hexPairs(source: Buffer, at: number, first: number, dashed: boolean): void {
    this.reserve(36);
    const data = this.data;
    let to = this.length;
    for (let pair = first; pair < 16; pair++) {
      const byte = source[at + UUID_BYTE_ORDER[pair]!]!;
      data[to++] = HEX[byte >> 4]!;
      data[to++] = HEX[byte & 15]!;
      if (dashed && (pair === 3 || pair === 5 || pair === 7 || pair === 9)) data[to++] = 0x2d; // '-'
    }
    this.length = to;
  }

  /**
   * Milliseconds since 1970 as clickHouseToIso writes them: 2026-01-02T03:04:05.678Z. The date is
   * made by Date once per day; the time of day by arithmetic, without a string.
   */
  iso(millis: number): void {
    if (millis < 0) throw new CannotReproduce();
    const day = Math.floor(millis / MS_PER_DAY);
    if (day !== this.isoDay) {
      this.isoDay = day;
      this.isoDate = ascii(new Date(day * MS_PER_DAY).toISOString().slice(0, 11));
    }
    this.bytes(this.isoDate);
    this.reserve(13);
    let rest = millis - day * MS_PER_DAY;
    const hours = Math.floor(rest / 3_600_000);
    rest -= hours * 3_600_000;
    const minutes = Math.floor(rest / 60_000);
    rest -= minutes * 60_000;
    const seconds = Math.floor(rest / 1000);
    rest -= seconds * 1000;
    const data = this.data;
    let at = this.length;
    data[at++] = 0x30 + Math.floor(hours / 10);
    data[at++] = 0x30 + (hours % 10);
    data[at++] = 0x3a; // ':'
    data[at++] = 0x30 + Math.floor(minutes / 10);
    data[at++] = 0x30 + (minutes % 10);
    data[at++] = 0x3a;
    data[at++] = 0x30 + Math.floor(seconds / 10);
    data[at++] = 0x30 + (seconds % 10);
    data[at++] = 0x2e; // '.'
    data[at++] = 0x30 + Math.floor(rest / 100);
    data[at++] = 0x30 + (Math.floor(rest / 10) % 10);
    data[at++] = 0x30 + (rest % 10);
    data[at++] = 0x5a; // 'Z'
    this.length = at;
  }

  /** The String just read, as it is. */
  copy(rows: NativeRow): void {
    const { data: source, from, to } = rows;
    this.reserve(to - from);
    if (to - from < SHORT_COPY) {
      const data = this.data;
      let at = this.length;
      for (let i = from; i < to; i++) data[at++] = source[i]!;
      this.length = at;
    } else {
      // Not Buffer#copy: in the server it made V8 run a full collection nearly every request (26 in
      // 100 requests against 3).
      this.data.set(source.subarray(from, to), this.length);
      this.length += to - from;
    }
  }

  /** The String just read, between quotes. */
  private quoted(rows: NativeRow): void {
    this.reserve(rows.to - rows.from + 2);
    this.data[this.length++] = QUOTE;
    this.copy(rows);
    this.data[this.length++] = QUOTE;
  }

  /** The String just read as JSON.stringify writes it: between quotes as it is, unless it has a byte to escape. */
  jsonString(rows: NativeRow): void {
    const { data: source, from, to } = rows;
    const base = source.byteOffset;
    const found = this.wideScan && to - from >= WIDE_SCAN_MIN ? this.wideScan(base + from, base + to) : scan(source, rows.words, from, to);
    if (found & NON_ASCII && !isUtf8(source.subarray(from, to))) throw new CannotReproduce();
    if (found & ESCAPE) this.escaped(source, from, to);
    else this.quoted(rows);
  }

  /**
   * bytes[from, to) as JSON.stringify writes their latin1 reading: '"', '\\' and the controls
   * below 0x20 escaped, every other byte as it is. V8's own escaping, on a one-byte string, is
   * three to four times the speed of a byte loop here, and most inputs and outputs have a quote
   * or a newline.
   */
  private escaped(source: Buffer, from: number, to: number): void {
    const text = JSON.stringify(source.toString('latin1', from, to));
    this.reserve(text.length);
    this.length += this.data.write(text, this.length, 'latin1');
  }

  /** As jsonString; an empty String is null. */
  jsonStringOrNull(rows: NativeRow): void {
    if (rows.from === rows.to) this.bytes(K.null);
    else this.jsonString(rows);
  }

  text(): Buffer {
    return this.data.subarray(0, this.length);
  }

  /** The buffer written into, for the next JsonText once the text is sent. */
  get storage(): Buffer {
    return this.data;
  }

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.data.length) return;
    const larger = Buffer.allocUnsafe(Math.max(this.data.length * 2, this.length + bytes));
    this.data.copy(larger, 0, 0, this.length);
    this.data = larger;
  }
}

const ascii = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'latin1'));
const HEX = ascii('0123456789abcdef');

const MS_PER_DAY = 86_400_000;
/** Which byte of a UUID in ClickHouse's binary formats holds each pair of its hex digits. */
const UUID_BYTE_ORDER = [7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8];

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

/** What scan finds: a byte JSON.stringify escapes ('"', '\\', below 0x20), a byte of a non-ASCII character. */
const ESCAPE = 1;
const NON_ASCII = 2;

const kindOf = (byte: number): number => (byte >= 0x80 ? NON_ASCII : byte < 0x20 || byte === QUOTE || byte === BACKSLASH ? ESCAPE : 0);

/**
 * What bytes[from, to) holds of ESCAPE and NON_ASCII. Four bytes at a time where they are aligned
 * (words is an Int32Array over the bytes' ArrayBuffer), with the bit tests for "a byte below 0x20",
 * "a zero byte" (x ^ 0x22222222 has one where x has '"') and "a byte of 0x80 or above": three times
 * the speed of a byte loop, and inputs and outputs are most of a trace's bytes.
 */
function scan(bytes: Buffer, words: Int32Array, from: number, to: number): number {
  const base = bytes.byteOffset;
  let found = 0;
  let i = from;
  for (; i < to && ((base + i) & 3) !== 0; i++) found |= kindOf(bytes[i]!);
  if (i >= to) return found;
  const end = (base + to) >> 2;
  for (let w = (base + i) >> 2; w < end && found !== (ESCAPE | NON_ASCII); w++) {
    const x = words[w]!;
    const quote = x ^ 0x22222222;
    const backslash = x ^ 0x5c5c5c5c;
    if ((((x - 0x20202020) & ~x) | ((quote - 0x01010101) & ~quote) | ((backslash - 0x01010101) & ~backslash)) & 0x80808080) found |= ESCAPE;
    if (x & 0x80808080) found |= NON_ASCII;
  }
  for (i = Math.max(i, end * 4 - base); i < to; i++) found |= kindOf(bytes[i]!);
  return found;
}

/** spansJson's text, in a buffer to give back (release) once the answer is sent. */
export interface SpansText {
  text: Buffer;
  release(): void;
}

/** spansJson's text of the last trace, given back for the next (stores/reused-buffer.ts says why). */
const textSpare = new SpareBuffer();

/**
 * The JSON text of the spans of a Native answer of SPAN_JSON_SELECT_COLUMNS, in start order,
 * joined by commas (UTF-8); undefined when a span holds something only the JSON path reproduces,
 * or the answer's columns are not the expected ones. The text must not be read after its release.
 */
export function spansJson(native: Buffer, kind: SpansKind = 'detail'): SpansText | undefined {
  const table = NativeColumns.read(native, SPAN_JSON_COLUMNS[kind]);
  if (!table) return undefined;
  const order = inStartOrder(table, kind);
  const row = new NativeRow(table);
  // About the answer's size: the keys take about what the Native lengths, numbers and checks do.
  const text = new JsonText(textSpare.take(Math.ceil(native.length * 1.25) + 1024), wideScanOf(native));
  const metadata = new Map<string, string>();
  try {
    for (let i = 0; i < order.length; i++) writeSpan(row.at(order[i]!), text, i === 0, kind === 'detail' ? metadata : undefined);
  } catch (err) {
    textSpare.giveBack(text.storage);
    if (err instanceof CannotReproduce) return undefined;
    throw err;
  }
  let released = false;
  return {
    text: text.text(),
    release: () => {
      if (!released) textSpare.giveBack(text.storage);
      released = true;
    },
  };
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
