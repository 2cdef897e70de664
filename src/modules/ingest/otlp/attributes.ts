/** OTLP attribute values as plain JSON values, and back. */

export type AttrValue = string | number | boolean | null | AttrValue[] | { [key: string]: AttrValue };
export type Attributes = Record<string, AttrValue>;

/** An OTLP AnyValue as protobufjs decodes it (longs as strings, bytes as buffers) or as OTLP/JSON sends it. */
export interface WireAnyValue {
  stringValue?: string | null;
  boolValue?: boolean | null;
  intValue?: string | number | null;
  doubleValue?: number | string | null;
  arrayValue?: { values?: WireAnyValue[] | null } | null;
  kvlistValue?: { values?: WireKeyValue[] | null } | null;
  bytesValue?: Uint8Array | string | null;
}

export interface WireKeyValue {
  key?: string | null;
  value?: WireAnyValue | null;
}

// Deeper values are kept as a marker: nothing legitimate nests this far, and recursion stays bounded.
const MAX_DEPTH = 32;

function intToJs(value: string | number): number | string {
  if (typeof value === 'number') return value;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value; // beyond 2^53 the decimal string keeps every digit
}

function doubleToJs(value: number | string): number | string {
  if (typeof value === 'number') return value;
  const n = Number(value);
  return Number.isFinite(n) ? n : value; // "NaN", "Infinity": JSON has no number for them
}

export function anyValueToJs(value: WireAnyValue | null | undefined, depth = 0): AttrValue {
  if (!value) return null;
  if (depth > MAX_DEPTH) return '[nested too deep]';
  if (value.stringValue !== undefined && value.stringValue !== null) return value.stringValue;
  if (value.boolValue !== undefined && value.boolValue !== null) return value.boolValue;
  if (value.intValue !== undefined && value.intValue !== null) return intToJs(value.intValue);
  if (value.doubleValue !== undefined && value.doubleValue !== null) return doubleToJs(value.doubleValue);
  if (value.arrayValue) return (value.arrayValue.values ?? []).map((v) => anyValueToJs(v, depth + 1));
  if (value.kvlistValue) return keyValuesToJs(value.kvlistValue.values, depth + 1);
  if (value.bytesValue !== undefined && value.bytesValue !== null) {
    return typeof value.bytesValue === 'string' ? value.bytesValue : Buffer.from(value.bytesValue).toString('base64');
  }
  return null;
}

/** Later duplicates of a key win, as in most SDKs' attribute maps. */
export function keyValuesToJs(values: readonly WireKeyValue[] | null | undefined, depth = 0): Attributes {
  const out: Attributes = {};
  for (const kv of values ?? []) {
    if (typeof kv.key !== 'string' || kv.key === '') continue;
    out[kv.key] = anyValueToJs(kv.value, depth);
  }
  return out;
}

/** OTLP/JSON AnyValue of a JSON value: int64 as a decimal string (proto3 JSON mapping). */
export function jsToAnyValue(value: unknown): WireAnyValue {
  if (value === null || value === undefined) return {};
  if (typeof value === 'string') return { stringValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  if (typeof value === 'number') return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  if (Array.isArray(value)) return { arrayValue: { values: value.map(jsToAnyValue) } };
  if (typeof value === 'object') return { kvlistValue: { values: jsToKeyValues(value as Record<string, unknown>) } };
  return { stringValue: String(value) };
}

export function jsToKeyValues(values: Record<string, unknown>): { key: string; value: WireAnyValue }[] {
  return Object.entries(values).map(([key, value]) => ({ key, value: jsToAnyValue(value) }));
}

/**
 * Read access to one span's attributes that remembers which keys were mapped onto span fields;
 * whatever was not taken stays in the span's metadata.
 */
export class AttributeBag {
  private readonly taken = new Set<string>();

  constructor(private readonly attrs: Attributes) {}

  has(key: string): boolean {
    return key in this.attrs;
  }

  peek(key: string): AttrValue | undefined {
    return this.attrs[key];
  }

  /** The first present, non-empty value among `keys` as text (non-strings JSON-encoded); takes that key only. */
  text(keys: readonly string[]): string | undefined {
    for (const key of keys) {
      const v = this.attrs[key];
      if (v === undefined || v === null || v === '') continue;
      this.taken.add(key);
      return typeof v === 'string' ? v : JSON.stringify(v);
    }
    return undefined;
  }

  /** The first value among `keys` that is a number in [min, max] (numeric strings count); takes that key only. */
  number(keys: readonly string[], min: number, max: number, integer: boolean): number | undefined {
    for (const key of keys) {
      const raw = this.attrs[key];
      const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
      if (!Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) continue;
      this.taken.add(key);
      return n;
    }
    return undefined;
  }

  /**
   * Indexed attributes `<prefix>.<N>.<field…>` (OpenLLMetry, OpenInference message lists) as one
   * object per index, in index order; takes every matching key.
   */
  indexed(prefix: string, strip = ''): Record<string, AttrValue>[] {
    const byIndex = new Map<number, Record<string, AttrValue>>();
    const head = `${prefix}.`;
    for (const [key, value] of Object.entries(this.attrs)) {
      if (!key.startsWith(head)) continue;
      const match = /^(\d+)\.(.+)$/.exec(key.slice(head.length));
      if (!match) continue;
      const field = match[2]!.startsWith(strip) ? match[2]!.slice(strip.length) : match[2]!;
      const index = Number(match[1]);
      const entry = byIndex.get(index) ?? {};
      entry[field] = value;
      byIndex.set(index, entry);
      this.taken.add(key);
    }
    return [...byIndex.entries()].sort((a, b) => a[0] - b[0]).map(([, entry]) => entry);
  }

  take(key: string): AttrValue | undefined {
    if (key in this.attrs) this.taken.add(key);
    return this.attrs[key];
  }

  /** Every attribute not taken. */
  rest(): Attributes {
    const out: Attributes = {};
    for (const [key, value] of Object.entries(this.attrs)) if (!this.taken.has(key)) out[key] = value;
    return out;
  }
}
