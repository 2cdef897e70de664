import type { AuditEntry } from '../../platform/audit/chain.js';
import type { ProjectCutoff, TableExpiry } from '../../stores/clickhouse-expiry.js';
import type { AnomalyService } from '../anomalies/service.js';
import type { ControlSignals } from '../control/service.js';
import type { EvalService } from '../evals/service.js';
import type { FailureService } from '../failures/service.js';
import type { FeedbackService } from '../feedback/service.js';
import type { TraceRegistry } from '../ingest/service.js';
import type { AppLogger } from '../../platform/log.js';
import type { ProjectService } from '../projects/service.js';
import type { WebhookService } from '../webhooks/service.js';
import type { RetentionRepository } from './repo.js';

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;

/** Rows per Postgres statement: expired traces are handled 10k ids at a time, time-keyed rows 10k per delete. */
export const RETENTION_BATCH = 10_000;

/**
 * A project's cutoff at `nowMs`: now − retention_days (UTC), down to the whole minute, so that a
 * per-minute rollup row is never split between a removed and a kept part.
 */
export const cutoffOf = (nowMs: number, retentionDays: number): number =>
  Math.floor((nowMs - retentionDays * DAY_MS) / MINUTE_MS) * MINUTE_MS;

/** The ClickHouse side of one module's data: removes its projects' expired rows (stores/clickhouse-expiry.ts). */
export interface ExpiringStore {
  expire(cutoffs: readonly ProjectCutoff[]): Promise<TableExpiry[]>;
}

export interface RetentionDeps {
  projects: Pick<ProjectService, 'withRetention' | 'all'>;
  registry: Pick<TraceRegistry, 'expiredTraces' | 'eraseTraces' | 'oldestTraces'>;
  /** Run in this order: vectors (found through their spans), then trace rows and spans, then the rollup. */
  vectors: ExpiringStore;
  traceStore: ExpiringStore;
  metrics: ExpiringStore;
  evals: Pick<EvalService, 'eraseTraces'>;
  feedback: Pick<FeedbackService, 'eraseTraces'>;
  failures: Pick<FailureService, 'expireTraces'>;
  controlSignals: Pick<ControlSignals, 'eraseTraces'>;
  webhooks: Pick<WebhookService, 'expireBefore'>;
  anomalies: Pick<AnomalyService, 'expireBefore'>;
  /** The ingest counts of GET /v1/ingest/stats (src/modules/ingest/stats/service.ts). */
  ingestStats: { expireBefore(tenantId: string, projectId: string, cutoff: Date, batch: number): Promise<number> };
  /** Appends a system row to the tenant's audit chain (platform/audit/chain.ts appendAudit). */
  audit(tenantId: string, entry: AuditEntry): Promise<unknown>;
  /** The app's logger: one info line per project swept (when it has `info`), warnings otherwise. */
  log: AppLogger & { info?(details: object, message: string): void };
}

/** What one sweep did for one project. */
export interface ProjectSweep {
  tenant_id: string;
  project_id: string;
  retention_days: number;
  cutoff: string;
  /** Rows removed, by table (ClickHouse versions of a row count each; drops included). */
  removed: Record<string, number>;
  /** False when a step failed: the project's sweep is not recorded, the job fails and is retried. */
  complete: boolean;
}

export interface SweepResult {
  /** Another process was sweeping: this one did nothing. */
  skipped: boolean;
  swept_at: string;
  projects: ProjectSweep[];
  /** Monthly partitions dropped whole (their parts; see stores/clickhouse-expiry.ts). */
  dropped: { table: string; partition: string; parts: number; complete: boolean }[];
}

/** One project of a tenant as retention sees it (the compliance report's retention section). */
export interface ProjectRetentionStatus {
  project_id: string;
  name: string;
  archived: boolean;
  retention_days: number | null;
  /** The last sweep that removed everything of this project older than its cutoff then. */
  last_swept_at: Date | null;
  /** The cutoff that sweep applied. */
  last_cutoff: Date | null;
  /** The earliest start among the project's stored traces; null when it has none. */
  oldest_trace_at: Date | null;
}

