import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { AppError } from './errors.js';

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
 * Parses a JSON body the way Fastify itself does (secure-json-parse: prototype-poisoning keys are
 * refused), then applies the nesting cap; every refusal is a 400 that says what is wrong.
 */
export function parseJsonBody(text: string): unknown {
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
  return value;
}

/**
 * The application/json parser of every route. An empty body is no body: clients that always send
 * `Content-Type: application/json` can still call body-less operations such as archive.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8'); // parseAs 'string' gives a string
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, parseJsonBody(text));
    } catch (err) {
      done(err as AppError, undefined);
    }
  });
}
