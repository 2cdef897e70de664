import { Ajv, type ValidateFunction } from 'ajv';
import { z } from 'zod';
import { safeRegexPattern } from '../platform/safe-regex.js';

/**
 * Deterministic checks (`provider: "builtin"`): no network, the same answer every time. Each
 * scores 0..1; the caller decides `passed` against its threshold.
 */

// Levenshtein is O(n·m): 5,000 characters a side bounds one comparison to ~25M cell updates.
const LEVENSHTEIN_MAX_CHARS = 5_000;
// A safe pattern is linear in its input, but the input still has to be bounded.
const REGEX_MAX_INPUT_CHARS = 100_000;
const MAX_PATTERN_CHARS = 1_000;

const caseSensitive = z.boolean().optional().describe('default true');
const expectedText = z.string().max(100_000).optional().describe("overrides the item's or trace's expected output");

const safePattern = safeRegexPattern(MAX_PATTERN_CHARS);

export const BUILTIN_PARAMS = {
  exact_match: z.object({ expected: expectedText, case_sensitive: caseSensitive, trim: z.boolean().optional().describe('default true') }).strict(),
  contains: z
    .object({
      value: z.string().min(1).max(10_000).optional(),
      values: z.array(z.string().min(1).max(10_000)).min(1).max(100).optional(),
      case_sensitive: caseSensitive,
    })
    .strict()
    .refine((p) => p.value !== undefined || p.values !== undefined, { message: 'needs value or values' }),
  regex: z.object({ pattern: safePattern, flags: z.string().regex(/^[imsu]*$/, 'only i, m, s, u').max(4).optional() }).strict(),
  json_valid: z.object({}).strict(),
  json_schema: z
    .object({ schema: z.record(z.string(), z.unknown()).refine((s) => schemaCompiles(s), { message: 'is not a valid JSON Schema' }) })
    .strict(),
  levenshtein: z.object({ expected: expectedText, case_sensitive: caseSensitive }).strict(),
  length_between: z
    .object({
      min: z.number().int().min(0).optional(),
      max: z.number().int().min(0).optional(),
      unit: z.enum(['chars', 'words']).optional().describe('default chars'),
    })
    .strict()
    .refine((p) => p.min === undefined || p.max === undefined || p.min <= p.max, { message: 'min must be <= max' }),
} as const;

export type BuiltinCheck = keyof typeof BUILTIN_PARAMS;
export const BUILTIN_CHECKS = Object.keys(BUILTIN_PARAMS) as BuiltinCheck[];

export interface CheckInput {
  output: string;
  /** The expected output from the dataset item or the trace, when there is one. */
  expected: string | null;
  params: Record<string, unknown>;
}

export interface CheckOutcome {
  score: number;
  reasoning: string;
}

/** A check that cannot run on this input (no expected output, say): the evaluation fails with this message. */
export class CheckInputError extends Error {}

export function runBuiltinCheck(check: BuiltinCheck, input: CheckInput): CheckOutcome {
  switch (check) {
    case 'exact_match':
      return exactMatch(input);
    case 'contains':
      return contains(input);
    case 'regex':
      return regex(input);
    case 'json_valid':
      return parseJson(input.output).ok ? { score: 1, reasoning: 'output is valid JSON' } : { score: 0, reasoning: 'output is not valid JSON' };
    case 'json_schema':
      return jsonSchema(input);
    case 'levenshtein':
      return levenshtein(input);
    case 'length_between':
      return lengthBetween(input);
  }
}

function expectedOf(input: CheckInput): string {
  const explicit = input.params.expected;
  const expected = typeof explicit === 'string' ? explicit : input.expected;
  if (expected === null) throw new CheckInputError('no expected output: set params.expected, the dataset item\'s expected, or the trace\'s metadata.expected');
  return expected;
}

const fold = (s: string, params: Record<string, unknown>) => (params.case_sensitive === false ? s.toLowerCase() : s);

function exactMatch(input: CheckInput): CheckOutcome {
  const trim = input.params.trim !== false;
  const norm = (s: string) => fold(trim ? s.trim() : s, input.params);
  const equal = norm(input.output) === norm(expectedOf(input));
  return { score: equal ? 1 : 0, reasoning: equal ? 'output equals the expected output' : 'output differs from the expected output' };
}