const projectKey = (tenantId: string, projectId: string) => `${tenantId}/${projectId}`;

const add = (removed: Record<string, number>, table: string, rows: number) => {
  if (rows > 0) removed[table] = (removed[table] ?? 0) + rows;
};

/**
 * Data retention: per-project `retention_days`. The repeatable `retention` job calls `sweep`,
 * which removes, for every project with a retention period, the traces that started before its
 * cutoff and what was derived from them: in ClickHouse spans, trace rows, rollup minutes and span
 * vectors (whole monthly partitions where possible, lightweight deletes otherwise), in Postgres the
 * trace registry rows, evaluations, feedback, failure-cluster memberships, control signals, the
 * rule outboxes, webhook events with their deliveries, anomalies and ingest counts. Never dataset items (copies a
 * user chose to keep) and never the audit log. Idempotent: a sweep run twice, or after one that
 * died midway, removes what is left and nothing else.
 */
export class RetentionService {
  constructor(
    private readonly repo: RetentionRepository,
    private readonly deps: RetentionDeps,
  ) {}

  /** One sweep at `now`; sweeps are exclusive across processes (a concurrent one returns skipped). */
  async sweep(now = new Date()): Promise<SweepResult> {
    const swept = await this.repo.exclusive(() => this.sweepAll(now));
    return swept ?? { skipped: true, swept_at: now.toISOString(), projects: [], dropped: [] };
  }

  /** Every project of the tenant, archived ones too, with its retention and last sweep. */
  async status(tenantId: string): Promise<ProjectRetentionStatus[]> {
    const projects = await this.deps.projects.all(tenantId);
    const [sweeps, oldest] = await Promise.all([
      this.repo.sweeps(tenantId),
      this.deps.registry.oldestTraces(tenantId, projects.map((p) => p.id)),
    ]);
    const last = new Map(sweeps.map((s) => [s.project_id, s]));
    return projects.map((p) => ({
      project_id: p.id,
      name: p.name,
      archived: p.status === 'archived',
      retention_days: p.retention_days,
      last_swept_at: last.get(p.id)?.swept_at ?? null,
      last_cutoff: last.get(p.id)?.cutoff ?? null,
      oldest_trace_at: oldest.get(p.id) ?? null,
    }));
  }

  private async sweepAll(now: Date): Promise<SweepResult> {
    const targets = (await this.deps.projects.withRetention()).map((p) => ({ ...p, cutoffMs: cutoffOf(now.getTime(), p.retentionDays) }));
    const result: SweepResult = { skipped: false, swept_at: now.toISOString(), projects: [], dropped: [] };
    if (targets.length === 0) return result;

    const sweeps = new Map<string, ProjectSweep>(
      targets.map((t) => [
        projectKey(t.tenantId, t.projectId),
        { tenant_id: t.tenantId, project_id: t.projectId, retention_days: t.retentionDays, cutoff: new Date(t.cutoffMs).toISOString(), removed: {}, complete: true },
      ]),
    );
    const errors: unknown[] = [];

    // ClickHouse first, every project at once: whether a partition can be dropped depends on all of them.
    let vectorsDone = true;
    for (const [name, store] of [['vectors', this.deps.vectors], ['traces', this.deps.traceStore], ['metrics', this.deps.metrics]] as const) {
      // Vectors are found through their spans: the spans wait for a sweep that removed their vectors.
      if (name === 'traces' && !vectorsDone) continue;
      let tables: TableExpiry[];
      try {
        tables = await store.expire(targets);
      } catch (err) {
        // Nothing says which projects it reached: none of them counts as swept this time.
        this.deps.log.warn({ err, store: name }, 'retention: expiring ClickHouse rows failed');
        errors.push(err);
        for (const s of sweeps.values()) s.complete = false;
        if (name === 'vectors') vectorsDone = false;
        continue;
      }
      if (name === 'vectors' && tables.some((t) => t.failed.length > 0)) vectorsDone = false;
      for (const table of tables) {
        for (const drop of table.dropped) {
          result.dropped.push({ table: table.table, partition: drop.partition, parts: drop.parts, complete: drop.complete });
          for (const p of drop.projects) {
            const sweep = sweeps.get(projectKey(p.tenantId, p.projectId));
            if (sweep) add(sweep.removed, table.table, p.rows);
          }
        }
        for (const d of table.deleted) add(sweeps.get(projectKey(d.tenantId, d.projectId))!.removed, table.table, d.rows);
        for (const f of table.failed) sweeps.get(projectKey(f.tenantId, f.projectId))!.complete = false;
      }
    }

    for (const target of targets) {
      const sweep = sweeps.get(projectKey(target.tenantId, target.projectId))!;
      try {
        await this.expirePostgres(target.tenantId, target.projectId, new Date(target.cutoffMs), sweep.removed);
      } catch (err) {
        errors.push(err);
        sweep.complete = false;
        this.deps.log.warn({ err, tenant_id: target.tenantId, project_id: target.projectId }, 'retention: removing expired Postgres rows failed');
      }
      await this.finish(sweep, now).catch((err: unknown) => {
        errors.push(err);
        sweep.complete = false;
      });
      result.projects.push(sweep);
    }
    const incomplete = result.projects.filter((p) => !p.complete).length;
    if (errors.length > 0 || incomplete > 0) throw new AggregateError(errors, `retention sweep incomplete for ${incomplete} project(s)`);
    return result;
  }

