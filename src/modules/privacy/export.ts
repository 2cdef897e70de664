import type { DatasetService } from '../datasets/service.js';
import type { EvalService } from '../evals/service.js';
import type { FeedbackService } from '../feedback/service.js';
import type { SubjectTraceService, TraceRef, TraceSubject } from '../traces/service.js';
import type { RequestRepository, RequestRow } from './repo.js';
import { ZERO_COUNTS, type RequestCounts } from './schemas.js';

/** Traces read per step: their spans, evaluations, feedback and dataset items come along. */
const EXPORT_BATCH = 200;
/** A chunk is stored once it holds about this many characters. */
const CHUNK_CHARS = 1 << 20;

export interface ExportModules {
  traces: Pick<SubjectTraceService, 'find' | 'read'>;
  evals: Pick<EvalService, 'forTraces'>;
  feedback: Pick<FeedbackService, 'forTraces'>;
  datasets: Pick<DatasetService, 'itemsForTraces'>;
}

/** Lines collected into chunks of about CHUNK_CHARS, each stored as the next row of the file. */
class ChunkWriter {
  private buffer: string[] = [];
  private size = 0;
  private seq = 0;

  constructor(
    private readonly repo: RequestRepository,
    private readonly requestId: string,
  ) {}

  async line(record: object): Promise<void> {
    const text = `${JSON.stringify(record)}\n`;
    this.buffer.push(text);
    this.size += text.length;
    if (this.size >= CHUNK_CHARS) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.buffer.length === 0) return;
    await this.repo.appendChunk(this.requestId, this.seq, this.buffer.join(''));
    this.seq += 1;
    this.buffer = [];
    this.size = 0;
  }
}

/**
 * One export: a JSONL file of everything stored of the subject, one record per line with a `kind`
 * (trace, span, evaluation, feedback, dataset_item) and the fields the API shows for it. Traces in
 * id order, each followed by its spans, then per batch the evaluations, feedback and dataset items.
 * A retry starts the file again, so an attempt that died half-way leaves nothing behind.
 */
export class SubjectExport {
  constructor(
    private readonly repo: RequestRepository,
    private readonly modules: ExportModules,
  ) {}

  async run(row: RequestRow, subject: TraceSubject): Promise<RequestCounts> {
    const m = this.modules;
    await this.repo.clearExport(row.id);
    const refs = [...(await m.traces.find(row.tenant_id, subject))].sort((a, b) => (a.trace_id < b.trace_id ? -1 : 1));
    const counts = { ...ZERO_COUNTS };
    const out = new ChunkWriter(this.repo, row.id);
    for (let start = 0; start < refs.length; start += EXPORT_BATCH) {
      await this.batch(row.tenant_id, refs.slice(start, start + EXPORT_BATCH), out, counts);
    }
    await out.flush();
    return counts;
  }

  private async batch(tenantId: string, refs: readonly TraceRef[], out: ChunkWriter, counts: RequestCounts): Promise<void> {
    const m = this.modules;
    const ids = refs.map((r) => r.trace_id);
    const [{ traces, spans }, evaluations, feedback, items] = await Promise.all([
      m.traces.read(tenantId, refs),
      m.evals.forTraces(tenantId, ids),
      m.feedback.forTraces(tenantId, ids),
      m.datasets.itemsForTraces(tenantId, ids),
    ]);
    const spansOf = new Map<string, typeof spans>();
    for (const span of spans) {
      const list = spansOf.get(span.trace_id);
      if (list) list.push(span);
      else spansOf.set(span.trace_id, [span]);
    }
    for (const trace of traces) {
      await out.line({ kind: 'trace', ...trace });
      counts.traces += 1;
      for (const span of spansOf.get(trace.id) ?? []) {
        await out.line({ kind: 'span', ...span });
        counts.spans += 1;
      }
      spansOf.delete(trace.id);
    }
    // Spans of a trace whose row the OTLP rollup has not written yet.
    for (const span of [...spansOf.values()].flat()) {
      await out.line({ kind: 'span', ...span });
      counts.spans += 1;
    }
    for (const e of evaluations) await out.line({ kind: 'evaluation', ...e });
    for (const f of feedback) await out.line({ kind: 'feedback', ...f });
    for (const i of items) await out.line({ kind: 'dataset_item', ...i });
    counts.evaluations += evaluations.length;
    counts.feedback += feedback.length;
    counts.dataset_items += items.length;
  }
}
