import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate, storableText } from '../../platform/schemas.js';

export const project = z
  .object({
    id: z.guid(),
    tenant_id: z.guid(),
    name: z.string(),
    status: z.enum(['active', 'archived']),
    archived_at: isoDate.nullable(),
    prompt_autoship_enabled: z.boolean(),
    retention_days: z
      .number()
      .int()
      .nullable()
      .describe('traces that started more than this many days ago are removed, with what was derived from them; null keeps them forever'),
    created_at: isoDate,
    updated_at: isoDate,
  })
  .describe('Project');
export type Project = z.infer<typeof project>;

const projectName = storableText(z.string().trim().min(1).max(200));

export const createProjectBody = z.object({ name: projectName }).strict();
/** 1 day to 10 years; null: keep forever. */
export const retentionDays = z.number().int().min(1).max(3650);

export const updateProjectBody = z
  .object({
    name: projectName.optional(),
    prompt_autoship_enabled: z.boolean().optional(),
    retention_days: retentionDays
      .nullable()
      .optional()
      .describe('days to keep traces after they start (1 to 3650), or null to keep them forever; owner only: shortening it removes data'),
  })
  .strict();
export type UpdateProject = z.infer<typeof updateProjectBody>;

export const listProjectsQuery = z.object({
  ...pageQuery,
  status: z.enum(['active', 'archived', 'all']).default('all'),
});

export const projectList = z.object({
  projects: z.array(project),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});
