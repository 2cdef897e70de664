import { LoadMore } from '../ui/lists';
import { useEffect, useRef, type KeyboardEvent } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { useApi } from '../api/useApi';
import { ErrorNotice } from '../ui/ErrorNotice';
import { exportTraces } from './exportTraces';
import { ExportButtons } from '../ui/ExportButtons';
import { failureTypeLabel, filtersFromParams, filtersToParams } from './filters';
import { formatCost, formatCount, formatDuration, formatTime } from './format';
import { SavedFilters } from './SavedFilters';
import { TraceFilterForm } from './TraceFilterForm';
import { useTracePages, type Trace } from './useTracePages';

export function TracesPage() {
  const [params, setParams] = useSearchParams();
  const filters = filtersFromParams(params);
  const query = filtersToParams(filters).toString();
  const list = useTracePages(filters);
  // Once per visit for the filter form and the saved filters (the form remounts on every applied filter).
  const projects = useApi('projects', (signal) => unwrap(api.GET('/v1/projects', { params: { query: { limit: 1000 } }, signal })).then((page) => page.projects));
  useEffect(() => {
    document.title = 'Traces · Looptrace';
  }, []);

  return (
    <>
      <h1>Traces</h1>
      <TraceFilterForm key={query} filters={filters} projects={projects.data} onApply={(next) => setParams(filtersToParams(next))} />
      <SavedFilters filters={filters} projects={projects.data} onLoad={(next) => setParams(filtersToParams(next))} />
      <ExportButtons name="Export the traces of these filters" text="Export these filters:" download={(format) => exportTraces(filters, format)} />
      {list.error !== undefined && <ErrorNotice error={list.error} />}
      {list.loading && <p aria-live="polite">Loading traces…</p>}
      {!list.loading && list.traces.length === 0 && list.error === undefined && <p>No traces match these filters.</p>}
      {list.traces.length > 0 && <TraceTable traces={list.traces} query={query} />}
      <LoadMore list={list} />
    </>
  );
}

/** Rows take the focus (Tab, or ↑/↓ between rows); Enter opens the trace. Newly loaded rows take it after "Load more". */
function TraceTable({ traces, query }: { traces: Trace[]; query: string }) {
  const navigate = useNavigate();
  const body = useRef<HTMLTableSectionElement>(null);
  const shown = useRef(traces.length);
  useEffect(() => {
    const before = shown.current;
    shown.current = traces.length;
    if (traces.length > before && before > 0) (body.current?.rows[before] as HTMLElement | undefined)?.focus();
  }, [traces.length]);

  const open = (trace: Trace) => navigate(`/traces/${trace.id}`, { state: { list: query } });
  const onKey = (event: KeyboardEvent<HTMLTableRowElement>, trace: Trace) => {
    const row = event.currentTarget;
    const target =
      event.key === 'ArrowDown' ? row.nextElementSibling : event.key === 'ArrowUp' ? row.previousElementSibling : null;
    if (event.key === 'Enter') open(trace);
    else if (target instanceof HTMLElement) target.focus();
    else return;
    event.preventDefault();
  };

  return (
    <table className="traces">
      <caption className="visually-hidden">Traces, newest first. Focus a row and press Enter to open it.</caption>
      <thead>
        <tr>
          <th scope="col">Started</th>
          <th scope="col">Name</th>
          <th scope="col">Model</th>
          <th scope="col" className="num">
            Latency
          </th>
          <th scope="col" className="num">
            Tokens
          </th>
          <th scope="col" className="num">
            Cost
          </th>
          <th scope="col" className="num">
            Spans
          </th>
          <th scope="col">Status</th>
        </tr>
      </thead>
      <tbody ref={body}>
        {traces.map((trace) => (
          <tr key={trace.id} tabIndex={0} onKeyDown={(e) => onKey(e, trace)} onClick={(e) => !(e.target as Element).closest('a') && open(trace)}>
            <td>{formatTime(trace.started_at)}</td>
            <td>
              <Link to={`/traces/${trace.id}`} state={{ list: query }} tabIndex={-1}>
                {trace.name || '(unnamed)'}
              </Link>
            </td>
            <td>{trace.model}</td>
            <td className="num">{formatDuration(trace.latency_ms)}</td>
            <td className="num">{formatCount(trace.total_token_count)}</td>
            <td className="num">{formatCost(trace.cost)}</td>
            <td className="num">{trace.span_count}</td>
            <td>
              {trace.error === null && trace.failure_types.length === 0 ? (
                <span className="badge ok">ok</span>
              ) : (
                <>
                  <span className="badge error">error</span>
                  {trace.failure_types.map((type) => (
                    <span key={type} className="badge failure">
                      {failureTypeLabel(type)}
                    </span>
                  ))}
                </>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
