import { useState, type ReactNode } from 'react';
import type { Project } from '../../admin/projects';
import { failureTypeLabel } from '../filters';
import { formatCost, formatCount, formatDuration, formatTime } from '../format';
import type { Trace } from '../useTracePages';

export interface Column {
  id: string;
  label: string;
  numeric?: boolean;
  cell: (trace: Trace, projects: Project[] | undefined) => ReactNode;
}

const preview = (text: string) => (text.length > 80 ? `${text.slice(0, 80)}…` : text);

/** The columns a trace row can show; the name (a link to the trace) is always shown. */
export const COLUMNS: Column[] = [
  { id: 'started', label: 'Started', cell: (t) => formatTime(t.started_at) },
  { id: 'model', label: 'Model', cell: (t) => t.model },
  { id: 'latency', label: 'Latency', numeric: true, cell: (t) => formatDuration(t.latency_ms) },
  { id: 'tokens', label: 'Tokens', numeric: true, cell: (t) => formatCount(t.total_token_count) },
  { id: 'prompt_tokens', label: 'Prompt tokens', numeric: true, cell: (t) => formatCount(t.prompt_tokens_total) },
  { id: 'completion_tokens', label: 'Completion tokens', numeric: true, cell: (t) => formatCount(t.completion_tokens_total) },
  { id: 'cost', label: 'Cost', numeric: true, cell: (t) => formatCost(t.cost) },
  { id: 'spans', label: 'Spans', numeric: true, cell: (t) => t.span_count },
  { id: 'status', label: 'Status', cell: (t) => <Status trace={t} /> },
  { id: 'session', label: 'Session', cell: (t) => t.session_id },
  { id: 'project', label: 'Project', cell: (t, projects) => projects?.find((p) => p.id === t.project_id)?.name ?? t.project_id },
  { id: 'tags', label: 'Tags', cell: (t) => t.tags.join(', ') },
  { id: 'input', label: 'Input', cell: (t) => preview(t.input) },
  { id: 'output', label: 'Output', cell: (t) => preview(t.output) },
  { id: 'id', label: 'Trace id', cell: (t) => <code>{t.id}</code> },
];

const DEFAULT = ['started', 'model', 'latency', 'tokens', 'cost', 'spans', 'status'];
const STORAGE_KEY = 'looptrace.traceColumns';

function stored(): string[] {
  try {
    const ids: unknown = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? 'null');
    if (Array.isArray(ids)) return ids.filter((id): id is string => COLUMNS.some((c) => c.id === id));
  } catch {
    // A value this build cannot read: the default columns.
  }
  return DEFAULT;
}

/** The columns shown, in COLUMNS' order, remembered in this browser. */
export function useColumns() {
  const [shown, setShown] = useState(stored);
  const toggle = (id: string) => {
    const next = shown.includes(id) ? shown.filter((s) => s !== id) : [...shown, id];
    localStorage.setItem(STORAGE_KEY, JSON.stringify(next));
    setShown(next);
  };
  return { columns: COLUMNS.filter((c) => shown.includes(c.id)), shown, toggle };
}

function Status({ trace }: { trace: Trace }) {
  if (trace.error === null && trace.failure_types.length === 0) return <span className="badge ok">ok</span>;
  return (
    <>
      <span className="badge error">error</span>
      {trace.failure_types.map((type) => (
        <span key={type} className="badge failure">
          {failureTypeLabel(type)}
        </span>
      ))}
    </>
  );
}
