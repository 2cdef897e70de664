import { z } from 'zod';
import { isoDate } from '../../platform/schemas.js';
import { RUN_STATUSES } from '../datasets/schemas.js';

export const createCiRunBody = z
  .object({
    dataset_id: z.guid(),
    eval_version_id: z.guid().describe('the eval version that scores the dataset (an eval rule\'s current_version_id)'),
    min_pass_rate: z.number().min(0).max(1).describe('the gate: passed when pass_rate >= min_pass_rate'),
  })
  .strict();
export type CreateCiRun = z.infer<typeof createCiRunBody>;

export const ciRun = z
  .object({
    id: z.guid(),
    dataset_id: z.guid(),
    eval_version_id: z.guid(),
    run_id: z.guid().describe('the dataset run (GET /v1/datasets/{dataset_id}/runs/{run_id} for per-item results)'),
    status: z.enum(RUN_STATUSES),
    item_count: z.number().int(),
    completed_count: z.number().int(),
    min_pass_rate: z.number(),
    pass_rate: z.number().nullable().describe('passed items / all items of the run (an item the eval could not score counts against it); null until completed'),
    passed: z.boolean().nullable().describe('null while the run is pending or running; false when it failed'),
    created_at: isoDate,
    completed_at: isoDate.nullable(),
  })
  .describe('CiRun');
export type CiRun = z.infer<typeof ciRun>;
