import { useState } from 'react';

/** One write at a time: which one runs, and the API's refusal of the last one (for ErrorNotice). */
export function useAction() {
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>();
  const run = async <T,>(label: string, call: () => Promise<T>): Promise<T | undefined> => {
    setBusy(label);
    setError(undefined);
    try {
      return await call();
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      setBusy(null);
    }
  };
  return { busy, error, run, clear: () => setError(undefined) };
}
