import type { ClickHouseStore } from './clickhouse.js';
import { renderClickHouseDdl } from './migrate.js';

/**
 * Removing expired rows from a ClickHouse table (data retention, src/modules/retention): the
 * mechanics shared by every table, for the module that owns the table to call with its own
 * predicate. Two ways, cheapest first:
 *
 * 1. Whole monthly partitions (`PARTITION BY toYYYYMM(<time>)`) that end at or before the cutoff
 *    of every (tenant, project) with rows in them are dropped; a project without a retention
 *    period (no cutoff) blocks the drop. The drop names the parts it inspected
 *    (`ALTER TABLE … DROP PART`, one per part) rather than `DROP PARTITION`: a part written into
 *    that month after the inspection (a backdated trace of a project that keeps its data) is never
 *    removed unseen. With no such write, every part of the partition goes: the partition is gone.
 * 2. For each project with a cutoff, its expired rows left anywhere: a lightweight
 *    `DELETE FROM … IN PARTITION ID … WHERE <tenant, project, older than cutoff>`, one statement
 *    per partition that holds such rows, only those partitions.
 *
 * Both statements carry ON CLUSTER in cluster mode, as the DDL does (clickhouse/*.sql). Lightweight
 * DELETE is synchronous by default (`lightweight_deletes_sync`), so a sweep that returned has done
 * what it reports. It works on every table this is used for (ReplacingMergeTree, and the HNSW
 * tables' MergeTree with a vector_similarity index; checked on the embedded 26.x engine).
 */

/** A project's retention cutoff: its rows older than this (epoch ms) are expired. */
export interface ProjectCutoff {
  tenantId: string;
  projectId: string;
  cutoffMs: number;
}

/** Rows of one project that one step removed. */
export interface RemovedRows {
  tenantId: string;
  projectId: string;
  rows: number;
}

/** What one sweep did to one table. */
export interface TableExpiry {
  table: string;
  /**
   * Monthly partitions (id `YYYYMM`) whose parts were dropped, with each project's rows in them;
   * `complete`: every part the sweep inspected went (a merge can get in the way of the last ones).
   */
  dropped: { partition: string; parts: number; complete: boolean; projects: RemovedRows[] }[];
  /** Rows removed by lightweight DELETE, per project and partition. */
  deleted: (RemovedRows & { partition: string })[];
  /** Projects whose expired rows could not all be deleted (logged; the next sweep tries again). */
  failed: { tenantId: string; projectId: string }[];
}

/** A WHERE condition that starts with the tenant (clickhouse-where.ts TenantWhere: `.sql`, `.params`). */
export interface TenantCondition {
  sql: string;
  params: Record<string, unknown>;
}

export interface ExpiryLog {
  warn(details: object, message: string): void;
}

export interface ExpiringTableSpec {
  /** A table name from code, never from input. */
  table: string;
  /** Names the table's statements in log_comment and store metrics (`<name>.drop_part`, `<name>.delete`). */
  name: string;
  /** Whether the table is partitioned by `toYYYYMM(<its time column>)`: only then are partitions dropped. */
  monthly: boolean;
  /** The project's rows expired at `cutoffMs`; the condition must start with its tenant. */
  expired(tenantId: string, projectId: string, cutoffMs: number): TenantCondition;
  /** project_id values that never block a drop (the metrics rollup's per-tenant marker rows). */
  ignoredProjects?: readonly string[];
}

const MONTH_ID = /^(\d{4})(\d{2})$/;

/** The instant a monthly partition (`YYYYMM`) ends, epoch ms; null for another partition id. */
export function monthlyPartitionEnd(partitionId: string): number | null {
  const match = MONTH_ID.exec(partitionId);
  if (!match) return null;
  const [, year, month] = match;
  // Date.UTC takes a 0-based month: the 1-based month number is the next month's index.
  return Date.UTC(Number(year), Number(month), 1);
}

const key = (tenantId: string, projectId: string) => `${tenantId}/${projectId}`;

interface PartRow {
  name: string;
  partition_id: string;
}

interface PartProjectRow {
  part: string;
  tenant_id: string;
  project_id: string;
  rows: number | string;
}

/**
 * The expiry of one table, with its owner's predicate (see the file comment). Every read goes to
 * the primary, where the drops and deletes run: parts are the primary's own, and a backdated write
 * that blocks a drop must be seen.
 */
