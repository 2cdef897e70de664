/**
 * The PromptDeployment state machine of spec/api-v1.md ("States and transitions"), as data: each
 * trigger names the states it may leave and the one it reaches. Nothing else moves a deployment;
 * the repository applies a move as a conditional UPDATE … WHERE status = any(from), so two
 * workers (or a worker and an owner) racing on one deployment change it once.
 */

export const DEPLOYMENT_STATUSES = [
  'proposed',
  'ab_running',
  'ab_passed',
  'ab_failed',
  'shipped',
  'monitoring',
  'regressed',
  'rolled_back',
  'rejected',
] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

/** Where a deployment's story ends: nothing moves it again (the spec leaves the set to us). */
export const TERMINAL_STATUSES = ['ab_failed', 'rolled_back', 'rejected'] as const satisfies readonly DeploymentStatus[];
export const OPEN_STATUSES = DEPLOYMENT_STATUSES.filter((s) => !(TERMINAL_STATUSES as readonly string[]).includes(s));
/** States in which the deployment's version is (or may still be) the prompt's active one. */
export const LIVE_STATUSES = ['shipped', 'monitoring', 'regressed'] as const satisfies readonly DeploymentStatus[];

export type Trigger =
  | 'start_ab'
  | 'ab_pass'
  | 'ab_fail'
  | 'autoship'
  | 'approve'
  | 'start_monitoring'
  | 'regress'
  | 'auto_rollback'
  | 'rollback'
  | 'reject';

export const TRANSITIONS: Record<Trigger, { from: readonly DeploymentStatus[]; to: DeploymentStatus; automatic: boolean }> = {
  start_ab: { from: ['proposed'], to: 'ab_running', automatic: true },
  ab_pass: { from: ['ab_running'], to: 'ab_passed', automatic: true },
  ab_fail: { from: ['ab_running'], to: 'ab_failed', automatic: true },
  autoship: { from: ['ab_passed'], to: 'shipped', automatic: true },
  approve: { from: ['ab_passed'], to: 'shipped', automatic: false },
  start_monitoring: { from: ['shipped'], to: 'monitoring', automatic: true },
  regress: { from: ['monitoring'], to: 'regressed', automatic: true },
  auto_rollback: { from: ['regressed'], to: 'rolled_back', automatic: true },
  rollback: { from: LIVE_STATUSES, to: 'rolled_back', automatic: false },
  reject: { from: OPEN_STATUSES, to: 'rejected', automatic: false },
};

/** The actor recorded (approved_by, audit) for automatic moves; owners are recorded by user id. */
export const SYSTEM_ACTORS = {
  autoship: 'system:autoship',
  autoRollback: 'system:auto_rollback',
  lifecycle: 'system:lifecycle',
  recurringCluster: 'system:recurring_cluster',
} as const;

/** The state `trigger` leads to from `from`, or null when the table has no such move. */
export function nextStatus(from: DeploymentStatus, trigger: Trigger): DeploymentStatus | null {
  const move = TRANSITIONS[trigger];
  return move.from.includes(from) ? move.to : null;
}

/** Moves that put the proposed prompt live, and moves that take it off again. */
export const SHIPS: readonly Trigger[] = ['autoship', 'approve'];
export const restoresPrevious = (trigger: Trigger, from: DeploymentStatus): boolean =>
  trigger === 'rollback' || trigger === 'auto_rollback' || (trigger === 'reject' && (LIVE_STATUSES as readonly string[]).includes(from));
