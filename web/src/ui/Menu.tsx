import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import './popover.css';

export interface MenuItem {
  id: string;
  label: string;
}

/**
 * A WAI-ARIA menu button: the button opens a list of actions; ↑/↓ (Home/End) move between them,
 * Enter or a click chooses one, Esc or Tab closes the menu (Esc gives the focus back to the button).
 */
export function Menu({ label, items, onChoose }: { label: string; items: MenuItem[]; onChoose: (id: string) => void }) {
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const list = useRef<HTMLUListElement>(null);
  const entries = () => [...(list.current?.querySelectorAll<HTMLElement>('[role="menuitem"]') ?? [])];
  useEffect(() => {
    if (!open) return;
    entries()[0]?.focus();
    const outside = (event: PointerEvent) => {
      if (!list.current?.parentElement?.contains(event.target as Node)) setOpen(false);
    };
    document.addEventListener('pointerdown', outside);
    return () => document.removeEventListener('pointerdown', outside);
  }, [open]);

  const choose = (id: string) => {
    setOpen(false);
    onChoose(id);
  };
  const onKey = (event: KeyboardEvent<HTMLUListElement>) => {
    const all = entries();
    const at = all.indexOf(document.activeElement as HTMLElement);
    const to = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: all.length - 1 }[event.key];
    if (to !== undefined) {
      event.preventDefault();
      all[(to + all.length) % all.length]?.focus();
    } else if (event.key === 'Escape') {
      event.preventDefault();
      event.stopPropagation();
      setOpen(false);
      button.current?.focus();
    } else if (event.key === 'Tab') setOpen(false);
  };

  return (
    <div className="dropdown">
      <button ref={button} type="button" aria-haspopup="menu" aria-expanded={open} disabled={items.length === 0} onClick={() => setOpen(!open)}>
        {label} <span aria-hidden="true">▾</span>
      </button>
      {open && (
        <ul ref={list} role="menu" aria-label={label} className="popover menu" onKeyDown={onKey}>
          {items.map((item) => (
            <li
              key={item.id}
              role="menuitem"
              tabIndex={-1}
              onClick={() => choose(item.id)}
              onKeyDown={(event) => {
                if (event.key !== 'Enter' && event.key !== ' ') return;
                event.preventDefault();
                choose(item.id);
              }}
            >
              {item.label}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
