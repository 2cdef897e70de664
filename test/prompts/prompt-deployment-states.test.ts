import { describe, expect, it } from 'vitest';
import { decide, replayMessages, type Rule } from '../../src/modules/prompts/ab-harness.js';
import {
  DEPLOYMENT_STATUSES,
  nextStatus,
  OPEN_STATUSES,
  restoresPrevious,
  TERMINAL_STATUSES,
  TRANSITIONS,
  type DeploymentStatus,
  type Trigger,
} from '../../src/modules/prompts/deployments.js';
import { runsVersion } from '../../src/modules/prompts/monitor.js';
import { parseProposal } from '../../src/modules/prompts/proposer.js';

// The spec's table (api-v1.md, States and transitions: PromptDeployment), row by row.
const SPEC_TABLE: [DeploymentStatus, Trigger, DeploymentStatus][] = [
  ['proposed', 'start_ab', 'ab_running'],
  ['ab_running', 'ab_pass', 'ab_passed'],
  ['ab_running', 'ab_fail', 'ab_failed'],
  ['ab_passed', 'autoship', 'shipped'],
  ['ab_passed', 'approve', 'shipped'],
  ['shipped', 'start_monitoring', 'monitoring'],
  ['monitoring', 'regress', 'regressed'],
  ['regressed', 'auto_rollback', 'rolled_back'],
  ['shipped', 'rollback', 'rolled_back'],
  ['monitoring', 'rollback', 'rolled_back'],
  ['regressed', 'rollback', 'rolled_back'],
  ...(['proposed', 'ab_running', 'ab_passed', 'shipped', 'monitoring', 'regressed'] as const).map(
    (from): [DeploymentStatus, Trigger, DeploymentStatus] => [from, 'reject', 'rejected'],
  ),
];

describe('prompt deployment transition table', () => {
  it.each(SPEC_TABLE)('%s --%s--> %s', (from, trigger, to) => {
    expect(nextStatus(from, trigger)).toBe(to);
  });

  it('allows no move outside the spec table', () => {
    const allowed = new Set(SPEC_TABLE.map(([from, trigger]) => `${from}:${trigger}`));
    for (const from of DEPLOYMENT_STATUSES) {
      for (const trigger of Object.keys(TRANSITIONS) as Trigger[]) {
        if (!allowed.has(`${from}:${trigger}`)) expect(nextStatus(from, trigger), `${from} by ${trigger}`).toBeNull();
      }
    }
  });

  it('ends in ab_failed, rolled_back and rejected, from which nothing moves', () => {
    expect([...TERMINAL_STATUSES]).toEqual(['ab_failed', 'rolled_back', 'rejected']);
    expect(OPEN_STATUSES).toEqual(['proposed', 'ab_running', 'ab_passed', 'shipped', 'monitoring', 'regressed']);
    for (const from of TERMINAL_STATUSES) {
      for (const trigger of Object.keys(TRANSITIONS) as Trigger[]) expect(nextStatus(from, trigger)).toBeNull();
    }
  });

  it('marks only approve, reject and rollback as owner moves', () => {
    const manual = (Object.keys(TRANSITIONS) as Trigger[]).filter((t) => !TRANSITIONS[t].automatic);
    expect(manual.sort()).toEqual(['approve', 'reject', 'rollback']);
  });

  it('restores the previous version on rollbacks and on rejecting a live deployment only', () => {
    expect(restoresPrevious('auto_rollback', 'regressed')).toBe(true);
    expect(restoresPrevious('rollback', 'shipped')).toBe(true);
    expect(restoresPrevious('reject', 'monitoring')).toBe(true);
    expect(restoresPrevious('reject', 'ab_passed')).toBe(false);
    expect(restoresPrevious('approve', 'ab_passed')).toBe(false);
  });
});

describe('A/B decision', () => {
  const rule = { id: '0190c8a4-0000-7000-8000-000000000001', metric: 'cites', version: {} } as unknown as Rule;
  const replay = (passed: boolean) => [{ score: passed ? 1 : 0, passed }];

  it('passes when the candidate fails fewer replays and no metric drops', () => {
    const report = decide([rule], [replay(false), replay(true)], [replay(true), replay(true)], { failing: 1, passing: 1 });
    expect(report).toMatchObject({ decision: 'pass', failure_rate_before: 0.5, failure_rate_after: 0 });
    expect(report.metrics).toEqual([{ metric: 'cites', rule_id: rule.id, baseline: 0.5, candidate: 1, delta: 0.5 }]);
  });

  it('fails without improvement, on a metric drop, without rules or samples', () => {
    expect(decide([rule], [replay(false)], [replay(false)], { failing: 1, passing: 0 }).decision).toBe('fail');
    const dropped = decide([rule], [replay(true), replay(false)], [replay(false), replay(false)], { failing: 1, passing: 1 });
    expect(dropped).toMatchObject({ decision: 'fail' });
    expect(dropped.reason).toContain('cites drops');
    expect(decide([], [], [], { failing: 2, passing: 0 }).reason).toContain('no enabled eval rules');
    expect(decide([rule], [], [], { failing: 0, passing: 0 }).reason).toContain('could be replayed');
  });
});

describe('proposal parsing, replay messages, version reports', () => {
  it('reads the JSON object of an answer, fenced or not, and refuses anything else', () => {
    const json = JSON.stringify({ proposed_prompt: 'Be precise: {{input}}', rationale: 'Precision fixes it.' });
    expect(parseProposal(json)).toEqual({ proposed_prompt: 'Be precise: {{input}}', rationale: 'Precision fixes it.' });
    expect(parseProposal('```json\n' + json + '\n```')?.rationale).toBe('Precision fixes it.');
    expect(parseProposal('echo: {{input}}')).toBeNull();
    expect(parseProposal(JSON.stringify({ proposed_prompt: '', rationale: 'x' }))).toBeNull();
    expect(parseProposal('no json here')).toBeNull();
  });

  it('renders {{input}} templates into the user turn, other prompts as the system message', () => {
    expect(replayMessages('Answer: {{input}} {{ input }}', 'q$&')).toEqual([{ role: 'user', content: 'Answer: q$& q$&' }]);
    expect(replayMessages('You are terse.', 'q')).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'q' },
    ]);
  });

  it('counts a trace as running a version when a span names the prompt and the version', () => {
    expect(runsVersion([{ metadata: { prompt_name: 'support', prompt_version: 2 } }], 'support', 2)).toBe(true);
    expect(runsVersion([{ metadata: { prompt_name: 'support', prompt_version: '2' } }], 'support', 2)).toBe(true);
    expect(runsVersion([{ metadata: { prompt_name: 'support', prompt_version: 1 } }], 'support', 2)).toBe(false);
    expect(runsVersion([{ metadata: { prompt_version: 2 } }], 'support', 2)).toBe(false);
  });
});
