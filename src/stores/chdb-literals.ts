/**
 * A parameter-bound query with its parameters written into its text as SQL literals, for the
 * embedded engine. chDB runs parameter-bound queries one at a time in the whole process (its
 * binder's state is not per connection: chdb/index.js, runExclusiveParam), while a query without
 * parameters runs on its own connection beside the others: a search's two index lookups, and any
 * request's query beside a background job's, no longer wait for each other.
 *
 * Each `{name:Type}` becomes `CAST(<literal> AS Type)`, the literal made from the value as its type
 * requires it to be (a UUID's text, a date-time's text, an integer in the type's range, a finite
 * number), so that the value reads as the parameter would; a String is quoted with every quote,
 * backslash and control character escaped. Anything else (another type, a value out of its type,
 * a query whose literals would be long: a big array is cheaper bound than parsed) answers
 * undefined, and the query keeps its parameters.
 */
export function withLiterals(query: string, params: Readonly<Record<string, unknown>>): string | undefined {
  let length = 0;
  let unmatched = false;
  const text = query.replace(PLACEHOLDER, (_, name: string, type: string) => {
    const literal = Object.hasOwn(params, name) ? castLiteral(type, params[name]) : undefined;
    if (literal === undefined) unmatched = true;
    length += literal?.length ?? 0;
    return literal ?? '';
  });
  if (unmatched || length > MAX_LITERALS_LENGTH || LEFT_PLACEHOLDER.test(query.replace(PLACEHOLDER, ''))) return undefined;
  return text;
}

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*):([^{}]+)\}/g;
/** A placeholder the pattern above does not take (spaces around the colon): its query keeps its parameters. */
const LEFT_PLACEHOLDER = /\{\s*[A-Za-z_][A-Za-z0-9_]*\s*:/;
/** About 350 UUIDs: beyond, ClickHouse parsing the array literal costs more than waiting for the binder. */
const MAX_LITERALS_LENGTH = 16 * 1024;

function castLiteral(type: string, value: unknown): string | undefined {
  const element = /^Array\((.+)\)$/.exec(type)?.[1];
  if (element === undefined) {
    const scalar = literal(type, value);
    return scalar === undefined ? undefined : `CAST(${scalar} AS ${type})`;
  }
  if (!Array.isArray(value) || !WRITTEN_TYPES.has(element)) return undefined;
  const literals = value.map((item) => literal(element, item));
  return literals.every((l) => l !== undefined) ? `CAST([${literals.join(', ')}] AS ${type})` : undefined;
}

/** The literal of `value` as `type` reads it, or undefined. */
function literal(type: string, value: unknown): string | undefined {
  const range = INTEGER_RANGES[type];
  if (range) {
    const n = typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : typeof value === 'bigint' ? value : undefined;
    return n !== undefined && n >= range[0] && n <= range[1] ? n.toString() : undefined;
  }
  if (type === 'Float32' || type === 'Float64') return typeof value === 'number' && Number.isFinite(value) ? String(value) : undefined;
  const shape = TEXT_SHAPES[type];
  return shape && typeof value === 'string' && shape.test(value) ? quoted(value) : undefined;
}

const bits = (n: number): [bigint, bigint] => [0n, 2n ** BigInt(n) - 1n];
const signed = (n: number): [bigint, bigint] => [-(2n ** BigInt(n - 1)), 2n ** BigInt(n - 1) - 1n];
const INTEGER_RANGES: Readonly<Record<string, [bigint, bigint]>> = {
  UInt8: bits(8),
  UInt16: bits(16),
  UInt32: bits(32),
  UInt64: bits(64),
  Int8: signed(8),
  Int16: signed(16),
  Int32: signed(32),
  Int64: signed(64),
};

/** A date-time's text with up to `digits` digits of a second's fraction. */
const dateTime = (digits: number) => new RegExp(`^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}${digits > 0 ? `(\\.\\d{1,${digits}})?` : ''}$`);
/** The types whose values arrive as text, and the text each takes. */
const TEXT_SHAPES: Readonly<Record<string, RegExp>> = {
  String: /^/s,
  UUID: /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
  "DateTime('UTC')": dateTime(0),
  "DateTime64(3, 'UTC')": dateTime(3),
  "DateTime64(9, 'UTC')": dateTime(9),
};

const WRITTEN_TYPES: ReadonlySet<string> = new Set([...Object.keys(INTEGER_RANGES), 'Float32', 'Float64', ...Object.keys(TEXT_SHAPES)]);

/** A ClickHouse string literal of `text`: quote and backslash escaped, control characters as \xHH. */
function quoted(text: string): string {
  return `'${text.replace(/[\\']/g, (c) => `\\${c}`).replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}'`;
}
