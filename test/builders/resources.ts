import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { App } from '../../src/app.js';
import { createdApiKey } from '../../src/modules/apikeys/schemas.js';

/**
 * Request bodies of every resource a test creates, with defaults that the API accepts; a test
 * states only what it is about. The traces and OTLP builders are in traces.ts and otlp.ts.
 */
export const aProject = (overrides: Record<string, unknown> = {}) => ({ name: `project ${randomUUID().slice(0, 8)}`, ...overrides });

export const anApiKey = (overrides: Record<string, unknown> = {}) => ({ name: 'key', ...overrides });

/** A key that may only read (the `query` scope). */
export const aQueryKey = (overrides: Record<string, unknown> = {}) => anApiKey({ name: 'reader', scopes: ['query'], ...overrides });

export const aWebhook = (url: string, overrides: Record<string, unknown> = {}) => ({ url, secret: 'a-webhook-secret-of-length', ...overrides });

/** A builtin `contains` evaluation: no LLM involved. */
export const anEvalRule = (value = 'Paris', overrides: Record<string, unknown> = {}) => ({
  name: `mentions ${value}`,
  metric_name: `mentions_${value.replace(/\W/g, '_')}`,
  config: { provider: 'builtin', preset: 'contains', params: { value } },
  ...overrides,
});

export const aFailureRule = (overrides: Record<string, unknown> = {}) => ({ name: 'timeouts', match: { failure_types: ['timeout'] }, ...overrides });

export const aDataset = (overrides: Record<string, unknown> = {}) => ({ name: `dataset ${randomUUID().slice(0, 8)}`, ...overrides });

export const anLlmConnection = (overrides: Record<string, unknown> = {}) => ({ provider: 'openai', api_key: 'sk-test-key-0123456789', ...overrides });

export const aFeedback = (traceId: string, overrides: Record<string, unknown> = {}) => ({ trace_id: traceId, score: 0.9, ...overrides });

export const aPrompt = (projectId: string, overrides: Record<string, unknown> = {}) => ({
  project_id: projectId,
  name: `prompt-${randomUUID().slice(0, 8)}`,
  content: 'Answer briefly: {{input}}',
  ...overrides,
});

export const aModelRoute = (overrides: Record<string, unknown> = {}) => ({ name: 'route', model: { provider: 'openai', model: 'gpt-4o-mini' }, ...overrides });

type Headers = Record<string, string>;

/** POSTs `body` to `url` as `headers` and returns the created resource; anything but 201 fails the test with the answer. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- by default the body as inject's json() gives it
export async function create<T = any>(app: App, url: string, headers: Headers, body: object): Promise<T> {
  const res = await app.inject({ method: 'POST', url, headers, payload: body });
  expect(res.statusCode, `POST ${url}: ${res.body}`).toBe(201);
  return res.json() as T;
}

/** A new API key of the tenant whose `headers` create it, with its secret. */
export const createApiKey = async (app: App, headers: Headers, overrides: Record<string, unknown> = {}) =>
  createdApiKey.parse(await create(app, '/v1/apikeys', headers, anApiKey(overrides)));

/** The Authorization header of a new query-scoped key of the tenant whose `headers` create it. */
export async function queryKeyAuth(app: App, headers: Headers): Promise<{ authorization: string }> {
  const key = await createApiKey(app, headers, aQueryKey());
  return { authorization: `Bearer ${key.secret}` };
}
