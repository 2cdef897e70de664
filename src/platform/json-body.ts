import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
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
 * Whether a parsed value nests containers deeper than `max`, walked level by level without
 * recursion. V8's JSON.parse is itself iterative, so checking after parsing is safe, and it visits
 * only containers: far cheaper than scanning every character of a large flat body.
 */
export function nestingExceeds(value: unknown, max: number): boolean {
  let level: object[] = isContainer(value) ? [value] : [];
  for (let depth = 1; level.length > 0; depth++) {
    if (depth > max) return true;
    const next: object[] = [];
    for (const container of level) {
      for (const child of Array.isArray(container) ? container : Object.values(container)) {
        if (isContainer(child)) next.push(child);
      }
    }
    level = next;
  }
  return false;
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
 * Parses a JSON body the way Fastify itself does (secure-json-parse: prototype-poisoning keys are
 * refused), then applies the nesting cap and the `text` rule; every refusal is a 400 that says
 * what is wrong.
 */
export function parseJsonBody(text: string, options: { text?: JsonText } = {}): unknown {
  let value: unknown;
  try {
    value = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    const message = (err as Error).message;
    throw new AppError(
      400,
      'bad_request',
      /prototype/i.test(message) ? 'JSON bodies may not contain "__proto__" or "constructor.prototype" keys' : `body is not valid JSON: ${message}`,
    );
  }
  if (nestingExceeds(value, MAX_JSON_DEPTH)) throw new AppError(400, 'bad_request', `JSON body nests deeper than ${MAX_JSON_DEPTH} levels`);
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
