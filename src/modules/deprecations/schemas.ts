import { z } from 'zod';

const utcDay = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);

export const deprecationView = z
  .object({
    id: z.string(),
    kind: z.enum(['endpoint', 'parameter']).describe('endpoint: the whole operation; parameter: one query parameter of it'),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
    path: z.string().describe('OpenAPI path template, e.g. /v1/anomalies'),
    parameter: z.string().nullable().describe('the deprecated parameter, for kind parameter'),
    deprecated_at: utcDay.describe('UTC day from which it is deprecated (the Deprecation header)'),
    sunset_at: utcDay.describe('UTC day after which it may stop working (the Sunset header)'),
    replacement: z.string().describe('what to use instead'),
    description: z.string(),
  })
  .describe('Deprecation');

export const deprecationList = z
  .object({
    deprecations: z.array(deprecationView),
    policy: z.string().describe('how deprecations are announced and how long they last'),
  })
  .describe('DeprecationList');
