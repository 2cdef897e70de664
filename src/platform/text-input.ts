import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from './errors.js';

// String.prototype.isWellFormed / toWellFormed: ES2024, in Node since 20 (the project's lib is ES2023).
interface WellFormedString {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/** The refusal of text that is not storable as sent (the same words as platform/schemas.ts storableText). */
export const UNACCEPTED_TEXT = 'must not contain NUL characters or unpaired UTF-16 surrogates';

/**
 * Whether `s` is text every store keeps exactly as sent. Postgres `text` and `jsonb` cannot hold
 * NUL (U+0000): the statement fails. A UTF-16 surrogate without its partner is not Unicode at all:
 * UTF-8 encoders turn it into U+FFFD, and JSON-encoded it is refused by Postgres jsonb and
 * ClickHouse alike. Everything else (bidi controls such as U+200F, emoji, other control
 * characters, noncharacters) is valid Unicode and passes unchanged.
 */
export const isAcceptedText = (s: string): boolean => !s.includes('\u0000') && (s as unknown as WellFormedString).isWellFormed();

/** `s` with NUL and unpaired surrogates replaced by U+FFFD: text every store keeps as it is. */
export const toAcceptedText = (s: string): string =>
  isAcceptedText(s) ? s : (s.replaceAll('\u0000', '\uFFFD') as unknown as WellFormedString).toWellFormed();

/** One refused piece of text: where (`body.filter.name`) and why. */
export interface TextProblem {
  path: string;
  message: string;
}

const isContainer = (v: unknown): v is object => v !== null && typeof v === 'object' && !ArrayBuffer.isView(v);

function entriesOf(container: object): [string, unknown][] {
  return Array.isArray(container) ? container.map((v, i) => [String(i), v]) : Object.entries(container);
}

/** Cheap first pass: whether any key or string of `value` is refused (iterative, no paths kept). */
function anyUnaccepted(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const v = pending.pop();
    if (typeof v === 'string') {
      if (!isAcceptedText(v)) return true;
    } else if (Array.isArray(v)) {
      for (const child of v) pending.push(child);
    } else if (isContainer(v)) {
      for (const [key, child] of Object.entries(v)) {
        if (!isAcceptedText(key)) return true;
        pending.push(child);
      }
    }
  }
  return false;
}

/**
 * The first key or string of a parsed request part (`prefix`: body, query, params) that is not
 * accepted text, named by its path; undefined when all are. Only a refused value pays for paths.
 */
export function findUnacceptedText(value: unknown, prefix: string): TextProblem | undefined {
  if (!anyUnaccepted(value)) return undefined;
  // Depth-first with paths; request bodies are nesting-capped (json-body.ts) but this needs no such promise.
  const pending: [unknown, string][] = [[value, prefix]];
  while (pending.length > 0) {
    const [v, path] = pending.pop()!;
    if (typeof v === 'string') {
      if (!isAcceptedText(v)) return { path, message: UNACCEPTED_TEXT };
    } else if (isContainer(v)) {
      const entries = entriesOf(v);
      if (!Array.isArray(v) && entries.some(([key]) => !isAcceptedText(key))) return { path, message: `keys ${UNACCEPTED_TEXT}` };
      for (let i = entries.length - 1; i >= 0; i--) pending.push([entries[i]![1], `${path}.${entries[i]![0]}`]);
    }
  }
  return undefined;
}

/** `findUnacceptedText` as the 400 `bad_request` a request gets for it. */
export function refuseUnacceptedText(value: unknown, prefix: string): void {
  const problem = findUnacceptedText(value, prefix);
  if (problem) throw new AppError(400, 'bad_request', `${problem.path}: ${problem.message}`, { details: [problem] });
}

/**
 * Replaces every unpaired surrogate of `value`'s keys and strings with U+FFFD, in place (NUL is
 * left alone). For telemetry whose senders cannot be fixed (OTLP exporters truncating text in the
 * middle of a surrogate pair): exactly what a UTF-8 encoder would have stored.
 */
export function replaceUnpairedSurrogates(value: unknown): unknown {
  const wellFormed = (s: string) => (s as unknown as WellFormedString).isWellFormed();
  const fix = (s: string) => (s as unknown as WellFormedString).toWellFormed();
  if (typeof value === 'string') return wellFormed(value) ? value : fix(value);
  const pending: object[] = isContainer(value) ? [value] : [];
  while (pending.length > 0) {
    const container = pending.pop()! as Record<string, unknown>;
    const array = Array.isArray(container);
    for (const [key, child] of entriesOf(container)) {
      let target = key;
      if (!array && !wellFormed(key)) {
        target = fix(key);
        delete container[key];
        container[target] = child;
      }
      if (typeof child === 'string' && !wellFormed(child)) container[target] = fix(child);
      else if (isContainer(child)) pending.push(child);
    }
  }
  return value;
}

const HEX_PAIR = /^[0-9A-Fa-f]{2}$/;

function decodesCleanly(part: string): boolean {
  for (let i = part.indexOf('%'); i !== -1; i = part.indexOf('%', i + 1)) {
    if (!HEX_PAIR.test(part.slice(i + 1, i + 3))) return false;
  }
  try {
    decodeURIComponent(part);
    return true;
  } catch {
    return false; // escapes that are not UTF-8 (%E0%A4 cut short, %ED%A0%80 for a lone surrogate, %FF)
  }
}

/**
 * Refuses a query string with a `%` that does not start a valid escape of UTF-8 bytes. Fastify's
 * parser (fast-querystring) would keep such a value undecoded, a different string than the client
 * meant; refusing names the parameter.
 */
function refuseBadPercentEncoding(request: FastifyRequest): void {
  const start = request.url.indexOf('?');
  if (start === -1 || !request.url.includes('%', start)) return;
  for (const pair of request.url.slice(start + 1).split('&')) {
    if (!pair.includes('%')) continue;
    const eq = pair.indexOf('=');
    const rawKey = (eq === -1 ? pair : pair.slice(0, eq)).replaceAll('+', ' ');
    const rawValue = eq === -1 ? '' : pair.slice(eq + 1).replaceAll('+', ' ');
    if (decodesCleanly(rawKey) && decodesCleanly(rawValue)) continue;
    const name = decodesCleanly(rawKey) ? decodeURIComponent(rawKey) : rawKey;
    const problem = { path: `query.${name}`, message: 'invalid percent-encoding (each % must start a %XX escape of UTF-8 bytes)' };
    throw new AppError(400, 'bad_request', `${problem.path}: ${problem.message}`, { details: [problem] });
  }
}

/**
 * NUL and unpaired surrogates (and, in a query string, broken percent-encoding) are refused at the
 * edge for every route, as a 400 naming the field, before they can reach a store (where Postgres
 * would fail the statement). JSON bodies are checked as they are parsed (json-body.ts); this hook
 * checks the query string and path parameters of routes that declare a schema for them (the parts
 * a route reads), before the schema runs.
 */
export function registerTextInputGuard(app: FastifyInstance): void {
  app.addHook('preValidation', async (request: FastifyRequest) => {
    const schema = request.routeOptions.schema;
    if (schema?.querystring) {
      refuseBadPercentEncoding(request);
      refuseUnacceptedText(request.query, 'query');
    }
    if (schema?.params) refuseUnacceptedText(request.params, 'params');
  });
}
