import { z } from 'zod';
import { isoDate } from '../../platform/schemas.js';

export const complianceQuery = z.object({
  days: z.coerce.number().int().min(1).max(90).default(30).describe('how many past UTC days of audit anchors to check'),
});

const sealedSecrets = z.object({
  kind: z.enum(['llm_connection_api_key', 'webhook_secret']),
  count: z.number().int(),
  opens_with_current_key: z.number().int().describe('sealed values that authenticate and open with the key in use; less than count means some were sealed with another key'),
});

const anchorDay = z.object({
  date: z.string().describe('UTC day'),
  status: z
    .enum(['verified', 'missing', 'signature_invalid', 'chain_mismatch', 'unknown_key'])
    .describe(
      'verified: the Ed25519 signature opens over the manifest and the audit chain still holds that head; missing: the day ended without an anchor; ' +
        'signature_invalid: the stored anchor was altered; chain_mismatch: the audit log no longer holds that head; unknown_key: signed by a key this service does not hold',
    ),
  head_hash: z.string().nullable(),
  row_count: z.number().int().nullable(),
  anchored_at: isoDate.nullable(),
  key_id: z.string().nullable(),
});

export const complianceReport = z
  .object({
    tenant_id: z.guid(),
    generated_at: isoDate,
    retention: z.array(
      z.object({
        project_id: z.guid(),
        name: z.string(),
        archived: z.boolean(),
        retention_days: z.number().int().nullable().describe('null: kept until deleted'),
        last_swept_at: isoDate.nullable().describe('the last sweep that removed everything of this project older than its cutoff then'),
        last_cutoff: isoDate.nullable().describe('the cutoff that sweep applied'),
        oldest_trace_at: isoDate.nullable().describe('earliest start among the project\u2019s stored traces: at or after last_cutoff when retention holds'),
      }),
    ),
    encryption: z.object({
      algorithm: z.literal('AES-256-GCM'),
      key: z.literal('LOOPTRACE_SECRET_KEY').describe('the operator-held 32-byte key that seals every stored secret'),
      secrets: z.array(sealedSecrets),
      api_keys: z.literal('sha256').describe('API keys are stored only as SHA-256 digests, never the secret'),
      audit_signing_key: z.literal('sealed').describe('the Ed25519 anchor-signing private key is sealed with the same key'),
    }),
    audit_anchors: z.array(anchorDay).describe('every ended UTC day of the window since the tenant was created, oldest first'),
    open_data_subject_requests: z.array(
      z.object({ id: z.guid(), type: z.enum(['erasure', 'export']), status: z.string(), created_at: isoDate }),
    ),
  })
  .describe('ComplianceReport');
export type ComplianceReport = z.infer<typeof complianceReport>;
