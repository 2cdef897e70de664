import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate, storableText } from '../../platform/schemas.js';

// zod runs refinements after a failed format check too: an unparseable URL is already refused there.
function hasCredentials(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.username !== '' || parsed.password !== '';
  } catch {
    return false;
  }
}

export const LLM_PROVIDERS = ['openai', 'anthropic'] as const;

export const llmConnection = z
  .object({
    id: z.guid(),
    provider: z.enum(LLM_PROVIDERS),
    name: z.string(),
    base_url: z.string().nullable().describe("null: the vendor's own endpoint"),
    api_key_last4: z.string().describe('The last four characters of the key; the key itself is never returned'),
    default_model: z.string().nullable(),
    created_at: isoDate,
    created_by: z.string().nullable().describe("'user:<id>' or 'apikey:<id>'"),
  })
  .describe('LlmConnection');
export type LlmConnection = z.infer<typeof llmConnection>;

export const createLlmConnectionBody = z
  .object({
    provider: z.enum(LLM_PROVIDERS),
    name: storableText(z.string().trim().min(1).max(200)).optional().describe('Defaults to the provider name'),
    base_url: z
      .url({ protocol: /^https?$/ })
      .max(2000)
      // A password in the URL would be returned in every listing; the key belongs in api_key.
      .refine((url) => !hasCredentials(url), { message: 'must not contain credentials' })
      .optional()
      .describe("An OpenAI-compatible or Anthropic endpoint; https with a public address. Omit for the vendor's own"),
    api_key: storableText(z.string().trim().min(1).max(500)).describe('Stored encrypted; never returned'),
    default_model: storableText(z.string().trim().min(1).max(200)).optional(),
  })
  .strict();
export type CreateLlmConnection = z.infer<typeof createLlmConnectionBody>;

export const listLlmConnectionsQuery = z.object({ ...pageQuery });

export const llmConnectionList = z.object({
  llm_connections: z.array(llmConnection),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});
