import { lazy, Suspense, useEffect, useMemo, useRef } from 'react';
import { useNavigate, useSearchParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { useApi } from '../api/useApi';
import { ErrorNotice } from '../ui/ErrorNotice';
import { ExportButtons } from '../ui/ExportButtons';
import { LoadMore } from '../ui/lists';
import { exportTraces } from './exportTraces';
import type { TraceFilters } from './filters';
import { ColumnMenu } from './list/ColumnMenu';
import { useColumns } from './list/columns';
import { FilterChips } from './list/FilterChips';
import { listStateFromParams, listStateToParams, queryOf, selectionKey, type ListState } from './list/listState';
import { SearchBox } from './list/SearchBox';
import { TimeRange } from './list/TimeRange';
import { TraceTable } from './list/TraceTable';
import { useListKeys } from './list/useListKeys';
import { useRowSelection } from './list/useRowSelection';
import { LIVE_POLL_MS, useLiveTraces } from './list/useLiveTraces';
import { SavedFilters } from './SavedFilters';
import { useTracePages } from './useTracePages';
import './list/traceList.css';

const TracePeek = lazy(() => import('./list/TracePeek').then((m) => ({ default: m.TracePeek })));

/**
 * The trace list: search and filter chips above the table, the URL holding all of it (see
 * ListState); a side panel peeks at a trace; live mode prepends new traces as they come.
 */
export function TracesPage() {
  const [params, setParams] = useSearchParams();
  const navigate = useNavigate();
  const state = listStateFromParams(params);
  const key = selectionKey(state);
  // A relative range is measured back from when this list was asked for, not from every render.
  const query = useMemo(() => queryOf(state, Date.now()), [key]);
  const list = useTracePages(query, key);
  const projects = useApi('projects', (signal) => unwrap(api.GET('/v1/projects', { params: { query: { limit: 1000 } }, signal })).then((page) => page.projects));
  const { columns, shown, toggle } = useColumns();
  const live = useLiveTraces(state.live, key, () => queryOf(state, Date.now()), list.traces);
  const traces = useMemo(() => [...live.fresh, ...list.traces], [live.fresh, list.traces]);
  const fresh = useMemo(() => new Set(live.fresh.map((t) => t.id)), [live.fresh]);
  const { selected, body, focusRow, setSelected } = useRowSelection({
    traces,
    listKey: key,
    loading: list.loading,
    paged: list.traces.length,
    fresh: live.fresh.length,
    peek: state.peek,
  });
  const search = useRef<HTMLInputElement>(null);
  const listQuery = listStateToParams({ ...state, peek: undefined, live: false }).toString();

  useEffect(() => {
    document.title = 'Traces · Looptrace';
  }, []);

  const go = (next: ListState, replace = false) => setParams(listStateToParams(next), { replace });
  const setFilters = (filters: TraceFilters) => go({ ...state, filters, peek: undefined });
  const peekAt = (index: number) => {
    const trace = traces[index];
    if (!trace) return;
    setSelected(index);
    // Moving the panel from trace to trace replaces the history entry; opening it adds one.
    go({ ...state, peek: trace.id }, state.peek !== undefined);
  };
  const move = (by: number) => {
    if (traces.length === 0) return;
    const next = Math.max(0, Math.min(traces.length - 1, selected + by));
    focusRow(next);
    if (state.peek) peekAt(next);
  };
  const closePeek = () => {
    if (!state.peek) return;
    go({ ...state, peek: undefined });
    focusRow(selected);
  };
  useListKeys({ '/': () => search.current?.focus(), j: () => move(1), k: () => move(-1), Escape: closePeek });

  return (
    <div className={state.peek ? 'trace-list with-peek' : 'trace-list'}>
      <div className="trace-list-main">
        <h1>Traces</h1>
        <SearchBox ref={search} value={state.filters.q} onSearch={(q) => setFilters({ ...state.filters, q })} />
        <div className="list-toolbar">
          <FilterChips filters={state.filters} projects={projects.data} onChange={setFilters} />
          <div className="list-tools">
            <TimeRange
              value={{ range: state.range, from: state.filters.from, to: state.filters.to }}
              onChange={({ range, from, to }) => go({ ...state, range, filters: { ...state.filters, from, to }, peek: undefined })}
            />
            <SavedFilters current={{ filters: state.filters, range: state.range }} projects={projects.data} onLoad={(saved) => go({ ...saved, live: state.live })} />
            <ColumnMenu shown={shown} onToggle={toggle} />
            <button type="button" className="live-toggle" aria-pressed={state.live} title={`Poll for new traces every ${LIVE_POLL_MS / 1000} s`} onClick={() => go({ ...state, live: !state.live }, true)}>
              Live
            </button>
          </div>
        </div>
        <p className="hint list-order">
          Newest first: the only order GET /v1/traces offers.{' '}
          <span aria-live="polite">{live.fresh.length > 0 && `${live.fresh.length} new ${live.fresh.length === 1 ? 'trace' : 'traces'} since this list loaded.`}</span>
        </p>
        {live.error !== undefined && <ErrorNotice error={live.error} />}
        {list.error !== undefined && <ErrorNotice error={list.error} />}
        {list.loading && <p aria-live="polite">Loading traces…</p>}
        {!list.loading && traces.length === 0 && list.error === undefined && <p>No traces match these filters.</p>}
        {traces.length > 0 && (
          <TraceTable
            ref={body}
            traces={traces}
            columns={columns}
            projects={projects.data}
            selected={selected}
            peek={state.peek}
            fresh={fresh}
            listQuery={listQuery}
            onSelect={focusRow}
            onPeek={peekAt}
            onEnter={(index) => (traces[index]?.id === state.peek ? navigate(`/traces/${state.peek}`, { state: { list: listQuery } }) : peekAt(index))}
          />
        )}
        <LoadMore list={list} />
        <ExportButtons name="Export the traces of these filters" text="Export these filters:" download={(format) => exportTraces(query, format)} />
      </div>
      {state.peek && (
        <Suspense fallback={<p aria-live="polite">Loading…</p>}>
          <TracePeek id={state.peek} listQuery={listQuery} onClose={closePeek} />
        </Suspense>
      )}
    </div>
  );
}
