import { useEffect, useRef, useState, type ReactNode } from 'react';
import './popover.css';

/**
 * A small non-modal dialog under its trigger (a chip's editor, a column chooser): it takes the
 * focus when it opens; Esc closes it and gives the focus back to where it was; a click outside
 * closes it. Esc stops there, so a page's own Esc (closing a side panel) waits for the next one.
 */
export function Popover({ label, onClose, children, className }: { label: string; onClose: () => void; children: ReactNode; className?: string }) {
  const panel = useRef<HTMLDivElement>(null);
  const close = useRef(onClose);
  close.current = onClose;
  useEffect(() => {
    const opener = document.activeElement as HTMLElement | null;
    panel.current?.querySelector<HTMLElement>('input, select, textarea, button, [href], [tabindex="0"]')?.focus();
    const outside = (event: PointerEvent) => {
      if (!panel.current?.parentElement?.contains(event.target as Node)) close.current();
    };
    document.addEventListener('pointerdown', outside);
    return () => {
      document.removeEventListener('pointerdown', outside);
      // Back to the opener when the focus would otherwise fall to <body> (Esc, a button inside that closed it).
      if (panel.current?.contains(document.activeElement) || document.activeElement === document.body) opener?.focus();
    };
  }, []);
  return (
    <div
      ref={panel}
      role="dialog"
      aria-label={label}
      className={`popover ${className ?? ''}`}
      onKeyDown={(event) => {
        if (event.key !== 'Escape') return;
        event.stopPropagation();
        onClose();
      }}
    >
      {children}
    </div>
  );
}

/** A button that opens a Popover below it; `children` gets the function that closes it. */
export function Dropdown({ label, button, children, className }: { label: string; button: ReactNode; children: (close: () => void) => ReactNode; className?: string }) {
  const [open, setOpen] = useState(false);
  return (
    <div className="dropdown">
      <button type="button" aria-expanded={open} aria-haspopup="dialog" onClick={() => setOpen(!open)}>
        {button} <span aria-hidden="true">▾</span>
      </button>
      {open && (
        <Popover label={label} onClose={() => setOpen(false)} className={className}>
          {children(() => setOpen(false))}
        </Popover>
      )}
    </div>
  );
}
