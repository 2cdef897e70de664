import { isUtf8 } from 'node:buffer';
import { sharedBuffer } from '../../stores/reused-buffer.js';
import type { NativeRow } from './native-columns.js';

/** A value whose JSON text this writer would not make as JSON.stringify of the parsed value does. */
export class CannotReproduce extends Error {}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Below this many bytes a loop copies faster than a native call. */
const SHORT_COPY = 48;

/**
 * JSON text written into one buffer that grows as needed, byte by byte from JavaScript: the pieces
 * of a span are short, and a native call per piece cost more than the piece. A buffer it grows
 * into is shared memory, like those it is given: another thread may write the text
 * (span-json-threads.ts).
 */
export class JsonText {
  private length = 0;
  /** The day of the last `iso` and its text (2026-01-02T): a trace's spans share their day. */
  private isoDay = Number.NaN;
  private isoDate: Uint8Array = new Uint8Array(0);
  constructor(private data: Buffer) {}

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
    const found = scan(source, rows.words, from, to);
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
    if (rows.from === rows.to) this.bytes(NULL);
    else this.jsonString(rows);
  }

  text(): Buffer {
    return this.data.subarray(0, this.length);
  }

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.data.length) return;
    const larger = sharedBuffer(Math.max(this.data.length * 2, this.length + bytes));
    this.data.copy(larger, 0, 0, this.length);
    this.data = larger;
  }
}

export const ascii = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'latin1'));
const HEX = ascii('0123456789abcdef');
const NULL = ascii('null');


const MS_PER_DAY = 86_400_000;
/** Which byte of a UUID in ClickHouse's binary formats holds each pair of its hex digits. */
const UUID_BYTE_ORDER = [7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8];

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

