import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate, storableText } from '../../platform/schemas.js';

/** Events a webhook can subscribe to. `ping` is only ever sent by POST /v1/webhooks/{id}/test. */
export const WEBHOOK_EVENT_TYPES = ['failure.detected', 'anomaly.detected', 'prompt.deployment.changed'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

const eventTypes = z
  .array(z.enum(WEBHOOK_EVENT_TYPES))
  .min(1)
  .max(20)
  .transform((types) => [...new Set(types)]);

// Any scheme passes here so that the URL check answers 422 webhook.url.not_https, as the spec says.
// Credentials in the URL are refused: fetch cannot send them, and the URL is shown in every listing.
const webhookUrl = z
  .url()
  .max(2000)
  .refine((url) => !/^[^:/?#]+:\/\/[^/?#]*@/.test(url), { message: 'must not contain credentials' })
  .describe('https only; every address its host resolves to must be public');

const secret = storableText(z.string().min(16).max(256)).describe('Keys the HMAC-SHA256 signature of every delivery; stored encrypted, never returned');

export const webhook = z
  .object({
    id: z.guid(),
    url: z.string(),
    events: z.array(z.enum(WEBHOOK_EVENT_TYPES)),
    enabled: z.boolean(),
    created_at: isoDate,
    updated_at: isoDate,
    created_by: z.string().nullable().describe("'user:<id>' or 'apikey:<id>'"),
  })
  .describe('Webhook');
export type Webhook = z.infer<typeof webhook>;

export const createWebhookBody = z
  .object({
    url: webhookUrl,
    secret,
    events: eventTypes.default(['failure.detected']),
    enabled: z.boolean().default(true),
  })
  .strict();
export type CreateWebhook = z.infer<typeof createWebhookBody>;

export const updateWebhookBody = z
  .object({ url: webhookUrl.optional(), secret: secret.optional(), events: eventTypes.optional(), enabled: z.boolean().optional() })
  .strict();
export type UpdateWebhook = z.infer<typeof updateWebhookBody>;

export const webhookPageQuery = z.object({ ...pageQuery });

export const webhookList = z.object({
  webhooks: z.array(webhook),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});

export const webhookTestResult = z.object({
  status: z.number().int().describe("The receiver's HTTP status; 0 when it could not be reached"),
  body: z.string().describe("The first 4 KB of the receiver's response body"),
  error: z.string().nullable().describe('Why the receiver could not be reached (status 0); null otherwise'),
});
export type WebhookTestResult = z.infer<typeof webhookTestResult>;

export const delivery = z
  .object({
    id: z.guid(),
    event_id: z.guid(),
    event_type: z.string(),
    attempt: z.number().int(),
    status: z.number().int().describe("The receiver's HTTP status; 0 when it could not be reached"),
    duration_ms: z.number().int(),
    error: z.string().nullable(),
    created_at: isoDate,
  })
  .describe('WebhookDelivery');
export type Delivery = z.infer<typeof delivery>;

export const deliveryList = z.object({
  deliveries: z.array(delivery),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});

/** A job of the `webhooks` queue: one attempt at one dispatch (an event for one webhook). */
export const webhookDeliveryJob = z.object({ tenant_id: z.guid(), dispatch_id: z.guid() });
export type WebhookDeliveryJob = z.infer<typeof webhookDeliveryJob>;

/** What a receiver gets, exactly these fields in this order; the raw JSON is what is signed. */
export interface WebhookPayload {
  id: string;
  type: string;
  created_at: string;
  tenant_id: string;
  project_id: string | null;
  data: Record<string, unknown>;
}
