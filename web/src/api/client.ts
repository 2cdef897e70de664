import createClient from 'openapi-fetch';
import { session } from '../auth/session';
import type { components, paths } from './schema';

type Schemas = components['schemas'];
export type ErrorBody = Schemas['Error'];
type Get<P extends keyof paths> = paths[P] extends { get: infer O } ? O : never;
/** The JSON body of a GET's 200 response. */
export type Ok<P extends keyof paths> = Get<P> extends { responses: { 200: { content: { 'application/json': infer B } } } } ? B : never;
export type Me = Ok<'/v1/me'>;
export type Plan = Me['tenant']['plan'];
export type Role = Me['user']['role'];

/** A refusal or failure of the API, carrying the API's own error body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(body.error);
  }
}

const isErrorBody = (value: unknown): value is ErrorBody =>
  typeof value === 'object' && value !== null && typeof (value as { error?: unknown }).error === 'string';

/** The public API, same origin, with the session token of whoever is signed in. */
export const api = createClient<paths>({ baseUrl: '' });

api.use({
  onRequest({ request }) {
    const token = session.current()?.token;
    if (token) request.headers.set('authorization', `Bearer ${token}`);
    return request;
  },
  async onResponse({ response }) {
    // The API no longer takes this token (expired, membership removed): back to sign-in, saying why.
    if (response.status === 401 && session.current()) {
      const body: unknown = await response.clone().json().catch(() => undefined);
      session.end(`Signed out: ${isErrorBody(body) ? body.error : 'the session is no longer valid'}.`);
    }
    return response;
  },
});

/** A call's data, or its error body thrown as an ApiError. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok && data !== undefined) return data;
  throw refusal(error, response);
}

/** A call answered 204 without a body (deletions): true once it succeeded, its error body thrown otherwise. */
export async function noContent(call: Promise<{ error?: unknown; response: Response }>): Promise<true> {
  const { error, response } = await call;
  if (response.ok) return true;
  throw refusal(error, response);
}

const refusal = (error: unknown, response: Response): ApiError =>
  new ApiError(
    response.status,
    isErrorBody(error) ? error : { error: `the API answered ${response.status}`, code: 'unexpected', request_id: response.headers.get('x-request-id') ?? '' },
  );
