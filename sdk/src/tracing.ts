import { randomUUID } from 'node:crypto';
import { errorFields, iso, maskMetadata, toText, type ErrorFields, type IngestSpan, type IngestTrace, type Mask } from './records.js';

/** A prompt version a span ran with: monitoring of prompt deployments looks for these two keys. */
export interface PromptRef {
  name: string;
  version: number;
}

export interface TraceOptions {
  input?: unknown;
  sessionId?: string;
  externalId?: string;
  tags?: string[];
  metadata?: Record<string, unknown>;
  /** Reported as prompt_name/prompt_version on every span of the trace that does not name its own. */
  prompt?: PromptRef;
  /** A trace id of your own (UUID-shaped); by default a random one. */
  id?: string;
}

export interface TraceUpdate {
  name?: string;
  input?: unknown;
  output?: unknown;
  sessionId?: string;
  tags?: string[];
  metadata?: Record<string, unknown>;
  error?: unknown;
}

export interface SpanOptions {
  /** llm, tool, retrieval, agent, chain, embedding… (default 'span'). */
  type?: string;
  input?: unknown;
  model?: string;
  metadata?: Record<string, unknown>;
  prompt?: PromptRef;
}

export interface SpanUpdate {
  input?: unknown;
  output?: unknown;
  model?: string;
  metadata?: Record<string, unknown>;
  promptTokens?: number;
  completionTokens?: number;
  /** USD; the server prices llm spans by model and tokens when this is absent. */
  cost?: number;
  /** An Error (its status code is kept) or a message. */
  error?: unknown;
}

/** What a `lt.trace` callback receives. */
export interface TraceHandle {
  readonly id: string;
  /** False when the trace was sampled out or the client is shut down: nothing of it is sent. */
  readonly recorded: boolean;
  update(fields: TraceUpdate): void;
}

/** What a `lt.span` callback receives. */
export interface SpanHandle {
  readonly id: string;
  readonly traceId: string;
  readonly recorded: boolean;
  update(fields: SpanUpdate): void;
}

export interface TraceSink {
  mask: Mask | undefined;
  /** Where traces go; undefined: the API key's project. */
  projectId: string | undefined;
  /** A finished trace, ready to send. */
  finished(trace: IngestTrace): void;
  /** A span that ended after its trace was sent (the trace waited `maxSpanWaitMs`). */
  late(): void;
  /** How long a trace whose callback returned waits for spans still open (a stream not read to its end). */
  maxSpanWaitMs: number;
}

/**
 * One trace being recorded. It is sent when its callback has returned and every span in it has
 * ended, so a stream consumed after the callback returned is still part of it; a span that never
 * ends holds it at most `maxSpanWaitMs`.
 */
export class TraceState implements TraceHandle {
  readonly recorded = true;
  readonly startedAt = Date.now();
  readonly prompt: PromptRef | undefined;
  private endedAt = 0;
  private readonly spans: IngestSpan[] = [];
  private open = 0;
  private returned = false;
  private sent = false;
  private waitTimer: NodeJS.Timeout | undefined;
  private name: string;
  /** Recorded as text when given, like a span's. */
  private input: string | undefined;
  private output: unknown;
  private outputSet = false;
  private error: unknown;
  private sessionId: string | undefined;
  private tags: string[] | undefined;
  private readonly externalId: string | undefined;
  private readonly metadata: Record<string, unknown>;
  /** A trace made for one span called outside any trace takes that span's (already masked) input, output and error. */
  private adopted: Pick<IngestSpan, 'input' | 'output' | 'error'> | undefined;

  constructor(
    name: string,
    options: TraceOptions,
    private readonly sink: TraceSink,
    private readonly onSent: (trace: TraceState) => void,
    private readonly implicit = false,
    readonly id: string = options.id ?? randomUUID(),
  ) {
    this.name = name;
    this.prompt = options.prompt;
    this.input = this.text(options.input, 'input');
    this.sessionId = options.sessionId;
    this.externalId = options.externalId;
    this.tags = options.tags;
    this.metadata = { ...options.metadata };
  }

  update(fields: TraceUpdate): void {
    if (fields.name !== undefined) this.name = fields.name;
    if ('input' in fields) this.input = this.text(fields.input, 'input');
    if ('output' in fields) {
      this.output = fields.output;
      this.outputSet = true;
    }
    if (fields.error !== undefined) this.error = fields.error;
    if (fields.sessionId !== undefined) this.sessionId = fields.sessionId;
    if (fields.tags !== undefined) this.tags = fields.tags;
    if (fields.metadata) Object.assign(this.metadata, fields.metadata);
  }

  spanStarted(): void {
    this.open += 1;
  }

  spanEnded(span: IngestSpan): void {
    if (this.sent) {
      this.sink.late();
      return;
    }
    this.open -= 1;
    this.spans.push(span);
    if (this.implicit && span.parent_span_id === null) this.adopted = { input: span.input, output: span.output, error: span.error };
    this.settle();
  }

  /** The callback returned (value) or threw (error). */
  returnedWith(outcome: { value: unknown } | { error: unknown }): void {
    if ('error' in outcome) this.error = outcome.error;
    else if (!this.outputSet) this.output = outcome.value;
    this.endedAt = Date.now();
    this.returned = true;
    this.settle();
  }

