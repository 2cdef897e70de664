import type { FastifyInstance } from 'fastify';
import { AppError } from './errors.js';
import { isAcceptedText, refuseUnacceptedText, replaceUnpairedSurrogates } from './text-input.js';

/**
 * Deepest `{`/`[` nesting a JSON request body may have. Schemas, transforms, JSON.stringify and
 * loggers all recurse over bodies; without a cap a few kilobytes of `[[[[…` exhaust the stack and
 * turn into 500s. Real payloads (OTLP JSON, chat messages, metadata) stay far below this.
 */
export const MAX_JSON_DEPTH = 128;

const isContainer = (v: unknown): v is object => v !== null && typeof v === 'object';

/**
 * A key JSON.parse makes an own property but that code merging the value (Object.assign, spread,
 * lodash-style merges) would treat as the prototype: `__proto__`, or `constructor.prototype`.
 * The same rule as secure-json-parse's, which Fastify applies by default.
 */
const poisonsPrototype = (container: object): boolean =>
  Object.hasOwn(container, '__proto__') ||
  (Object.hasOwn(container, 'constructor') && isContainer((container as { constructor: unknown }).constructor) && Object.hasOwn((container as { constructor: object }).constructor, 'prototype'));

/**
 * What is wrong with a parsed value's shape, if anything: containers nested deeper than `max`, or
 * a prototype-poisoning key. Walked level by level without recursion (V8's JSON.parse is itself
 * iterative, so checking after parsing is safe), visiting only containers: far cheaper than
 * scanning every character of a large flat body, as secure-json-parse does before its own walk.
 */
export function shapeProblem(value: unknown, max: number): 'too_deep' | 'prototype' | null {
  let level: object[] = isContainer(value) ? [value] : [];
  for (let depth = 1; level.length > 0; depth++) {
    if (depth > max) return 'too_deep';
    const next: object[] = [];
    for (const container of level) {
      if (!Array.isArray(container) && poisonsPrototype(container)) return 'prototype';
      for (const child of Array.isArray(container) ? container : Object.values(container)) {
        if (isContainer(child)) next.push(child);
      }
    }
    level = next;
  }
  return null;
}

/**
 * What a JSON body may carry as text (text-input.ts). `refuse`: NUL or an unpaired UTF-16 surrogate
 * in any key or string is a 400 naming its path. `telemetry`: unpaired surrogates become U+FFFD
 * and NUL is kept (for OTLP, whose spans go to ClickHouse, which stores NUL): the default, which
 * is what the OTLP parser (ingest/otlp/body.ts) gets.
 */
export type JsonText = 'refuse' | 'telemetry';

/**
 * In valid JSON text, NUL and unpaired surrogates of the parsed value are `\u` escapes, or (only
 * in text that was not decoded from UTF-8) raw unpaired surrogates; a raw NUL is invalid JSON.
 * Bodies with neither, nearly all of them, skip the walk over every key and string. A match may be
 * a false alarm (a surrogate pair, an escaped backslash before `u0000`): the walk decides.
 */
const NUL_OR_SURROGATE_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
const mayHoldNulOrSurrogate = (text: string) => NUL_OR_SURROGATE_ESCAPE.test(text) || !isAcceptedText(text);
const mayHoldSurrogate = (text: string) => SURROGATE_ESCAPE.test(text) || !isAcceptedText(text);

/**
 * Parses a JSON body as strictly as Fastify itself does (prototype-poisoning keys are refused),
 * then applies the nesting cap and the `text` rule; every refusal is a 400 that says what is wrong.
 */
export function parseJsonBody(text: string, options: { text?: JsonText } = {}): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text); // a byte-order mark is not JSON, but harmless
  } catch (err) {
    throw new AppError(400, 'bad_request', `body is not valid JSON: ${(err as Error).message}`);
  }
  const problem = shapeProblem(value, MAX_JSON_DEPTH);
  if (problem === 'prototype') throw new AppError(400, 'bad_request', 'JSON bodies may not contain "__proto__" or "constructor.prototype" keys');
  if (problem === 'too_deep') throw new AppError(400, 'bad_request', `JSON body nests deeper than ${MAX_JSON_DEPTH} levels`);
  if ((options.text ?? 'telemetry') === 'telemetry') return mayHoldSurrogate(text) ? replaceUnpairedSurrogates(value) : value;
  if (mayHoldNulOrSurrogate(text)) refuseUnacceptedText(value, 'body');
  return value;
}

/**
 * The application/json parser of every route. An empty body is no body: clients that always send
 * `Content-Type: application/json` can still call body-less operations such as archive. NUL and
 * unpaired surrogates are refused in every body, POST /v1/ingest included (docs/api-decisions.md).
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8'); // parseAs 'string' gives a string
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, parseJsonBody(text, { text: 'refuse' }));
    } catch (err) {
      done(err as AppError, undefined);
    }
  });
}
