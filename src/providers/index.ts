import { checkOutboundUrl, guardedFetch, UnsafeUrlError, type GuardOptions } from '../platform/ssrf.js';
import { AnthropicProvider } from './anthropic.js';
import { refusedUrl, type AdapterOptions } from './common.js';
import { OpenAiProvider } from './openai.js';
import type { LlmProvider } from './types.js';

export type ProviderName = 'openai' | 'anthropic';

export interface ProviderSettings {
  provider: ProviderName;
  apiKey: string;
  /** Unset: the vendor's own endpoint (never the SDK's environment variables). */
  baseUrl?: string;
  timeoutMs: number;
  maxRetries: number;
  /**
   * Set for tenant-supplied connections: every request goes through the SSRF guard (https and
   * public addresses only, unless `allowPrivate`). Unset for the operator's own URLs from the
   * environment, which are trusted (a vLLM or Ollama on loopback must work).
   */
  guard?: { allowPrivate: boolean };
}

const DEFAULT_BASE_URLS: Record<ProviderName, string> = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com',
};

// Far above any verdict or completion; a batch of embeddings is the largest answer we ask for.
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/** The SDK's fetch for a tenant URL: each request, retries included, is checked and pinned anew. */
function guardedSdkFetch(guard: GuardOptions, timeoutMs: number): NonNullable<AdapterOptions['fetch']> {
  return (input, init) => {
    // The SDKs call fetch with a URL and an init; a Request would carry a second set of options.
    if (input instanceof Request) return Promise.reject(new TypeError('guarded fetch takes a URL, not a Request'));
    return guardedFetch(input, { ...init, timeoutMs, maxBodyBytes: MAX_RESPONSE_BYTES, guard });
  };
}

/**
 * Checks the base URL before each call: the SDKs retry a refused connection with backoff, which
 * for a blocked address only delays the answer. The guarded fetch still checks every request and
 * pins the address it connects to.
 */
function checkedFirst(provider: LlmProvider, baseUrl: string, guard: GuardOptions): LlmProvider {
  const check = async () => {
    try {
      await checkOutboundUrl(baseUrl, guard);
    } catch (err) {
      throw err instanceof UnsafeUrlError ? refusedUrl(err, provider.name) : err;
    }
  };
  return {
    name: provider.name,
    async judge(request) {
      await check();
      return provider.judge(request);
    },
    async complete(request) {
      await check();
      return provider.complete(request);
    },
    async embed(model, texts) {
      await check();
      return provider.embed(model, texts);
    },
  };
}

export function createProvider(settings: ProviderSettings): LlmProvider {
  const baseUrl = settings.baseUrl ?? DEFAULT_BASE_URLS[settings.provider];
  // allowPrivate is the operator's opt-out for self-hosted models, which are often plain http.
  const guard = settings.guard && { requireHttps: !settings.guard.allowPrivate, allowPrivate: settings.guard.allowPrivate };
  const options: AdapterOptions = {
    apiKey: settings.apiKey,
    baseUrl,
    timeoutMs: settings.timeoutMs,
    maxRetries: settings.maxRetries,
    ...(guard ? { fetch: guardedSdkFetch(guard, settings.timeoutMs) } : {}),
  };
  const provider = settings.provider === 'openai' ? new OpenAiProvider(options) : new AnthropicProvider(options);
  return guard ? checkedFirst(provider, baseUrl, guard) : provider;
}
