/**
 * One Parquet file out of several that share a schema, without decoding a single value.
 *
 * A Parquet file is `PAR1`, column chunks (data, dictionary and index pages), then the footer
 * (Thrift FileMetaData, compact protocol), its length and `PAR1`. Files cannot be appended to one
 * another as CSV can, but their column chunks can: the bodies are copied as they are, and one
 * footer lists every file's row groups with their offsets moved by where the body now starts.
 *
 * Why: the export reads ClickHouse in pages, and chDB's streaming query formats every block as a
 * complete file of its own. Each part is ClickHouse's own Parquet output (types, encodings,
 * compression, statistics); this only renumbers it. Memory holds one part and the footer's row
 * group list (a few hundred bytes per row group).
 */

const MAGIC = Buffer.from('PAR1');

// Thrift compact protocol types.
const T_STOP = 0;
const T_TRUE = 1;
const T_FALSE = 2;
const T_BYTE = 3;
const T_I16 = 4;
const T_I32 = 5;
const T_I64 = 6;
const T_DOUBLE = 7;
const T_BINARY = 8;
const T_LIST = 9;
const T_SET = 10;
const T_MAP = 11;
const T_STRUCT = 12;

type Value = boolean | bigint | Buffer | ThriftList | ThriftMap | ThriftStruct;
interface Field {
  id: number;
  type: number;
  value: Value;
}
interface ThriftStruct {
  fields: Field[];
}
interface ThriftList {
  elementType: number;
  items: Value[];
}
interface ThriftMap {
  keyType: number;
  valueType: number;
  entries: [Value, Value][];
}

class Reader {
  private pos = 0;
  constructor(private readonly buf: Buffer) {}

  private byte(): number {
    if (this.pos >= this.buf.length) throw new Error('parquet footer: truncated');
    return this.buf[this.pos++]!;
  }

  private varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.byte();
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  }

  private zigzag(): bigint {
    const n = this.varint();
    return (n >> 1n) ^ -(n & 1n);
  }

  private value(type: number): Value {
    switch (type) {
      case T_TRUE:
        return true;
      case T_FALSE:
        return false;
      case T_BYTE:
        return BigInt(this.byte());
      case T_I16:
      case T_I32:
      case T_I64:
        return this.zigzag();
      case T_DOUBLE: {
        const bytes = this.buf.subarray(this.pos, this.pos + 8);
        this.pos += 8;
        return Buffer.from(bytes);
      }
      case T_BINARY: {
        const length = Number(this.varint());
        const bytes = this.buf.subarray(this.pos, this.pos + length);
        this.pos += length;
        return Buffer.from(bytes);
      }
      case T_LIST:
      case T_SET: {
        const header = this.byte();
        const size = header >> 4 === 15 ? Number(this.varint()) : header >> 4;
        const elementType = header & 0x0f;
        const items: Value[] = [];
        // Booleans in a collection are one byte each: 1 true, anything else false.
        for (let i = 0; i < size; i++) items.push(elementType === T_TRUE || elementType === T_FALSE ? this.byte() === T_TRUE : this.value(elementType));
        return { elementType, items };
      }
      case T_MAP: {
        const size = Number(this.varint());
        if (size === 0) return { keyType: 0, valueType: 0, entries: [] };
        const types = this.byte();
        const entries: [Value, Value][] = [];
        for (let i = 0; i < size; i++) entries.push([this.value(types >> 4), this.value(types & 0x0f)]);
        return { keyType: types >> 4, valueType: types & 0x0f, entries };
      }
      case T_STRUCT:
        return this.struct();
      default:
        throw new Error(`parquet footer: unknown thrift type ${type}`);
    }
  }

  struct(): ThriftStruct {
    const fields: Field[] = [];
    let last = 0;
    for (;;) {
      const header = this.byte();
      const type = header & 0x0f;
      if (type === T_STOP) return { fields };
      const delta = header >> 4;
      const id = delta === 0 ? Number(this.zigzag()) : last + delta;
      last = id;
      fields.push({ id, type, value: this.value(type) });
    }
  }
}

