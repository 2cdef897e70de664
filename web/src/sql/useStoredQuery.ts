import { useState } from 'react';

const read = (key: string): string | null => {
  try {
    return localStorage.getItem(key);
  } catch {
    return null; // storage refused (private mode, a policy): the editor still works, unsaved
  }
};

/**
 * The editor's text, kept in this browser per tenant so a reload or a later visit starts from the
 * last query; `initial` until there is one.
 */
export function useStoredQuery(tenantId: string, initial: string): [string, (query: string) => void] {
  const key = `looptrace.sql.${tenantId}`;
  const [query, setQuery] = useState(() => read(key) ?? initial);
  const update = (next: string) => {
    setQuery(next);
    try {
      localStorage.setItem(key, next);
    } catch {
      // as above: kept for this page only
    }
  };
  return [query, update];
}
