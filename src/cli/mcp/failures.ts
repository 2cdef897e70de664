import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { listClustersQuery, type FailureCluster } from '../../modules/failures/schemas.js';
import { segment, type LooptraceApi } from './api.js';
import { clip, registerListTool, registerReadTool } from './tool.js';

const { limit: _limit, cursor: _cursor, ...clusterFilters } = listClustersQuery.shape;

const clusterView = (cluster: FailureCluster, chars: number) => ({ ...cluster, sample_error: clip(cluster.sample_error, chars) });

export function registerFailureTools(server: McpServer, api: LooptraceApi): void {
  registerListTool(
    server,
    api,
    'list_failure_clusters',
    {
      title: 'List failure clusters',
      description:
        'Failures grouped by cause: spans with the same error (modulo numbers, ids and quoted values) form one cluster, with its type ' +
        '(timeout, rate_limit, invalid_response, context_length, Unknown, RuleMatch, RemediationRegression...), a sample error, how many spans and traces, ' +
        'first_seen/last_seen and example_trace_ids. Most recently seen first. The quickest answer to "why did X fail": filter by from/to (last_seen) ' +
        'and project_id, or by trace_id for the clusters of one trace; then get_trace on an example trace.',
      filters: {
        ...clusterFilters,
        from: clusterFilters.from.describe('inclusive lower bound of last_seen, ISO 8601 with offset, e.g. 2026-11-26T00:00:00Z'),
        type: clusterFilters.type.describe('only clusters of this type, e.g. timeout or rate_limit'),
      },
      text: { chars: 1_000, what: 'sample errors' },
    },
    { path: '/v1/failures/clusters', key: 'clusters', view: clusterView },
  );

  registerReadTool(
    server,
    'get_failure_cluster',
    {
      title: 'Get one failure cluster',
      description: 'One failure cluster by id, with its whole sample error, counts, first_seen/last_seen and example_trace_ids.',
      inputSchema: { id: z.guid().describe('the cluster id, as list_failure_clusters shows it') },
    },
    async ({ id }) => api.get<FailureCluster>(`/v1/failures/clusters/${segment(id)}`),
  );
}
