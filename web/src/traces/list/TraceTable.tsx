import { forwardRef, type KeyboardEvent } from 'react';
import { Link } from 'react-router';
import type { Project } from '../../admin/projects';
import type { Trace } from '../useTracePages';
import type { Column } from './columns';

interface Props {
  traces: Trace[];
  columns: Column[];
  projects: Project[] | undefined;
  /** The row with the focus stop (j/k, ↑/↓ move it). */
  selected: number;
  peek: string | undefined;
  /** Ids of rows live mode prepended, marked until the list changes. */
  fresh: ReadonlySet<string>;
  /** The list's URL, for the trace page's link back. */
  listQuery: string;
  onSelect: (index: number) => void;
  /** Enter on a row. */
  onEnter: (index: number) => void;
  /** A click on a row (not on its link). */
  onPeek: (index: number) => void;
}

/**
 * The traces, one row each, newest first (the API's only order). One row is a tab stop at a time;
 * ↑/↓ or j/k move between the rows, Enter peeks at a trace (again: opens it), a click peeks too, and
 * the name is a link to the trace's own page.
 */
export const TraceTable = forwardRef<HTMLTableSectionElement, Props>(function TraceTable({ traces, columns, projects, selected, peek, fresh, listQuery, onSelect, onEnter, onPeek }, body) {
  const onKey = (event: KeyboardEvent<HTMLTableRowElement>, index: number) => {
    const move = { ArrowDown: index + 1, ArrowUp: index - 1 }[event.key];
    if (event.key === 'Enter') onEnter(index);
    else if (move !== undefined) onSelect(Math.max(0, Math.min(traces.length - 1, move)));
    else return;
    event.preventDefault();
  };
  const [before, after] = [columns.filter((c) => c.id === 'started'), columns.filter((c) => c.id !== 'started')];
  const header = (c: Column) => (
    <th key={c.id} scope="col" className={c.numeric ? 'num' : undefined} aria-sort={c.id === 'started' ? 'descending' : undefined}>
      {c.label}
      {c.id === 'started' && <span aria-hidden="true"> ↓</span>}
    </th>
  );
  const cell = (c: Column, trace: Trace) => (
    <td key={c.id} className={c.numeric ? 'num' : undefined}>
      {c.cell(trace, projects)}
    </td>
  );

  return (
    <div className="table-scroll">
    <table className="traces">
      <caption className="visually-hidden">Traces, newest first. j and k or the arrow keys move between rows; Enter shows the trace beside the list, Enter again opens it.</caption>
      <thead>
        <tr>
          {before.map(header)}
          <th scope="col">Name</th>
          {after.map(header)}
        </tr>
      </thead>
      <tbody ref={body}>
        {traces.map((trace, index) => (
          <tr
            key={trace.id}
            tabIndex={index === selected ? 0 : -1}
            className={[index === selected && 'selected', trace.id === peek && 'peeked', fresh.has(trace.id) && 'fresh'].filter(Boolean).join(' ') || undefined}
            aria-current={trace.id === peek ? 'true' : undefined}
            onKeyDown={(e) => onKey(e, index)}
            onFocus={() => index !== selected && onSelect(index)}
            onClick={(e) => !(e.target as Element).closest('a') && onPeek(index)}
          >
            {before.map((c) => cell(c, trace))}
            <td>
              <Link to={`/traces/${trace.id}`} state={{ list: listQuery }} tabIndex={-1}>
                {trace.name || '(unnamed)'}
              </Link>
            </td>
            {after.map((c) => cell(c, trace))}
          </tr>
        ))}
      </tbody>
    </table>
    </div>
  );
});