function contains(input: CheckInput): CheckOutcome {
  const { value, values } = input.params as { value?: string; values?: string[] };
  const wanted = [...(value === undefined ? [] : [value]), ...(values ?? [])];
  const haystack = fold(input.output, input.params);
  const missing = wanted.filter((w) => !haystack.includes(fold(w, input.params)));
  const score = (wanted.length - missing.length) / wanted.length;
  return {
    score,
    reasoning: missing.length === 0 ? `output contains all ${wanted.length} value(s)` : `output lacks ${missing.length} of ${wanted.length}: ${JSON.stringify(missing.slice(0, 5))}`,
  };
}

function regex(input: CheckInput): CheckOutcome {
  const { pattern, flags } = input.params as { pattern: string; flags?: string };
  const matched = new RegExp(pattern, flags ?? '').test(input.output.slice(0, REGEX_MAX_INPUT_CHARS));
  return { score: matched ? 1 : 0, reasoning: matched ? `output matches /${pattern}/` : `output does not match /${pattern}/` };
}

function jsonSchema(input: CheckInput): CheckOutcome {
  const parsed = parseJson(input.output);
  if (!parsed.ok) return { score: 0, reasoning: 'output is not valid JSON' };
  const validate = compiledSchema(input.params.schema as Record<string, unknown>);
  if (validate(parsed.value)) return { score: 1, reasoning: 'output matches the JSON Schema' };
  const problems = (validate.errors ?? []).slice(0, 3).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`.trim());
  return { score: 0, reasoning: `output does not match the JSON Schema: ${problems.join('; ')}` };
}

function levenshtein(input: CheckInput): CheckOutcome {
  const a = fold(input.output, input.params).slice(0, LEVENSHTEIN_MAX_CHARS);
  const b = fold(expectedOf(input), input.params).slice(0, LEVENSHTEIN_MAX_CHARS);
  const longest = Math.max(a.length, b.length);
  const distance = editDistance(a, b);
  const score = longest === 0 ? 1 : 1 - distance / longest;
  return { score, reasoning: `edit distance ${distance} over ${longest} characters` };
}

function lengthBetween(input: CheckInput): CheckOutcome {
  const { min, max, unit } = input.params as { min?: number; max?: number; unit?: 'chars' | 'words' };
  const length = unit === 'words' ? input.output.split(/\s+/).filter(Boolean).length : [...input.output].length;
  const inside = (min === undefined || length >= min) && (max === undefined || length <= max);
  return { score: inside ? 1 : 0, reasoning: `length ${length} ${unit ?? 'chars'} is ${inside ? 'within' : 'outside'} [${min ?? 0}, ${max ?? '∞'}]` };
}

/** Two-row dynamic programme: O(min(n, m)) memory. */
function editDistance(a: string, b: string): number {
  if (a.length < b.length) [a, b] = [b, a];
  let previous = new Uint32Array(b.length + 1).map((_, j) => j);
  let current = new Uint32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    const ca = a.charCodeAt(i - 1);
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (ca === b.charCodeAt(j - 1) ? 0 : 1);
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution);
    }
    [previous, current] = [current, previous];
  }
  return previous[b.length]!;
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

// Rules and dataset runs reuse a handful of schemas: compiling once per distinct schema keeps a
// check at microseconds. Bounded so that many distinct schemas cannot grow it without limit.
const ajv = new Ajv({ allErrors: false, strict: false });
const SCHEMA_CACHE_SIZE = 256;
const schemaCache = new Map<string, ValidateFunction>();

function compiledSchema(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = schemaCache.get(key);
  if (!validate) {
    validate = ajv.compile(schema);
    if (schemaCache.size >= SCHEMA_CACHE_SIZE) schemaCache.delete(schemaCache.keys().next().value!);
    schemaCache.set(key, validate);
  }
  return validate;
}

function schemaCompiles(schema: Record<string, unknown>): boolean {
  try {
    compiledSchema(schema);
    return true;
  } catch {
    return false;
  }
}