  /** Sends what it has now, open spans or not (process exit). */
  sendNow(): void {
    if (!this.sent) this.send();
  }

  private text(value: unknown, field: 'input' | 'output'): string | undefined {
    return toText(value, this.sink.mask, { type: 'trace', name: this.name, field });
  }

  private settle(): void {
    if (!this.returned || this.sent) return;
    if (this.open <= 0) return this.send();
    this.waitTimer ??= setTimeout(() => this.send(), this.sink.maxSpanWaitMs).unref();
  }

  private send(): void {
    this.sent = true;
    clearTimeout(this.waitTimer);
    this.onSent(this);
    const error = this.adopted ? this.adopted.error : this.error === undefined || this.error === null ? undefined : errorFields(this.error).error;
    const metadata = maskMetadata(this.metadata, this.sink.mask, { type: 'trace', name: this.name });
    let endedAt = this.endedAt || Date.now();
    for (const span of this.spans) endedAt = Math.max(endedAt, Date.parse(span.end_time));
    this.sink.finished({
      id: this.id,
      ...(this.sink.projectId ? { project_id: this.sink.projectId } : {}),
      name: this.name,
      input: (this.adopted ? this.adopted.input : this.input) ?? '',
      output: (this.adopted ? this.adopted.output : this.text(this.output, 'output')) ?? '',
      ...(this.sessionId ? { session_id: this.sessionId } : {}),
      ...(this.externalId ? { external_id: this.externalId } : {}),
      ...(this.tags?.length ? { tags: this.tags } : {}),
      ...(metadata ? { metadata } : {}),
      ...(error ? { error } : {}),
      started_at: iso(this.startedAt),
      ended_at: iso(endedAt),
      spans: this.spans,
    });
  }
}

/** One span being recorded; `end()` hands it to its trace once (later calls do nothing). */
export class SpanState implements SpanHandle {
  readonly recorded = true;
  readonly id = randomUUID();
  readonly startedAt = Date.now();
  private ended = false;
  /** Recorded as text when given: the caller may change the object afterwards (a growing message list). */
  private input: string | undefined;
  private output: unknown;
  private outputSet = false;
  private model: string | undefined;
  private readonly metadata: Record<string, unknown>;
  private promptTokens: number | undefined;
  private completionTokens: number | undefined;
  private cost: number | undefined;
  private failure: ErrorFields | undefined;

  constructor(
    readonly trace: TraceState,
    readonly parentId: string | null,
    readonly name: string,
    readonly type: string,
    options: SpanOptions,
    private readonly mask: Mask | undefined,
  ) {
    this.input = toText(options.input, mask, { type, name, field: 'input' });
    this.model = options.model;
    const prompt = options.prompt ?? trace.prompt;
    this.metadata = { ...(prompt ? { prompt_name: prompt.name, prompt_version: prompt.version } : {}), ...options.metadata };
    trace.spanStarted();
  }

  get traceId(): string {
    return this.trace.id;
  }

  update(fields: SpanUpdate): void {
    if ('input' in fields) this.input = toText(fields.input, this.mask, { type: this.type, name: this.name, field: 'input' });
    if ('output' in fields) {
      this.output = fields.output;
      this.outputSet = true;
    }
    if (fields.model !== undefined) this.model = fields.model;
    if (fields.metadata) Object.assign(this.metadata, fields.metadata);
    if (fields.promptTokens !== undefined) this.promptTokens = fields.promptTokens;
    if (fields.completionTokens !== undefined) this.completionTokens = fields.completionTokens;
    if (fields.cost !== undefined) this.cost = fields.cost;
    if (fields.error !== undefined && fields.error !== null) this.failure = errorFields(fields.error);
  }

  /** The callback returned (value, kept as output unless one was set) or threw. */
  end(outcome?: { value: unknown } | { error: unknown }): void {
    if (this.ended) return;
    this.ended = true;
    if (outcome && 'error' in outcome) this.failure = errorFields(outcome.error);
    else if (outcome && !this.outputSet) this.output = outcome.value;
    const where = { type: this.type, name: this.name };
    const input = this.input;
    const output = toText(this.output, this.mask, { ...where, field: 'output' });
    const metadata = maskMetadata(this.metadata, this.mask, where);
    this.trace.spanEnded({
      id: this.id,
      parent_span_id: this.parentId,
      name: this.name,
      type: this.type,
      ...(input !== undefined ? { input } : {}),
      ...(output !== undefined ? { output } : {}),
      ...(this.model ? { model: this.model } : {}),
      start_time: iso(this.startedAt),
      end_time: iso(Date.now()),
      ...(this.promptTokens !== undefined ? { prompt_tokens: this.promptTokens } : {}),
      ...(this.completionTokens !== undefined ? { completion_tokens: this.completionTokens } : {}),
      ...(this.cost !== undefined ? { cost: this.cost } : {}),
      ...this.failure,
      ...(metadata ? { metadata } : {}),
    });
  }
}

/** Stand-ins handed to callbacks when nothing is recorded (sampled out, shut down). */
export const unrecordedTrace = (id: string = randomUUID()): TraceHandle => ({ id, recorded: false, update: () => {} });
export const unrecordedSpan = (traceId: string): SpanHandle => ({ id: randomUUID(), traceId, recorded: false, update: () => {} });
