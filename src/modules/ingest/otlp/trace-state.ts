import { roundUsd } from '../../../platform/money.js';
import { isAcceptedText, toAcceptedText } from '../../../platform/text-input.js';

/*
 * An OTLP trace's row, folded span by span. Spans of one trace arrive over any number of requests,
 * in any order, and may be re-sent; each group commit folds the new ones into the state kept on the
 * trace's registry row (Postgres), and writes the trace row from it. The fold gives the same row
 * whatever the order of arrival: every order-dependent field keeps its candidate with the rank that
 * decides it (earliest start, ties by span id), and sums count each span once (by its OTel span id).
 * Text kept in the state goes through toAcceptedText: Postgres jsonb holds neither NUL nor an
 * unpaired surrogate, which OTLP strings may carry.
 */

const MAX_TAGS = 100;
const CONTROL = /[\u0000-\u001f]/;

/** What the fold needs of one span: the spans table's fields plus the trace hints in its attributes. */
export interface SpanFacts {
  /** The span's UUID (spans.span_id). */
  spanId: string;
  parentless: boolean;
  name: string;
  type: string;
  model: string;
  startNs: bigint;
  endNs: bigint;
  promptTokens: number;
  completionTokens: number;
  cost: number;
  error: string | null;
  failureType: string;
  session: string;
  tags: readonly string[];
  tagMap: Readonly<Record<string, string>>;
}

/** Where the fold ranks a span: earliest start first, ties by span id. */
interface Rank {
  startNs: string;
  spanId: string;
}

interface Ranked<T> extends Rank {
  value: T;
}

/** The state stored as JSON on the registry row (`trace_registry.otlp_state`). */
export interface OtlpTraceState {
  /** OTel span ids (16 hex) already counted. */
  spans: string[];
  startNs: string;
  endNs: string;
  prompt: number;
  completion: number;
  cost: number;
  failureTypes: string[];
  error: Ranked<string> | null;
  llmModel: Ranked<string> | null;
  anyModel: Ranked<string> | null;
  session: Ranked<string> | null;
  /** Tag → the rank of the earliest span carrying it (at most MAX_TAGS). */
  tags: Record<string, Rank>;
  tagMap: Record<string, Ranked<string>>;
  root: Rank & { parentless: boolean; name: string; session: string; tags: string[]; tagMap: Record<string, string> };
  /** The row last written: its sorting-key start (ms) and version. */
  written: { startedAtMs: number; version: number } | null;
}

const spanKey = (spanId: string): string => spanId.replaceAll('-', '').slice(16);

const rankOf = (s: SpanFacts): Rank => ({ startNs: s.startNs.toString(), spanId: s.spanId });

function before(a: Rank, b: Rank): boolean {
  const d = BigInt(a.startNs) - BigInt(b.startNs);
  return d < 0n || (d === 0n && a.spanId < b.spanId);
}

function earliest<T>(current: Ranked<T> | null, candidate: Ranked<T>): Ranked<T> {
  return current === null || before(candidate, current) ? candidate : current;
}

const clean = (text: string, max: number): boolean => text.length > 0 && text.length <= max && !CONTROL.test(text) && isAcceptedText(text);
const cleanTag = (tag: string): boolean => clean(tag, 400);
const cleanPair = (k: string, v: string): boolean => clean(k, 200) && clean(v, 200);

/** The root rule: the earliest span without a parent, else the earliest span. */
function outranksRoot(s: SpanFacts, root: OtlpTraceState['root']): boolean {
  if (s.parentless !== root.parentless) return s.parentless;
  return before(rankOf(s), root);
}

function rootOf(s: SpanFacts): OtlpTraceState['root'] {
  return {
    ...rankOf(s),
    parentless: s.parentless,
    name: toAcceptedText(s.name),
    session: toAcceptedText(s.session.slice(0, 256)),
    tags: s.tags.filter(cleanTag).slice(0, MAX_TAGS),
    tagMap: Object.fromEntries(Object.entries(s.tagMap).filter(([k, v]) => cleanPair(k, v))),
  };
}

function emptyState(first: SpanFacts): OtlpTraceState {
  return {
    spans: [],
    startNs: first.startNs.toString(),
    endNs: first.endNs.toString(),
    prompt: 0,
    completion: 0,
    cost: 0,
    failureTypes: [],
    error: null,
    llmModel: null,
    anyModel: null,
    session: null,
    tags: {},
    tagMap: {},
    root: rootOf(first),
    written: null,
  };
}