  /**
   * Expired traces a batch at a time, found in the trace registry: first what hangs off them, then
   * their registry rows, so a sweep that dies midway finds the same traces again. Then the rows
   * that carry their own time (webhook events, anomalies, ingest counts).
   */
  private async expirePostgres(tenantId: string, projectId: string, cutoff: Date, removed: Record<string, number>): Promise<void> {
    const { registry, evals, feedback, failures, controlSignals, webhooks, anomalies, ingestStats } = this.deps;
    for (;;) {
      const traceIds = await registry.expiredTraces(tenantId, projectId, cutoff, RETENTION_BATCH);
      if (traceIds.length === 0) break;
      add(removed, 'evaluations', await evals.eraseTraces(tenantId, traceIds));
      add(removed, 'feedback', await feedback.eraseTraces(tenantId, traceIds));
      add(removed, 'failure_cluster_traces', await failures.expireTraces(tenantId, traceIds));
      add(removed, 'control_signals', await controlSignals.eraseTraces(tenantId, traceIds));
      add(removed, 'trace_registry', await registry.eraseTraces(tenantId, traceIds));
      if (traceIds.length < RETENTION_BATCH) break;
    }
    const hooks = await webhooks.expireBefore(tenantId, projectId, cutoff, RETENTION_BATCH);
    add(removed, 'webhook_events', hooks.events);
    add(removed, 'webhook_deliveries', hooks.deliveries);
    add(removed, 'anomalies', await anomalies.expireBefore(tenantId, projectId, cutoff, RETENTION_BATCH));
    add(removed, 'ingest_stats', await ingestStats.expireBefore(tenantId, projectId, cutoff, RETENTION_BATCH));
  }

  /** Logs the project's outcome; a complete sweep is recorded, and audited when it removed anything. */
  private async finish(sweep: ProjectSweep, now: Date): Promise<void> {
    const details = { tenant_id: sweep.tenant_id, project_id: sweep.project_id, retention_days: sweep.retention_days, cutoff: sweep.cutoff, removed: sweep.removed };
    if (!sweep.complete) {
      this.deps.log.warn(details, 'retention sweep of a project incomplete; retried');
      return;
    }
    this.deps.log.info?.(details, 'retention sweep of a project');
    await this.repo.recordSweep(sweep.tenant_id, sweep.project_id, now, new Date(sweep.cutoff), sweep.removed);
    if (Object.keys(sweep.removed).length > 0) {
      await this.deps.audit(sweep.tenant_id, {
        actorType: 'system',
        actorId: null,
        action: 'retention.sweep',
        resourceType: 'project',
        resourceId: sweep.project_id,
        requestId: null,
        details: { retention_days: sweep.retention_days, cutoff: sweep.cutoff, removed: sweep.removed },
      });
    }
  }
}
