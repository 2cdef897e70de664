export { Looptrace, type FeedbackInput, type FeedbackResult, type LooptraceOptions } from './client.js';
export type { DropReason, LooptraceStats } from './delivery.js';
export { Prompt, PromptNotAvailableError, type GetPromptOptions } from './prompts.js';
export type { FailureType, Mask, MaskContext } from './records.js';
export type { PromptRef, SpanHandle, SpanOptions, SpanState as ManualSpan, SpanUpdate, TraceHandle, TraceOptions, TraceUpdate } from './tracing.js';
