import { useMemo } from 'react';
import { api, unwrap, type Ok } from '../api/client';
import { useApi } from '../api/useApi';
import { formatCount, formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { Chart, type Band } from './Chart';

type Stats = Ok<'/v1/ingest/stats'>;
type Row = Stats['stats'][number];
type Reason = keyof Row['refused'];

const REASONS: Record<Reason, string> = {
  validation: 'Invalid',
  duplicate: 'Duplicate id (409)',
  in_flight: 'Id still being written (503)',
  quota: 'Over the monthly quota',
  project_archived: 'Project archived',
  project_not_found: 'Unknown project',
  native_trace: 'OTLP spans of a native trace',
  embedding_dimension: 'Embedding dimension',
  store_unavailable: 'Store unavailable (503)',
  error: 'Server error',
};

const MINUTE_MS = 60_000;
/** The API's cap on one request's range. */
const MAX_RANGE_MS = 24 * 60 * MINUTE_MS;
/** Pages of 1,000 rows read at most (a day of ten busy projects). */
const MAX_PAGES = 10;
const NO_BANDS: Band[] = [];

const sum = (counts: Partial<Record<Reason, number>>) => Object.values(counts).reduce((n, v) => n + (v ?? 0), 0);

/** Every page of GET /v1/ingest/stats for the range (at most MAX_PAGES). */
async function loadStats(query: { from: string; to: string; project_id?: string }, signal: AbortSignal) {
  const rows: Row[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const body = await unwrap(api.GET('/v1/ingest/stats', { params: { query: cursor ? { cursor } : query }, signal }));
    rows.push(...body.stats);
    if (!body.has_more || !body.next_cursor) return { rows, truncated: false };
    cursor = body.next_cursor;
  }
  return { rows, truncated: true };
}

/**
 * Received, stored and refused traces and spans per minute (GET /v1/ingest/stats) for the metrics
 * page's project and range, clamped to the last 24 hours of it (the API's cap): spans per minute
 * charted, the totals and each refusal reason in tables.
 */
export function IngestStats({ from, to, projectId }: { from: string; to: string; projectId: string | null }) {
  const range = useMemo(() => {
    const end = Math.min(Date.parse(to), Math.ceil(Date.now() / MINUTE_MS) * MINUTE_MS);
    const start = Math.max(Date.parse(from), end - MAX_RANGE_MS);
    return { from: new Date(start).toISOString(), to: new Date(end).toISOString(), clamped: start > Date.parse(from) };
  }, [from, to]);
  const stats = useApi(`ingest-stats:${range.from}:${range.to}:${projectId ?? ''}`, (signal) =>
    loadStats({ from: range.from, to: range.to, ...(projectId ? { project_id: projectId } : {}) }, signal),
  );

  const view = useMemo(() => {
    const rows = stats.data?.rows ?? [];
    const byMinute = new Map<string, { received: number; stored: number; refused: number }>();
    const totals = { traces: { received: 0, stored: 0, refused: 0 }, spans: { received: 0, stored: 0, refused: 0 } };
    const reasons = new Map<Reason, { traces: number; spans: number }>();
    for (const r of rows) {
      const minute = byMinute.get(r.minute) ?? { received: 0, stored: 0, refused: 0 };
      minute.received += r.spans_received;
      minute.stored += r.spans_stored;
      minute.refused += sum(r.refused);
      byMinute.set(r.minute, minute);
      totals.traces.received += r.traces_received;
      totals.traces.stored += r.traces_stored;
      totals.traces.refused += sum(r.refused_traces);
      totals.spans.received += r.spans_received;
      totals.spans.stored += r.spans_stored;
      totals.spans.refused += sum(r.refused);
      for (const reason of Object.keys(REASONS) as Reason[]) {
        const spans = r.refused[reason] ?? 0;
        const traces = r.refused_traces[reason] ?? 0;
        if (spans === 0 && traces === 0) continue;
        const entry = reasons.get(reason) ?? { traces: 0, spans: 0 };
        entry.traces += traces;
        entry.spans += spans;
        reasons.set(reason, entry);
      }
    }
    const minutes = [...byMinute.keys()].sort();
    const values = (pick: 'received' | 'stored' | 'refused') => minutes.map((m) => byMinute.get(m)![pick]);
    return {
      seconds: minutes.map((m) => Date.parse(m) / 1000),
      series: [
        { label: 'Received', values: values('received') },
        { label: 'Stored', values: values('stored') },
        { label: 'Refused', values: values('refused') },
      ],
      totals,
      reasons: [...reasons].sort((a, b) => b[1].spans - a[1].spans),
    };
  }, [stats.data]);
  const chartRange = useMemo(() => [Date.parse(range.from) / 1000, Date.parse(range.to) / 1000] as [number, number], [range]);

  return (
    <section className="ingest-stats" aria-labelledby="ingest-stats-title">
      <h2 id="ingest-stats-title">Ingest: received, stored, refused</h2>
      <p className="hint">
        Per minute of arrival, {formatTime(range.from)} to {formatTime(range.to)}
        {range.clamped && ' (the last 24 hours of the range)'}. Received = stored + refused, for traces and for spans; an OTLP trace
        sent in several requests counts once per request.
      </p>
      {stats.error !== undefined && <ErrorNotice error={stats.error} />}
      {stats.loading && <p aria-live="polite">Loading the ingest counts…</p>}
      {stats.data && (
        <>
          <div className="charts">
            <Chart id="chart-ingest" title="Spans per minute" range={chartRange} timestamps={view.seconds} series={view.series} bands={NO_BANDS} format={formatCount} />
          </div>
          <table className="admin ingest-totals">
            <caption>Ingest in this range</caption>
            <thead>
              <tr>
                <th scope="col">
                  <span className="visually-hidden">Unit</span>
                </th>
                <th scope="col" className="num">
                  Received
                </th>
                <th scope="col" className="num">
                  Stored
                </th>
                <th scope="col" className="num">
                  Refused
                </th>
              </tr>
            </thead>
            <tbody>
              {(['traces', 'spans'] as const).map((unit) => (
                <tr key={unit}>
                  <th scope="row">{unit === 'traces' ? 'Traces' : 'Spans'}</th>
                  <td className="num">{formatCount(view.totals[unit].received)}</td>
                  <td className="num">{formatCount(view.totals[unit].stored)}</td>
                  <td className="num">{formatCount(view.totals[unit].refused)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {view.reasons.length === 0 ? (
            <p>Nothing was refused in this range.</p>
          ) : (
            <table className="admin ingest-refusals">
              <caption>Refused, by reason</caption>
              <thead>
                <tr>
                  <th scope="col">Reason</th>
                  <th scope="col" className="num">
                    Traces
                  </th>
                  <th scope="col" className="num">
                    Spans
                  </th>
                </tr>
              </thead>
              <tbody>
                {view.reasons.map(([reason, n]) => (
                  <tr key={reason}>
                    <th scope="row">{REASONS[reason]}</th>
                    <td className="num">{formatCount(n.traces)}</td>
                    <td className="num">{formatCount(n.spans)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {stats.data.truncated && <p className="hint">More minutes than shown: narrow the range or pick a project.</p>}
        </>
      )}
    </section>
  );
}
