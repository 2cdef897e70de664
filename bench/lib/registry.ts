import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ClickHouseStore } from '../../src/stores/clickhouse.js';
import type { Sql } from '../../src/stores/pg.js';

/**
 * Registers a generated dataset's traces in the trace registry (Postgres), as ingest registers
 * every trace it stores: reads by id and searches locate traces there. One COPY per day of the
 * window, streamed from ClickHouse as CSV: the registry's triggers (eval and failure rule queues)
 * see a day's traces per statement, and the bench tenant has no rules, so nothing is queued.
 */
export async function registerGenerated(ch: ClickHouseStore, sql: Sql, tenantId: string, window: { fromMs: number; toMs: number }): Promise<number> {
  await sql`delete from trace_registry where tenant_id = ${tenantId}`;
  let registered = 0;
  for (let dayMs = window.fromMs; dayMs <= window.toMs; dayMs += 86_400_000) {
    const chunks = ch.stream(
      `SELECT tenant_id, id, project_id, concat(toString(started_at), '+00'), 'native', 'committed' FROM traces
       WHERE tenant_id = {tenant:UUID} AND started_at >= fromUnixTimestamp64Milli({from:Int64}) AND started_at < fromUnixTimestamp64Milli({to:Int64})`,
      { tenant: tenantId, from: dayMs, to: Math.min(dayMs + 86_400_000, window.toMs + 1) },
      'CSV',
    );
    const copy = await sql`copy trace_registry (tenant_id, trace_id, project_id, started_at, source, state) from stdin with (format csv)`.writable();
    await pipeline(
      Readable.from(
        (async function* () {
          for await (const chunk of chunks) {
            registered += chunk.rows;
            yield chunk.data;
          }
        })(),
      ),
      copy,
    );
  }
  return registered;
}
