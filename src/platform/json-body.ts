import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { AppError } from './errors.js';

/**
 * Deepest `{`/`[` nesting a JSON request body may have. Schemas, transforms, JSON.stringify and
 * loggers all recurse over bodies; without a cap a few kilobytes of `[[[[…` exhaust the stack and
 * turn into 500s. Real payloads (OTLP JSON, chat messages, metadata) stay far below this.
 */
export const MAX_JSON_DEPTH = 128;

/** Whether `text` nests deeper than `max`, counting only brackets outside string literals. */
export function jsonNestingExceeds(text: string, max: number): boolean {
  if (text.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * The parser Fastify itself uses (secure-json-parse: prototype-poisoning keys are refused), behind
 * the nesting cap, with messages that say what is wrong. An empty body is no body: clients that
 * always send `Content-Type: application/json` can still call body-less operations such as archive.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8'); // parseAs 'string' gives a string
    if (text.trim() === '') return done(null, undefined);
    if (jsonNestingExceeds(text, MAX_JSON_DEPTH)) {
      return done(new AppError(400, 'bad_request', `JSON body nests deeper than ${MAX_JSON_DEPTH} levels`), undefined);
    }
    try {
      done(null, secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }));
    } catch (err) {
      const message = /prototype/i.test((err as Error).message)
        ? 'JSON bodies may not contain "__proto__" or "constructor.prototype" keys'
        : `body is not valid JSON: ${(err as Error).message}`;
      done(new AppError(400, 'bad_request', message), undefined);
    }
  });
}
