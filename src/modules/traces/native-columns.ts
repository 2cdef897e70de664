/** A column of a Native answer: its name and ClickHouse type, as the answer's header spells them. */
export interface NativeColumn {
  name: string;
  type: string;
}

/** Bytes per value of the fixed-width types read here: numbers and DateTime64 ticks little-endian, a UUID as its two 64-bit halves. */
const FIXED_WIDTH: Readonly<Record<string, number>> = { UUID: 16, UInt64: 8, Float64: 8, "DateTime64(3, 'UTC')": 8, "DateTime64(9, 'UTC')": 8 };

/**
 * Where each row's value of a column is in the answer; `ends` for a String, `nulls` (the byte of
 * its null map) for a Nullable. One class, so that every column has the same shape and the row
 * readers' property reads stay monomorphic (objects of five shapes had made them megamorphic).
 */
class ColumnAt {
  constructor(
    readonly starts: Int32Array,
    readonly ends: Int32Array | undefined = undefined,
    readonly nulls: Int32Array | undefined = undefined,
  ) {}
}

/**
 * ClickHouse's Native format: blocks of columns, each block a LEB128 column count and row count,
 * then each column's name, type and values, one column after another (a String as a LEB128 length
 * and its bytes; a Nullable as one byte per row, 1 for null, then every row's value). The engine
 * writes it column by column from what it read, at less than half the cost of RowBinary (which it
 * writes value by value) for a big trace.
 *
 * Read here into where each row's value starts in the answer, so that rows can be visited in any
 * order (NativeRow), without copying a value.
 */
export class NativeColumns {
  /** `data`'s whole ArrayBuffer as 32-bit words, for scanning four bytes at a time. */
  readonly words: Int32Array;

  private constructor(
    readonly data: Buffer,
    readonly rows: number,
    private readonly columns: readonly ColumnAt[],
  ) {
    this.words = new Int32Array(data.buffer, 0, data.buffer.byteLength >> 2);
  }

  /**
   * The answer's rows, or undefined when its columns are not `expected` (names and types, in
   * order): a schema that changed under the query, which the caller answers another way. Throws a
   * RangeError when the bytes end inside a block.
   */
  static read(data: Buffer, expected: readonly NativeColumn[]): NativeColumns | undefined {
    if (data.length > 0x7fff_ffff) throw new RangeError('Native: an answer of 2 GiB or more');
    const reader = new HeaderReader(data);
    const blocks: ColumnAt[][] = [];
    let rows = 0;
    while (reader.at < data.length) {
      if (reader.leb128() !== expected.length) return undefined;
      const blockRows = reader.leb128();
      const block: ColumnAt[] = [];
      for (const column of expected) {
        if (reader.string() !== column.name || reader.string() !== column.type) return undefined;
        block.push(reader.values(column.type, blockRows));
      }
      blocks.push(block);
      rows += blockRows;
    }
    return new NativeColumns(data, rows, blocks.length === 1 ? blocks[0]! : expected.map((_, c) => joined(blocks.map((block) => block[c]!))));
  }

  /** Where the value of `column` in `row` starts (of a Nullable, its value's, null or not). */
  start(column: number, row: number): number {
    return this.columns[column]!.starts[row]!;
  }

  /** Where the String of `column` in `row` ends. */
  end(column: number, row: number): number {
    return this.columns[column]!.ends![row]!;
  }

  /** Whether the Nullable of `column` in `row` is null. */
  isNull(column: number, row: number): boolean {
    return this.data[this.columns[column]!.nulls![row]!] === 1;
  }
}

/** The blocks' positions of one column, as one column. */
function joined(blocks: readonly ColumnAt[]): ColumnAt {
  const all = (part: (block: ColumnAt) => Int32Array): Int32Array => {
    const into = new Int32Array(blocks.reduce((n, block) => n + part(block).length, 0));
    let at = 0;
    for (const block of blocks) {
      into.set(part(block), at);
      at += part(block).length;
    }
    return into;
  };
  const [first] = blocks;
  return new ColumnAt(all((b) => b.starts), first?.ends && all((b) => b.ends!), first?.nulls && all((b) => b.nulls!));
}

/** Reads a Native answer's headers and finds where its values are. */
class HeaderReader {
  at = 0;
  constructor(private readonly data: Buffer) {}

