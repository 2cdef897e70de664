import type { Sql } from '../../stores/pg.js';
import { sha256Hex } from '../crypto.js';
import { newId } from '../ids.js';
import { KeyedBatcher } from '../keyed-batcher.js';
import { observeStoreCall } from '../metrics.js';

export const GENESIS_HASH = '0'.repeat(64);

export interface AuditEntry {
  actorType: 'user' | 'api_key' | 'system';
  actorId: string | null;
  action: string;
  resourceType: string | null;
  resourceId: string | null;
  requestId: string | null;
  details: Record<string, unknown>;
}

export interface AuditRow {
  tenant_id: string;
  seq: number;
  id: string;
  created_at: Date;
  actor_type: string;
  actor_id: string | null;
  action: string;
  resource_type: string | null;
  resource_id: string | null;
  request_id: string | null;
  details: Record<string, unknown>;
  prev_hash: string;
  hash: string;
}

/** JSON with object keys sorted at every depth: Postgres jsonb does not keep key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The hash covers every column but the hash itself, so altering any of them breaks the chain. */
export function rowHash(row: Omit<AuditRow, 'hash'>): string {
  return sha256Hex(
    canonicalJson({
      tenant_id: row.tenant_id,
      seq: row.seq,
      id: row.id,
      created_at: row.created_at.toISOString(),
      actor_type: row.actor_type,
      actor_id: row.actor_id,
      action: row.action,
      resource_type: row.resource_type,
      resource_id: row.resource_id,
      request_id: row.request_id,
      details: row.details,
      prev_hash: row.prev_hash,
    }),
  );
}

/**
 * Appends one row. The tenant's head row is locked for the transaction, so concurrent writers
 * queue behind each other and every row links to exactly one predecessor (no forks). Appends of
 * one tenant in this process are batched (KeyedBatcher): one transaction links all the rows that
 * arrived while the previous one ran, so busy tenants (an audit row per ingest request) do not
 * queue a transaction per row on the head's lock.
 */
export function appendAudit(sql: Sql, tenantId: string, entry: AuditEntry): Promise<AuditRow> {
  let batcher = batchers.get(sql);
  if (!batcher) {
    batcher = new KeyedBatcher((tenant, entries) => appendBatch(sql, tenant, entries));
    batchers.set(sql, batcher);
  }
  return batcher.submit(tenantId, entry);
}

const batchers = new WeakMap<Sql, KeyedBatcher<AuditEntry, AuditRow>>();

function appendBatch(sql: Sql, tenantId: string, entries: readonly AuditEntry[]): Promise<AuditRow[]> {
  return observeStoreCall('postgres', 'audit.append', () =>
    sql.begin(async (tx) => {
      await tx`insert into audit_heads (tenant_id, seq, head_hash) values (${tenantId}, 0, ${GENESIS_HASH})
               on conflict (tenant_id) do nothing`;
      const [head] = await tx<{ seq: number; head_hash: string }[]>`
        select seq, head_hash from audit_heads where tenant_id = ${tenantId} for update`;
      const rows: AuditRow[] = [];
      let prev = { seq: head!.seq, hash: head!.head_hash };
      for (const entry of entries) {
        const base = {
          tenant_id: tenantId,
          seq: prev.seq + 1,
          id: newId(),
          created_at: new Date(),
          actor_type: entry.actorType,
          actor_id: entry.actorId,
          action: entry.action,
          resource_type: entry.resourceType,
          resource_id: entry.resourceId,
          request_id: entry.requestId,
          details: JSON.parse(canonicalJson(entry.details)) as Record<string, unknown>,
          prev_hash: prev.hash,
        };
        const row: AuditRow = { ...base, hash: rowHash(base) };
        rows.push(row);
        prev = { seq: row.seq, hash: row.hash };
      }
      await tx`insert into audit_log ${tx(rows as unknown as Record<string, never>[])}`;
      await tx`update audit_heads set seq = ${prev.seq}, head_hash = ${prev.hash} where tenant_id = ${tenantId}`;
      return rows;
    }),
  );
}

export interface ChainVerification {
  valid: boolean;
  rows_checked: number;
  head_hash: string;
  /** First sequence number whose stored hash or link does not match, when invalid. */
  broken_at_seq: number | null;
  reason: string | null;
}

/** Recomputes the chain from genesis, in pages, up to `untilSeq` (inclusive) when given. */
export async function verifyChain(sql: Sql, tenantId: string, untilSeq?: number): Promise<ChainVerification> {
  let prev = GENESIS_HASH;
  let expectedSeq = 1;
  let checked = 0;
  const last = untilSeq ?? Number.MAX_SAFE_INTEGER;
  for (;;) {
    const page = await sql<AuditRow[]>`
      select * from audit_log where tenant_id = ${tenantId} and seq >= ${expectedSeq} and seq <= ${last}
      order by seq limit 1000`;
    for (const row of page) {
      const broken = (reason: string): ChainVerification => ({
        valid: false,
        rows_checked: checked,
        head_hash: prev,
        broken_at_seq: row.seq,
        reason,
      });
      if (row.seq !== expectedSeq) return broken(`sequence gap: expected ${expectedSeq}`);
      if (row.prev_hash !== prev) return broken('prev_hash does not link to the previous row');
      const { hash, ...rest } = row;
      if (rowHash(rest) !== hash) return broken('row content does not match its hash');
      prev = hash;
      expectedSeq += 1;
      checked += 1;
    }
    if (page.length < 1000) break;
  }
  return { valid: true, rows_checked: checked, head_hash: prev, broken_at_seq: null, reason: null };
}
