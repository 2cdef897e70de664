/**
 * RowBinary values: Strings (and LowCardinality ones) as a LEB128 length and their bytes, numbers
 * and DateTime64 ticks little-endian, a UUID as its two 64-bit halves little-endian, a Nullable
 * as a byte (1: null) before its value.
 */
export class RowBinaryReader {
  private at = 0;
  /** Where the last String read starts and ends in `data`. */
  from = 0;
  to = 0;
  /** `data`'s whole ArrayBuffer as 32-bit words, for scanning four bytes at a time. */
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

  /** A UInt64 as a number: rounded, and not a safe integer, beyond 2^53. */
  uint64(): number {
    const low = this.data.readUInt32LE(this.at);
    const high = this.data.readUInt32LE(this.at + 4);
    this.at += 8;
    return high * 0x1_0000_0000 + low;
  }

  float64(): number {
    const value = this.data.readDoubleLE(this.at);
    this.at += 8;
    return value;
  }

  /** Passes over a UUID, answering where its 16 bytes start. */
  uuid(): number {
    this.at += 16;
    if (this.at > this.data.length) throw new RangeError('RowBinary: truncated UUID');
    return this.at - 16;
  }

  /** Whether the Nullable value here is null (its value then follows no further). */
  isNull(): boolean {
    return this.data[this.at++] === 1;
  }

  /** A DateTime64(3) as milliseconds since 1970 (negative before). */
  millis(): number {
    const low = this.data.readUInt32LE(this.at);
    const high = this.data.readInt32LE(this.at + 4);
    this.at += 8;
    return high * 0x1_0000_0000 + low;
  }

  /**
   * A DateTime64(9) as whole milliseconds since 1970, truncated as clickHouseToIso truncates its
   * text; -1 for any time before 1970. Exact: 2^32 = 4294 * 10^6 + 967296, and
   * high * 967296 + low stays below 2^53.
   */
  millisOfNanos(): number {
    const low = this.data.readUInt32LE(this.at);
    const high = this.data.readInt32LE(this.at + 4);
    this.at += 8;
    if (high < 0) return -1;
    return high * 4294 + Math.floor((high * 967296 + low) / 1_000_000);
  }
}
