import type { AnchorDayCheck } from '../../platform/audit/anchor-check.js';
import type { SealedSecretsCheck } from '../../platform/crypto.js';
import type { AuditService } from '../audit/service.js';
import type { RetentionService } from '../retention/service.js';
import type { TenantService } from '../tenants/service.js';
import type { ComplianceReport } from './schemas.js';

const DAY_MS = 86_400_000;

export interface OpenSubjectRequest {
  id: string;
  type: 'erasure' | 'export';
  status: string;
  created_at: Date;
}

const iso = (d: Date | null) => d?.toISOString() ?? null;

const toAnchorDay = ({ date, status, anchor }: AnchorDayCheck) => ({
  date,
  status,
  head_hash: anchor?.head_hash ?? null,
  row_count: anchor?.row_count ?? null,
  anchored_at: anchor?.anchored_at.toISOString() ?? null,
  key_id: anchor?.key_id ?? null,
});

/** One page an auditor can read: what is kept how long, how secrets are sealed, whether the audit trail holds. */
export class ComplianceService {
  constructor(
    private readonly tenants: Pick<TenantService, 'get'>,
    private readonly retention: Pick<RetentionService, 'status'>,
    private readonly secrets: {
      llmConnections: { sealedSecrets(tenantId: string): Promise<SealedSecretsCheck> };
      webhooks: { sealedSecrets(tenantId: string): Promise<SealedSecretsCheck> };
    },
    private readonly audit: Pick<AuditService, 'anchoredDays'>,
    private readonly subjectRequests: { open(tenantId: string): Promise<OpenSubjectRequest[]> },
  ) {}

  async report(tenantId: string, days: number, now = new Date()): Promise<ComplianceReport> {
    const tenant = await this.tenants.get(tenantId);
    const from = new Date(Math.max(tenant.created_at.getTime(), now.getTime() - days * DAY_MS));
    const [projects, llmKeys, webhookSecrets, anchors, open] = await Promise.all([
      this.retention.status(tenantId),
      this.secrets.llmConnections.sealedSecrets(tenantId),
      this.secrets.webhooks.sealedSecrets(tenantId),
      this.audit.anchoredDays(tenantId, from, now),
      this.subjectRequests.open(tenantId),
    ]);
    return {
      tenant_id: tenantId,
      generated_at: now.toISOString(),
      retention: projects.map((p) => ({
        ...p,
        last_swept_at: iso(p.last_swept_at),
        last_cutoff: iso(p.last_cutoff),
        oldest_trace_at: iso(p.oldest_trace_at),
      })),
      encryption: {
        algorithm: 'AES-256-GCM',
        key: 'LOOPTRACE_SECRET_KEY',
        secrets: [
          { kind: 'llm_connection_api_key', ...llmKeys },
          { kind: 'webhook_secret', ...webhookSecrets },
        ],
        api_keys: 'sha256',
        audit_signing_key: 'sealed',
      },
      audit_anchors: anchors.map(toAnchorDay),
      open_data_subject_requests: open.map((r) => ({ ...r, created_at: r.created_at.toISOString() })),
    };
  }
}
