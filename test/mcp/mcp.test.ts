import { execFile } from 'node:child_process';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aFailureRule, create, queryKeyAuth } from '../builders/resources.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, type TestContext, type TestTenant } from '../helpers/app.js';
import { freePort } from '../helpers/server-process.js';
import { ingestTraces } from '../helpers/trace-api.js';
import { pollUntil, startAppWithWorkers } from '../helpers/workers.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CLI = ['--import', 'tsx', 'src/cli.ts', 'mcp'];

let ctx: TestContext;
let url: string;
let acme: TestTenant;
let other: TestTenant;
const clients: Client[] = [];

/** `looptrace mcp` as a child process, driven by the MCP SDK's own client over stdio. */
async function connect(env: Record<string, string>): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: CLI,
    cwd: ROOT,
    env: { ...(process.env as Record<string, string>), LOOPTRACE_URL: url, ...env },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'looptrace-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const keyOf = (t: TestTenant) => t.auth.authorization.replace('Bearer ', '');

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

const textOf = (result: CallToolResult): string => {
  const [first] = result.content;
  if (first?.type !== 'text') throw new Error(`expected a text result, got ${JSON.stringify(result)}`);
  return first.text;
};

/** The JSON answer of a call that must succeed. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read the answer as JSON
async function json(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const result = await call(client, name, args);
  expect(result.isError ?? false, textOf(result)).toBe(false);
  return JSON.parse(textOf(result));
}

/** The message of a call that must fail as a tool error (never a protocol error or a dead server). */
async function toolError(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const result = await call(client, name, args);
  expect(result.isError, textOf(result)).toBe(true);
  return textOf(result);
}

const DAY = '2026-11-10';
const at = (time: string) => new Date(`${DAY}T${time}.000Z`);
const TIMEOUT = 'payment gateway timed out after 30000 ms';
const LONG_INPUT = `cart: ${'sku-123 '.repeat(1_000)}`.trim();

const failedCheckout = aTrace({
  name: 'checkout',
  tags: ['env:prod'],
  spans: [
    aSpan({ name: 'load cart', type: 'tool', input: LONG_INPUT, output: 'cart loaded', model: '' }, at('09:00:00')),
    aSpan({ name: 'charge card', type: 'tool', error: TIMEOUT, status_code: 504, output: '', model: '' }, at('09:00:01')),
  ],
});
const goodCheckout = aTrace({ name: 'checkout', tags: ['env:prod'], spans: [aSpan({}, at('10:00:00'))] });
const rateLimited = aTrace({ name: 'support answer', spans: [aSpan({ error: 'Too many requests', status_code: 429 }, at('11:00:00'))] });
// Span texts too long in all for get_trace to show: it answers from the span tree.
const BIG_INPUT = 'x'.repeat(40_000);
const bigTrace = aTrace({ name: 'batch summarise', spans: [0, 1, 2].map((i) => aSpan({ name: `chunk ${i}`, input: BIG_INPUT }, at(`12:00:0${i}`))) });
const othersCheckout = aTrace({ name: 'checkout', spans: [aSpan({ error: TIMEOUT, status_code: 504 }, at('09:30:00'))] });

let acmeClient: Client;

beforeAll(async () => {
  ctx = await startAppWithWorkers(['failures-detect', 'evals']);
  url = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  acme = await createTenant(ctx.app);
  other = await createTenant(ctx.app);
  // Failures are clustered for the rules that exist when their traces arrive.
  for (const t of [acme, other]) await create(ctx.app, '/v1/failure-rules', t.auth, aFailureRule({ match: { failure_types: ['timeout', 'rate_limit'] } }));
  await ingestTraces(ctx.app, acme, [failedCheckout, goodCheckout, rateLimited, bigTrace]);
  await ingestTraces(ctx.app, other, [othersCheckout]);
  // A read-only key is all the MCP server needs.
  const reader = await queryKeyAuth(ctx.app, acme.auth);
  acmeClient = await connect({ LOOPTRACE_API_KEY: reader.authorization.replace('Bearer ', '') });
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await ctx?.close();
});

