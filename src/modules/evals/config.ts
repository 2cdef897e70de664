import { z } from 'zod';
import { BUILTIN_CHECKS, BUILTIN_PARAMS, type BuiltinCheck } from '../../providers/builtin-checks.js';
import { JUDGE_PRESETS } from './presets.js';

/** passed = score >= threshold, unless an eval rule sets its own. */
export const DEFAULT_THRESHOLD = 0.5;

/**
 * What scores a trace: an LLM judge (`openai`, `anthropic`) with a preset template or a custom
 * prompt, or a deterministic builtin check (`builtin`, the check named by `preset`).
 */
const judgeConfig = z
  .object({
    provider: z.enum(['openai', 'anthropic']),
    model: z.string().trim().min(1).max(200).optional().describe("the judge model; default: the LLM connection's default_model, else gpt-4o-mini / claude-3-5-haiku-latest"),
    preset: z.enum([...JUDGE_PRESETS, 'custom']).describe('the judge template; custom needs prompt'),
    prompt: z
      .string()
      .min(1)
      .max(20_000)
      .optional()
      .describe('replaces the preset template; may use {{input}}, {{output}}, {{expected}}, {{context}}'),
  })
  .strict()
  .refine((c) => c.preset !== 'custom' || c.prompt !== undefined, { path: ['prompt'], message: 'required when preset is custom' });

const builtinConfig = z
  .object({
    provider: z.literal('builtin'),
    model: z.string().max(200).optional().describe('ignored'),
    preset: z.enum(BUILTIN_CHECKS as [BuiltinCheck, ...BuiltinCheck[]]).describe('the deterministic check'),
    // A field the spec names for every config is never refused: stored with it, like `model`.
    prompt: z.string().max(20_000).optional().describe('ignored: a check has no template'),
    params: z.record(z.string(), z.unknown()).optional().describe("the check's parameters (docs/api-decisions.md, Evaluations)"),
  })
  .strict()
  .superRefine((c, ctx) => {
    const parsed = BUILTIN_PARAMS[c.preset].safeParse(c.params ?? {});
    for (const issue of parsed.error?.issues ?? []) {
      ctx.addIssue({ code: 'custom', path: ['params', ...issue.path.map(String)], message: issue.message });
    }
  });

export const evalConfig = z.discriminatedUnion('provider', [judgeConfig, builtinConfig]).describe('EvalConfig');
export type EvalConfig = z.infer<typeof evalConfig>;
export type JudgeConfig = z.infer<typeof judgeConfig>;
export type BuiltinConfig = z.infer<typeof builtinConfig>;