function keepEarliestTags(tags: Record<string, Rank>): Record<string, Rank> {
  const entries = Object.entries(tags);
  if (entries.length <= MAX_TAGS) return tags;
  entries.sort(([, a], [, b]) => (before(a, b) ? -1 : 1));
  return Object.fromEntries(entries.slice(0, MAX_TAGS));
}

export interface Folded {
  state: OtlpTraceState;
  /** Spans not counted before (re-sent ones are skipped). */
  added: number;
}

/**
 * Folds spans into a trace's state, in place: `prior` (the state a commit read, owned by it) is
 * the state returned. Not copied, since a long trace's state holds every span id it counted.
 */
export function foldSpans(prior: OtlpTraceState | null, spans: readonly SpanFacts[]): Folded {
  if (prior === null && spans.length === 0) throw new Error('a trace state needs at least one span');
  const state: OtlpTraceState = prior ?? emptyState(spans[0]!);
  const counted = new Set(state.spans);
  const failures = new Set(state.failureTypes);
  let added = 0;
  for (const s of spans) {
    const key = spanKey(s.spanId);
    if (counted.has(key)) continue;
    counted.add(key);
    state.spans.push(key);
    added += 1;
    const rank = rankOf(s);
    if (s.startNs < BigInt(state.startNs)) state.startNs = rank.startNs;
    if (s.endNs > BigInt(state.endNs)) state.endNs = s.endNs.toString();
    state.prompt += s.promptTokens;
    state.completion += s.completionTokens;
    state.cost = roundUsd(state.cost + s.cost);
    if (s.failureType) failures.add(toAcceptedText(s.failureType));
    if (s.error) state.error = earliest(state.error, { ...rank, value: toAcceptedText(s.error) });
    if (s.model && s.type === 'llm') state.llmModel = earliest(state.llmModel, { ...rank, value: toAcceptedText(s.model) });
    if (s.model) state.anyModel = earliest(state.anyModel, { ...rank, value: toAcceptedText(s.model) });
    if (s.session) state.session = earliest(state.session, { ...rank, value: toAcceptedText(s.session.slice(0, 256)) });
    for (const tag of s.tags) {
      if (!cleanTag(tag)) continue;
      const seen = state.tags[tag];
      if (!seen || before(rank, seen)) state.tags[tag] = rank;
    }
    for (const [k, v] of Object.entries(s.tagMap)) {
      if (!cleanPair(k, v)) continue;
      state.tagMap[k] = earliest(state.tagMap[k] ?? null, { ...rank, value: v });
    }
    if (outranksRoot(s, state.root)) state.root = rootOf(s);
  }
  state.tags = keepEarliestTags(state.tags);
  state.failureTypes = [...failures].sort();
  return { state, added };
}

/** The trace-level fields of the row: the root's hints first, then those of the earliest spans. */
export function traceFields(state: OtlpTraceState) {
  const tags = [...state.root.tags];
  const taken = new Set(tags);
  const byRank = Object.entries(state.tags).sort(([, a], [, b]) => (before(a, b) ? -1 : 1));
  for (const [tag] of byRank) {
    if (tags.length >= MAX_TAGS) break;
    if (!taken.has(tag)) tags.push(tag);
  }
  const tagMap: Record<string, string> = { ...Object.fromEntries(Object.entries(state.tagMap).map(([k, v]) => [k, v.value])), ...state.root.tagMap };
  return {
    startNs: BigInt(state.startNs),
    endNs: BigInt(state.endNs),
    name: state.root.name,
    sessionId: state.root.session || (state.session?.value ?? ''),
    model: state.llmModel?.value ?? state.anyModel?.value ?? '',
    error: state.error?.value ?? null,
    tags,
    tagMap,
    summary: { prompt: state.prompt, completion: state.completion, cost: state.cost, failureTypes: state.failureTypes },
    spanCount: state.spans.length,
  };
}

/** The trace-row fields only a root span has, known for spans that came in the current request. */
export interface RootDetail {
  input: string;
  output: string;
  /** The span's resource attributes (the trace row's `metadata.otel.resource`). */
  resource: unknown;
}

/** One OTLP span of a group commit, with what the fold needs and the root detail it would give. */
export interface OtlpSpanWrite {
  tenantId: string;
  projectId: string;
  traceId: string;
  facts: SpanFacts;
  detail: RootDetail;
}
