import { z } from 'zod';
import { isoDate } from '../../platform/schemas.js';

const USD_PER_MILLION = 'USD per million tokens (stored as USD per token)';
const perMillion = z.number().min(0).max(1_000_000);

// Printable ASCII without spaces: what provider model ids are made of; nothing a store chokes on.
export const modelParams = z.object({
  model: z
    .string()
    .min(1)
    .max(200)
    .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
    .describe('Model name; matched case-insensitively and without a provider prefix (`openai/gpt-4o` is `gpt-4o`), as at ingest.'),
});

export const modelPriceBody = z
  .object({
    input_per_million: perMillion.describe(`Price of prompt (input) tokens, ${USD_PER_MILLION}.`),
    output_per_million: perMillion.describe(`Price of completion (output) tokens, ${USD_PER_MILLION}.`),
  })
  .strict();
export type ModelPriceBody = z.infer<typeof modelPriceBody>;

export const builtinPrice = z
  .object({
    model: z.string(),
    input_per_million: z.number().describe(USD_PER_MILLION),
    output_per_million: z.number().describe(USD_PER_MILLION),
  })
  .describe('BuiltinModelPrice');

export const modelPriceOverride = builtinPrice
  .extend({ updated_at: isoDate })
  .describe('ModelPriceOverride');
export type ModelPriceOverride = z.infer<typeof modelPriceOverride>;

export const modelPriceList = z
  .object({
    currency: z.literal('USD'),
    builtin: z.object({
      source_date: z.string().describe('Date (YYYY-MM-DD) of the providers\' public price pages the table was taken from.'),
      prices: z.array(builtinPrice),
    }),
    overrides: z.array(modelPriceOverride).describe('This tenant\'s prices; they take precedence over the built-in table at ingest.'),
  })
  .describe('ModelPrices');
export type ModelPriceList = z.infer<typeof modelPriceList>;
