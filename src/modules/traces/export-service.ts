import { Readable } from 'node:stream';
import { joinParquet } from '../../stores/parquet-concat.js';
import { EXPORT_COLUMNS, type TraceExportRepository } from './export-repo.js';
import type { TraceFilter } from './filters.js';
import { narrowedBySearch } from './search-candidates.js';
import type { TraceKey, TraceRepository } from './repo.js';
import type { ExportFormat, TraceFilterQuery } from './schemas.js';

/**
 * Keys are read `keyBatch` traces at a time; a page holds at most `pageTraces` traces and, beyond
 * its first trace, `pageSpans` spans, which bounds the engine's memory for one page's join.
 */
export interface ExportPaging {
  keyBatch: number;
  pageTraces: number;
  pageSpans: number;
}

const DEFAULT_PAGING: ExportPaging = { keyBatch: 20_000, pageTraces: 5_000, pageSpans: 100_000 };

export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  jsonl: 'application/x-ndjson; charset=utf-8',
  parquet: 'application/vnd.apache.parquet',
};

/**
 * GET /v1/traces/export, in trace-id order.
 *
 * Why id order and not the listing's newest-first order: spans are sorted by (tenant, project,
 * trace_id), and trace ids are random (as OpenTelemetry ids are). A page of traces taken in time
 * order has its spans scattered over the whole table, so every page would re-read a large part of
 * it (measured: 5,304 of 12,241 granules for a 1,000-trace page on 100M spans). Taken in id order,
 * consecutive pages read disjoint, ascending key ranges: the whole export costs about one pass, like
 * a single ClickHouse query, while memory stays bounded by one page (measured on 10M stored spans,
 * exporting 1M: 15.6 s paged against 11.9 s for the single query).
 */
export class TraceExportService {
  constructor(
    private readonly traces: TraceRepository,
    private readonly exports: TraceExportRepository,
    private readonly paging: ExportPaging = DEFAULT_PAGING,
  ) {}

  /**
   * The first batch of keys is read before this resolves, so a bad filter or an unreachable store
   * is an ordinary error response. After the first byte the status is sent; a later failure
   * destroys the stream and Fastify aborts the connection (no terminating chunk), so the client
   * sees a broken transfer rather than a file that looks complete or a JSON error glued onto CSV.
   */
  async open(tenantId: string, query: TraceFilterQuery, format: ExportFormat, maxRows: number | undefined): Promise<Readable> {
    const filter = await narrowedBySearch(this.traces, tenantId, query);
    const firstKeys = await this.traces.exportKeys(filter, null, this.paging.keyBatch);
    const chunks = this.chunks(filter, firstKeys, format, maxRows ?? Number.MAX_SAFE_INTEGER);
    return Readable.from(format === 'parquet' ? this.parquet(filter, chunks) : bytes(chunks), { objectMode: false });
  }

  /**
   * Parquet: every page (and, embedded, every block of it) comes from ClickHouse as a complete file,
   * joined into one as it goes. An export of no rows still asks ClickHouse for a page (of no trace),
   * whose empty file brings the schema.
   */
  private parquet(filter: TraceFilter, chunks: AsyncGenerator<Chunk>): AsyncGenerator<Buffer> {
    return joinParquet(chunks, () => this.exports.streamPage(filter, [], 'parquet', 0));
  }

  /** Pulled lazily by the reply: a slow client slows the ClickHouse read instead of filling memory. */
  private async *chunks(filter: TraceFilter, firstKeys: TraceKey[], format: ExportFormat, maxRows: number): AsyncGenerator<Chunk> {
    if (format === 'csv') yield { data: Buffer.from(`${EXPORT_COLUMNS.join(',')}\n`), rowsCounted: () => {} };
    let budget = maxRows;
    let keys = firstKeys;
    while (keys.length > 0 && budget > 0) {
      for (const page of pages(keys, this.paging)) {
        for await (const chunk of this.exports.streamPage(filter, page, format, budget)) {
          budget -= chunk.rows;
          // Over HTTP a Parquet page's rows are only known from its footer: the consumer counts them.
          yield { data: chunk.data, rowsCounted: (rows) => (budget -= rows - chunk.rows) };
        }
        if (budget <= 0) return;
      }
      if (keys.length < this.paging.keyBatch) return;
      keys = await this.traces.exportKeys(filter, keys[keys.length - 1]!.id, this.paging.keyBatch);
    }
  }
}

/** A chunk of formatted rows; `rowsCounted` corrects the row budget when the chunk's own count was short. */
interface Chunk {
  data: Buffer;
  rowsCounted(rows: number): void;
}

async function* bytes(chunks: AsyncIterable<Chunk>): AsyncGenerator<Buffer> {
  for await (const chunk of chunks) yield chunk.data;
}

/** Consecutive runs of `keys` within the page bounds (always at least one trace per page). */
function* pages(keys: TraceKey[], { pageTraces, pageSpans }: ExportPaging): Generator<TraceKey[]> {
  let start = 0;
  while (start < keys.length) {
    let end = start + 1;
    let spans = Number(keys[start]!.span_count);
    while (end < keys.length && end - start < pageTraces && spans + Number(keys[end]!.span_count) <= pageSpans) {
      spans += Number(keys[end]!.span_count);
      end += 1;
    }
    yield keys.slice(start, end);
    start = end;
  }
}
