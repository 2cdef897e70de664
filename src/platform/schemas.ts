import { z } from 'zod';

export const isoDate = z.string().describe('ISO 8601 date-time, UTC');
export const idParams = z.object({ id: z.guid() });
export const errorBody = z
  .object({ error: z.string(), code: z.string().optional(), request_id: z.string() })
  .loose()
  .describe('Error');

export const toIso = (d: Date | null): string | null => (d ? d.toISOString() : null);

// NUL, or a UTF-16 surrogate without its partner.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether Postgres can store `s` exactly as sent. */
export const isStorableText = (s: string): boolean => !UNSTORABLE.test(s);

/**
 * Text bound for Postgres. `text` cannot hold NUL (the insert fails, a 500 if unchecked) and an
 * unpaired surrogate would be stored as U+FFFD, not as sent; both are refused as 400s instead.
 */
export const storableText = (schema: z.ZodString = z.string()) =>
  schema.refine(isStorableText, { message: 'must not contain NUL characters or unpaired UTF-16 surrogates' });
