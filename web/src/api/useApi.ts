import { useEffect, useState } from 'react';

interface Loaded<T> {
  key: string;
  data?: T;
  error?: unknown;
}

/**
 * Runs `load` whenever `key` changes (the key names everything the call depends on; `load` itself
 * is a new closure at every render) and drops the answer of a call that a newer one replaced.
 */
export function useApi<T>(key: string, load: (signal: AbortSignal) => Promise<T>) {
  const [state, setState] = useState<Loaded<T>>({ key: '' });
  useEffect(() => {
    const controller = new AbortController();
    load(controller.signal).then(
      (data) => setState({ key, data }),
      (error: unknown) => {
        if (!controller.signal.aborted) setState({ key, error });
      },
    );
    return () => controller.abort();
  }, [key]);
  const current = state.key === key ? state : undefined;
  return { data: current?.data, error: current?.error, loading: current === undefined };
}