export function expiringTable(ch: ClickHouseStore, spec: ExpiringTableSpec) {
  const ignored = new Set(spec.ignoredProjects ?? []);
  const onCluster = (statement: string) => renderClickHouseDdl(statement, ch.cluster);

  /** Active parts of the table by monthly partition, for partitions that end at or before `untilMs`. */
  async function partitionsEndingBy(untilMs: number): Promise<Map<string, string[]>> {
    const parts = await ch.rowsFromPrimary<PartRow>(
      `${spec.name}.parts`,
      'SELECT name, partition_id FROM system.parts WHERE database = currentDatabase() AND table = {table:String} AND active',
      { table: spec.table },
    );
    const byPartition = new Map<string, string[]>();
    for (const part of parts) {
      const end = monthlyPartitionEnd(part.partition_id);
      if (end === null || end > untilMs) continue;
      byPartition.set(part.partition_id, [...(byPartition.get(part.partition_id) ?? []), part.name]);
    }
    return byPartition;
  }

  /**
   * Drops the partition's inspected parts if every project with rows in it is expired there.
   * Returns what was dropped (null when a project blocks it); stops at the first part that cannot
   * be dropped (merged away meanwhile), reporting the parts dropped before it.
   */
  async function dropIfExpired(
    partition: string,
    parts: readonly string[],
    cutoffs: ReadonlyMap<string, number>,
    log: ExpiryLog,
  ): Promise<TableExpiry['dropped'][number] | null> {
    const end = monthlyPartitionEnd(partition)!;
    const expiredThere = [...cutoffs].filter(([, cutoffMs]) => cutoffMs >= end).map(([k]) => k);
    // Cross-tenant reads of ids and counts only, like the metrics rollup's active-tenant scan. The
    // first stops at the first row of a project that blocks the drop: an old month that a project
    // without retention keeps is judged again every sweep, and costs a granule, not a scan.
    const blocker = await ch.rowsFromPrimary<{ tenant_id: string }>(
      `${spec.name}.partition_blocker`,
      `SELECT tenant_id FROM ${spec.table}
       WHERE _partition_id = {partition:String} AND project_id NOT IN {ignored:Array(UUID)}
         AND concat(toString(tenant_id), '/', toString(project_id)) NOT IN {expired:Array(String)}
       LIMIT 1`,
      { partition, ignored: [...ignored], expired: expiredThere },
    );
    if (blocker.length > 0) return null;
    const present = await ch.rowsFromPrimary<PartProjectRow>(
      `${spec.name}.partition_projects`,
      `SELECT _part AS part, tenant_id, project_id, count() AS rows FROM ${spec.table}
       WHERE _partition_id = {partition:String} GROUP BY part, tenant_id, project_id`,
      { partition },
    );
    // Rows written since the check above are judged again: they may belong to a project that keeps its data.
    const blocked = present.some((p) => !ignored.has(p.project_id) && !((cutoffs.get(key(p.tenant_id, p.project_id)) ?? -Infinity) >= end));
    if (blocked) return null;
    const removed = new Map<string, RemovedRows>();
    let dropped = 0;
    for (const part of parts) {
      try {
        await ch.command(`${spec.name}.drop_part`, onCluster(`ALTER TABLE ${spec.table} {on_cluster} DROP PART {part:String}`), { part });
      } catch (err) {
        // Merged into a new part meanwhile: that part's rows are deleted below, or dropped next sweep.
        log.warn({ err, table: spec.table, partition, part }, 'retention: a part could not be dropped; its expired rows are deleted instead');
        break;
      }
      dropped += 1;
      for (const p of present) {
        if (p.part !== part || ignored.has(p.project_id)) continue;
        const k = key(p.tenant_id, p.project_id);
        const entry = removed.get(k) ?? { tenantId: p.tenant_id, projectId: p.project_id, rows: 0 };
        entry.rows += Number(p.rows);
        removed.set(k, entry);
      }
    }
    return dropped === 0 ? null : { partition, parts: dropped, complete: dropped === parts.length, projects: [...removed.values()] };
  }

  return {
    table: spec.table,

    /**
     * Drops what can be dropped whole, then deletes each project's remaining expired rows.
     * `cutoffs` must hold every project with a retention period: a project missing from it keeps
     * its rows and blocks the drop of every partition it has rows in.
     */
    async expire(cutoffs: readonly ProjectCutoff[], log: ExpiryLog): Promise<TableExpiry> {
      const outcome: TableExpiry = { table: spec.table, dropped: [], deleted: [], failed: [] };
      if (cutoffs.length === 0) return outcome;
      if (spec.monthly) {
        const byProject = new Map(cutoffs.map((c) => [key(c.tenantId, c.projectId), c.cutoffMs]));
        const latest = Math.max(...cutoffs.map((c) => c.cutoffMs));
        for (const [partition, parts] of await partitionsEndingBy(latest)) {
          const dropped = await dropIfExpired(partition, parts, byProject, log);
          if (dropped) outcome.dropped.push(dropped);
        }
      }
      for (const { tenantId, projectId, cutoffMs } of cutoffs) {
        const where = spec.expired(tenantId, projectId, cutoffMs);
        if (!where.sql.startsWith('tenant_id = {tenant:UUID}')) throw new Error(`${spec.name}: the expiry condition must start with the tenant`);
        try {
          const partitions = await ch.rowsFromPrimary<{ partition: string; rows: number | string }>(
            `${spec.name}.expired`,
            `SELECT _partition_id AS partition, count() AS rows FROM ${spec.table} WHERE ${where.sql} GROUP BY partition ORDER BY partition`,
            where.params,
            { log_comment: `${spec.name}.expired tenant=${tenantId}` },
          );
          for (const { partition, rows } of partitions) {
            await ch.command(
              `${spec.name}.delete`,
              onCluster(`DELETE FROM ${spec.table} {on_cluster} IN PARTITION ID {retention_partition:String} WHERE ${where.sql}`),
              { ...where.params, retention_partition: partition },
            );
            outcome.deleted.push({ tenantId, projectId, partition, rows: Number(rows) });
          }
        } catch (err) {
          // One project's failure leaves the others' deletes to run; the sweep reports it and is retried.
          log.warn({ err, table: spec.table, tenant_id: tenantId, project_id: projectId }, 'retention: deleting expired rows failed');
          outcome.failed.push({ tenantId, projectId });
        }
      }
      return outcome;
    },
  };
}

export type ExpiringTable = ReturnType<typeof expiringTable>;