class Writer {
  private readonly parts: number[] = [];
  private readonly chunks: Buffer[] = [];

  private flush(): void {
    if (this.parts.length > 0) this.chunks.push(Buffer.from(this.parts.splice(0)));
  }

  private varint(n: bigint): void {
    let v = n;
    while (v >= 0x80n) {
      this.parts.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.parts.push(Number(v));
  }

  private zigzag(n: bigint): void {
    this.varint(n >= 0n ? n << 1n : ((-n) << 1n) - 1n);
  }

  private bytes(b: Buffer): void {
    this.flush();
    this.chunks.push(b);
  }

  private value(type: number, value: Value): void {
    switch (type) {
      case T_TRUE:
      case T_FALSE:
        return;
      case T_BYTE:
        this.parts.push(Number(value as bigint) & 0xff);
        return;
      case T_I16:
      case T_I32:
      case T_I64:
        this.zigzag(value as bigint);
        return;
      case T_DOUBLE:
        this.bytes(value as Buffer);
        return;
      case T_BINARY:
        this.varint(BigInt((value as Buffer).length));
        this.bytes(value as Buffer);
        return;
      case T_LIST:
      case T_SET: {
        const { elementType, items } = value as ThriftList;
        if (items.length < 15) this.parts.push((items.length << 4) | elementType);
        else {
          this.parts.push(0xf0 | elementType);
          this.varint(BigInt(items.length));
        }
        for (const item of items) {
          if (elementType === T_TRUE || elementType === T_FALSE) this.parts.push(item ? T_TRUE : T_FALSE);
          else this.value(elementType, item);
        }
        return;
      }
      case T_MAP: {
        const { keyType, valueType, entries } = value as ThriftMap;
        this.varint(BigInt(entries.length));
        if (entries.length === 0) return;
        this.parts.push((keyType << 4) | valueType);
        for (const [k, v] of entries) {
          this.value(keyType, k);
          this.value(valueType, v);
        }
        return;
      }
      case T_STRUCT:
        this.struct(value as ThriftStruct);
        return;
      default:
        throw new Error(`parquet footer: unknown thrift type ${type}`);
    }
  }

  struct({ fields }: ThriftStruct): void {
    let last = 0;
    for (const { id, type, value } of fields) {
      // A boolean field carries its value in its type.
      const wireType = type === T_TRUE || type === T_FALSE ? (value ? T_TRUE : T_FALSE) : type;
      const delta = id - last;
      if (delta > 0 && delta <= 15) this.parts.push((delta << 4) | wireType);
      else {
        this.parts.push(wireType);
        this.zigzag(BigInt(id));
      }
      last = id;
      this.value(type, value);
    }
    this.parts.push(T_STOP);
  }

  done(): Buffer {
    this.flush();
    return Buffer.concat(this.chunks);
  }
}

const field = (s: ThriftStruct, id: number) => s.fields.find((f) => f.id === id);

/** Adds `shift` to the listed i64 fields of `s`, where present. */
function shiftFields(s: ThriftStruct, ids: readonly number[], shift: bigint): void {
  for (const f of s.fields) if (ids.includes(f.id) && f.type === T_I64) f.value = (f.value as bigint) + shift;
}

// parquet.thrift field ids.
const FILE_NUM_ROWS = 3;
const FILE_ROW_GROUPS = 4;
const ROW_GROUP_COLUMNS = 1;
const ROW_GROUP_FILE_OFFSET = 5;
const ROW_GROUP_ORDINAL = 7;
const CHUNK_FILE_OFFSET = 2;
const CHUNK_META_DATA = 3;
const CHUNK_OFFSET_INDEX_OFFSET = 4;
const CHUNK_COLUMN_INDEX_OFFSET = 6;
// data_page_offset, index_page_offset, dictionary_page_offset, bloom_filter_offset.
const META_OFFSETS = [9, 10, 11, 14] as const;

/** A complete Parquet file's body (between the leading magic and the footer) and parsed footer. */
function split(file: Buffer): { body: Buffer; footer: ThriftStruct } {
  if (file.length < 12 || !file.subarray(0, 4).equals(MAGIC) || !file.subarray(-4).equals(MAGIC)) {
    throw new Error('not a complete Parquet file');
  }
  const footerLength = file.readUInt32LE(file.length - 8);
  const footerStart = file.length - 8 - footerLength;
  return { body: file.subarray(4, footerStart), footer: new Reader(file.subarray(footerStart, file.length - 8)).struct() };
}

/**
 * Joins complete Parquet files (same schema) into one: `add` each file and write what it returns,
 * then `finish` once and write that. Rows are counted from the footers.
 */
export class ParquetConcat {
  private position = 4n;
  private first: ThriftStruct | undefined;
  private readonly rowGroups: ThriftStruct[] = [];
  private rows = 0n;

