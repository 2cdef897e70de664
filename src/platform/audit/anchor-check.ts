import type { Sql } from '../../stores/pg.js';
import type { AuditAnchorRow, AuditAnchorService } from './anchor.js';
import { utcDay } from './anchor.js';
import { canonicalJson, GENESIS_HASH } from './chain.js';

const DAY_MS = 86_400_000;

/**
 * verified: the signature opens over the manifest and the chain still holds that head at that row;
 * missing: the day has ended and was not anchored; signature_invalid: the stored row was altered;
 * chain_mismatch: the audit log no longer has that head (rows rewritten or removed since);
 * unknown_key: signed by a key this service does not hold (rotated away).
 */
export type AnchorStatus = 'verified' | 'missing' | 'signature_invalid' | 'chain_mismatch' | 'unknown_key';

export interface AnchorDayCheck {
  date: string;
  status: AnchorStatus;
  anchor: AuditAnchorRow | null;
}

/** Every ended UTC day from `from` to the day before `now`, each with its anchor checked. */
export async function checkAnchoredDays(
  sql: Sql,
  anchors: AuditAnchorService,
  tenantId: string,
  from: Date,
  now: Date,
): Promise<AnchorDayCheck[]> {
  const first = utcDay(from);
  const last = utcDay(new Date(now.getTime() - DAY_MS));
  if (first > last) return [];
  const [rows, key] = await Promise.all([anchors.between(tenantId, first, last), anchors.signingKey()]);
  const heads = await chainHeads(sql, tenantId, rows.map((r) => r.row_count));
  const byDate = new Map(rows.map((r) => [r.date, r]));
  const days: AnchorDayCheck[] = [];
  for (let t = Date.parse(`${first}T00:00:00Z`); utcDay(new Date(t)) <= last; t += DAY_MS) {
    const date = utcDay(new Date(t));
    const anchor = byDate.get(date) ?? null;
    days.push({ date, anchor, status: anchor ? statusOf(anchor, key, heads) : 'missing' });
  }
  return days;
}

function statusOf(
  anchor: AuditAnchorRow,
  key: { keyId: string; verify(data: Buffer, signature: Buffer): boolean },
  heads: Map<number, string>,
): AnchorStatus {
  if (anchor.key_id !== key.keyId) return 'unknown_key';
  const manifest = canonicalJson({
    anchored_at: anchor.anchored_at.toISOString(),
    date: anchor.date,
    head_hash: anchor.head_hash,
    row_count: anchor.row_count,
    tenant_id: anchor.tenant_id,
  });
  if (!key.verify(Buffer.from(manifest, 'utf8'), Buffer.from(anchor.signature, 'base64'))) return 'signature_invalid';
  return heads.get(anchor.row_count) === anchor.head_hash ? 'verified' : 'chain_mismatch';
}

/** The chain's hash at each row count (0 is the genesis). */
async function chainHeads(sql: Sql, tenantId: string, rowCounts: number[]): Promise<Map<number, string>> {
  const rows = await sql<{ seq: number; hash: string }[]>`
    select seq, hash from audit_log where tenant_id = ${tenantId} and seq = any(${rowCounts}::bigint[])`;
  return new Map<number, string>([[0, GENESIS_HASH], ...rows.map((r): [number, string] => [Number(r.seq), r.hash])]);
}
