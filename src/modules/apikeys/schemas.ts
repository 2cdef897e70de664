import { z } from 'zod';
import { isoDate, storableText } from '../../platform/schemas.js';

export const KNOWN_SCOPES = ['query'] as const;

export const apiKey = z
  .object({
    id: z.guid(),
    prefix: z.string(),
    name: z.string(),
    project_id: z.guid(),
    created_at: isoDate,
    last_used_at: isoDate.nullable(),
    revoked_at: isoDate.nullable(),
    created_by_user_id: z.guid().nullable(),
    created_by_email: z.string().nullable(),
    created_by_first_name: z.string().nullable(),
    created_by_last_name: z.string().nullable(),
    scopes: z.array(z.string()).nullable(),
  })
  .describe('APIKey');
export type ApiKey = z.infer<typeof apiKey>;

export const createApiKeyBody = z
  .object({
    name: storableText(z.string().trim().min(1).max(200)),
    scopes: z.array(z.enum(KNOWN_SCOPES)).max(KNOWN_SCOPES.length).optional(),
    project_id: z.guid().optional().describe('Default project for ingest with this key; the first active project when omitted'),
  })
  .strict();
export type CreateApiKey = z.infer<typeof createApiKeyBody>;

export const createdApiKey = z
  .object({
    id: z.guid(),
    name: z.string(),
    prefix: z.string(),
    scopes: z.array(z.string()),
    project_id: z.guid(),
    secret: z.string().describe('The full key; returned exactly once'),
    created_at: isoDate,
  })
  .describe('APIKeyCreated');
export type CreatedApiKey = z.infer<typeof createdApiKey>;
