import { z } from 'zod';
import type { AuditAnchorRow, AuditAnchorService } from '../../platform/audit/anchor.js';
import { checkAnchoredDays, type AnchorDayCheck } from '../../platform/audit/anchor-check.js';
import { verifyChain, type AuditRow, type ChainVerification } from '../../platform/audit/chain.js';
import { decodeCursor, toPage } from '../../platform/cursor.js';
import type { Sql } from '../../stores/pg.js';
import type { AuditLogRepository } from './repo.js';
import type { AuditAnchorView, AuditEntryView, ListAuditLogQuery } from './schemas.js';

const auditCursor = z.object({ seq: z.number().int().positive() });

export function toAuditEntry(row: AuditRow): AuditEntryView {
  const { tenant_id: _tenant, created_at, ...entry } = row;
  return { ...entry, created_at: created_at.toISOString() };
}

/** The public verification answer; an unknown tenant or day is "not verified", never an error. */
export function toAnchorView(date: string, anchor: AuditAnchorRow | undefined, expectedHeadHash?: string): AuditAnchorView {
  const matches = expectedHeadHash === undefined ? {} : { hash_matches: anchor?.head_hash === expectedHeadHash };
  if (!anchor) {
    return { verified: false, date, head_hash: null, row_count: null, s3_key: null, anchored_at: null, ...matches, signature: null, key_id: null };
  }
  return {
    verified: true,
    date: anchor.date,
    head_hash: anchor.head_hash,
    row_count: anchor.row_count,
    s3_key: anchor.s3_key,
    anchored_at: anchor.anchored_at.toISOString(),
    ...matches,
    signature: anchor.signature,
    key_id: anchor.key_id,
  };
}

export class AuditService {
  constructor(
    private readonly sql: Sql,
    private readonly repo: AuditLogRepository,
    private readonly anchors: AuditAnchorService,
  ) {}

  async list(tenantId: string, query: ListAuditLogQuery) {
    const beforeSeq = query.cursor ? decodeCursor(query.cursor, auditCursor).seq : null;
    const rows = await this.repo.list(
      tenantId,
      { beforeSeq, from: query.from ? new Date(query.from) : null, to: query.to ? new Date(query.to) : null },
      query.limit + 1,
    );
    const page = toPage(rows, query.limit, (last) => ({ seq: last.seq }));
    return { entries: page.items.map(toAuditEntry), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  verifyChain(tenantId: string): Promise<ChainVerification> {
    return verifyChain(this.sql, tenantId);
  }

  async verifyAnchor(tenantId: string, date: string, expectedHeadHash?: string): Promise<AuditAnchorView> {
    return toAnchorView(date, await this.anchors.find(tenantId, date), expectedHeadHash);
  }

  /** Each ended UTC day since `from`, with its anchor's signature and chain head checked. */
  anchoredDays(tenantId: string, from: Date, now: Date): Promise<AnchorDayCheck[]> {
    return checkAnchoredDays(this.sql, this.anchors, tenantId, from, now);
  }

  async publicKey() {
    const key = await this.anchors.signingKey();
    return { key_id: key.keyId, algorithm: 'Ed25519' as const, public_key_pem: key.publicKeyPem };
  }
}
