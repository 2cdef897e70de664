import { execFile } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSdkHarness, type SdkHarness } from './harness.js';

/* examples/sdk-openai as its README runs it, in the scratch project where the packed SDK is installed. */

const EXAMPLE = path.resolve(import.meta.dirname, '../../examples/sdk-openai');
/** The example calls the real OpenAI when told to: never here. */
const withoutVendorEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OPENAI_')));

let h: SdkHarness;
beforeAll(async () => {
  h = await startSdkHarness();
});
afterAll(async () => h?.close());

it('examples/sdk-openai records its support chat: the tool call, the tool span, the streamed answer and the feedback', async () => {
  for (const file of ['app.mjs', 'fake-openai.mjs']) copyFileSync(path.join(EXAMPLE, file), path.join(h.project, file));
  const { stdout } = await promisify(execFile)(process.execPath, ['app.mjs'], {
    cwd: h.project,
    env: { ...withoutVendorEnv(), LOOPTRACE_URL: h.url, LOOPTRACE_API_KEY: h.tenant.apiKey },
    timeout: 60_000,
  });
  expect(stdout).toMatch(/answer: Here is what I found: .*shipped/);
  const traceId = /trace (\S+) stored \(feedback stored\); dropped: 0/.exec(stdout)?.[1];
  expect(traceId, stdout).toBeDefined();

  const trace = await h.storedTrace(traceId!);
  expect(trace).toMatchObject({ name: 'support-chat', input: 'Where is my order A-1001?', session_id: 'customer-42' });
  expect(trace.spans.map((s) => s.name).sort()).toEqual(['lookup_order', 'openai.chat.completions', 'openai.chat.completions']);
  const [toolCall, streamed] = trace.spans.filter((s) => s.type === 'llm').sort((a, b) => Number(a.metadata.stream) - Number(b.metadata.stream));
  expect(JSON.parse(toolCall!.output).tool_calls[0].function).toEqual({ name: 'lookup_order', arguments: '{"order_id":"A-1001"}' });
  expect(streamed!.output).toMatch(/^Here is what I found/);
  expect(streamed!.completion_tokens).toBeGreaterThan(0);
  const feedback = await h.ctx.app.inject({ method: 'GET', url: `/v1/feedback?trace_id=${traceId}`, headers: h.tenant.auth });
  expect(feedback.json().feedback).toMatchObject([{ score: 0.9, comment: 'quick and right' }]);
});
