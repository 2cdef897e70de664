import { z } from 'zod';
import { PLAN_NAMES } from './plans.js';
import { isAcceptedText, UNACCEPTED_TEXT } from './text-input.js';

export const isoDate = z.string().describe('ISO 8601 date-time, UTC');
export const idParams = z.object({ id: z.guid() });
/** The body of every error response (http-errors.ts); the OpenAPI document's `Error` component. */
export const errorBody = z
  .object({
    error: z.string().describe('What went wrong, for people; the message of a 5xx is generic'),
    code: z.string().describe('Stable machine-readable code; each error response lists the codes it can carry'),
    request_id: z.string().describe('The X-Request-Id of this response'),
    details: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .describe('bad_request, validation_error: each field problem, the path prefixed with body, query or params'),
    required_plan: z.enum(PLAN_NAMES).optional().describe('plan_upgrade_required, trace_quota_exceeded: a plan that allows the request'),
    retry_after: z.number().int().optional().describe('rate_limited: seconds until the rate window resets (also the Retry-After header)'),
  })
  .loose()
  .describe('Error body. Routes may add fields (batch ingest adds each item\'s result).');

export const toIso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** Whether Postgres can store `s` exactly as sent (no NUL, no unpaired surrogate). */
export const isStorableText = isAcceptedText;

/**
 * Text bound for Postgres. `text` cannot hold NUL (the insert fails, a 500 if unchecked) and an
 * unpaired surrogate would be stored as U+FFFD, not as sent; both are refused as 400s instead.
 */
export const storableText = (schema: z.ZodString = z.string()) =>
  schema.refine(isStorableText, { message: UNACCEPTED_TEXT });

/**
 * Whether Postgres jsonb can hold every key and string of `value` as sent (see storableText).
 * Iterative: the body parser caps nesting, but a walk without recursion needs no such promise.
 */
export function isStorableJson(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const v = pending.pop();
    if (typeof v === 'string') {
      if (!isStorableText(v)) return false;
    } else if (Array.isArray(v)) {
      pending.push(...v);
    } else if (v !== null && typeof v === 'object') {
      for (const [key, child] of Object.entries(v)) {
        if (!isStorableText(key)) return false;
        pending.push(child);
      }
    }
  }
  return true;
}

/** A JSON object Postgres jsonb can store exactly as sent, at most `maxBytes` serialized. */
export const storableJsonObject = (maxBytes: number) =>
  z
    .record(z.string(), z.unknown())
    .refine(isStorableJson, { message: 'keys and strings must not contain NUL characters or unpaired UTF-16 surrogates' })
    .refine((m) => Buffer.byteLength(JSON.stringify(m)) <= maxBytes, { message: `must be at most ${maxBytes} bytes as JSON` });
