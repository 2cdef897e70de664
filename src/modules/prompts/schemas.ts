import { z } from 'zod';
import { pageQuery } from '../../platform/cursor.js';
import { isoDate, storableText } from '../../platform/schemas.js';
import { DEPLOYMENT_STATUSES } from './deployments.js';

export const MAX_PROMPT_CHARS = 20_000;

// Names travel in paths: a URL-safe alphabet, and never the word the deployments routes use.
export const promptName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'letters, digits, ".", "_" and "-", at most 100, starting with a letter or digit')
  .refine((n) => n !== 'deployments', { message: '"deployments" is reserved' })
  .describe('unique within its project');
const content = storableText(z.string().min(1).max(MAX_PROMPT_CHARS)).describe(
  'the prompt; a {{input}} placeholder makes it a template rendered into the user turn, otherwise it is the system message',
);

export const createPromptBody = z.object({ project_id: z.guid(), name: promptName, content }).strict();
export type CreatePrompt = z.infer<typeof createPromptBody>;
export const createVersionBody = z
  .object({
    project_id: z.guid(),
    content,
    activate: z.boolean().optional().describe('make the new version the active one (default true)'),
  })
  .strict();
export type CreateVersion = z.infer<typeof createVersionBody>;

export const nameParams = z.object({ name: promptName });
export const projectQuery = z.object({ project_id: z.guid() });
export const activeQuery = z.object({ project_id: z.guid().optional().describe("default: the API key's project") });
export const listPromptsQuery = z.object({ ...pageQuery, project_id: z.guid().optional() });

export const promptVersion = z
  .object({
    id: z.guid(),
    version: z.number().int(),
    content: z.string(),
    created_by: z.string().describe("'user:<id>', 'apikey:<id>' or 'deployment:<id>'"),
    created_at: isoDate,
  })
  .describe('PromptVersion');
export type PromptVersion = z.infer<typeof promptVersion>;

export const prompt = z
  .object({
    id: z.guid(),
    project_id: z.guid(),
    name: z.string(),
    active_version: promptVersion,
    created_at: isoDate,
    updated_at: isoDate,
  })
  .describe('Prompt');
export type Prompt = z.infer<typeof prompt>;
export const promptDetail = prompt.extend({ versions: z.array(promptVersion).describe('newest first') }).describe('PromptDetail');
export const promptList = z.object({ prompts: z.array(prompt), has_more: z.boolean(), next_cursor: z.string().nullable() }).describe('PromptList');
export const activePrompt = z
  .object({ project_id: z.guid(), name: z.string(), version: z.number().int(), version_id: z.guid(), content: z.string() })
  .describe('ActivePrompt: report `prompt_name` and `prompt_version` in span metadata so monitoring sees which version ran');

export const createDeploymentBody = z
  .object({
    project_id: z.guid(),
    cluster_signature: storableText(z.string().min(1).max(100)).describe("the failure cluster's stable signature"),
    prompt_name: promptName,
  })
  .strict();
export type CreateDeployment = z.infer<typeof createDeploymentBody>;
export const rejectBody = z
  .object({ reason: storableText(z.string().max(500)).optional().describe('stored in rejection_reason ("" when absent)') })
  .strict()
  // A POST without a body reaches validation as null.
  .nullish();
export const listDeploymentsQuery = z.object({ ...pageQuery, status: z.enum(DEPLOYMENT_STATUSES).optional(), project_id: z.guid().optional() });
export type ListDeploymentsQuery = z.infer<typeof listDeploymentsQuery>;

const abMetric = z.object({
  metric: z.string(),
  rule_id: z.guid(),
  baseline: z.number().nullable().describe('average score with the current prompt'),
  candidate: z.number().nullable().describe('average score with the proposed prompt'),
  delta: z.number().nullable(),
});
export const abReport = z
  .object({
    samples: z.object({ failing: z.number().int(), passing: z.number().int() }),
    metrics: z.array(abMetric),
    failure_rate_before: z.number().nullable(),
    failure_rate_after: z.number().nullable(),
    decision: z.enum(['pass', 'fail']),
    reason: z.string(),
  })
  .describe('AbReport');
export type AbReport = z.infer<typeof abReport>;

export const promptDeployment = z
  .object({
    id: z.guid(),
    tenant_id: z.guid(),
    project_id: z.guid(),
    prompt_id: z.guid(),
    prompt_name: z.string(),
    cluster_signature: z.string(),
    status: z.enum(DEPLOYMENT_STATUSES),
    requested_by: z.string().describe("user id, or system:recurring_cluster for an automatic proposal"),
    current_prompt: z.string().describe('the active prompt at proposal time (the before side)'),
    proposed_prompt: z.string().describe('the improved prompt; "" until the provider has written it'),
    rationale: z.string().describe('one sentence'),
    from_version: z.number().int().describe('the version active at proposal time, restored by a rollback'),
    to_version: z.number().int().nullable().describe('the version created by shipping'),
    ab_report: abReport.nullable(),
    regression_metric: z.number().nullable().describe('live pass rate of the shipped version while monitoring'),
    monitor_baseline: z.number().nullable().describe('pass rate the shipped version must keep (minus the margin)'),
    created_at: isoDate,
    updated_at: isoDate,
    shipped_at: isoDate.nullable(),
    rolled_back_at: isoDate.nullable(),
    approved_by: z.string().nullable().describe('user id, system:autoship or system:auto_rollback'),
    rejection_reason: z.string().nullable().describe('"" when rejected without a reason; null unless rejected'),
  })
  .describe('PromptDeployment');
export type PromptDeployment = z.infer<typeof promptDeployment>;
export const deploymentList = z
  .object({ deployments: z.array(promptDeployment), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .describe('PromptDeploymentList');

/** A job of the `prompts` queue: write the proposal of one deployment and run its A/B test. */
export const promptJob = z.object({ tenant_id: z.guid(), deployment_id: z.guid() });
