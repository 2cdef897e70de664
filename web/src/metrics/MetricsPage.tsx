import { useCallback, useEffect, useMemo, type FormEvent } from 'react';
import { useSearchParams } from 'react-router';
import { api, unwrap, type Ok } from '../api/client';
import type { paths } from '../api/schema';
import { useApi } from '../api/useApi';
import { ProjectOptions, useAllProjects } from '../admin/projects';
import { isoToLocalInput, localInputToIso } from '../traces/filters';
import { formatCost, formatCount, formatDuration, formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { Chart, type Band, type ChartSeries } from './Chart';
import { IngestStats } from './IngestStats';

type MetricsQuery = NonNullable<paths['/v1/metrics']['get']['parameters']['query']>;
type Metrics = Ok<'/v1/metrics'>;
type Point = Metrics['series'][number]['points'][number];
type Group = Metrics['series'][number]['group'];
type Anomaly = Ok<'/v1/anomalies'>['anomalies'][number];
type Interval = NonNullable<MetricsQuery['interval']>;
type GroupBy = NonNullable<MetricsQuery['group_by']>;

const INTERVALS: Record<Interval, string> = { minute: 'Minute', hour: 'Hour', day: 'Day' };
const GROUP_BYS: Record<GroupBy, string> = { model: 'Model', project: 'Project', name: 'Trace name' };
const ANOMALY_METRICS: Record<Anomaly['metric'], string> = { latency_p95: 'Latency p95', error_rate: 'Error rate', cost: 'Cost', tokens: 'Tokens' };

const isInterval = (v: string | null): v is Interval => v !== null && Object.hasOwn(INTERVALS, v);
const isGroupBy = (v: string | null): v is GroupBy => v !== null && Object.hasOwn(GROUP_BYS, v);

const formatRate = (v: number) => `${(v * 100).toFixed(v < 0.1 ? 1 : 0)} %`;
const formatMs = (v: number) => formatDuration(Math.round(v));
const formatTokens = (v: number) => formatCount(Math.round(v));

/**
 * Metrics of traces over time (GET /v1/metrics), anomalies (GET /v1/anomalies) shaded on them, and
 * what ingest received, stored and refused (GET /v1/ingest/stats); filters in the URL.
 */
export default function MetricsPage() {
  const [params, setParams] = useSearchParams();
  const query: MetricsQuery = {};
  const interval = params.get('interval');
  if (isInterval(interval)) query.interval = interval;
  const groupBy = params.get('group_by');
  if (isGroupBy(groupBy)) query.group_by = groupBy;
  for (const key of ['from', 'to', 'project_id'] as const) {
    const value = params.get(key);
    if (value) query[key] = value;
  }
  const projects = useAllProjects();
  const metrics = useApi(`metrics?${params.toString()}`, (signal) => unwrap(api.GET('/v1/metrics', { params: { query }, signal })));
  useEffect(() => {
    document.title = 'Metrics · Looptrace';
  }, []);

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const next = new URLSearchParams();
    for (const key of ['interval', 'group_by', 'project_id', 'from', 'to']) {
      const raw = form.get(key);
      const value = typeof raw === 'string' ? raw.trim() : '';
      const stored = key === 'from' || key === 'to' ? localInputToIso(value) : value;
      if (stored) next.set(key, stored);
    }
    setParams(next);
  };
  const projectName = useCallback((id: string) => projects.data?.find((p) => p.id === id)?.name ?? id, [projects.data]);

  return (
    <>
      <h1>Metrics</h1>
      <p className="hint">Trace count, error rate, latency, tokens and cost per bucket (UTC-aligned; by default the last 24 hours). Anomaly windows are shaded on the charts and listed below them; below those, what ingest received, stored and refused.</p>
      <form className="filters" onSubmit={submit} onReset={() => setParams({})} aria-label="Metrics filters" key={params.toString()}>
        <label>
          Interval
          <select name="interval" defaultValue={query.interval ?? 'hour'}>
            {Object.entries(INTERVALS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Group by
          <select name="group_by" defaultValue={query.group_by ?? ''}>
            <option value="">Nothing (all traces)</option>
            {Object.entries(GROUP_BYS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Project
          <select name="project_id" defaultValue={query.project_id ?? ''}>
            <ProjectOptions projects={projects.data} empty="All projects" />
          </select>
        </label>
        <label>
          From
          <input name="from" type="datetime-local" step={1} defaultValue={isoToLocalInput(query.from)} />
        </label>
        <label>
          Until
          <input name="to" type="datetime-local" step={1} defaultValue={isoToLocalInput(query.to)} />
        </label>
        <div className="filter-actions">
          <button type="submit" className="primary">
            Apply
          </button>
          <button type="reset">Clear</button>
        </div>
      </form>
      {metrics.error !== undefined && <ErrorNotice error={metrics.error} />}
      {metrics.loading && <p aria-live="polite">Loading the metrics…</p>}
      {metrics.data && <MetricsView metrics={metrics.data} projectName={projectName} />}
    </>
  );
}

function MetricsView({ metrics, projectName }: { metrics: Metrics; projectName: (id: string) => string }) {
  const { from, to, project_id } = metrics;
  const anomalies = useApi(`anomalies:${from}:${to}:${project_id ?? ''}`, (signal) =>
    unwrap(api.GET('/v1/anomalies', { params: { query: { from, to, limit: 1000, ...(project_id ? { project_id } : {}) } }, signal })),
  );
  const groupLabel = (group: Group): string => {
    if (group === null) return 'All traces';
    if ('model' in group) return group.model;
    if ('project_id' in group) return projectName(group.project_id);
    return group.name;
  };

  const charts = useMemo(() => {
    const timestamps = [...new Set(metrics.series.flatMap((s) => s.points.map((p) => p.timestamp)))].sort();
    const seconds = timestamps.map((t) => Date.parse(t) / 1000);
    const byTime = metrics.series.map((s) => new Map(s.points.map((p) => [p.timestamp, p])));
    /** A value per timestamp of each series; an empty bucket counts 0 for sums, null (a gap) otherwise. */
    const series = (pick: (p: Point) => number | null, sum: boolean, suffix = ''): ChartSeries[] =>
      metrics.series.map((s, i) => ({
        label: groupLabel(s.group) + suffix,
        values: timestamps.map((t) => {
          const p = byTime[i]!.get(t);
          return p ? pick(p) : sum ? 0 : null;
        }),
      }));
    const grouped = metrics.group_by !== null;
    return {
      range: [Date.parse(metrics.from) / 1000, Date.parse(metrics.to) / 1000] as [number, number],
      seconds,
      traces: series((p) => p.trace_count, true),
      errors: series((p) => p.error_rate, false),
      latency: grouped
        ? series((p) => p.latency_p95_ms, false, ' p95')
        : [
            { label: 'p50', values: series((p) => p.latency_p50_ms, false)[0]?.values ?? [] },
            { label: 'p95', values: series((p) => p.latency_p95_ms, false)[0]?.values ?? [] },
            { label: 'p99', values: series((p) => p.latency_p99_ms, false)[0]?.values ?? [] },
          ],
      tokens: series((p) => p.total_tokens, true),
      cost: series((p) => p.cost, true),
    };
    // groupLabel only reads projectName, which changes with the projects' names.
  }, [metrics, projectName]);

  const bands = useMemo(() => {
    const of = (metric: Anomaly['metric']): Band[] =>
      (anomalies.data?.anomalies ?? []).filter((a) => a.metric === metric).map((a) => ({ start: Date.parse(a.window_start) / 1000, end: Date.parse(a.window_end) / 1000, severity: a.severity }));
    return { latency: of('latency_p95'), errors: of('error_rate'), cost: of('cost'), tokens: of('tokens'), none: [] as Band[] };
  }, [anomalies.data]);

  return (
    <>
      <p className="hint">
        {formatTime(from)} to {formatTime(to)}, per {metrics.interval}
        {metrics.project_id && `, project ${projectName(metrics.project_id)}`}
        {metrics.has_more_groups && '; only the groups with the most traces are shown'}.
      </p>
      <div className="charts">
        <Chart id="chart-traces" title="Traces" range={charts.range} timestamps={charts.seconds} series={charts.traces} bands={bands.none} format={formatTokens} />
        <Chart id="chart-errors" title="Error rate" range={charts.range} timestamps={charts.seconds} series={charts.errors} bands={bands.errors} format={formatRate} />
        <Chart id="chart-latency" title="Latency" range={charts.range} timestamps={charts.seconds} series={charts.latency} bands={bands.latency} format={formatMs} />
        <Chart id="chart-tokens" title="Tokens" range={charts.range} timestamps={charts.seconds} series={charts.tokens} bands={bands.tokens} format={formatTokens} />
        <Chart id="chart-cost" title="Cost (USD)" range={charts.range} timestamps={charts.seconds} series={charts.cost} bands={bands.cost} format={formatCost} />
      </div>
      <h2>Anomalies</h2>
      <p className="hint">5-minute windows whose value stands out from the baseline (robust z-score: warning from 3.5, critical from 6).</p>
      {anomalies.error !== undefined && <ErrorNotice error={anomalies.error} />}
      {anomalies.loading && <p aria-live="polite">Loading the anomalies…</p>}
      {anomalies.data?.anomalies.length === 0 && <p>No anomalies in this range.</p>}
      {anomalies.data && anomalies.data.anomalies.length > 0 && (
        <table className="admin anomalies">
          <caption className="visually-hidden">Anomalies in this range, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Window</th>
              <th scope="col">Metric</th>
              <th scope="col">Project</th>
              <th scope="col" className="num">
                Observed
              </th>
              <th scope="col" className="num">
                Expected
              </th>
              <th scope="col" className="num">
                Score
              </th>
              <th scope="col">Severity</th>
            </tr>
          </thead>
          <tbody>
            {anomalies.data.anomalies.map((a) => {
              const format = a.metric === 'latency_p95' ? formatMs : a.metric === 'error_rate' ? formatRate : a.metric === 'cost' ? formatCost : formatTokens;
              return (
                <tr key={a.id}>
                  <td>{formatTime(a.window_start)}</td>
                  <td>{ANOMALY_METRICS[a.metric]}</td>
                  <td>{projectName(a.project_id)}</td>
                  <td className="num">{format(a.observed)}</td>
                  <td className="num">{format(a.expected)}</td>
                  <td className="num">{a.score.toFixed(1)}</td>
                  <td>
                    <span className={`badge ${a.severity === 'critical' ? 'error' : 'warn'}`}>{a.severity}</span>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {anomalies.data?.has_more && <p className="hint">More anomalies than shown: narrow the range.</p>}
      <IngestStats from={from} to={to} projectId={project_id} />
    </>
  );
}
