import { metadataJson } from './detail-json.js';

/**
 * The spans of GET /v1/traces/{id} as JSON text made straight from ClickHouse's RowBinary answer,
 * without parsing rows into objects: for a trace of 10,000 spans the JSONEachRow parse, the Span
 * objects, their stringify and the garbage of all three were most of the request.
 *
 * The text is the same as JSON.stringify of the spans toSpan makes (test/traces/span-json.test.ts
 * holds it to the schema serializer's output). Strings arrive as their UTF-8 bytes. Valid UTF-8
 * has no byte below 0x80 inside a multi-byte character, so the only bytes JSON.stringify escapes
 * are the ASCII '"', '\' and controls: a string without them is copied as it is, between quotes;
 * one with them is read one byte per character (latin1), which maps those bytes to themselves and
 * passes every other byte through JSON.stringify unchanged. Numbers arrive as binary and are
 * written by JavaScript, as toSpan's Number() and JSON.stringify write them. What this text cannot
 * reproduce (a string that is not valid UTF-8, which the JSON path decodes to U+FFFD; an integer
 * beyond 2^53; a cost that is not finite) makes spansJson return undefined, and the trace is
 * answered by the JSON path instead.
 */

const iso = (column: string) => `concat(substring(toString(${column}), 1, 10), 'T', substring(toString(${column}), 12, 12), 'Z')`;

const TEXT_COLUMNS = ['name', 'type', 'input', 'output', 'model', "ifNull(error, '')", 'metadata', 'otel_trace_id', 'otel_span_id', 'failure_type'];

/**
 * The columns spansJson reads, in its order. ClickHouse writes the fields of fixed formats, which
 * need no escaping, as JSON text (the ids and dates with their keys; dates as clickHouseToIso
 * formats them: milliseconds, truncated); the others come as values.
 */
export const SPAN_JSON_SELECT_COLUMNS = [
  TEXT_COLUMNS.map((c) => `isValidUTF8(${c})`).join(' AND '),
  `concat('{"id":"', toString(span_id), '","created_at":"', ${iso('created_at')}, '","tenant_id":"', toString(tenant_id), '","trace_id":"', toString(trace_id), '","name":')`,
  'name',
  'toString(type)',
  `ifNull(concat('"', toString(parent_span_id), '"'), 'null')`,
  'input',
  'output',
  'toString(model)',
  'latency_ms',
  'cost',
  "ifNull(error, '')",
  'prompt_tokens',
  'completion_tokens',
  'metadata',
  `concat(',"start_time":"', ${iso('start_time')}, '","end_time":"', ${iso('end_time')}, '","otel_trace_id":')`,
  'otel_trace_id',
  'otel_span_id',
  // toSpan's otelParentOf: the parent's OTel span id is the last 16 hex digits of its UUID.
  `if(otel_span_id != '' AND parent_span_id IS NOT NULL, concat('"', substring(replaceAll(ifNull(toString(parent_span_id), ''), '-', ''), 17), '"'), 'null')`,
  'toString(failure_type)',
].join(', ');

class CannotReproduce extends Error {}

/** RowBinary values: Strings as a LEB128 length and their bytes, numbers little-endian. */
class RowBinaryReader {
  private at = 0;
  /** Where the last String read starts and ends in `data`. */
  from = 0;
  to = 0;
  /** `data`'s whole ArrayBuffer as 32-bit words, for needsEscape. */
  readonly words: Int32Array;
  constructor(readonly data: Buffer) {
    this.words = new Int32Array(data.buffer, 0, data.buffer.byteLength >> 2);
  }

  get done(): boolean {
    return this.at >= this.data.length;
  }

  /** Passes over a String, leaving its bounds in `from` and `to`. */
  string(): this {
    let length = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = this.data[this.at++];
      if (byte === undefined) throw new RangeError('RowBinary: truncated length');
      length += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) break;
    }
    this.from = this.at;
    this.to = this.at += length;
    if (this.to > this.data.length) throw new RangeError('RowBinary: truncated String');
    return this;
  }

  /** A UInt64 toSpan's Number() would keep exactly. */
  uint64(): number {
    const low = this.data.readUInt32LE(this.at);
    const high = this.data.readUInt32LE(this.at + 4);
    this.at += 8;
    if (high > 0x1fffff) throw new CannotReproduce();
    return high * 0x1_0000_0000 + low;
  }

  float64(): number {
    const value = this.data.readDoubleLE(this.at);
    this.at += 8;
    return value;
  }

  uint8(): number {
    return this.data.readUInt8(this.at++);
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Below this many bytes a loop copies faster than a native call. */
const SHORT_COPY = 48;

/**
 * JSON text written into one buffer that grows as needed, byte by byte from JavaScript: the pieces
 * of a span are short, and a native call per piece cost more than the piece.
 */
class JsonText {
  private data: Buffer;
  private length = 0;
  constructor(capacity: number) {
    this.data = Buffer.allocUnsafe(capacity);
  }

  /** Text of one byte per character (ASCII, or UTF-8 bytes read as latin1). */
  latin1(text: string): void {
    this.reserve(text.length);
    const data = this.data;
    let at = this.length;
    for (let i = 0; i < text.length; i++) data[at++] = text.charCodeAt(i);
    this.length = at;
  }

  /** The String just read, as it is. */
  copy(rows: RowBinaryReader): void {
    const { data: source, from, to } = rows;
    this.reserve(to - from);
    if (to - from < SHORT_COPY) {
      const data = this.data;
      let at = this.length;
      for (let i = from; i < to; i++) data[at++] = source[i]!;
      this.length = at;
    } else {
      this.data.set(source.subarray(from, to), this.length);
      this.length += to - from;
    }
  }

  /** The String just read, between quotes. */
  private quoted(rows: RowBinaryReader): void {
    this.reserve(rows.to - rows.from + 2);
    this.data[this.length++] = QUOTE;
    this.copy(rows);
    this.data[this.length++] = QUOTE;
  }

  /** The String just read as JSON.stringify writes it: between quotes as it is, unless it has a byte to escape. */
  jsonString(rows: RowBinaryReader): void {
    const { data: source, from, to } = rows;
    if (needsEscape(source, rows.words, from, to)) this.latin1(JSON.stringify(source.toString('latin1', from, to)));
    else this.quoted(rows);
  }

  /** As jsonString; an empty String is null. */
  jsonStringOrNull(rows: RowBinaryReader): void {
    if (rows.from === rows.to) this.latin1('null');
    else this.jsonString(rows);
  }

  text(): Buffer {
    return this.data.subarray(0, this.length);
  }

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.data.length) return;
    const larger = Buffer.allocUnsafe(Math.max(this.data.length * 2, this.length + bytes));
    this.data.copy(larger, 0, 0, this.length);
    this.data = larger;
  }
}

