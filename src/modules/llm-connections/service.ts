import { z } from 'zod';
import type { Config } from '../../config.js';
import { decodeCursor, toPage } from '../../platform/cursor.js';
import { checkSealedSecrets, decryptSecret, encryptSecret, type SealedSecretsCheck } from '../../platform/crypto.js';
import { AppError, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { checkOutboundUrl, UnsafeUrlError } from '../../platform/ssrf.js';
import { createProvider } from '../../providers/index.js';
import { ProviderError, type LlmProvider } from '../../providers/types.js';
import type { LlmConnectionRepository, LlmConnectionRow, LlmProviderName } from './repo.js';
import type { CreateLlmConnection, LlmConnection } from './schemas.js';

export interface ResolvedProvider {
  provider: LlmProvider;
  /** The connection's default model; null for the server's own credentials. */
  defaultModel: string | null;
  source: 'tenant' | 'server';
}

const ENV_KEY_NAMES: Record<LlmProviderName, string> = { openai: 'OPENAI_API_KEY', anthropic: 'ANTHROPIC_API_KEY' };

function toLlmConnection(row: LlmConnectionRow): LlmConnection {
  return {
    id: row.id,
    provider: row.provider,
    name: row.name,
    base_url: row.base_url,
    api_key_last4: row.api_key_last4,
    default_model: row.default_model,
    created_at: row.created_at.toISOString(),
    created_by: row.created_by,
  };
}

const connectionCursor = z.object({ id: z.guid() });

/**
 * Tenants' own LLM credentials, and the provider every model call of a tenant goes through: the
 * tenant's newest connection for the vendor, else the operator's key from the environment.
 */
export class LlmConnectionService {
  constructor(
    private readonly repo: LlmConnectionRepository,
    private readonly providers: Config['providers'],
    private readonly secretKey: Buffer,
  ) {}

  async create(tenantId: string, input: CreateLlmConnection, createdBy: string | null): Promise<LlmConnection> {
    if (input.base_url) await this.checkBaseUrl(input.base_url);
    const row = await this.repo.insert(tenantId, {
      id: newId(),
      provider: input.provider,
      name: input.name ?? input.provider,
      base_url: input.base_url ?? null,
      api_key_ciphertext: encryptSecret(this.secretKey, input.api_key),
      api_key_last4: input.api_key.slice(-4),
      default_model: input.default_model ?? null,
      created_by: createdBy,
    });
    return toLlmConnection(row);
  }

  async list(tenantId: string, limit: number, cursor: string | undefined) {
    const after = cursor ? decodeCursor(cursor, connectionCursor).id : null;
    const rows = await this.repo.list(tenantId, after, limit + 1);
    const page = toPage(rows, limit, (last) => ({ id: last.id }));
    return { llm_connections: page.items.map(toLlmConnection), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  async get(tenantId: string, id: string): Promise<LlmConnection> {
    const row = await this.repo.find(tenantId, id);
    if (!row) throw notFound('llm connection');
    return toLlmConnection(row);
  }

  /** For the compliance report: the tenant's stored API keys, and whether each opens with the current key. */
  async sealedSecrets(tenantId: string): Promise<SealedSecretsCheck> {
    return checkSealedSecrets(this.secretKey, await this.repo.sealedKeys(tenantId));
  }

  async remove(tenantId: string, id: string): Promise<void> {
    if (!(await this.repo.delete(tenantId, id))) throw notFound('llm connection');
  }

  /** Throws ProviderError('auth') when neither the tenant nor the operator has credentials. */
  async resolve(tenantId: string, provider: LlmProviderName): Promise<ResolvedProvider> {
    const resolved = await this.find(tenantId, provider);
    if (!resolved) {
      throw new ProviderError(
        'auth',
        `no ${provider} credentials: add an LLM connection (POST /v1/llm-connections) or set ${ENV_KEY_NAMES[provider]}`,
      );
    }
    return resolved;
  }

  /** Embeddings come from OpenAI-compatible endpoints only; null when there are none for the tenant. */
  async resolveEmbedder(tenantId: string): Promise<{ provider: LlmProvider; model: string } | null> {
    const resolved = await this.find(tenantId, 'openai');
    return resolved ? { provider: resolved.provider, model: this.providers.embeddingModel } : null;
  }

  private async find(tenantId: string, provider: LlmProviderName): Promise<ResolvedProvider | null> {
    const limits = { timeoutMs: this.providers.timeoutMs, maxRetries: this.providers.maxRetries };
    const row = await this.repo.newest(tenantId, provider);
    if (row) {
      return {
        provider: createProvider({
          provider,
          apiKey: this.decryptKey(row),
          ...(row.base_url ? { baseUrl: row.base_url } : {}),
          ...limits,
          // Tenant URLs always go through the guard; the opt-out only widens the addresses it allows.
          guard: { allowPrivate: this.providers.allowPrivateUrls },
        }),
        defaultModel: row.default_model,
        source: 'tenant',
      };
    }
    const server = this.providers[provider];
    if (!server.apiKey) return null;
    return {
      provider: createProvider({ provider, apiKey: server.apiKey, ...(server.baseUrl ? { baseUrl: server.baseUrl } : {}), ...limits }),
      defaultModel: null,
      source: 'server',
    };
  }

  private decryptKey(row: LlmConnectionRow): string {
    try {
      return decryptSecret(this.secretKey, row.api_key_ciphertext);
    } catch {
      throw new ProviderError('auth', `the key of LLM connection ${row.id} cannot be decrypted (was LOOPTRACE_SECRET_KEY changed?)`);
    }
  }

  /**
   * A tenant's base URL must be https with public addresses only (the guard checks it again at
   * every call); the operator's opt-out admits http and private addresses for self-hosted models.
   */
  private async checkBaseUrl(url: string): Promise<void> {
    const guard = this.providers.allowPrivateUrls ? { requireHttps: false, allowPrivate: true } : { requireHttps: true };
    try {
      await checkOutboundUrl(url, guard);
    } catch (err) {
      if (err instanceof UnsafeUrlError) throw new AppError(422, `llm_connection.url.${err.reason}`, `base_url: ${err.message}`);
      throw err;
    }
  }
}
