import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate } from '../../platform/schemas.js';

const sha256HexString = z.string().regex(/^[0-9a-f]{64}$/);

export const auditEntry = z
  .object({
    seq: z.number().int().positive(),
    id: z.guid(),
    created_at: isoDate,
    actor_type: z.string(),
    actor_id: z.string().nullable(),
    action: z.string(),
    resource_type: z.string().nullable(),
    resource_id: z.string().nullable(),
    request_id: z.string().nullable(),
    details: z.record(z.string(), z.unknown()),
    prev_hash: sha256HexString.describe('hash of the previous row; 64 zeros for the first row'),
    hash: sha256HexString.describe('SHA-256 over the canonical JSON of every other column of this row'),
  })
  .describe('AuditLogEntry');
export type AuditEntryView = z.infer<typeof auditEntry>;

export const listAuditLogQuery = z.object({
  ...pageQuery,
  from: z.iso.datetime({ offset: true }).optional().describe('only rows created at or after this instant'),
  to: z.iso.datetime({ offset: true }).optional().describe('only rows created before this instant'),
});
export type ListAuditLogQuery = z.infer<typeof listAuditLogQuery>;

export const auditLogPage = z.object({
  entries: z.array(auditEntry).describe('newest first (highest seq first)'),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});

export const chainVerification = z
  .object({
    valid: z.boolean(),
    rows_checked: z.number().int(),
    head_hash: z.string().describe('hash of the last row that verified (64 zeros when none)'),
    broken_at_seq: z.number().int().nullable(),
    reason: z.string().nullable(),
  })
  .describe('AuditChainVerification');

export const verifyAnchorQuery = z.object({
  tenant_id: z.guid().transform((s) => s.toLowerCase()),
  date: z.iso.date().describe('UTC day YYYY-MM-DD'),
  expected_head_hash: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/)
    .transform((s) => s.toLowerCase())
    .optional(),
});

export const auditAnchorView = z
  .object({
    verified: z.boolean().describe('true when an anchor exists for the tenant and the date'),
    date: z.string(),
    head_hash: z.string().nullable(),
    row_count: z.number().int().nullable(),
    s3_key: z.string().nullable(),
    anchored_at: isoDate.nullable(),
    hash_matches: z.boolean().optional().describe('present only when expected_head_hash was supplied'),
    signature: z.string().nullable().describe('base64 Ed25519 signature over the manifest stored at s3_key'),
    key_id: z.string().nullable().describe('id of the signing key, see GET /audit/public-key'),
  })
  .describe('AuditAnchor');
export type AuditAnchorView = z.infer<typeof auditAnchorView>;

export const publicKeyView = z
  .object({
    key_id: z.string(),
    algorithm: z.literal('Ed25519'),
    public_key_pem: z.string().describe('SubjectPublicKeyInfo PEM, usable with openssl pkeyutl -verify -pubin'),
  })
  .describe('AuditPublicKey');