  leb128(): number {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = this.data[this.at++];
      if (byte === undefined) throw new RangeError('Native: truncated length');
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  }

  /** A header's String (a column's name or type). */
  string(): string {
    const length = this.leb128();
    this.advance(length);
    return this.data.toString('latin1', this.at - length, this.at);
  }

  /** Passes over `rows` values of `type`, answering where each is. */
  values(type: string, rows: number): ColumnAt {
    if (type.startsWith('Nullable(')) {
      const nulls = new Int32Array(rows);
      for (let row = 0; row < rows; row++) nulls[row] = this.at + row;
      this.advance(rows);
      const { starts, ends } = this.values(type.slice('Nullable('.length, -1), rows);
      return new ColumnAt(starts, ends, nulls);
    }
    const starts = new Int32Array(rows);
    if (type !== 'String') {
      const width = FIXED_WIDTH[type];
      if (width === undefined) throw new RangeError(`Native: no reader for ${type}`);
      for (let row = 0; row < rows; row++) starts[row] = this.at + row * width;
      this.advance(rows * width);
      return new ColumnAt(starts);
    }
    const ends = new Int32Array(rows);
    // leb128() and advance() by hand, on locals: this loop runs once per String of the answer.
    const data = this.data;
    let at = this.at;
    for (let row = 0; row < rows; row++) {
      let length = 0;
      for (let scale = 1; ; scale *= 0x80) {
        if (at >= data.length) throw new RangeError('Native: truncated length');
        const byte = data[at++]!;
        length += (byte & 0x7f) * scale;
        if (byte < 0x80) break;
      }
      starts[row] = at;
      at += length;
      if (at > data.length) throw new RangeError('Native: truncated block');
      ends[row] = at;
    }
    this.at = at;
    return new ColumnAt(starts, ends);
  }

  private advance(bytes: number): void {
    this.at += bytes;
    if (this.at > this.data.length) throw new RangeError('Native: truncated block');
  }
}

/**
 * One row of NativeColumns at a time, its values read in column order as RowBinary would give
 * them: `at(row)`, then for each column a `string()`, `uuid()`, number or time, with `isNull()`
 * before a Nullable's value (a null one has no value to read).
 */
export class NativeRow {
  /** Where the last String read starts and ends in `data`. */
  from = 0;
  to = 0;
  readonly data: Buffer;
  readonly words: Int32Array;
  private row = 0;
  private column = 0;
  constructor(private readonly table: NativeColumns) {
    this.data = table.data;
    this.words = table.words;
  }

  at(row: number): this {
    this.row = row;
    this.column = 0;
    return this;
  }

  /** The next String, its bounds left in `from` and `to`. */
  string(): this {
    this.from = this.table.start(this.column, this.row);
    this.to = this.table.end(this.column++, this.row);
    return this;
  }

  /** Where the next UUID's 16 bytes start. */
  uuid(): number {
    return this.next();
  }

  /** Whether the next Nullable is null; then its value is passed over, else it is read next. */
  isNull(): boolean {
    const isNull = this.table.isNull(this.column, this.row);
    if (isNull) this.column++;
    return isNull;
  }

  /** A UInt64 as a number: rounded, and not a safe integer, beyond 2^53. */
  uint64(): number {
    const at = this.next();
    return this.data.readUInt32LE(at + 4) * 0x1_0000_0000 + this.data.readUInt32LE(at);
  }

  float64(): number {
    return this.data.readDoubleLE(this.next());
  }

  /** A DateTime64(3) as milliseconds since 1970 (negative before). */
  millis(): number {
    const at = this.next();
    return this.data.readInt32LE(at + 4) * 0x1_0000_0000 + this.data.readUInt32LE(at);
  }

  /**
   * A DateTime64(9) as whole milliseconds since 1970, truncated as clickHouseToIso truncates its
   * text; -1 for any time before 1970. Exact: 2^32 = 4294 * 10^6 + 967296, and
   * high * 967296 + low stays below 2^53.
   */
  millisOfNanos(): number {
    const at = this.next();
    const low = this.data.readUInt32LE(at);
    const high = this.data.readInt32LE(at + 4);
    if (high < 0) return -1;
    return high * 4294 + Math.floor((high * 967296 + low) / 1_000_000);
  }

  private next(): number {
    return this.table.start(this.column++, this.row);
  }
}
