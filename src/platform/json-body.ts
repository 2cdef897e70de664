import type { FastifyInstance } from 'fastify';
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

/** Fastify's own JSON parser (prototype-poisoning checks included), behind the nesting cap. */
export function registerJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser(app.initialConfig.onProtoPoisoning ?? 'error', app.initialConfig.onConstructorPoisoning ?? 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8'); // parseAs 'string' gives a string
    if (jsonNestingExceeds(text, MAX_JSON_DEPTH)) {
      done(new AppError(400, 'bad_request', `JSON body nests deeper than ${MAX_JSON_DEPTH} levels`), undefined);
      return;
    }
    parse(request, text, done);
  });
}
