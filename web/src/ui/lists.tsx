import type { ReactNode } from 'react';
import { ErrorNotice } from './ErrorNotice';

/** What a list of `usePages` says besides its rows: its error, that it is loading, or that it is empty. */
export function ListState({ list, loading, empty }: { list: { items: unknown[]; loading: boolean; error: unknown }; loading: string; empty: ReactNode }) {
  return (
    <>
      {list.error !== undefined && <ErrorNotice error={list.error} />}
      {list.loading && <p aria-live="polite">{loading}</p>}
      {!list.loading && list.items.length === 0 && list.error === undefined && empty}
    </>
  );
}

/** The next page of a `usePages` list, while there is one. */
export function LoadMore({ list, label = 'Load more' }: { list: { hasMore: boolean; loadingMore: boolean; loadMore: () => Promise<void> }; label?: string }) {
  if (!list.hasMore) return null;
  return (
    <button type="button" onClick={() => void list.loadMore()} disabled={list.loadingMore}>
      {list.loadingMore ? 'Loading…' : label}
    </button>
  );
}

/** What a detail page's fetch says before its content: its error under the page's title, or that it is loading. */
export function DetailState({ state, title, loading }: { state: { loading: boolean; error: unknown }; title: string; loading: string }) {
  return (
    <>
      {state.error !== undefined && (
        <>
          <h1>{title}</h1>
          <ErrorNotice error={state.error} />
        </>
      )}
      {state.loading && <p aria-live="polite">{loading}</p>}
    </>
  );
}
