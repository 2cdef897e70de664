import type { ApiClient } from './http.js';
import type { PromptRef } from './tracing.js';

/** One version of a prompt from the registry (GET /v1/prompts/{name}/active). */
export class Prompt implements PromptRef {
  constructor(
    readonly name: string,
    readonly version: number,
    readonly versionId: string | null,
    readonly projectId: string | null,
    readonly content: string,
    /** 'server' fresh from the registry, 'cache' served while a refresh failed or runs, 'fallback' the caller's own text. */
    readonly source: 'server' | 'cache' | 'fallback',
  ) {}

  /** The content with every {{variable}} replaced; placeholders without a value stay as they are. */
  compile(variables: Record<string, unknown> = {}): string {
    return this.content.replace(/\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g, (whole, key: string) => {
      if (!Object.prototype.hasOwnProperty.call(variables, key)) return whole;
      const value = variables[key];
      return typeof value === 'string' ? value : JSON.stringify(value);
    });
  }

  /** Span metadata naming this version: what prompt deployment monitoring looks for. */
  get metadata(): { prompt_name: string; prompt_version: number } {
    return { prompt_name: this.name, prompt_version: this.version };
  }
}

export interface GetPromptOptions {
  /** Another project of the key's tenant; by default the client's `projectId`, else the API key's project. */
  projectId?: string;
  /** How long a fetched version is served before a background refresh (default: the client's promptCacheTtlMs). */
  cacheTtlMs?: number;
  /** Served when the registry cannot be reached and nothing is cached yet, instead of rejecting. */
  fallback?: string;
}

interface Entry {
  prompt: Prompt;
  fetchedAt: number;
  /** After a failed refresh: not tried again before this. */
  retryAt: number;
  refreshing: Promise<void> | undefined;
}

/** How soon a failed refresh is tried again while the cached version is served. */
const RETRY_FAILED_REFRESH_MS = 5_000;

export class PromptNotAvailableError extends Error {
  constructor(
    readonly promptName: string,
    readonly status: number | null,
    message: string,
  ) {
    super(message);
    this.name = 'PromptNotAvailableError';
  }
}

/**
 * The prompt registry with a cache: a version is served for `cacheTtlMs`, then served on while a
 * background request refreshes it; when the server cannot be reached the last good version stays.
 * Only a first fetch that fails, with no fallback, rejects (there is nothing to serve).
 */
export class PromptCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly api: ApiClient | undefined,
    private readonly defaultTtlMs: number,
    private readonly defaultProjectId: string | undefined,
  ) {}

  async get(name: string, given: GetPromptOptions = {}): Promise<Prompt> {
    const options = { ...given, projectId: given.projectId ?? this.defaultProjectId };
    const key = `${options.projectId ?? ''}/${name}`;
    const ttl = options.cacheTtlMs ?? this.defaultTtlMs;
    const entry = this.entries.get(key);
    if (entry) {
      const now = Date.now();
      if (now - entry.fetchedAt >= ttl && now >= entry.retryAt) entry.refreshing ??= this.refresh(key, name, options.projectId, entry);
      return entry.prompt;
    }
    try {
      const prompt = await this.fetch(name, options.projectId);
      this.entries.set(key, { prompt, fetchedAt: Date.now(), retryAt: 0, refreshing: undefined });
      return prompt;
    } catch (err) {
      if (options.fallback !== undefined) return new Prompt(name, 0, null, options.projectId ?? null, options.fallback, 'fallback');
      throw err;
    }
  }

  private async refresh(key: string, name: string, projectId: string | undefined, entry: Entry): Promise<void> {
    try {
      const prompt = await this.fetch(name, projectId);
      this.entries.set(key, { prompt, fetchedAt: Date.now(), retryAt: 0, refreshing: undefined });
    } catch {
      const { prompt } = entry;
      const stale = new Prompt(prompt.name, prompt.version, prompt.versionId, prompt.projectId, prompt.content, 'cache');
      this.entries.set(key, { prompt: stale, fetchedAt: entry.fetchedAt, retryAt: Date.now() + RETRY_FAILED_REFRESH_MS, refreshing: undefined });
    }
  }

  private async fetch(name: string, projectId: string | undefined): Promise<Prompt> {
    if (!this.api) throw new PromptNotAvailableError(name, null, 'looptrace: no API key (LOOPTRACE_API_KEY) to read prompts with');
    const query = projectId ? `?project_id=${encodeURIComponent(projectId)}` : '';
    let res: Awaited<ReturnType<ApiClient['request']>>;
    try {
      res = await this.api.request('GET', `/v1/prompts/${encodeURIComponent(name)}/active${query}`);
    } catch (err) {
      throw new PromptNotAvailableError(name, null, `looptrace: prompt ${name} could not be fetched: ${err instanceof Error ? err.message : String(err)}`);
    }
    const body = res.json as { project_id?: string; name?: string; version?: number; version_id?: string; content?: string; error?: string } | undefined;
    if (res.status !== 200 || typeof body?.content !== 'string' || typeof body.version !== 'number') {
      throw new PromptNotAvailableError(name, res.status, `looptrace: prompt ${name}: ${res.status} ${body?.error ?? ''}`.trim());
    }
    return new Prompt(body.name ?? name, body.version, body.version_id ?? null, body.project_id ?? null, body.content, 'server');
  }
}
