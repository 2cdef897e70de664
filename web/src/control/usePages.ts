import { useState } from 'react';
import { useApi } from '../api/useApi';

interface Page {
  has_more: boolean;
  next_cursor: string | null;
}

/**
 * A listing page after page along the API's keyset cursor ("load more"). `key` names everything
 * the first page depends on; `fetchPage` fetches the page after `cursor` (none: the first).
 */
export function usePages<P extends Page, T>(key: string, fetchPage: (cursor: string | undefined, signal?: AbortSignal) => Promise<P>, items: (page: P) => T[]) {
  const first = useApi(key, (signal) => fetchPage(undefined, signal));
  // Further pages extend one answer of the first page: a new answer starts over.
  const [more, setMore] = useState<{ base?: P; pages: P[]; error?: unknown; loading: boolean }>({ pages: [], loading: false });
  const extra = first.data && more.base === first.data ? more : { base: first.data, pages: [], loading: false, error: undefined };
  const pages = first.data ? [first.data, ...extra.pages] : [];
  const last = pages[pages.length - 1];

  const loadMore = async () => {
    const cursor = last?.next_cursor;
    if (!cursor || extra.loading) return;
    setMore({ ...extra, loading: true, error: undefined });
    try {
      const page = await fetchPage(cursor);
      setMore((m) => ({ base: extra.base, pages: [...(m.base === extra.base ? m.pages : []), page], loading: false }));
    } catch (error) {
      setMore((m) => ({ ...m, base: extra.base, loading: false, error }));
    }
  };

  return {
    items: pages.flatMap(items),
    hasMore: last?.has_more ?? false,
    loading: first.loading,
    loadingMore: extra.loading,
    error: first.error ?? extra.error,
    loadMore,
  };
}
