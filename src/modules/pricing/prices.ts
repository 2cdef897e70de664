import { roundUsd } from '../../platform/money.js';

/**
 * Built-in list prices in USD per million tokens [input, output].
 * Source: the providers' public pricing pages as known on 2025-08-01 (OpenAI, Anthropic, Google
 * Gemini API paid tier ≤200k-token prompts, Mistral La Plateforme; Llama at typical hosted rates).
 * Tenants override any entry through PUT /v1/model-prices; see docs/api-decisions.md.
 */
export const PRICE_TABLE_SOURCE_DATE = '2025-08-01';

const PER_MILLION: Record<string, [number, number]> = {
  'gpt-5': [1.25, 10],
  'gpt-5-mini': [0.25, 2],
  'gpt-5-nano': [0.05, 0.4],
  'gpt-4.1': [2, 8],
  'gpt-4.1-mini': [0.4, 1.6],
  'gpt-4.1-nano': [0.1, 0.4],
  'gpt-4o': [2.5, 10],
  'gpt-4o-mini': [0.15, 0.6],
  'gpt-4-turbo': [10, 30],
  'gpt-4': [30, 60],
  'gpt-3.5-turbo': [0.5, 1.5],
  o1: [15, 60],
  'o1-mini': [1.1, 4.4],
  o3: [2, 8],
  'o3-mini': [1.1, 4.4],
  'o4-mini': [1.1, 4.4],
  'text-embedding-3-small': [0.02, 0],
  'text-embedding-3-large': [0.13, 0],
  'claude-opus-4-1': [15, 75],
  'claude-opus-4': [15, 75],
  'claude-sonnet-4': [3, 15],
  'claude-3-7-sonnet': [3, 15],
  'claude-3-5-sonnet': [3, 15],
  'claude-3-5-haiku': [0.8, 4],
  'claude-3-opus': [15, 75],
  'claude-3-haiku': [0.25, 1.25],
  'gemini-2.5-pro': [1.25, 10],
  'gemini-2.5-flash': [0.3, 2.5],
  'gemini-2.5-flash-lite': [0.1, 0.4],
  'gemini-2.0-flash': [0.1, 0.4],
  'gemini-2.0-flash-lite': [0.075, 0.3],
  'gemini-1.5-pro': [1.25, 5],
  'gemini-1.5-flash': [0.075, 0.3],
  'mistral-large': [2, 6],
  'mistral-medium': [0.4, 2],
  'mistral-small': [0.1, 0.3],
  codestral: [0.3, 0.9],
  'open-mistral-nemo': [0.15, 0.15],
  'llama-3.3-70b': [0.88, 0.88],
  'llama-3.1-405b': [3.5, 3.5],
  'llama-3.1-70b': [0.88, 0.88],
  'llama-3.1-8b': [0.18, 0.18],
  'llama-4-maverick': [0.27, 0.85],
  'llama-4-scout': [0.18, 0.59],
};

export interface TokenPrice {
  inputPerToken: number;
  outputPerToken: number;
}

export const BUILTIN_PRICES: ReadonlyMap<string, TokenPrice> = new Map(
  Object.entries(PER_MILLION).map(([model, [input, output]]) => [
    model,
    { inputPerToken: input / 1_000_000, outputPerToken: output / 1_000_000 },
  ]),
);

/** `openai/gpt-4o-mini-2024-07-18` → `gpt-4o-mini-2024-07-18`: provider prefixes carry no price information. */
export function canonicalModelName(model: string): string {
  return model.trim().toLowerCase().replace(/^(models\/|[a-z0-9_-]+\/)+/, '');
}

/**
 * Exact name first, then the longest known name that prefixes it (dated snapshots such as
 * `claude-3-5-sonnet-20241022` price like their family). Tenant overrides take precedence.
 */
export function findPrice(model: string, overrides: ReadonlyMap<string, TokenPrice>): TokenPrice | undefined {
  const name = canonicalModelName(model);
  for (const table of [overrides, BUILTIN_PRICES]) {
    const exact = table.get(name);
    if (exact) return exact;
  }
  for (const table of [overrides, BUILTIN_PRICES]) {
    let best: [string, TokenPrice] | undefined;
    for (const entry of table) {
      if (name.startsWith(entry[0]) && (!best || entry[0].length > best[0].length)) best = entry;
    }
    if (best) return best[1];
  }
  return undefined;
}

export function computeCost(price: TokenPrice | undefined, promptTokens: number, completionTokens: number): number {
  if (!price) return 0;
  return roundUsd(promptTokens * price.inputPerToken + completionTokens * price.outputPerToken);
}
