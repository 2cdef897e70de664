import { useState } from 'react';
import { useApi } from './useApi';

interface Page {
  has_more: boolean;
  next_cursor: string | null;
}

/**
 * A listing page after page along the API's keyset cursor ("Load more"), every list of the dashboard:
 * `key` names everything the first page depends on; a new answer of the first page starts over.
 */
export function usePages<P extends Page, T>(key: string, load: (cursor: string | undefined, signal?: AbortSignal) => Promise<P>, items: (page: P) => T[]) {
  const first = useApi(key, (signal) => load(undefined, signal));
  const [more, setMore] = useState<{ base?: P; pages: P[]; error?: unknown; loading: boolean }>({ pages: [], loading: false });
  const extra = first.data && more.base === first.data ? more : { base: first.data, pages: [], loading: false, error: undefined };
  const pages = first.data ? [first.data, ...extra.pages] : [];
  const last = pages[pages.length - 1];

  const loadMore = async () => {
    const cursor = last?.next_cursor;
    if (!cursor || extra.loading) return;
    setMore({ ...extra, loading: true, error: undefined });
    try {
      const page = await load(cursor);
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
