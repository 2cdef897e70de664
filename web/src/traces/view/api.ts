import { api, unwrap, type Ok } from '../../api/client';
import { session } from '../../auth/session';

/** GET /v1/traces/{id}/tree: the trace and its spans without their input, output and metadata. */
export type TraceTree = Ok<'/v1/traces/{id}/tree'>;
export type TraceTreeSpan = TraceTree['spans'][number];
/** GET /v1/traces/{id}/spans/{span_id}: one span, whole. */
export type FullSpan = Ok<'/v1/traces/{id}/spans/{span_id}'>;

const early = new Map<string, Promise<TraceTree>>();

/**
 * The dashboard opened at a trace's address: its tree is asked for at once, alongside GET /v1/me
 * and the trace view's code, instead of after them; the page's first loadTree takes the answer.
 * Not without a session (the sign-in page comes next, and a 401 would be logged).
 */
export function prefetchTree(id: string): void {
  if (!session.current() || early.has(id)) return;
  const call = unwrap(api.GET('/v1/traces/{id}/tree', { params: { path: { id } } }));
  call.catch(() => undefined); // the page sees the failure when it takes the call
  early.set(id, call);
}

export function loadTree(id: string, signal: AbortSignal): Promise<TraceTree> {
  const prefetched = early.get(id);
  early.delete(id);
  return prefetched ?? unwrap(api.GET('/v1/traces/{id}/tree', { params: { path: { id } }, signal }));
}

export const loadSpan = (id: string, spanId: string, signal: AbortSignal): Promise<FullSpan> =>
  unwrap(api.GET('/v1/traces/{id}/spans/{span_id}', { params: { path: { id, span_id: spanId } }, signal }));