describe('looptrace mcp', () => {
  it('lists its read-only tools, each with a description and an input schema carrying the API filters', async () => {
    const { tools } = await acmeClient.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'compare_evaluations',
      'get_evaluation',
      'get_failure_cluster',
      'get_metrics',
      'get_span',
      'get_trace',
      'list_evaluations',
      'list_failure_clusters',
      'list_projects',
      'list_traces',
    ]);
    for (const tool of tools) {
      expect(tool.description!.length, tool.name).toBeGreaterThan(50);
      expect(tool.annotations).toMatchObject({ readOnlyHint: true });
    }
    const listTraces = tools.find((t) => t.name === 'list_traces')!;
    const properties = listTraces.inputSchema.properties as Record<string, { enum?: string[]; description?: string }>;
    for (const filter of ['q', 'failure_type', 'from', 'to', 'name', 'tag_key', 'tag_value', 'latency_min', 'latency_max', 'token_count_min', 'token_count_max', 'session_id', 'model', 'project_id', 'limit', 'cursor']) {
      expect(properties, filter).toHaveProperty(filter);
    }
    expect(properties.failure_type!.enum).toEqual(['timeout', 'rate_limit', 'invalid_response', 'context_length']);
    expect(properties.q!.description).toMatch(/full-text/);
  });

  it('answers "why did checkout fail": the failure cluster, the failing trace by filters and by search, and its failing span', async () => {
    const clusters = await pollUntil(
      () => json(acmeClient, 'list_failure_clusters', { from: `${DAY}T00:00:00Z` }),
      (page) => page.clusters.length === 2,
      300,
      100,
    );
    const timeout = clusters.clusters.find((c: { type: string }) => c.type === 'timeout');
    expect(timeout).toMatchObject({ sample_error: TIMEOUT, trace_count: 1, example_trace_ids: [failedCheckout.id] });
    expect(await json(acmeClient, 'get_failure_cluster', { id: timeout.id })).toMatchObject({ id: timeout.id, type: 'timeout' });
    const ofTrace = await json(acmeClient, 'list_failure_clusters', { trace_id: failedCheckout.id });
    expect(ofTrace.clusters.map((c: { id: string }) => c.id)).toEqual([timeout.id]);

    const day = { from: `${DAY}T00:00:00Z`, to: `${DAY}T23:59:59Z` };
    const byFilters = await json(acmeClient, 'list_traces', { name: 'checkout', failure_type: 'timeout', ...day });
    expect(byFilters.traces.map((t: { id: string }) => t.id)).toEqual([failedCheckout.id]);
    expect(byFilters.traces[0]).toMatchObject({ failure_types: ['timeout'], error: TIMEOUT, span_count: 2 });
    const bySearch = await json(acmeClient, 'list_traces', { q: 'gateway timed out' });
    expect(bySearch.traces.map((t: { id: string }) => t.id)).toEqual([failedCheckout.id]);
    const byTag = await json(acmeClient, 'list_traces', { tag_key: 'env', tag_value: 'prod' });
    expect(byTag.traces.map((t: { id: string }) => t.id).sort()).toEqual([failedCheckout.id, goodCheckout.id].sort());

    const trace = await json(acmeClient, 'get_trace', { id: failedCheckout.id, only_errors: true });
    expect(trace.trace).toMatchObject({ id: failedCheckout.id, name: 'checkout', failure_types: ['timeout'] });
    expect(trace.spans).toEqual([expect.objectContaining({ name: 'charge card', error: TIMEOUT, failure_type: 'timeout' })]);
    expect(trace).toMatchObject({ failing_span_count: 1, spans_omitted: 1 });
  });

  it('pages with limit and cursor', async () => {
    const first = await json(acmeClient, 'list_traces', { limit: 3 });
    expect(first.traces).toHaveLength(3);
    expect(first.has_more).toBe(true);
    const second = await json(acmeClient, 'list_traces', { limit: 3, cursor: first.next_cursor });
    expect(second).toMatchObject({ has_more: false, next_cursor: null });
    const all = [...first.traces, ...second.traces].map((t: { id: string }) => t.id).sort();
    expect(all).toEqual([failedCheckout.id, goodCheckout.id, rateLimited.id, bigTrace.id].sort());
  });

  it('cuts long texts in summaries, saying how much, and gives one span whole on request', async () => {
    const trace = await json(acmeClient, 'get_trace', { id: failedCheckout.id, text_chars: 100 });
    const loadCart = trace.spans.find((s: { name: string }) => s.name === 'load cart');
    expect(loadCart.input).toBe(`${LONG_INPUT.slice(0, 100)}… [trimmed: ${LONG_INPUT.length - 100} more characters]`);
    expect(trace.spans).toHaveLength(2);
    expect(trace.span_texts).toBe('included, each cut at 100 characters');
    const capped = await json(acmeClient, 'get_trace', { id: failedCheckout.id, max_spans: 1 });
    expect(capped.spans.map((s: { name: string }) => s.name)).toEqual(['charge card']);
    expect(capped.spans_omitted).toBe(1);

    const span = await json(acmeClient, 'get_span', { trace_id: failedCheckout.id, span_id: loadCart.id });
    expect(span).toMatchObject({ id: loadCart.id, name: 'load cart', input: LONG_INPUT, output: 'cart loaded' });

    const big = await json(acmeClient, 'get_trace', { id: bigTrace.id });
    expect(big.span_texts).toMatch(/^left out: the span inputs and outputs have 120018 characters in all/);
    expect(big.spans.map((s: { name: string; input_chars: number }) => [s.name, s.input_chars])).toEqual([0, 1, 2].map((i) => [`chunk ${i}`, 40_000]));
    expect(big.spans[0]).not.toHaveProperty('input');
    expect(big.trace.input).toBe(bigTrace.input);
    const chunk = await json(acmeClient, 'get_span', { trace_id: bigTrace.id, span_id: big.spans[1].id, text_chars: 50_000 });
    expect(chunk.input).toBe(BIG_INPUT);
    const cut = await json(acmeClient, 'get_span', { trace_id: bigTrace.id, span_id: big.spans[1].id });
    expect(cut.input).toBe(`${BIG_INPUT.slice(0, 20_000)}… [trimmed: 20000 more characters]`);
  });

  it('shows evaluations and compares a metric between two windows', async () => {
    const triggered = await ctx.app.inject({
      method: 'POST',
      url: '/v1/eval',
      headers: acme.auth,
      payload: { trace_id: goodCheckout.id, metric_name: 'mentions_paris', config: { provider: 'builtin', preset: 'contains', params: { value: 'Paris' } } },
    });
    expect(triggered.statusCode, triggered.body).toBe(202);
    const evalId = triggered.json().eval_id;
    const evaluation = await pollUntil(() => json(acmeClient, 'get_evaluation', { id: evalId }), (e) => e.status === 'completed', 300, 100);
    expect(evaluation).toMatchObject({ trace_id: goodCheckout.id, metric_name: 'mentions_paris', score: 1, passed: true });
    const listed = await json(acmeClient, 'list_evaluations', { trace_id: goodCheckout.id });
    expect(listed.evals.map((e: { id: string }) => e.id)).toEqual([evalId]);

    const created = Date.parse(evaluation.created_at);
    const window = (fromMs: number, toMs: number) => [new Date(fromMs).toISOString(), new Date(toMs).toISOString()];
    const [baseline_from, baseline_to] = window(created - 2 * 86_400_000, created - 86_400_000);
    const [candidate_from, candidate_to] = window(created - 60_000, created + 60_000);
    const comparison = await json(acmeClient, 'compare_evaluations', { metric: 'mentions_paris', baseline_from, baseline_to, candidate_from, candidate_to });
    expect(comparison).toEqual({
      metric: 'mentions_paris',
      baseline: { avg_score: null, count: 0, pass_rate: null },
      candidate: { avg_score: 1, count: 1, pass_rate: 1 },
      delta: { avg_score: null, pass_rate: null },
    });
  });

  it('gives metrics per day and the projects of the key', async () => {
    await ctx.app.services.metricsRollup.drain();
    const metrics = await json(acmeClient, 'get_metrics', { from: `${DAY}T00:00:00Z`, to: '2026-11-11T00:00:00Z', interval: 'day', group_by: 'name' });
    const byName = Object.fromEntries(metrics.series.map((s: { group: { name: string }; points: { trace_count: number; error_count: number }[] }) => [s.group.name, s.points]));
    expect(byName.checkout).toEqual([expect.objectContaining({ timestamp: `${DAY}T00:00:00.000Z`, trace_count: 2, error_count: 1 })]);
    expect(byName['support answer']).toEqual([expect.objectContaining({ trace_count: 1, error_count: 1 })]);

    const projects = await json(acmeClient, 'list_projects');
    expect(projects.projects.map((p: { id: string }) => p.id)).toEqual([acme.projectId]);
  });

  it("never shows another tenant's traces: its own list, and a not-found for the other's trace", async () => {
    const otherClient = await connect({ LOOPTRACE_API_KEY: keyOf(other) });
    const theirs = await json(otherClient, 'list_traces', { name: 'checkout' });
    expect(theirs.traces.map((t: { id: string }) => t.id)).toEqual([othersCheckout.id]);
    expect(await toolError(otherClient, 'get_trace', { id: failedCheckout.id })).toMatch(/^Looptrace API error 404 not_found: .+\(request_id .+\)/);
    const spanId = failedCheckout.spans[0]!.id;
    expect(await toolError(otherClient, 'get_span', { trace_id: failedCheckout.id, span_id: spanId })).toMatch(/^Looptrace API error 404 not_found: /);
    expect((await json(acmeClient, 'get_span', { trace_id: failedCheckout.id, span_id: spanId })).id).toBe(spanId);
    const theirClusters = await json(otherClient, 'list_failure_clusters');
    expect(theirClusters.clusters.flatMap((c: { example_trace_ids: string[] }) => c.example_trace_ids)).not.toContain(failedCheckout.id);
    const ours = await json(acmeClient, 'list_traces', { name: 'checkout' });
    expect(ours.traces.map((t: { id: string }) => t.id)).not.toContain(othersCheckout.id);
  });

  it("surfaces the server's refusals as tool errors with its code and message", async () => {
    expect(await toolError(acmeClient, 'get_trace', { id: '01900000-0000-7000-8000-000000000000' })).toMatch(/^Looptrace API error 404 not_found: /);
    expect(await toolError(acmeClient, 'get_span', { trace_id: failedCheckout.id, span_id: '01900000-0000-7000-8000-000000000000' })).toMatch(/^Looptrace API error 404 not_found: /);
    expect(await toolError(acmeClient, 'list_traces', { tag_key: 'env' })).toMatch(/^Looptrace API error 400 error\.tags_filter_incomplete: /);
    expect(await toolError(acmeClient, 'list_traces', { latency_min: 10, latency_max: 5 })).toMatch(/400 bad_request: .*latency_max: must be >= latency_min/);
    // Refused by the tool's own schema before any request.
    expect(await toolError(acmeClient, 'get_trace', { id: 'not-a-trace-id' })).toMatch(/Input validation error/);
  });

  it('tells the agent when the API key is refused or the server cannot be reached, and keeps serving', async () => {
    const badKey = await connect({ LOOPTRACE_API_KEY: 'lt_not-a-real-key' });
    expect(await toolError(badKey, 'list_traces')).toMatch(/^Looptrace API error 401 \w+: .*The API key \(LOOPTRACE_API_KEY or --api-key\) is missing, wrong or revoked\./);
    expect(await toolError(badKey, 'list_failure_clusters')).toMatch(/401/);

    const nowhere = await connect({ LOOPTRACE_API_KEY: keyOf(acme), LOOPTRACE_URL: `http://127.0.0.1:${await freePort()}` });
    expect(await toolError(nowhere, 'get_metrics')).toMatch(/^cannot reach the Looptrace server at http:\/\/127\.0\.0\.1:\d+\/ \(ECONNREFUSED\)/);
    expect((await nowhere.listTools()).tools).toHaveLength(10);
  });

  it('refuses to start without an API key: usage on stderr, exit 2', async () => {
    const env = { ...process.env, LOOPTRACE_API_KEY: '' };
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, CLI, { cwd: ROOT, env, timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: err ? (err.code as number) : 0, stdout, stderr }));
    });
    expect(result).toMatchObject({ code: 2, stdout: '' });
    expect(result.stderr).toMatch(/missing required option --api-key \(or LOOPTRACE_API_KEY\)/);
  });
});
