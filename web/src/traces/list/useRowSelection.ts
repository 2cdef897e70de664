import { useEffect, useRef, useState } from 'react';
import type { Trace } from '../useTracePages';

interface Shown {
  /** The rows, live mode's fresh ones first. */
  traces: Trace[];
  /** Names the list (its filters): a new one starts over. */
  listKey: string;
  loading: boolean;
  /** How many rows the list's pages brought, and how many live mode put above them. */
  paged: number;
  fresh: number;
  peek: string | undefined;
}

/**
 * The row holding the table's one focus stop, which j/k and ↑/↓ move. A new list starts at its first
 * row, or at the trace in the side panel (a shared URL, the back button); rows live mode puts on top
 * push it down with its trace; the first of the rows "Load more" brings takes the focus.
 */
export function useRowSelection({ traces, listKey, loading, paged, fresh, peek }: Shown) {
  const [selected, setSelected] = useState(0);
  const body = useRef<HTMLTableSectionElement>(null);
  const focusRow = (index: number) => {
    setSelected(index);
    (body.current?.rows[index] as HTMLElement | undefined)?.focus();
  };

  useEffect(() => {
    setSelected(Math.max(0, traces.findIndex((t) => t.id === peek)));
  }, [listKey, loading]);
  const freshBefore = useRef(fresh);
  useEffect(() => {
    const added = fresh - freshBefore.current;
    freshBefore.current = fresh;
    if (added > 0) setSelected((at) => at + added);
  }, [fresh]);
  const pagedBefore = useRef(paged);
  useEffect(() => {
    const before = pagedBefore.current;
    pagedBefore.current = paged;
    if (paged > before && before > 0) focusRow(fresh + before);
  }, [paged]);

  return { selected: Math.max(0, Math.min(selected, traces.length - 1)), body, focusRow, setSelected };
}
