import { Readable } from 'node:stream';
import { EXPORT_COLUMNS, type TraceExportRepository } from './export-repo.js';
import { TraceFilter } from './filters.js';
import type { TraceKey, TraceRepository } from './repo.js';
import type { ExportFormat, TraceFilterQuery } from './schemas.js';
import { readNewestFirst, type TracePosition } from './time-slices.js';

/**
 * An export page holds at most `pageTraces` traces and, beyond its first trace, `pageSpans` spans.
 * Pages bound memory whatever the ClickHouse transport does: the HTTP client streams a result as
 * it arrives, but the embedded engine materialises each result before handing it over.
 */
export interface ExportPaging {
  pageTraces: number;
  pageSpans: number;
}

const DEFAULT_PAGING: ExportPaging = { pageTraces: 500, pageSpans: 5_000 };

export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  jsonl: 'application/x-ndjson; charset=utf-8',
};

type ResultSet = Awaited<ReturnType<TraceExportRepository['openPage']>>;

export class TraceExportService {
  constructor(
    private readonly traces: TraceRepository,
    private readonly exports: TraceExportRepository,
    private readonly paging: ExportPaging = DEFAULT_PAGING,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * GET /v1/traces/export. The first page is opened before this resolves, so a failure there is an
   * ordinary error response. After the first byte the status is sent; a later failure destroys the
   * stream and Fastify aborts the connection (no terminating chunk), so the client sees a broken
   * transfer rather than a file that looks complete or a JSON error glued onto CSV.
   */
  async open(tenantId: string, query: TraceFilterQuery, format: ExportFormat, maxRows: number | undefined): Promise<Readable> {
    const filter = TraceFilter.fromQuery(tenantId, query);
    const { pageTraces, pageSpans } = this.paging;
    const readKeys = async (after: TracePosition | null) =>
      readNewestFirst(filter.range, after, pageTraces, this.now(), (slice, want) => this.traces.keysSlice(filter, slice, want));

    let budget = maxRows ?? Number.MAX_SAFE_INTEGER;
    let pending = await readKeys(null);
    let listingExhausted = pending.length < pageTraces;
    const openNext = async (): Promise<ResultSet | null> => {
      if (pending.length === 0 || budget <= 0) return null;
      const page = cutPage(pending, pageSpans);
      pending = pending.slice(page.length);
      if (pending.length === 0 && !listingExhausted) {
        const last = page[page.length - 1]!;
        pending = await readKeys({ startedAt: last.started_at, id: last.id });
        listingExhausted = pending.length < pageTraces;
      }
      return this.exports.openPage(tenantId, page, format, budget);
    };

    const first = await openNext();
    const countRecords = format === 'csv' ? csvRecordCounter() : () => 1;
    const spend = (rows: number) => {
      budget -= rows;
    };
    return Readable.from(exportChunks(format, first, openNext, countRecords, spend), { objectMode: false });
  }
}

/** Leading traces of `keys` whose spans fit `maxSpans` (always at least one trace). */
function cutPage(keys: TraceKey[], maxSpans: number): TraceKey[] {
  let spans = 0;
  let end = 0;
  while (end < keys.length && (end === 0 || spans + Number(keys[end]!.span_count) <= maxSpans)) {
    spans += Number(keys[end]!.span_count);
    end += 1;
  }
  return keys.slice(0, end);
}

/**
 * The body: the CSV header line (written here, so an export without rows still has it), then each
 * page's rows as ClickHouse formatted them. Each chunk is produced only when the reply asks for
 * more (Readable.from pulls lazily), so a slow client slows the ClickHouse read instead of
 * filling memory.
 */
async function* exportChunks(
  format: ExportFormat,
  first: ResultSet | null,
  openNext: () => Promise<ResultSet | null>,
  countRecords: (rowText: string) => number,
  spend: (rows: number) => void,
): AsyncGenerator<Buffer> {
  if (format === 'csv') yield Buffer.from(`${EXPORT_COLUMNS.join(',')}\n`);
  let current = first;
  try {
    while (current) {
      for await (const rows of current.stream()) {
        let records = 0;
        let text = '';
        for (const row of rows) {
          records += countRecords(row.text);
          text += `${row.text}\n`;
        }
        spend(records);
        yield Buffer.from(text);
      }
      current = await openNext();
    }
  } finally {
    current?.close();
  }
}

/**
 * The client splits a result at every newline; a CSV record may hold quoted newlines. A record
 * ends at a newline outside quotes, and quotes inside a field are doubled, so parity decides.
 */
function csvRecordCounter(): (rowText: string) => number {
  let insideQuotes = false;
  return (text) => {
    for (let i = text.indexOf('"'); i !== -1; i = text.indexOf('"', i + 1)) insideQuotes = !insideQuotes;
    return insideQuotes ? 0 : 1;
  };
}
