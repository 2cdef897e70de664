import { useEffect, useRef } from 'react';

interface Keys {
  '/': () => void;
  j: () => void;
  k: () => void;
  Escape: () => void;
}

const typing = (target: EventTarget | null) => target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));

/**
 * The list's keys anywhere on the page: `/` goes to the search box, j/k move the selection, Esc
 * closes the side panel. Not while typing in a field (but Esc), nor with a modifier; a key an inner
 * widget handled first (a popover's Esc) stays its own.
 */
export function useListKeys(keys: Keys): void {
  const current = useRef(keys);
  current.current = keys;
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.key !== 'Escape' && typing(event.target)) return;
      const action = Object.hasOwn(current.current, event.key) ? current.current[event.key as keyof Keys] : undefined;
      if (!action) return;
      event.preventDefault();
      action();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
}
