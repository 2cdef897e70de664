import { useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { failureTypeLabel } from '../filters';
import { formatCost, formatCount, formatDuration } from '../format';
import { spanMatches, visibleRows, type SpanForest, type SpanNode } from '../spanTree';
import type { TraceTreeSpan } from './api';

type Node = SpanNode<TraceTreeSpan>;

/** Row height in px: fixed, so the rows in view follow from the scroll position alone. */
export const ROW_HEIGHT = 30;
const MAX_HEIGHT = 600;
/** Rows rendered beyond each edge of the view, so a fast scroll does not show blank space. */
const OVERSCAN = 12;

interface Props {
  forest: SpanForest<TraceTreeSpan>;
  openId: string | undefined;
  onOpen: (spanId: string) => void;
}

/**
 * The span tree beside its timeline, one row per span: type, duration, tokens, cost, error and
 * failure type on the row, its bar on the trace's time line. Only the rows in view are rendered
 * (a trace may hold 10,000 spans). One tab stop: j/k or ↓/↑ move, → expands, ← collapses,
 * Enter opens the span (again: folds or unfolds it), / goes to the search, Esc there comes back.
 */
export function SpanTreeView({ forest, openId, onOpen }: Props) {
  const { nodes, durationMs } = forest;
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(() => new Set());
  const [query, setQuery] = useState('');
  const [focus, setFocus] = useState(0);
  const [scrollTop, setScrollTop] = useState(0);
  const viewport = useRef<HTMLDivElement>(null);
  const search = useRef<HTMLInputElement>(null);
  const rows = useMemo(() => visibleRows(nodes, collapsed, query), [nodes, collapsed, query]);
  const searching = query.trim() !== '';
  const matches = useMemo(() => (searching ? rows.filter((i) => spanMatches(nodes[i]!.span, query.trim())).length : 0), [rows, nodes, query, searching]);

  const height = Math.min(Math.max(rows.length, 1) * ROW_HEIGHT, MAX_HEIGHT);
  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(rows.length, Math.ceil((scrollTop + height) / ROW_HEIGHT) + OVERSCAN);
  const focusRow = Math.max(rows.indexOf(focus), 0);
  const focused = rows[focusRow];

  const toggle = (node: Node, expand?: boolean) => {
    const id = node.span.id;
    const isCollapsed = collapsed.has(id);
    if (expand === !isCollapsed) return;
    const next = new Set(collapsed);
    if (isCollapsed) next.delete(id);
    else next.add(id);
    setCollapsed(next);
  };

  const moveTo = (row: number) => {
    const target = Math.min(Math.max(row, 0), rows.length - 1);
    if (rows[target] === undefined) return;
    setFocus(rows[target]);
    const el = viewport.current;
    if (!el) return;
    const top = target * ROW_HEIGHT;
    if (top < el.scrollTop) el.scrollTop = top;
    else if (top + ROW_HEIGHT > el.scrollTop + el.clientHeight) el.scrollTop = top + ROW_HEIGHT - el.clientHeight;
  };

  const onKey = (event: KeyboardEvent<HTMLDivElement>) => {
    if (focused === undefined) return;
    const node = nodes[focused]!;
    const hasChildren = node.end > focused + 1;
    const open = hasChildren && (searching || !collapsed.has(node.span.id));
    const keys: Record<string, () => void> = {
      j: () => moveTo(focusRow + 1),
      ArrowDown: () => moveTo(focusRow + 1),
      k: () => moveTo(focusRow - 1),
      ArrowUp: () => moveTo(focusRow - 1),
      Home: () => moveTo(0),
      End: () => moveTo(rows.length - 1),
      ArrowRight: () => (hasChildren && !open ? toggle(node, true) : open ? moveTo(focusRow + 1) : undefined),
      ArrowLeft: () => (open && !searching ? toggle(node, false) : node.parent >= 0 ? moveTo(rows.indexOf(node.parent)) : undefined),
      Enter: () => (openId === node.span.id && hasChildren && !searching ? toggle(node) : onOpen(node.span.id)),
      ' ': () => onOpen(node.span.id),
      '/': () => search.current?.focus(),
    };
    const action = keys[event.key];
    if (!action || event.altKey || event.ctrlKey || event.metaKey) return;
    event.preventDefault();
    action();
  };

  const searchKey = (event: KeyboardEvent<HTMLInputElement>) => {
    if (event.key === 'Escape') {
      event.preventDefault();
      setQuery('');
      viewport.current?.focus();
    } else if ((event.key === 'Enter' || event.key === 'ArrowDown') && rows.length > 0) {
      event.preventDefault();
      const firstMatch = rows.findIndex((i) => spanMatches(nodes[i]!.span, query.trim()));
      moveTo(Math.max(firstMatch, 0));
      viewport.current?.focus();
    }
  };

  return (
    <div className="span-tree">
      <div className="span-tree-tools">
        <label>
          Search spans
          <input ref={search} type="search" value={query} onChange={(e) => setQuery(e.target.value)} onKeyDown={searchKey} placeholder="name, type, model, error" />
        </label>
        <span role="status" className="hint">
          {searching ? `${formatCount(matches)} of ${formatCount(nodes.length)} spans match` : `${formatCount(nodes.length)} spans`}
        </span>
        <button type="button" onClick={() => setCollapsed(new Set())} disabled={searching || collapsed.size === 0}>
          Expand all
        </button>
        <button type="button" onClick={() => setCollapsed(new Set(nodes.filter((n, i) => n.end > i + 1).map((n) => n.span.id)))} disabled={searching}>
          Collapse all
        </button>
      </div>
      <div className="span-tree-head" aria-hidden="true">
        <span>Span</span>
        <span className="num">Duration</span>
        <span className="num">Tokens</span>
        <span className="num">Cost</span>
        <span className="span-axis">
          <span>0</span>
          <span>{formatDuration(Math.round(durationMs / 2))}</span>
          <span>{formatDuration(durationMs)}</span>
        </span>
      </div>
      <div
        ref={viewport}
        className="span-tree-viewport"
        role="tree"
        aria-label="Spans"
        aria-describedby="span-tree-keys"
        tabIndex={0}
        aria-activedescendant={focused === undefined ? undefined : rowId(focused)}
        onKeyDown={onKey}
        onScroll={(e) => setScrollTop(e.currentTarget.scrollTop)}
        style={{ height }}
      >
        <div className="span-tree-rows" style={{ height: rows.length * ROW_HEIGHT }}>
          {rendered(first, last, rows.length === 0 ? -1 : focusRow).map((row) => {
            const index = rows[row]!;
            return (
            <SpanRow
              key={index}
              node={nodes[index]!}
              index={index}
              top={row * ROW_HEIGHT}
              expanded={nodes[index]!.end > index + 1 ? searching || !collapsed.has(nodes[index]!.span.id) : undefined}
              focused={index === focused}
              open={nodes[index]!.span.id === openId}
              match={searching && spanMatches(nodes[index]!.span, query.trim())}
              onClick={() => {
                setFocus(index);
                onOpen(nodes[index]!.span.id);
                viewport.current?.focus();
              }}
              onToggle={() => toggle(nodes[index]!)}
            />
            );
          })}
        </div>
      </div>
      {rows.length === 0 && <p className="muted span-tree-empty">{nodes.length === 0 ? 'This trace has no spans.' : 'No span matches.'}</p>}
      <p id="span-tree-keys" className="hint">
        j/k or ↓/↑ move, → expands, ← collapses, Enter opens the span (again: folds it), / searches (Esc leaves the search).
      </p>
    </div>
  );
}

/** The rows in view, and the focused one wherever it is: aria-activedescendant must name a rendered row. */
function rendered(first: number, last: number, focusRow: number): number[] {
  const rows = Array.from({ length: Math.max(last - first, 0) }, (_, k) => first + k);
  return focusRow >= 0 && (focusRow < first || focusRow >= last) ? [...rows, focusRow] : rows;
}

const rowId = (index: number) => `span-row-${index}`;

interface RowProps {
  node: Node;
  index: number;
  top: number;
  expanded: boolean | undefined;
  focused: boolean;
  open: boolean;
  match: boolean;
  onClick: () => void;
  onToggle: () => void;
}

function SpanRow({ node, index, top, expanded, focused, open, match, onClick, onToggle }: RowProps) {
  const { span } = node;
  const tokens = span.prompt_tokens + span.completion_tokens;
  const classes = ['span-tree-row', focused && 'focused', open && 'open', match && 'match', span.error !== null && 'failed'].filter(Boolean).join(' ');
  return (
    <div
      id={rowId(index)}
      role="treeitem"
      aria-level={node.depth + 1}
      aria-posinset={node.position}
      aria-setsize={node.siblings}
      aria-expanded={expanded}
      aria-selected={open}
      className={classes}
      style={{ top }}
      onClick={onClick}
    >
      <span className="span-tree-name" title={span.name} style={{ paddingLeft: `${Math.min(node.depth, 40) * 0.9}rem` }}>
        <span
          className="span-toggle"
          aria-hidden="true"
          onClick={(e) => {
            e.stopPropagation();
            onToggle();
          }}
        >
          {expanded === undefined ? '' : expanded ? '▾' : '▸'}
        </span>
        <span className={`span-type span-type-${span.type.replace(/[^a-z0-9_-]/gi, '')}`}>{span.type}</span> <span className="span-label">{span.name || '(unnamed)'}</span>
        {span.error !== null && <span className="badge error span-badge">error</span>}
        {span.failure_type && <span className="badge failure span-badge">{failureTypeLabel(span.failure_type)}</span>}
      </span>
      <span className="num">{formatDuration(span.latency_ms)}</span>
      <span className="num">{tokens === 0 ? '' : formatCount(tokens)}</span>
      <span className="num">{span.cost === 0 ? '' : formatCost(span.cost)}</span>
      <span className="span-track" aria-hidden="true">
        <span className={`span-bar${span.error !== null ? ' span-bar-error' : ''}`} style={{ left: `${node.offset}%`, width: `${node.width}%` }} />
      </span>
    </div>
  );
}
