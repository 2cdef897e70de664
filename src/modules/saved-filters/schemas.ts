import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate, storableJsonObject, storableText } from '../../platform/schemas.js';

export const MAX_NAME_CHARS = 100;
export const MAX_FILTERS_BYTES = 16 * 1024;

const name = storableText(z.string().trim().min(1).max(MAX_NAME_CHARS));
const filters = storableJsonObject(MAX_FILTERS_BYTES).describe(`any JSON object (the dashboard's), at most ${MAX_FILTERS_BYTES} bytes serialized`);

export const createSavedFilterBody = z
  .object({ project_id: z.guid().describe("a project of the caller's tenant"), name, filters })
  .strict();
export type CreateSavedFilter = z.infer<typeof createSavedFilterBody>;

export const updateSavedFilterBody = z.object({ name: name.optional(), filters: filters.optional() }).strict();
export type UpdateSavedFilter = z.infer<typeof updateSavedFilterBody>;

export const savedFilter = z
  .object({
    id: z.guid(),
    tenant_id: z.guid(),
    project_id: z.guid(),
    name: z.string(),
    filters: z.record(z.string(), z.unknown()),
    created_by: z.string().describe('user id of the author'),
    created_at: isoDate,
    updated_at: isoDate,
  })
  .describe('SavedFilter');
export type SavedFilter = z.infer<typeof savedFilter>;

export const listSavedFiltersQuery = z.object({ ...pageQuery, project_id: z.guid().optional().describe('only this project') });
export type ListSavedFiltersQuery = z.infer<typeof listSavedFiltersQuery>;

export const savedFilterList = z
  .object({ items: z.array(savedFilter), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('SavedFilterList: the same list for every member of the tenant, oldest first');
