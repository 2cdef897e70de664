import { describe, expect, it } from 'vitest';
import { conversationOf, failingSpan } from '../../src/modules/control/executor.js';
import { nextAction, nextFallback, type GateInput } from '../../src/modules/control/gates.js';
import type { Span } from '../../src/modules/traces/schemas.js';
import { builtinEmbedding, cosineSimilarity } from '../../src/providers/builtin-embedding.js';

const base: GateInput = {
  steps: [{ type: 'retry' }],
  maxRetryDepth: 3,
  maxCascadeDepth: 5,
  requireApproval: false,
  previousStep: null,
  retries: 0,
  remediations: 0,
  fallbackLeft: false,
};
const route = { model: { provider: 'openai', model: 'gpt-4o-mini' }, fallbacks: [{ provider: 'openai', model: 'gpt-4o' }, { provider: 'anthropic', model: 'claude-3-5-haiku-latest' }] } as const;

describe('control gates', () => {
  it('retries until the retry cap, then escalates with retry_threshold_exceeded and the count', () => {
    expect(nextAction(base)).toMatchObject({ type: 'retry', stepIndex: 0, escalationReason: null, requireApproval: false });
    expect(nextAction({ ...base, previousStep: 0, retries: 2, remediations: 2 })).toMatchObject({ type: 'retry' });
    expect(nextAction({ ...base, previousStep: 0, retries: 3, remediations: 3 })).toEqual({
      type: 'escalate',
      stepIndex: 0,
      requireApproval: true,
      escalationReason: 'retry_threshold_exceeded',
      metadata: { retry_count: 3 },
    });
  });

  it('checks the cascade gate before the retry gate', () => {
    const both = nextAction({ ...base, previousStep: 0, retries: 3, remediations: 5 });
    expect(both).toMatchObject({ type: 'escalate', escalationReason: 'cascade_depth_exhausted', requireApproval: true, metadata: { remediation_count: 5 } });
    // Remediations of other policies count: a first action can already be over the cascade cap.
    expect(nextAction({ ...base, maxCascadeDepth: 2, remediations: 2 })).toMatchObject({ escalationReason: 'cascade_depth_exhausted' });
  });

  it('moves past a capped retry to a later remediation step instead of escalating', () => {
    const steps = [{ type: 'retry' }, { type: 'prompt_modification', instruction: 'Answer briefly.' }] as const;
    expect(nextAction({ ...base, steps: [...steps], previousStep: 0, retries: 3, remediations: 3 })).toMatchObject({ type: 'prompt_modification', stepIndex: 1 });
    // After the one prompt modification failed, nothing is left: escalated as exhausted.
    expect(nextAction({ ...base, steps: [...steps], previousStep: 1, retries: 3, remediations: 4 })).toMatchObject({ type: 'escalate', escalationReason: 'remediation_exhausted' });
  });

  it('repeats fallback_model while the route has untried models, then takes the next step', () => {
    const steps = [{ type: 'fallback_model', model_route_id: '0195e6a4-0000-7000-8000-000000000001' }, { type: 'escalate' }] as const;
    expect(nextAction({ ...base, steps: [...steps], fallbackLeft: true })).toMatchObject({ type: 'fallback_model', stepIndex: 0 });
    expect(nextAction({ ...base, steps: [...steps], previousStep: 0, fallbackLeft: true, remediations: 1 })).toMatchObject({ type: 'fallback_model', stepIndex: 0 });
    expect(nextAction({ ...base, steps: [...steps], previousStep: 0, fallbackLeft: false, remediations: 2 })).toMatchObject({ type: 'escalate', stepIndex: 1, escalationReason: 'remediation_exhausted' });
    // A route without fallbacks skips the step from the start.
    expect(nextAction({ ...base, steps: [steps[0], { type: 'retry' }] })).toMatchObject({ type: 'retry', stepIndex: 1 });
  });

  it('passes require_approval to remediations; escalations always need approval', () => {
    expect(nextAction({ ...base, requireApproval: true })).toMatchObject({ type: 'retry', requireApproval: true });
    expect(nextAction({ ...base, steps: [{ type: 'escalate' }] })).toMatchObject({ type: 'escalate', requireApproval: true, escalationReason: 'remediation_exhausted' });
  });

  it("picks the route's first fallback the chain has not tried", () => {
    expect(nextFallback(route, [])).toEqual({ provider: 'openai', model: 'gpt-4o' });
    expect(nextFallback(route, ['gpt-4o'])).toEqual({ provider: 'anthropic', model: 'claude-3-5-haiku-latest' });
    expect(nextFallback(route, ['gpt-4o', 'claude-3-5-haiku-latest'])).toBeNull();
  });
});

const span = (overrides: Partial<Span>): Span =>
  ({ id: crypto.randomUUID(), type: 'llm', input: 'hi', output: '', error: null, metadata: {}, start_time: '2026-11-01T12:00:00.000Z', ...overrides }) as Span;

describe('what a remediation re-runs', () => {
  it('takes the llm span with an error, else the last llm span', () => {
    const first = span({ start_time: '2026-11-01T12:00:00.000Z' });
    const failed = span({ start_time: '2026-11-01T12:00:01.000Z', error: 'timed out' });
    const last = span({ start_time: '2026-11-01T12:00:02.000Z' });
    const tool = span({ type: 'tool', start_time: '2026-11-01T12:00:03.000Z' });
    expect(failingSpan([last, failed, first, tool])).toBe(failed);
    expect(failingSpan([last, first, tool])).toBe(last);
    expect(failingSpan([tool])).toBeUndefined();
  });

  it('reads the system prompt from metadata, else the first system message of a JSON conversation', () => {
    const messages = [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'Capital of France?' }];
    expect(conversationOf(span({ input: JSON.stringify(messages) }))).toEqual({ system: 'Be terse.', turns: [messages[1]] });
    expect(conversationOf(span({ input: JSON.stringify(messages), metadata: { system_prompt: 'Be kind.' } }))).toEqual({ system: 'Be kind.', turns: [messages[1]] });
    expect(conversationOf(span({ input: 'plain question' }))).toEqual({ system: null, turns: [{ role: 'user', content: 'plain question' }] });
  });
});

describe('builtin embedding', () => {
  it('is deterministic, unit length, and closer for texts sharing words', () => {
    const a = builtinEmbedding('The capital of France is Paris');
    expect(builtinEmbedding('The capital of France is Paris')).toEqual(a);
    expect(Math.hypot(...a)).toBeCloseTo(1, 10);
    const near = cosineSimilarity(a, builtinEmbedding('Paris is the capital of France!'));
    const far = cosineSimilarity(a, builtinEmbedding('bananas grow in tropical climates'));
    expect(near).toBeCloseTo(1, 10);
    expect(far).toBeLessThan(near);
    expect(cosineSimilarity(a, builtinEmbedding(''))).toBe(0);
  });
});