const escaped = (byte: number): boolean => byte < 0x20 || byte === QUOTE || byte === BACKSLASH;

/**
 * Whether bytes[from, to) has a byte JSON.stringify escapes. Four bytes at a time where they are
 * aligned (words is an Int32Array over the bytes' ArrayBuffer), with the bit tests for "a byte
 * below 0x20" and "a zero byte" (x ^ 0x22222222 has one where x has '"'): three times the speed
 * of a byte loop, and inputs and outputs are most of a trace's bytes.
 */
function needsEscape(bytes: Buffer, words: Int32Array, from: number, to: number): boolean {
  const base = bytes.byteOffset;
  let i = from;
  for (; i < to && ((base + i) & 3) !== 0; i++) if (escaped(bytes[i]!)) return true;
  if (i >= to) return false;
  const end = (base + to) >> 2;
  for (let w = (base + i) >> 2; w < end; w++) {
    const x = words[w]!;
    const quote = x ^ 0x22222222;
    const backslash = x ^ 0x5c5c5c5c;
    if ((((x - 0x20202020) & ~x) | ((quote - 0x01010101) & ~quote) | ((backslash - 0x01010101) & ~backslash)) & 0x80808080) return true;
  }
  for (i = Math.max(i, end * 4 - base); i < to; i++) if (escaped(bytes[i]!)) return true;
  return false;
}

/**
 * The JSON text of the spans of a RowBinary answer of SPAN_JSON_SELECT_COLUMNS, joined by commas
 * (UTF-8); undefined when a span holds something only the JSON path reproduces.
 */
export function spansJson(rowBinary: Buffer): Buffer | undefined {
  const rows = new RowBinaryReader(rowBinary);
  // About the answer's size: the keys take about what the RowBinary lengths, numbers and checks do.
  const text = new JsonText(Math.ceil(rowBinary.length * 1.25) + 1024);
  const metadata = new Map<string, string>();
  try {
    for (let first = true; !rows.done; first = false) {
      if (rows.uint8() !== 1) return undefined;
      writeSpan(rows, text, first, metadata);
    }
  } catch (err) {
    if (err instanceof CannotReproduce) return undefined;
    throw err;
  }
  return text.text();
}

/** One span, with the Span schema's keys in its order. */
function writeSpan(rows: RowBinaryReader, text: JsonText, first: boolean, metadata: Map<string, string>): void {
  if (!first) text.latin1(',');
  text.copy(rows.string()); // {"id":…,"name":
  text.jsonString(rows.string());
  text.latin1(',"type":');
  text.jsonString(rows.string());
  text.latin1(',"parent_span_id":');
  text.copy(rows.string());
  text.latin1(',"input":');
  text.jsonString(rows.string());
  text.latin1(',"output":');
  text.jsonString(rows.string());
  text.latin1(',"model":');
  text.jsonString(rows.string());
  const latency = rows.uint64();
  const cost = rows.float64();
  if (!Number.isFinite(cost)) throw new CannotReproduce();
  text.latin1(`,"latency_ms":${latency},"cost":${JSON.stringify(cost)},"error":`);
  text.jsonStringOrNull(rows.string());
  text.latin1(`,"prompt_tokens":${rows.uint64()},"completion_tokens":${rows.uint64()},"metadata":`);
  text.latin1(metadataText(rows.string(), metadata));
  text.copy(rows.string()); // ,"start_time":…,"otel_trace_id":
  text.jsonString(rows.string());
  text.latin1(',"otel_span_id":');
  text.jsonString(rows.string());
  text.latin1(',"otel_parent_span_id":');
  text.copy(rows.string());
  text.latin1(',"failure_type":');
  text.jsonStringOrNull(rows.string());
  text.latin1('}');
}

/** metadataJson of the stored text, as latin1 text of its UTF-8; spans of a trace mostly share theirs. */
function metadataText(rows: RowBinaryReader, seen: Map<string, string>): string {
  const stored = rows.data.toString('latin1', rows.from, rows.to);
  let text = seen.get(stored);
  if (text === undefined) {
    text = Buffer.from(metadataJson(Buffer.from(stored, 'latin1').toString('utf8')), 'utf8').toString('latin1');
    seen.set(stored, text);
  }
  return text;
}
