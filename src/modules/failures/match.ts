import type { SpanOutcome } from '../traces/service.js';
import type { FailureRuleRow } from './repo.js';
import { normalizeError, signatureOf } from './signature.js';

/** Longest error text a rule's pattern runs over (a safe pattern is linear, the input still bounded). */
const MAX_MATCHED_ERROR_CHARS = 100_000;

/** The span fields rules look at (TraceService.spanOutcomes). */
export type CandidateSpan = SpanOutcome;

/** Matching spans of one trace in one cluster. */
export interface TraceOccurrences {
  spans: number;
  firstMs: number;
  lastMs: number;
}

/** Everything one batch adds to one cluster. */
export interface OccurrenceGroup {
  projectId: string;
  type: string;
  signature: string;
  sampleError: string | null;
  traces: Map<string, TraceOccurrences>;
}

type SpanTest = (span: CandidateSpan) => boolean;

/** A rule as one predicate over spans: every condition it names must hold. */
export function compileRule(rule: Pick<FailureRuleRow, 'project_id' | 'match'>): SpanTest {
  const m = rule.match;
  const tests: SpanTest[] = [];
  if (rule.project_id) tests.push((s) => s.project_id === rule.project_id);
  if (m.failure_types) {
    const types = new Set<string>(m.failure_types);
    tests.push((s) => types.has(s.failure_type));
  }
  if (m.error_contains !== undefined) {
    const needle = m.error_contains.toLowerCase();
    tests.push((s) => s.error !== null && s.error.toLowerCase().includes(needle));
  }
  if (m.error_regex !== undefined) {
    const pattern = new RegExp(m.error_regex, 'i');
    tests.push((s) => s.error !== null && pattern.test(s.error.slice(0, MAX_MATCHED_ERROR_CHARS)));
  }
  if (m.status_codes) {
    const codes = new Set(m.status_codes);
    tests.push((s) => codes.has(s.status_code));
  }
  if (m.latency_ms_over !== undefined) {
    const bound = m.latency_ms_over;
    tests.push((s) => s.latency_ms > bound);
  }
  if (m.model !== undefined) tests.push((s) => s.model === m.model);
  if (m.name !== undefined) tests.push((s) => s.name === m.name);
  return (span) => tests.every((test) => test(span));
}

/**
 * Where one occurrence belongs. A span with an error clusters by its failure type ('Unknown' when
 * it has none) and normalized error, whichever rule matched it; a span without an error (a slow
 * or otherwise flagged call) clusters as 'RuleMatch' per rule, with the rule's name as its sample.
 */
export function occurrenceKey(projectId: string, type: string, error: string | null, rule?: { id: string; name: string }) {
  const text = error ? normalizeError(error) : `rule ${rule?.id ?? ''}`;
  return {
    type,
    signature: signatureOf(projectId, type, text),
    sampleError: error ?? (rule ? `no error text; matched rule "${rule.name}"` : null),
  };
}

/** Adds one trace's occurrences to its group, creating the group on first sight. */
export function addOccurrence(
  groups: Map<string, OccurrenceGroup>,
  key: ReturnType<typeof occurrenceKey>,
  projectId: string,
  traceId: string,
  atMs: number,
): void {
  let group = groups.get(key.signature);
  if (!group) {
    group = { projectId, ...key, traces: new Map() };
    groups.set(key.signature, group);
  }
  const seen = group.traces.get(traceId);
  if (seen) {
    seen.spans += 1;
    seen.firstMs = Math.min(seen.firstMs, atMs);
    seen.lastMs = Math.max(seen.lastMs, atMs);
  } else {
    group.traces.set(traceId, { spans: 1, firstMs: atMs, lastMs: atMs });
  }
}

/**
 * The clusters a batch of spans adds to, in signature order (the order clusters are locked in,
 * so concurrent drains cannot deadlock). A span counts once per cluster however many rules match.
 */
export function groupMatches(spans: readonly CandidateSpan[], rules: readonly FailureRuleRow[]): OccurrenceGroup[] {
  const compiled = rules.map((rule) => ({ rule, test: compileRule(rule) }));
  const groups = new Map<string, OccurrenceGroup>();
  for (const span of spans) {
    const keys = new Map<string, ReturnType<typeof occurrenceKey>>();
    for (const { rule, test } of compiled) {
      if (!test(span)) continue;
      const type = span.failure_type || (span.error ? 'Unknown' : 'RuleMatch');
      const key = occurrenceKey(span.project_id, type, span.error, span.error ? undefined : rule);
      keys.set(key.signature, key);
      if (span.error) break;
    }
    for (const key of keys.values()) addOccurrence(groups, key, span.project_id, span.trace_id, span.start_ms);
  }
  return [...groups.values()].sort((a, b) => (a.signature < b.signature ? -1 : a.signature > b.signature ? 1 : 0));
}
