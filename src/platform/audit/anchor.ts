import { z } from 'zod';
import type { Config } from '../../config.js';
import type { Sql, TxSql } from '../../stores/pg.js';
import { AppError, badRequest, notFound } from '../errors.js';
import { anchorObjectKey, LocalAnchorStorage, type AnchorStorage } from './anchor-storage.js';
import { canonicalJson, GENESIS_HASH, verifyChain } from './chain.js';
import { S3AnchorStorage } from './s3-anchor-storage.js';
import { SigningKeyStore, type SigningKey } from './signing.js';

const DAY_MS = 86_400_000;
/** How many past days each daily anchoring run makes sure of (missed runs are made up within that). */
const CATCH_UP_DAYS = 7;

export interface AuditAnchorRow {
  tenant_id: string;
  date: string;
  head_hash: string;
  row_count: number;
  s3_key: string;
  /** base64 of the raw 64-byte Ed25519 signature over the manifest bytes. */
  signature: string;
  key_id: string;
  anchored_at: Date;
}

/** What is signed: exactly the canonical JSON bytes of this object (keys sorted, no spaces). */
const anchorManifest = z
  .object({
    anchored_at: z.string(),
    date: z.string(),
    head_hash: z.string(),
    row_count: z.number().int(),
    tenant_id: z.string(),
  })
  .strict();
type AnchorManifest = z.infer<typeof anchorManifest>;

export interface AnchorRunResult {
  date: string;
  anchors: AuditAnchorRow[];
  failures: { tenant_id: string; code: string; message: string }[];
}

/** Start of a UTC day given as YYYY-MM-DD; refuses impossible dates such as 2025-02-30. */
export function utcDayStart(date: string): Date {
  const start = /^\d{4}-\d{2}-\d{2}$/.test(date) ? new Date(`${date}T00:00:00.000Z`) : new Date(Number.NaN);
  if (Number.isNaN(start.getTime()) || start.toISOString().slice(0, 10) !== date) {
    throw badRequest('invalid_date', `date must be a UTC day YYYY-MM-DD, got ${JSON.stringify(date)}`);
  }
  return start;
}

export const utcDay = (instant: Date): string => instant.toISOString().slice(0, 10);

/** A day can be anchored once it has begun; one not yet over is sealed as of the anchoring instant. */
function anchorableDayStart(date: string, now: Date): Date {
  const start = utcDayStart(date);
  if (start.getTime() > now.getTime()) throw badRequest('invalid_date', `cannot anchor ${date}: the day has not begun`);
  return start;
}

// Dates come back from Postgres as JS Dates at UTC midnight of the stored day; keep them as text.
const ANCHOR_COLUMNS = (tx: Sql | TxSql) =>
  tx`tenant_id, to_char(date, 'YYYY-MM-DD') as date, head_hash, row_count, s3_key, signature, key_id, anchored_at`;

/**
 * Seals a tenant's audit chain head as of the end of a UTC day: Ed25519 over a small manifest,
 * stored write-once, recorded in audit_anchors. Anchors are cumulative (the head as of that day,
 * not that day's rows alone), so a day anchored early loses nothing: the next day's head covers
 * the rest. Every step is idempotent, so the daily job and the CLI may run it any number of times.
 */
export class AuditAnchorService {
  constructor(
    private readonly sql: Sql,
    private readonly signingKeys: SigningKeyStore,
    private readonly storage: AnchorStorage,
  ) {}

  signingKey(): Promise<SigningKey> {
    return this.signingKeys.get();
  }

  async find(tenantId: string, date: string, db: Sql | TxSql = this.sql): Promise<AuditAnchorRow | undefined> {
    const [row] = await db<AuditAnchorRow[]>`
      select ${ANCHOR_COLUMNS(db)} from audit_anchors where tenant_id = ${tenantId} and date = ${date}`;
    return row;
  }

  /** The tenant's anchors of the UTC days from `from` to `to` (inclusive), oldest first. */
  async between(tenantId: string, from: string, to: string): Promise<AuditAnchorRow[]> {
    return this.sql<AuditAnchorRow[]>`
      select ${ANCHOR_COLUMNS(this.sql)} from audit_anchors
      where tenant_id = ${tenantId} and date between ${from} and ${to} order by date`;
  }

  async anchor(tenantId: string, date: string, now: Date = new Date()): Promise<AuditAnchorRow> {
    const dayStart = anchorableDayStart(date, now);
    const existing = await this.find(tenantId, date);
    if (existing) return existing;
    const [tenant] = await this.sql`select 1 from tenants where id = ${tenantId}`;
    if (!tenant) throw notFound('tenant');
    return this.sql.begin(async (tx) => {
      // One anchorer per (tenant, date) at a time, across processes; the loser sees the winner's row.
      await tx`select pg_advisory_xact_lock(hashtextextended(${`audit-anchor:${tenantId}:${date}`}, 0))`;
      const raced = await this.find(tenantId, date, tx);
      if (raced) return raced;
      const head = await this.sealedHead(tenantId, new Date(dayStart.getTime() + DAY_MS));
      const key = await this.signingKeys.get();
      const s3Key = anchorObjectKey(tenantId, date);
      const proposed: AnchorManifest = {
        anchored_at: now.toISOString(),
        date,
        head_hash: head.hash,
        row_count: head.rowCount,
        tenant_id: tenantId,
      };
      const manifest = await this.storeManifest(s3Key, proposed, key);
      const signature = key.sign(manifest.bytes);
      await this.storeSignature(s3Key, manifest.bytes, signature, key);
      const [row] = await tx<AuditAnchorRow[]>`
        insert into audit_anchors (tenant_id, date, head_hash, row_count, s3_key, signature, key_id, anchored_at)
        values (${tenantId}, ${date}, ${head.hash}, ${head.rowCount}, ${s3Key}, ${signature.toString('base64')},
                ${key.keyId}, ${new Date(manifest.fields.anchored_at)})
        returning ${ANCHOR_COLUMNS(tx)}`;
      return row!;
    });
  }

