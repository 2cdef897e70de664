import { z } from 'zod';

export const isoDate = z.string().describe('ISO 8601 date-time, UTC');
export const idParams = z.object({ id: z.guid() });
export const errorBody = z
  .object({ error: z.string(), code: z.string().optional(), request_id: z.string() })
  .loose()
  .describe('Error');

export const toIso = (d: Date | null): string | null => (d ? d.toISOString() : null);
