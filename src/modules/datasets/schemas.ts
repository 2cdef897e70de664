import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { uuidShaped } from '../../platform/ids.js';
import { isoDate, storableText } from '../../platform/schemas.js';

export const MAX_ITEMS_PER_REQUEST = 1_000;
export const RUN_STATUSES = ['pending', 'running', 'completed', 'failed'] as const;
export const ITEM_LABELS = ['pass', 'fail'] as const;
export type ItemLabel = (typeof ITEM_LABELS)[number];
/** `unlabeled` selects items whose label is null; `all` applies no restriction. */
export const LABEL_FILTERS = ['pass', 'fail', 'unlabeled', 'all'] as const;
export type LabelFilter = (typeof LABEL_FILTERS)[number];
export const EXPORT_FORMATS = ['csv', 'jsonl', 'parquet'] as const;
export type DatasetExportFormat = (typeof EXPORT_FORMATS)[number];

export const dataset = z
  .object({ id: z.guid(), tenant_id: z.guid(), name: z.string(), description: z.string(), created_at: isoDate, updated_at: isoDate })
  .describe('Dataset');
export type Dataset = z.infer<typeof dataset>;

export const createDatasetBody = z
  .object({
    name: storableText(z.string().trim().min(1).max(200)),
    description: storableText(z.string().max(2_000)).default(''),
  })
  .strict();
export type CreateDataset = z.infer<typeof createDatasetBody>;

export const datasetList = z
  .object({ datasets: z.array(dataset), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('DatasetList');

const label = z.enum(ITEM_LABELS).nullable();
const itemFields = {
  trace_id: uuidShaped().describe('a trace of the tenant'),
  span_id: uuidShaped().nullable().optional().describe('one span of the trace; null or absent = the whole trace'),
  label: label.optional().describe('null or absent = unlabeled'),
  expected: storableText(z.string().max(100_000)).nullable().optional().describe('the expected output, for checks that compare against one'),
};
const datasetItemInput = z.object(itemFields).strict();
export type DatasetItemInput = z.infer<typeof datasetItemInput>;

/**
 * One item, or `{items: [...]}`. Declared as one object rather than a union so that a problem is
 * reported at its field (`body.items.3.trace_id`, a missing one as 422) and not as "no variant
 * matched".
 */
export const addItemsBody = z
  .object({
    items: z.array(datasetItemInput).min(1).max(MAX_ITEMS_PER_REQUEST).optional().describe(`1 to ${MAX_ITEMS_PER_REQUEST} items; or send one item's fields at the top level`),
    ...itemFields,
    trace_id: itemFields.trace_id.optional().describe('one item: required unless items is sent'),
  })
  .strict()
  .superRefine((body, ctx) => {
    const { items, ...single } = body;
    if (items && Object.keys(single).length > 0) {
      ctx.addIssue({ code: 'custom', path: ['items'], message: "send either items or one item's fields, not both" });
    } else if (!items && body.trace_id === undefined) {
      // invalid_type at an absent field: answered as a missing required field (422).
      ctx.addIssue({ code: 'invalid_type', expected: 'string', path: ['trace_id'], message: 'required (or send items)' });
    }
  })
  .transform(({ items, ...single }): DatasetItemInput[] => items ?? [single as DatasetItemInput]);

export const datasetItem = z
  .object({
    id: z.guid(),
    dataset_id: z.guid(),
    trace_id: z.guid(),
    span_id: z.guid().nullable(),
    project_id: z.guid().describe("the trace's project"),
    label,
    expected: z.string().nullable(),
    created_at: isoDate,
  })
  .describe('DatasetItem');
export type DatasetItem = z.infer<typeof datasetItem>;

export const addedItems = z.object({ items: z.array(datasetItem) }).describe('DatasetItemsAdded');
export const itemList = z
  .object({ items: z.array(datasetItem), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('DatasetItemList');
export const listItemsQuery = z.object({ ...pageQuery, label: z.enum(LABEL_FILTERS).default('all') });
export const updateItemBody = z.object({ label: label.describe('null clears the label') }).strict();
export const itemParams = z.object({ id: z.guid(), item_id: z.guid() });

export const exportQuery = z.object({
  format: z
    .enum(EXPORT_FORMATS)
    .default('csv')
    .describe('csv, jsonl or parquet. Parquet has the same columns typed: UUIDs as UUID, created_at as TIMESTAMP(MILLIS, UTC), null span_id and label as in JSONL; Snappy-compressed'),
  label: z.enum(LABEL_FILTERS).default('all'),
});

export const createRunBody = z.object({ eval_version_id: z.guid().describe('current_version_id of an eval rule, or an older version') }).strict();

const count = z.number().int();
export const evalRun = z
  .object({
    id: z.guid(),
    tenant_id: z.guid(),
    dataset_id: z.guid(),
    eval_version_id: z.guid(),
    status: z.enum(RUN_STATUSES),
    item_count: count.describe('items of the dataset when the run was created'),
    completed_count: count.describe('items scored so far: pass_count + fail_count + error_count'),
    pass_count: count,
    fail_count: count,
    error_count: count.describe('items the eval could not score (error set)'),
    pass_rate: z.number().nullable().describe('pass_count / (pass_count + fail_count); null until one is scored'),
    error_message: z.string().nullable().describe('why a failed run failed'),
    created_at: isoDate,
    started_at: isoDate.nullable(),
    completed_at: isoDate.nullable(),
  })
  .describe('EvalRun');
export type EvalRun = z.infer<typeof evalRun>;

export const runList = z.object({ runs: z.array(evalRun), has_more: z.boolean(), next_cursor: z.string().nullable() }).describe('EvalRunList');
export const runParams = z.object({ id: z.guid(), run_id: z.guid() });

export const runResult = z
  .object({
    item_id: z.guid(),
    trace_id: z.guid(),
    span_id: z.guid().nullable(),
    score: z.number().nullable(),
    passed: z.boolean().nullable(),
    reasoning: z.string().nullable(),
    error: z.string().nullable(),
    prompt_tokens: count,
    completion_tokens: count,
    cost: z.number().describe('USD'),
    latency_ms: count.nullable(),
    created_at: isoDate.describe('when the item was scored'),
  })
  .describe('EvalRunResult');
export type RunResult = z.infer<typeof runResult>;

export const runDetail = evalRun
  .extend({
    results: z.array(runResult).describe('a page of per-item results, by item id'),
    results_has_more: z.boolean(),
    results_next_cursor: z.string().nullable().describe('pass as results_cursor for the next page'),
  })
  .describe('EvalRunDetail');

export const runDetailQuery = z.object({
  results_limit: pageQuery.limit,
  results_cursor: pageQuery.cursor,
});

/** The payload of a `dataset-runs` job. */
export const datasetRunJob = z.object({ tenant_id: z.guid(), run_id: z.guid() });
export type DatasetRunJob = z.infer<typeof datasetRunJob>;
