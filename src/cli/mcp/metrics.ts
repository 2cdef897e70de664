import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { metricsQuery, type MetricsResponse } from '../../modules/metrics/schemas.js';
import type { LooptraceApi } from './api.js';
import { registerReadTool } from './tool.js';

export function registerMetricsTools(server: McpServer, api: LooptraceApi): void {
  registerReadTool(
    server,
    'get_metrics',
    {
      title: 'Get trace metrics over time',
      description:
        'Trace counts, error counts and error rate, latency (avg, p50, p95, p99), tokens and cost per minute, hour or day (UTC buckets; empty buckets are omitted). ' +
        'Without from/to: the last 24 hours. group_by model, project or name splits the series, e.g. to see which operation or model the errors come from. ' +
        'Use it to see when a failure started and how large it is, then list_traces or list_failure_clusters for that period.',
      inputSchema: metricsQuery.shape,
    },
    async (query) => api.get<MetricsResponse>('/v1/metrics', query),
  );
}
