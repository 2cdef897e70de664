import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { compareQuery, listEvalsQuery, type EvalComparison, type Evaluation } from '../../modules/evals/schemas.js';
import { segment, type LooptraceApi } from './api.js';
import { clip, registerListTool, registerReadTool } from './tool.js';

const { limit: _limit, cursor: _cursor, ...evalFilters } = listEvalsQuery.shape;
const instant = (what: string) => z.iso.datetime({ offset: true }).describe(`${what}, ISO 8601 with offset`);

const evaluationView = (e: Evaluation, chars: number) => ({ ...e, reasoning: clip(e.reasoning, chars), scored_output: clip(e.scored_output, chars) });

export function registerEvalTools(server: McpServer, api: LooptraceApi): void {
  registerListTool(
    server,
    api,
    'list_evaluations',
    {
      title: 'List evaluations',
      description:
        'Evaluations (a score of one trace by an LLM judge or a builtin check, for a named metric), newest first: status, score, passed, ' +
        'threshold, the judge reasoning, the trace it scored. Filter by trace_id to see how a trace was judged, by metric_name and from/to (created_at) ' +
        'for a metric over a period, by status (failed = the evaluation itself failed, see error).',
      filters: evalFilters,
      text: { chars: 500, what: 'reasoning and scored output' },
    },
    { path: '/v1/evals', key: 'evals', view: evaluationView },
  );

  registerReadTool(
    server,
    'get_evaluation',
    {
      title: 'Get one evaluation',
      description: 'One evaluation by id, whole: score, passed, reasoning, judge model and usage, config, the trace it scored.',
      inputSchema: { id: z.guid().describe('the evaluation id') },
    },
    async ({ id }) => api.get<Evaluation>(`/v1/eval/${segment(id)}`),
  );

  registerReadTool(
    server,
    'compare_evaluations',
    {
      title: 'Compare a metric between two periods',
      description:
        "A metric's completed evaluations in two windows of created_at (baseline and candidate, e.g. yesterday against today, or before and after a deploy): " +
        'average score, pass rate and count of each, and the deltas (candidate - baseline; null when a window has none). ' +
        'list_evaluations shows which metric names exist.',
      inputSchema: {
        metric: compareQuery.shape.metric.describe('the metric_name of the evaluations'),
        project_id: compareQuery.shape.project_id.describe('only evaluations of this project; default: every project'),
        baseline_from: instant('start of the baseline window (inclusive)'),
        baseline_to: instant('end of the baseline window (inclusive)'),
        candidate_from: instant('start of the candidate window (inclusive)'),
        candidate_to: instant('end of the candidate window (inclusive)'),
      },
    },
    async (query) => api.get<EvalComparison>('/v1/eval/compare', query),
  );
}
