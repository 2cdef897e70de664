import { api, unwrap, type Ok } from '../../api/client';

/** GET /v1/traces/{id}/tree: the trace and its spans without their input, output and metadata. */
export type TraceTree = Ok<'/v1/traces/{id}/tree'>;
export type TraceTreeSpan = TraceTree['spans'][number];
/** GET /v1/traces/{id}/spans/{span_id}: one span, whole. */
export type FullSpan = Ok<'/v1/traces/{id}/spans/{span_id}'>;

export const loadTree = (id: string, signal: AbortSignal): Promise<TraceTree> => unwrap(api.GET('/v1/traces/{id}/tree', { params: { path: { id } }, signal }));

export const loadSpan = (id: string, spanId: string, signal: AbortSignal): Promise<FullSpan> =>
  unwrap(api.GET('/v1/traces/{id}/spans/{span_id}', { params: { path: { id, span_id: spanId } }, signal }));
