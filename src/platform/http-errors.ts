import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { AppError, unavailable } from './errors.js';
import { isUnstorableText, storeOutage, type StoreOutage } from './store-errors.js';

export interface FieldProblem {
  path: string;
  message: string;
}

/** One failed check of a schema: where (path segments), what kind (zod's code) and why. */
export interface SchemaIssue {
  path: readonly PropertyKey[];
  code: string;
  message: string;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/**
 * Problems of a schema failure as `prefix.path: message`, and whether one of them is a required
 * field that is absent from `input` — the 422 case of DESIGN.md §3 (anything else is a 400).
 */
export function describeIssues(issues: readonly SchemaIssue[], input: unknown, prefix: string): { missing: boolean; problems: FieldProblem[] } {
  let missing = false;
  const problems = issues.map((issue) => {
    if (issue.code === 'invalid_type' && issue.path.length > 0 && valueAt(input, issue.path) === undefined) missing = true;
    return { path: [prefix, ...issue.path.map(String)].join('.'), message: issue.message };
  });
  return { missing, problems };
}

/**
 * 422 when a required field is missing; 400 when the request is malformed or a value has the
 * wrong type or shape (DESIGN.md §3). Each problem names the field path.
 */
export function validationError(error: FastifyError, request: FastifyRequest): AppError {
  const context = (error as { validationContext?: string }).validationContext ?? 'body';
  const source = { body: request.body, querystring: request.query, params: request.params, headers: request.headers }[
    context
  ];
  const issues = (hasZodFastifySchemaValidationErrors(error) ? error.validation : []).map((issue) => ({
    path: issue.instancePath.split('/').filter(Boolean),
    code: issue.keyword,
    message: issue.message ?? 'invalid value',
  }));
  const { missing, problems } = describeIssues(issues, source, context === 'querystring' ? 'query' : context);
  const summary = problems.map((p) => `${p.path}: ${p.message}`).join('; ') || error.message;
  return missing
    ? new AppError(422, 'validation_error', summary, { details: problems })
    : new AppError(400, 'bad_request', summary, { details: problems });
}

/** Seconds a client should wait before retrying when a store did not answer. */
const STORE_RETRY_AFTER_SECONDS = 2;

/**
 * Maps Fastify's own errors (parser, limits) onto our codes; a store that did not answer becomes
 * a retryable 503 and a store refusing text as unstorable a 400 (the one place store errors are
 * classified); anything unknown is a hidden 500.
 */
function fromFastifyError(error: FastifyError, request: FastifyRequest, outage: StoreOutage | undefined): AppError {
  if (error instanceof AppError) return error;
  if (outage) return unavailable('a backing store is unavailable; retry later', STORE_RETRY_AFTER_SECONDS);
  if (error.validation) return validationError(error, request);
  if (isUnstorableText(error)) {
    return new AppError(400, 'bad_request', 'a text value contains NUL characters or unpaired UTF-16 surrogates, which cannot be stored');
  }
  const status = error.statusCode ?? 500;
  if (status === 413) return new AppError(413, 'payload_too_large', 'request body exceeds the size limit');
  if (status === 415) return new AppError(415, 'unsupported_media_type', error.message);
  if (status >= 400 && status < 500) return new AppError(status, 'bad_request', error.message);
  return new AppError(500, 'internal_error', 'internal server error');
}

/**
 * Errors the router raises before a request reaches a route (Fastify's `frameworkErrors` option),
 * in the same body as every other error rather than Fastify's own: a path with a broken
 * percent-escape (`/v1/prompts/%E0%A4%A`), a path parameter over the router's length limit.
 */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const appError =
    error.code === 'FST_ERR_BAD_URL'
      ? new AppError(400, 'bad_request', 'the path is not a valid URL: a % must start a %XX escape of UTF-8 bytes')
      : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new AppError(400, 'bad_request', 'a path parameter is longer than the router accepts')
        : new AppError(500, 'internal_error', 'internal server error');
  if (appError.status >= 500) request.log.error({ err: error }, 'request failed');
  else request.log.warn({ code: appError.code, status: appError.status }, appError.message);
  void reply
    .status(appError.status)
    .header('x-request-id', request.id)
    .type('application/json')
    .send(JSON.stringify({ error: appError.message, code: appError.code, request_id: request.id }));
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    // A 4xx that Fastify already assigned (a client that hung up mid-body, say) is never a store outage.
    const outage = error.statusCode !== undefined && error.statusCode < 500 ? undefined : storeOutage(error);
    const appError = fromFastifyError(error, request, outage);
    if (outage && appError.status === 503) {
      // An outage, not a bug: one line naming the store, without a stack trace.
      request.log.warn(
        { code: appError.code, status: 503, store: outage.store ?? 'unknown', reason: outage.reason, target: outage.target },
        `${outage.store ?? 'a store'} unavailable: ${outage.reason}`,
      );
    } else if (appError.status >= 500 && !(error instanceof AppError && appError.retryable)) request.log.error({ err: error }, 'request failed');
    else request.log.warn({ code: appError.code, status: appError.status }, appError.message);
    return reply
      .status(appError.status)
      .headers(appError.headers)
      .type('application/json')
      // Plain JSON, not the route's response schema for this status: an error body that failed a
      // route's 4xx schema would turn a refusal into a 500 without our error shape.
      .serializer(JSON.stringify)
      .send({ error: appError.message, code: appError.code, request_id: request.id, ...appError.extra });
  });
  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) =>
    reply.status(404).send({ error: `route ${request.method} ${request.url.split('?')[0]} not found`, code: 'not_found', request_id: request.id }),
  );
}
