import { useState } from 'react';
import { api, unwrap, type Ok } from '../api/client';
import { useApi } from '../api/useApi';
import { filtersToParams, type TraceFilters } from './filters';

export type TraceList = Ok<'/v1/traces'>;
export type Trace = TraceList['traces'][number];

const PAGE_SIZE = 50;

/** The list for these filters, page after page along the API's keyset cursor ("load more"). */
export function useTracePages(filters: TraceFilters) {
  const key = filtersToParams(filters).toString();
  const first = useApi(`traces?${key}`, (signal) => unwrap(api.GET('/v1/traces', { params: { query: { ...filters, limit: PAGE_SIZE } }, signal })));
  // Further pages extend one answer of the first page: a new answer (other filters, or the same ones again) starts over.
  const [more, setMore] = useState<{ base?: TraceList; pages: TraceList[]; error?: unknown; loading: boolean }>({ pages: [], loading: false });
  const extra = first.data && more.base === first.data ? more : { base: first.data, pages: [], loading: false, error: undefined };
  const pages = first.data ? [first.data, ...extra.pages] : [];
  const last = pages[pages.length - 1];

  const loadMore = async () => {
    const cursor = last?.next_cursor;
    if (!cursor || extra.loading) return;
    setMore({ ...extra, loading: true, error: undefined });
    try {
      const page = await unwrap(api.GET('/v1/traces', { params: { query: { ...filters, limit: PAGE_SIZE, cursor } } }));
      setMore((m) => ({ base: extra.base, pages: [...(m.base === extra.base ? m.pages : []), page], loading: false }));
    } catch (error) {
      setMore((m) => ({ ...m, base: extra.base, loading: false, error }));
    }
  };

  return {
    traces: pages.flatMap((p) => p.traces),
    hasMore: last?.has_more ?? false,
    loading: first.loading,
    loadingMore: extra.loading,
    error: first.error ?? extra.error,
    loadMore,
  };
}