  /** The bytes to write for this file (the leading magic comes with the first), and its row count. */
  add(file: Buffer): { data: Buffer; rows: number } {
    const { body, footer } = split(file);
    const shift = this.position - 4n;
    this.first ??= footer;
    const rowGroups = (field(footer, FILE_ROW_GROUPS)?.value as ThriftList | undefined)?.items ?? [];
    for (const item of rowGroups) {
      const group = item as ThriftStruct;
      shiftFields(group, [ROW_GROUP_FILE_OFFSET], shift);
      const ordinal = field(group, ROW_GROUP_ORDINAL);
      if (ordinal) ordinal.value = BigInt(this.rowGroups.length);
      for (const c of (field(group, ROW_GROUP_COLUMNS)?.value as ThriftList).items) {
        const chunk = c as ThriftStruct;
        shiftFields(chunk, [CHUNK_FILE_OFFSET, CHUNK_OFFSET_INDEX_OFFSET, CHUNK_COLUMN_INDEX_OFFSET], shift);
        const meta = field(chunk, CHUNK_META_DATA);
        if (meta) shiftFields(meta.value as ThriftStruct, META_OFFSETS, shift);
      }
      this.rowGroups.push(group);
    }
    const rows = (field(footer, FILE_NUM_ROWS)?.value as bigint | undefined) ?? 0n;
    this.rows += rows;
    const data = this.position === 4n ? Buffer.concat([MAGIC, body]) : body;
    this.position += BigInt(body.length);
    return { data, rows: Number(rows) };
  }

  /** The footer of the joined file. At least one file (possibly of no rows) must have been added: it brings the schema. */
  finish(): Buffer {
    if (!this.first) throw new Error('ParquetConcat: no file added, so no schema');
    const fields = this.first.fields.map((f): Field => {
      if (f.id === FILE_NUM_ROWS) return { ...f, value: this.rows };
      if (f.id === FILE_ROW_GROUPS) return { ...f, value: { elementType: T_STRUCT, items: this.rowGroups } };
      return f;
    });
    const footer = new Writer();
    footer.struct({ fields });
    const encoded = footer.done();
    const length = Buffer.alloc(4);
    length.writeUInt32LE(encoded.length);
    return Buffer.concat([encoded, length, MAGIC]);
  }
}

/** A complete Parquet file as ClickHouse writes it; `rowsCounted` hears its row count, read from its footer. */
export interface ParquetPart {
  data: Buffer;
  rowsCounted?(rows: number): void;
}

/**
 * One Parquet file, written as it goes, of `parts` (same schema): their column chunks as they come,
 * then one footer listing all their row groups. With no part at all, the parts of `empty()` (a file
 * of no rows, e.g. the same query with LIMIT 0) bring the schema.
 */
export async function* joinParquet(parts: AsyncIterable<ParquetPart>, empty: () => AsyncIterable<ParquetPart>): AsyncGenerator<Buffer> {
  const file = new ParquetConcat();
  let joined = 0;
  for await (const part of parts) {
    const added = file.add(part.data);
    joined += 1;
    part.rowsCounted?.(added.rows);
    yield added.data;
  }
  if (joined === 0) for await (const part of empty()) yield file.add(part.data).data;
  yield file.finish();
}
