import type { McpServer, ToolCallback } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ShapeOutput } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import { z } from 'zod';
import { ApiError, ServerUnreachable, type LooptraceApi, type QueryValues } from './api.js';

type Shape = Record<string, z.ZodType>;

/** What a tool answers: JSON text, the same on every MCP client (not all read structuredContent). */
const jsonText = (value: unknown): CallToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value) }] });

const HINTS: Record<number, string> = {
  401: ' The API key (LOOPTRACE_API_KEY or --api-key) is missing, wrong or revoked.',
  429: ' Rate limited: wait a little before the next call.',
  503: ' The server is briefly unavailable: retry in a few seconds.',
};

/** A refusal as a tool error the agent can act on: status, the server's code and message, and its request id. */
export function errorText(err: unknown): CallToolResult {
  let text: string;
  if (err instanceof ApiError) {
    const request = err.requestId ? ` (request_id ${err.requestId})` : '';
    text = `Looptrace API error ${err.status} ${err.code}: ${err.message}${request}.${HINTS[err.status] ?? ''}`;
  } else if (err instanceof ServerUnreachable) {
    text = err.message;
  } else {
    text = `looptrace mcp failed: ${(err as Error).message ?? String(err)}`;
  }
  return { content: [{ type: 'text', text }], isError: true };
}

/**
 * Registers a tool that only reads. Whatever happens in `run` (a refusal, an unreachable server, a
 * bug) comes back as a tool error, never as a dead server process.
 */
export function registerReadTool<S extends Shape>(
  server: McpServer,
  name: string,
  config: { title: string; description: string; inputSchema: S },
  run: (args: ShapeOutput<S>) => Promise<unknown>,
): void {
  const callback = async (args: ShapeOutput<S>): Promise<CallToolResult> => {
    try {
      return jsonText(await run(args));
    } catch (err) {
      return errorText(err);
    }
  };
  server.registerTool(
    name,
    { ...config, annotations: { title: config.title, readOnlyHint: true, openWorldHint: false } },
    // ToolCallback<S> is a conditional type TypeScript cannot resolve for a generic S; for a shape it is this callback.
    callback as unknown as ToolCallback<S>,
  );
}

/** Page size and cursor of every list tool: smaller pages than the API's, an agent's context is not a browser's. */
export const pageShape = {
  limit: z.number().int().min(1).max(100).default(20).describe('how many items to return (1-100, default 20)'),
  cursor: z
    .string()
    .min(1)
    .max(1024)
    .optional()
    .describe('next_cursor of the previous answer, to get the next page; send the same filters again with it'),
};

/** A long text cut at `max` characters, saying how much was left out (never mid surrogate pair). */
export function clip(text: string, max: number): string;
export function clip(text: string | null, max: number): string | null;
export function clip(text: string | null, max: number): string | null {
  if (text === null || text.length <= max) return text;
  const end = max > 0 && /[\uD800-\uDBFF]/.test(text[max - 1]!) ? max - 1 : max;
  return `${text.slice(0, end)}… [trimmed: ${text.length - end} more characters]`;
}

/** A metadata object whose JSON is longer than `max` is replaced by a clipped JSON text of it. */
export function clipJson(value: Record<string, unknown>, max: number): Record<string, unknown> | string {
  const json = JSON.stringify(value);
  return json.length <= max ? value : clip(json, max);
}

export const textChars = (fallback: number, what: string) =>
  z
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(fallback)
    .describe(`${what} longer than this many characters are cut, saying how much was left out (default ${fallback})`);

/**
 * A list tool over a paged API route (`{ [key]: items, has_more, next_cursor }`): the route's
 * filters, the agent-sized page, and each item through `view` with its texts cut at text_chars.
 */
export function registerListTool<S extends Shape, Item>(
  server: McpServer,
  api: LooptraceApi,
  name: string,
  config: { title: string; description: string; filters: S; text: { chars: number; what: string } },
  list: { path: string; key: string; view: (item: Item, chars: number) => unknown },
): void {
  const inputSchema = { ...config.filters, ...pageShape, text_chars: textChars(config.text.chars, config.text.what) };
  registerReadTool(server, name, { title: config.title, description: config.description, inputSchema }, async (args) => {
    const { text_chars, ...query } = args as { text_chars: number } & QueryValues;
    const page = await api.get<Record<string, unknown>>(list.path, query);
    return { ...page, [list.key]: (page[list.key] as Item[]).map((item) => list.view(item, text_chars)) };
  });
}
