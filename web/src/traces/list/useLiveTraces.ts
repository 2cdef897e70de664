import { useEffect, useRef, useState } from 'react';
import { api, unwrap } from '../../api/client';
import type { TraceFilters } from '../filters';
import type { Trace } from '../useTracePages';

/** How often live mode asks for new traces. */
export const LIVE_POLL_MS = 3_000;

/**
 * Live mode: every few seconds, the first page of GET /v1/traces with the list's filters (`query`
 * gives them as of the poll, so a relative range moves along); the traces not listed yet come out
 * first in `fresh`, newest first. `key` names the list: a new list starts with nothing fresh.
 */
export function useLiveTraces(enabled: boolean, key: string, query: () => TraceFilters, listed: Trace[]) {
  const [fresh, setFresh] = useState<{ key: string; traces: Trace[] }>({ key, traces: [] });
  const [failed, setFailed] = useState<unknown>(undefined);
  const known = useRef(new Set<string>());
  known.current = new Set([...listed, ...(fresh.key === key ? fresh.traces : [])].map((t) => t.id));
  const current = useRef(query);
  current.current = query;

  useEffect(() => {
    if (!enabled) return;
    const controller = new AbortController();
    let polling = false;
    const poll = async () => {
      // A tab in the background does not spend the tenant's rate limit (it catches up when shown);
      // a slow answer is not asked for again before it comes, nor its traces added twice.
      if (document.hidden || polling) return;
      polling = true;
      try {
        const page = await unwrap(api.GET('/v1/traces', { params: { query: { ...current.current(), limit: 50 } }, signal: controller.signal }));
        setFailed(undefined);
        const unseen = page.traces.filter((t) => !known.current.has(t.id));
        if (unseen.length > 0) setFresh((f) => ({ key, traces: [...unseen, ...(f.key === key ? f.traces : [])] }));
      } catch (error) {
        if (!controller.signal.aborted) setFailed(error);
      } finally {
        polling = false;
      }
    };
    const timer = setInterval(() => void poll(), LIVE_POLL_MS);
    return () => {
      clearInterval(timer);
      controller.abort();
    };
  }, [enabled, key]);

  return { fresh: fresh.key === key ? fresh.traces : [], error: enabled ? failed : undefined };
}
