import { useSyncExternalStore } from 'react';

/** A signed-in browser: the session token the API verifies, and where it came from. */
export interface Session {
  token: string;
  via: 'oidc' | 'dev';
  /** Epoch milliseconds. */
  expiresAt: number;
}

interface State {
  session: Session | null;
  /** Why the last session ended, shown on the sign-in page. */
  notice: string | null;
}

const KEY = 'looptrace.session';
const listeners = new Set<() => void>();

function stored(): Session | null {
  try {
    const value = JSON.parse(localStorage.getItem(KEY) ?? 'null') as Session | null;
    return value && typeof value.token === 'string' && value.expiresAt > Date.now() ? value : null;
  } catch {
    return null;
  }
}

let state: State = { session: stored(), notice: null };

function set(next: State): void {
  state = next;
  for (const listener of listeners) listener();
}

// Signing in or out in one tab does so in the others.
window.addEventListener('storage', (event) => {
  if (event.key === KEY) set({ session: stored(), notice: null });
});

/** The one session of this browser, kept in localStorage (shared by its tabs). */
export const session = {
  /** The session, unless it has expired since it was stored. */
  current(): Session | null {
    return state.session && state.session.expiresAt > Date.now() ? state.session : null;
  },
  start(next: Session): void {
    localStorage.setItem(KEY, JSON.stringify(next));
    set({ session: next, notice: null });
  },
  end(notice: string | null = null): void {
    localStorage.removeItem(KEY);
    set({ session: null, notice });
  },
  subscribe(listener: () => void): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};

export function useSessionState(): State {
  return useSyncExternalStore(session.subscribe, () => state);
}

/** Where to go after signing in: a path of this site only, never another origin. */
export function safeNext(value: string | null | undefined): string {
  return value && value.startsWith('/') && !value.startsWith('//') && !value.startsWith('/\\') ? value : '/traces';
}
