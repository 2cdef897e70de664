import { ListState, LoadMore } from '../ui/lists';
import { useEffect, type FormEvent } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, unwrap } from '../api/client';
import type { paths } from '../api/schema';
import { ProjectOptions, useAllProjects } from '../admin/projects';
import { usePages } from '../api/usePages';
import { isoToLocalInput, localInputToIso } from '../traces/filters';
import { formatCount, formatTime } from '../traces/format';
import { CLUSTER_TYPES, clusterTypeLabel, type ClusterList } from './clusters';
import { FailuresNav } from './FailuresNav';

type ClusterQuery = NonNullable<paths['/v1/failures/clusters']['get']['parameters']['query']>;
type ClusterFilters = Pick<ClusterQuery, 'type' | 'project_id' | 'from' | 'to'>;
const FILTERS = ['type', 'project_id', 'from', 'to'] as const;
// A filter the API adds and this page does not handle fails the build here (trace_id: the trace
// detail lists a trace's own clusters).
type MustBeNever<T extends never> = T;
type _EveryFilterHandled = MustBeNever<Exclude<keyof ClusterQuery, (typeof FILTERS)[number] | 'limit' | 'cursor' | 'trace_id'>>;

function filtersFromParams(params: URLSearchParams): ClusterFilters {
  const filters: ClusterFilters = {};
  for (const key of FILTERS) {
    const value = params.get(key)?.trim();
    if (value) filters[key] = value;
  }
  return filters;
}

/** Failure clusters (GET /v1/failures/clusters), most recently seen first; the filters live in the URL. */
export function FailuresPage() {
  const [params, setParams] = useSearchParams();
  const filters = filtersFromParams(params);
  const projects = useAllProjects();
  const list = usePages(
    `clusters?${new URLSearchParams(filters as Record<string, string>).toString()}`,
    (cursor, signal) => unwrap(api.GET('/v1/failures/clusters', { params: { query: { limit: 50, ...filters, cursor } }, signal })),
    (page: ClusterList) => page.clusters,
  );
  useEffect(() => {
    document.title = 'Failures · Looptrace';
  }, []);
  const projectName = (id: string) => projects.data?.find((p) => p.id === id)?.name ?? id;

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const next = new URLSearchParams();
    for (const key of FILTERS) {
      const raw = form.get(key);
      const value = typeof raw === 'string' ? raw.trim() : '';
      const stored = key === 'from' || key === 'to' ? localInputToIso(value) : value;
      if (stored) next.set(key, stored);
    }
    setParams(next);
  };

  return (
    <>
      <h1>Failures</h1>
      <FailuresNav />
      <p className="hint">Failing spans grouped by project, type and normalized error: the same failure lands in the same cluster in every run.</p>
      <form className="filters" onSubmit={submit} onReset={() => setParams({})} aria-label="Cluster filters" key={params.toString()}>
        <label>
          Type
          <select name="type" defaultValue={filters.type ?? ''}>
            <option value="">Any type</option>
            {Object.entries(CLUSTER_TYPES).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Project
          <select name="project_id" defaultValue={filters.project_id ?? ''}>
            <ProjectOptions projects={projects.data} empty="All projects" />
          </select>
        </label>
        <label>
          Last seen from
          <input name="from" type="datetime-local" step={1} defaultValue={isoToLocalInput(filters.from)} />
        </label>
        <label>
          Last seen until
          <input name="to" type="datetime-local" step={1} defaultValue={isoToLocalInput(filters.to)} />
        </label>
        <div className="filter-actions">
          <button type="submit" className="primary">
            Apply
          </button>
          <button type="reset">Clear</button>
        </div>
      </form>
      <ListState list={list} loading="Loading the clusters…" empty={<p>No failure clusters for these filters.</p>} />
      {list.items.length > 0 && (
        <table className="admin clusters">
          <caption className="visually-hidden">Failure clusters, most recently seen first</caption>
          <thead>
            <tr>
              <th scope="col">Type</th>
              <th scope="col">Sample error</th>
              <th scope="col">Project</th>
              <th scope="col" className="num">
                Spans
              </th>
              <th scope="col" className="num">
                Traces
              </th>
              <th scope="col">Last seen</th>
              <th scope="col">Example traces</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((cluster) => (
              <tr key={cluster.id}>
                <td>
                  <Link to={`/failures/clusters/${cluster.id}`}>{clusterTypeLabel(cluster.type)}</Link>
                </td>
                <td className="sample-error">{cluster.sample_error ?? <span className="muted">none</span>}</td>
                <td>{projectName(cluster.project_id)}</td>
                <td className="num">{formatCount(cluster.count)}</td>
                <td className="num">{formatCount(cluster.trace_count)}</td>
                <td>{formatTime(cluster.last_seen)}</td>
                <td>
                  <ExampleTraces ids={cluster.example_trace_ids} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore list={list} />
    </>
  );
}

export function ExampleTraces({ ids }: { ids: string[] }) {
  if (ids.length === 0) return <span className="muted">none</span>;
  return (
    <ul className="example-traces">
      {ids.map((id, i) => (
        <li key={id}>
          <Link to={`/traces/${id}`} aria-label={`Example trace ${i + 1}: ${id}`}>
            <code>{id.slice(0, 8)}</code>
          </Link>
        </li>
      ))}
    </ul>
  );
}
