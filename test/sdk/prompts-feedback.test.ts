import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aProject, aPrompt, create } from '../builders/resources.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { pollUntil } from '../helpers/workers.js';
import { spanNamed, startSdkHarness, type SdkHarness } from './harness.js';

let h: SdkHarness;
let proxy: TcpProxy;
let lt: InstanceType<SdkHarness['sdk']['Looptrace']>;
beforeAll(async () => {
  h = await startSdkHarness();
  proxy = new TcpProxy('127.0.0.1', Number(new URL(h.url).port));
  await proxy.start();
  lt = new h.sdk.Looptrace({ baseUrl: `http://127.0.0.1:${proxy.port}`, apiKey: h.tenant.apiKey, onError: () => {} });
});
afterAll(async () => {
  await lt?.shutdown();
  await proxy?.close();
  await h?.close();
});

describe('prompts', () => {
  it('the active version, cached, refreshed in the background, and the last good one served while the server is down', async () => {
    const { name } = await create(h.ctx.app, '/v1/prompts', h.tenant.auth, aPrompt(h.tenant.projectId, { content: 'You help {{customer}} with {{ topic }}. {{unknown}}' }));
    const first = await lt.prompts.get(name);
    expect(first).toMatchObject({ name, version: 1, source: 'server', projectId: h.tenant.projectId });
    expect(first.compile({ customer: 'Ada', topic: 'billing' })).toBe('You help Ada with billing. {{unknown}}');
    expect(first.metadata).toEqual({ prompt_name: name, prompt_version: 1 });

    await create(h.ctx.app, `/v1/prompts/${name}/versions`, h.tenant.auth, { project_id: h.tenant.projectId, content: 'Version two for {{customer}}' });
    expect((await lt.prompts.get(name)).version).toBe(1); // fresh for the default 60 s: no request
    expect((await lt.prompts.get(name, { cacheTtlMs: 0 })).version).toBe(1); // stale: served, refreshed behind
    const second = await pollUntil(() => lt.prompts.get(name, { cacheTtlMs: 0 }), (p) => p.version === 2);
    expect(second.compile({ customer: 'Bo' })).toBe('Version two for Bo');

    await proxy.cut();
    try {
      const served = await pollUntil(() => lt.prompts.get(name, { cacheTtlMs: 0 }), (p) => p.source === 'cache');
      expect(served).toMatchObject({ version: 2, content: 'Version two for {{customer}}' });
      await expect(lt.prompts.get('never-fetched')).rejects.toMatchObject({ name: 'PromptNotAvailableError', status: null });
      expect(await lt.prompts.get('never-fetched', { fallback: 'Be helpful.' })).toMatchObject({ source: 'fallback', version: 0, content: 'Be helpful.' });
    } finally {
      await proxy.restore();
    }
    await expect(lt.prompts.get('no-such-prompt')).rejects.toMatchObject({ status: 404 });
    expect(await pollUntil(() => lt.prompts.get(name, { cacheTtlMs: 0 }), (p) => p.source === 'server')).toMatchObject({ version: 2 });
  });

  it('spans name the prompt version they ran with, as prompt deployment monitoring reads it', async () => {
    const { name } = await create(h.ctx.app, '/v1/prompts', h.tenant.auth, aPrompt(h.tenant.projectId));
    const prompt = await lt.prompts.get(name);
    const id = await lt.trace('answer', async (trace) => {
      await lt.span('generate', { type: 'llm' }, () => prompt.compile({ input: 'hi' }));
      await lt.span('check', { type: 'tool', prompt: { name: 'other', version: 7 } }, () => 'ok');
      return trace.id;
    }, { prompt });
    await lt.flush();
    const trace = await h.storedTrace(id);
    expect(spanNamed(trace, 'generate')).toMatchObject({ output: 'Answer briefly: hi', metadata: { prompt_name: name, prompt_version: 1 } });
    expect(spanNamed(trace, 'check').metadata).toEqual({ prompt_name: 'other', prompt_version: 7 });
  });
});

it('projectId: traces go to another project of the tenant, and its prompts are read', async () => {
  const project = await create(h.ctx.app, '/v1/projects', h.tenant.auth, aProject());
  const { name } = await create(h.ctx.app, '/v1/prompts', h.tenant.auth, aPrompt(project.id, { content: 'other project' }));
  const scoped = new h.sdk.Looptrace({ baseUrl: h.url, apiKey: h.tenant.apiKey, projectId: project.id });
  expect((await scoped.prompts.get(name)).content).toBe('other project');
  await expect(lt.prompts.get(name)).rejects.toMatchObject({ status: 404 }); // not in the key's project
  const id = scoped.trace('elsewhere', (trace) => trace.id);
  await scoped.shutdown();
  expect((await h.storedTrace(id)).project_id).toBe(project.id);
});

describe('feedback', () => {
  it('scores a trace that is still on its way (it is sent first); an unknown trace is a 404, not a throw', async () => {
    const id = lt.trace('rated', (trace) => trace.id);
    expect(await lt.feedback({ traceId: id, score: 0.9, comment: 'spot on', metadata: { via: 'sdk' } })).toMatchObject({ ok: true });
    const res = await h.ctx.app.inject({ method: 'GET', url: `/v1/feedback?trace_id=${id}`, headers: h.tenant.auth });
    expect(res.json().feedback).toMatchObject([{ trace_id: id, score: 0.9, label: 'good', comment: 'spot on', metadata: { via: 'sdk' } }]);
    expect(await lt.feedback({ traceId: '00000000-0000-4000-8000-000000000000', score: 0.1 })).toMatchObject({ ok: false, status: 404 });
  });
});

it('the package: ESM with its types, no runtime dependency, the vendor SDKs optional peers', () => {
  const installed = path.join(h.project, 'node_modules/@looptrace/sdk');
  const manifest = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8'));
  expect(manifest).toMatchObject({ type: 'module', engines: { node: '>=18' }, peerDependenciesMeta: { openai: { optional: true }, '@anthropic-ai/sdk': { optional: true } } });
  expect(manifest.dependencies).toBeUndefined();
  expect(existsSync(path.join(installed, 'dist/index.d.ts'))).toBe(true);
  expect(readFileSync(path.join(installed, 'dist/index.d.ts'), 'utf8')).toMatch(/Looptrace/);
});
