import { useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import './tabs.css';

export interface Tab {
  id: string;
  label: string;
  /** Rendered only while its tab is chosen, so a tab's fetch waits until it is opened. */
  render: () => ReactNode;
}

/** WAI-ARIA tabs: one tab stop, ←/→ (Home/End) move between the tabs, each showing its panel. */
export function Tabs({ label, tabs }: { label: string; tabs: Tab[] }) {
  const [chosen, setChosen] = useState(tabs[0]?.id);
  const buttons = useRef(new Map<string, HTMLButtonElement>());
  const current = tabs.find((t) => t.id === chosen) ?? tabs[0];
  const onKey = (event: KeyboardEvent<HTMLButtonElement>) => {
    const at = tabs.findIndex((t) => t.id === current?.id);
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[event.key];
    if (to === undefined) return;
    event.preventDefault();
    const next = tabs[(to + tabs.length) % tabs.length]!;
    setChosen(next.id);
    buttons.current.get(next.id)?.focus();
  };
  return (
    <div className="tab-set">
      <div role="tablist" aria-label={label}>
        {tabs.map((tab) => (
          <button
            key={tab.id}
            ref={(el) => {
              if (el) buttons.current.set(tab.id, el);
            }}
            type="button"
            role="tab"
            id={`tab-${tab.id}`}
            aria-selected={tab.id === current?.id}
            aria-controls={`tabpanel-${tab.id}`}
            tabIndex={tab.id === current?.id ? 0 : -1}
            onClick={() => setChosen(tab.id)}
            onKeyDown={onKey}
          >
            {tab.label}
          </button>
        ))}
      </div>
      {current && (
        <div role="tabpanel" id={`tabpanel-${current.id}`} aria-labelledby={`tab-${current.id}`} tabIndex={0}>
          {current.render()}
        </div>
      )}
    </div>
  );
}