  /** Every tenant that existed by the end of `date`; one tenant's failure does not stop the others. */
  async anchorDayForAllTenants(date: string, now: Date = new Date()): Promise<AnchorRunResult> {
    const dayEnd = new Date(anchorableDayStart(date, now).getTime() + DAY_MS);
    const result: AnchorRunResult = { date, anchors: [], failures: [] };
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const page = await this.sql<{ id: string }[]>`
        select id from tenants where created_at < ${dayEnd} and id > ${after} order by id limit 500`;
      for (const { id } of page) {
        try {
          result.anchors.push(await this.anchor(id, date, now));
        } catch (err) {
          const code = err instanceof AppError ? err.code : 'internal_error';
          result.failures.push({ tenant_id: id, code, message: err instanceof Error ? err.message : String(err) });
        }
      }
      if (page.length < 500) break;
      after = page[page.length - 1]!.id;
    }
    return result;
  }

  /**
   * The daily job: the UTC day that just ended, and the days before it back to `catchUpDays`, so a
   * run that was missed (Redis down at 00:15, its job lost with Redis's data) is made up the next
   * time. Days already anchored are answered from `audit_anchors` without writing anything.
   */
  async anchorRecentDaysForAllTenants(now: Date = new Date(), catchUpDays = CATCH_UP_DAYS): Promise<AnchorRunResult[]> {
    const runs: AnchorRunResult[] = [];
    for (let daysAgo = catchUpDays; daysAgo >= 1; daysAgo--) {
      runs.push(await this.anchorDayForAllTenants(utcDay(new Date(now.getTime() - daysAgo * DAY_MS)), now));
    }
    return runs;
  }

  /** Head of the chain as of `before`, after proving the chain up to it is intact. */
  private async sealedHead(tenantId: string, before: Date): Promise<{ hash: string; rowCount: number }> {
    const [last] = await this.sql<{ seq: number; hash: string }[]>`
      select seq, hash from audit_log where tenant_id = ${tenantId} and created_at < ${before}
      order by seq desc limit 1`;
    if (!last) return { hash: GENESIS_HASH, rowCount: 0 };
    const check = await verifyChain(this.sql, tenantId, last.seq);
    if (!check.valid || check.rows_checked !== last.seq || check.head_hash !== last.hash) {
      throw new AppError(409, 'audit_chain_broken', `refusing to anchor a broken audit chain: ${check.reason ?? 'head mismatch'}`, {
        broken_at_seq: check.broken_at_seq,
      });
    }
    return { hash: last.hash, rowCount: last.seq };
  }

  /**
   * Writes the manifest, or adopts one a crashed earlier run left behind when it seals the same
   * head (its anchored_at then wins). Anything else under that key is a conflict, never overwritten.
   */
  private async storeManifest(
    s3Key: string,
    proposed: AnchorManifest,
    key: SigningKey,
  ): Promise<{ bytes: Buffer; fields: AnchorManifest }> {
    const bytes = Buffer.from(canonicalJson(proposed), 'utf8');
    if ((await this.storage.writeOnce(s3Key, bytes)) === 'created') return { bytes, fields: proposed };
    const found = await this.storage.read(s3Key);
    const fields = found ? parseManifest(found) : undefined;
    const same =
      fields &&
      fields.tenant_id === proposed.tenant_id &&
      fields.date === proposed.date &&
      fields.head_hash === proposed.head_hash &&
      fields.row_count === proposed.row_count;
    if (!found || !same) throw anchorConflict(s3Key, key, 'a different manifest is already stored');
    return { bytes: found, fields };
  }

  private async storeSignature(s3Key: string, manifest: Buffer, signature: Buffer, key: SigningKey): Promise<void> {
    if ((await this.storage.writeOnce(`${s3Key}.sig`, signature)) === 'created') return;
    // Ed25519 is deterministic, so a crashed run's signature is byte-identical; accept any valid one.
    const found = await this.storage.read(`${s3Key}.sig`);
    if (!found || !key.verify(manifest, found)) throw anchorConflict(s3Key, key, 'a signature that does not verify is already stored');
  }
}

function parseManifest(bytes: Buffer): AnchorManifest | undefined {
  try {
    const parsed = anchorManifest.safeParse(JSON.parse(bytes.toString('utf8')));
    // Only bytes that are already canonical can be the signed form.
    return parsed.success && canonicalJson(parsed.data) === bytes.toString('utf8') ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

const anchorConflict = (s3Key: string, key: SigningKey, why: string) =>
  new AppError(409, 'anchor_conflict', `cannot anchor ${s3Key} (key ${key.keyId}): ${why}`);

/** S3 with Object Lock when AUDIT_ANCHOR_S3_BUCKET is set, else the local anchor directory. */
export function createAuditAnchorService(sql: Sql, config: Config): AuditAnchorService {
  const s3 = config.auditAnchor.s3;
  const storage = s3
    ? new S3AnchorStorage({ ...s3, retentionDays: config.auditAnchor.retentionDays })
    : new LocalAnchorStorage(config.auditAnchor.dir);
  return new AuditAnchorService(sql, new SigningKeyStore(sql, config.secretKey), storage);
}
