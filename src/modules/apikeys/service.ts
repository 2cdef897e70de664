import { API_KEY_PREFIX, type Authenticator } from '../../platform/auth.js';
import { randomBase62, sha256 } from '../../platform/crypto.js';
import { notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { toIso } from '../../platform/schemas.js';
import type { Sql, TxSql } from '../../stores/pg.js';
import type { ProjectService } from '../projects/service.js';
import type { ApiKeyRepository, ApiKeyRow } from './repo.js';
import type { ApiKey, CreateApiKey, CreatedApiKey } from './schemas.js';

const SECRET_LENGTH = 40;
const PREFIX_LENGTH = 12;

function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    prefix: row.prefix,
    name: row.name,
    project_id: row.project_id,
    created_at: row.created_at.toISOString(),
    last_used_at: toIso(row.last_used_at),
    revoked_at: toIso(row.revoked_at),
    created_by_user_id: row.created_by_user_id,
    created_by_email: row.created_by_email,
    created_by_first_name: row.created_by_first_name,
    created_by_last_name: row.created_by_last_name,
    scopes: row.scopes,
  };
}

export class ApiKeyService {
  constructor(
    private readonly repo: ApiKeyRepository,
    private readonly projects: ProjectService,
    private readonly authenticator: Authenticator,
  ) {}

  /** Only the SHA-256 of the secret is stored; the secret itself exists only in this response. */
  async create(
    tenantId: string,
    input: CreateApiKey & { projectId: string },
    createdByUserId: string | null,
    db?: Sql | TxSql,
  ): Promise<CreatedApiKey> {
    const secret = API_KEY_PREFIX + randomBase62(SECRET_LENGTH);
    const id = newId();
    const scopes = [...new Set(input.scopes ?? [])];
    const prefix = secret.slice(0, PREFIX_LENGTH);
    const createdAt = await this.repo.insert(
      { id, tenantId, projectId: input.projectId, name: input.name, prefix, keyHash: sha256(secret), scopes, createdByUserId },
      db,
    );
    return { id, name: input.name, prefix, scopes, project_id: input.projectId, secret, created_at: createdAt.toISOString() };
  }

  /** API route entry: the default project must be one of the tenant's active projects. */
  async createForTenant(tenantId: string, input: CreateApiKey, createdByUserId: string | null): Promise<CreatedApiKey> {
    const project = input.project_id
      ? await this.projects.get(tenantId, input.project_id)
      : await this.projects.firstActive(tenantId);
    return this.create(tenantId, { ...input, projectId: project.id }, createdByUserId);
  }

  async list(tenantId: string): Promise<ApiKey[]> {
    return (await this.repo.list(tenantId)).map(toApiKey);
  }

  async revoke(tenantId: string, id: string): Promise<ApiKey> {
    if (!(await this.repo.revoke(tenantId, id))) throw notFound('API key');
    this.authenticator.forgetApiKey(id);
    const row = await this.repo.find(tenantId, id);
    return toApiKey(row!);
  }
}
