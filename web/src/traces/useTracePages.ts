import { api, unwrap, type Ok } from '../api/client';
import { usePages } from '../api/usePages';
import type { TraceFilters } from './filters';

export type TraceList = Ok<'/v1/traces'>;
export type Trace = TraceList['traces'][number];

const PAGE_SIZE = 50;

/** The list for these filters (`key` names them), page after page along the API's keyset cursor ("load more"). */
export function useTracePages(filters: TraceFilters, key: string) {
  const list = usePages(
    `traces?${key}`,
    (cursor, signal) => unwrap(api.GET('/v1/traces', { params: { query: { ...filters, limit: PAGE_SIZE, cursor } }, signal })),
    (page: TraceList) => page.traces,
  );
  return { ...list, traces: list.items };
}
