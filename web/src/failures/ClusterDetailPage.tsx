import { DetailState } from '../ui/lists';
import { useEffect } from 'react';
import { Link, useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { useApi } from '../api/useApi';
import { useAllProjects } from '../admin/projects';
import { Fact } from '../ui/Fact';
import { formatCount, formatTime } from '../traces/format';
import { clusterTypeLabel } from './clusters';
import { ExampleTraces } from './FailuresPage';
import { FailuresNav } from './FailuresNav';

/** One failure cluster (GET /v1/failures/clusters/{id}). */
export function ClusterDetailPage() {
  const { id = '' } = useParams();
  const cluster = useApi(`cluster:${id}`, (signal) => unwrap(api.GET('/v1/failures/clusters/{id}', { params: { path: { id } }, signal })));
  const projects = useAllProjects();
  useEffect(() => {
    document.title = 'Failure cluster · Looptrace';
  }, []);
  const c = cluster.data;
  const project = c && (projects.data?.find((p) => p.id === c.project_id)?.name ?? c.project_id);

  return (
    <>
      <FailuresNav />
      <p>
        <Link to="/failures">← Failure clusters</Link>
      </p>
      <DetailState state={cluster} title="Failure cluster" loading="Loading the cluster…" />
      {c && (
        <>
          <h1>Failure cluster: {clusterTypeLabel(c.type)}</h1>
          <dl className="facts">
            <Fact term="Type" value={<code>{c.type}</code>} />
            <Fact term="Project" value={project} />
            <Fact term="Matching spans" value={formatCount(c.count)} />
            <Fact term="Distinct traces" value={formatCount(c.trace_count)} />
            <Fact term="First seen" value={formatTime(c.first_seen)} />
            <Fact term="Last seen" value={formatTime(c.last_seen)} />
            <Fact term="Last notified" value={c.last_notified_at ? formatTime(c.last_notified_at) : 'never'} />
            <Fact term="Signature" value={<code>{c.signature}</code>} />
          </dl>
          <section className="payload" aria-labelledby="sample-title">
            <h2 id="sample-title">Sample error</h2>
            {c.sample_error ? <pre>{c.sample_error}</pre> : <p className="muted">none</p>}
          </section>
          <h2>Example traces</h2>
          <p className="hint">The first five traces of the cluster.</p>
          <ExampleTraces ids={c.example_trace_ids} />
        </>
      )}
    </>
  );
}
