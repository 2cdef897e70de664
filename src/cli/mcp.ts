import { readFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { parseOptions, required, UsageError, wantsHelp } from './args.js';
import { looptraceApi, type LooptraceApi } from './mcp/api.js';
import { registerEvalTools } from './mcp/evals.js';
import { registerFailureTools } from './mcp/failures.js';
import { registerMetricsTools } from './mcp/metrics.js';
import { registerProjectTools } from './mcp/projects.js';
import { registerTraceTools } from './mcp/traces.js';

export const MCP_USAGE = `usage:
  looptrace mcp [--url http://localhost:8080] [--api-key KEY]
      An MCP server on stdin/stdout for coding agents and MCP clients (Claude Desktop, Claude Code,
      Cursor...): read-only tools over a running Looptrace server's API, as the API key sees it.
      Tools: list_traces, get_trace, get_span, list_failure_clusters, get_failure_cluster,
      list_evaluations, get_evaluation, compare_evaluations, get_metrics, list_projects.
      Talks HTTP only: --url defaults to $LOOPTRACE_URL, else http://localhost:8080; --api-key to
      $LOOPTRACE_API_KEY (a key with the query scope is enough). Configuration: docs/mcp.md.`;

// src/cli/mcp.ts and dist/cli/mcp.js are both two levels below the package root.
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const INSTRUCTIONS =
  'Looptrace records the traces (runs) of LLM applications: spans of LLM and tool calls with inputs, outputs, errors, latency, tokens and cost, ' +
  'failures clustered by cause, and evaluation scores. To find out why something failed: get_metrics or list_failure_clusters for the period, ' +
  'then list_traces (failure_type, q, name, from/to) and get_trace on a failing trace; get_span shows one span whole.';

/** The MCP server with every read tool over `api`. */
export function looptraceMcpServer(api: LooptraceApi): McpServer {
  const server = new McpServer({ name: 'looptrace', version: VERSION }, { instructions: INSTRUCTIONS });
  registerTraceTools(server, api);
  registerFailureTools(server, api);
  registerEvalTools(server, api);
  registerMetricsTools(server, api);
  registerProjectTools(server, api);
  return server;
}

function baseUrlOption(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url.href;
  } catch {
    // refused below, with the value
  }
  throw new UsageError(`--url (or LOOPTRACE_URL) must be an http(s) URL, got "${value}"`, MCP_USAGE);
}

/** `looptrace mcp`: serves until the client closes stdin. Its stdout is the protocol's: nothing else is written there. */
export async function mcpCommand(args: string[]): Promise<number> {
  if (wantsHelp(args)) {
    console.log(MCP_USAGE);
    return 0;
  }
  const o = parseOptions(args, { url: { type: 'string' }, 'api-key': { type: 'string' } }, MCP_USAGE);
  const baseUrl = baseUrlOption(o.url ?? process.env.LOOPTRACE_URL ?? 'http://localhost:8080');
  const apiKey = required(o['api-key'] ?? process.env.LOOPTRACE_API_KEY, 'api-key (or LOOPTRACE_API_KEY)', MCP_USAGE);
  const server = looptraceMcpServer(looptraceApi(baseUrl, apiKey));
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => process.stdin.once('end', resolve));
  await server.connect(transport);
  process.stderr.write(`looptrace mcp: serving ${baseUrl} on stdio, for an MCP client to drive (docs/mcp.md)\n`);
  await closed;
  await server.close();
  return 0;
}
