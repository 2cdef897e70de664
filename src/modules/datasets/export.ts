import { PassThrough, type Readable } from 'node:stream';
import type { ParquetOfRows } from '../../stores/clickhouse-parquet.js';
import { joinParquet } from '../../stores/parquet-concat.js';
import type { Sql, TxSql } from '../../stores/pg.js';
import { labelCondition } from './repo.js';
import type { DatasetExportFormat, LabelFilter } from './schemas.js';

export const DATASET_EXPORT_COLUMNS = ['id', 'trace_id', 'span_id', 'label', 'created_at'] as const;

/** Rows per fetch from the server-side cursor: one write to the response each. */
const CURSOR_ROWS = 1_000;
/** For Parquet, one fetch is one row group: larger, as columnar readers like them. */
const PARQUET_CURSOR_ROWS = 10_000;
/** The export's columns with their ClickHouse types, as the Parquet file types them. */
const PARQUET_STRUCTURE = "id UUID, trace_id UUID, span_id Nullable(UUID), label Nullable(String), created_at DateTime64(3, 'UTC')";

interface ExportRow {
  id: string;
  trace_id: string;
  span_id: string | null;
  label: string | null;
  created_at: string;
}

export interface DatasetExportRequest {
  tenantId: string;
  datasetId: string;
  format: DatasetExportFormat;
  label: LabelFilter;
  /** The plan's row cap; null = unlimited. */
  maxRows: number | null;
}

export interface DatasetExport {
  /** Whether the cap cut rows off: known before the first byte, so it can be a header. */
  truncated: boolean;
  body: Readable;
}

// Every value is a UUID, a fixed label or a timestamp: nothing a CSV field would need to quote.
const encoders: Record<Exclude<DatasetExportFormat, 'parquet'>, (row: ExportRow) => string> = {
  csv: (r) => `${r.id},${r.trace_id},${r.span_id ?? ''},${r.label ?? 'unlabeled'},${r.created_at}\n`,
  jsonl: (r) => `${JSON.stringify({ id: r.id, trace_id: r.trace_id, span_id: r.span_id, label: r.label, created_at: r.created_at })}\n`,
};

/** Resolves on 'drain', or on 'close' when the client went away (the loop then stops). */
const writable = (body: PassThrough) =>
  new Promise<void>((resolve) => {
    const done = () => {
      body.off('drain', done);
      body.off('close', done);
      resolve();
    };
    body.on('drain', done);
    body.on('close', done);
  });

const matchingItems = (tx: TxSql, { tenantId, datasetId, label }: DatasetExportRequest) =>
  tx`from dataset_items where tenant_id = ${tenantId} and dataset_id = ${datasetId} ${labelCondition(tx, label)}`;

/** Whether more rows match than the cap allows, looking at no more than cap + 1 of them. */
async function exceedsCap(tx: TxSql, request: DatasetExportRequest): Promise<boolean> {
  if (request.maxRows === null) return false;
  const [row] = await tx<{ n: number }[]>`
    select count(*)::int as n from (select 1 ${matchingItems(tx, request)} limit ${request.maxRows + 1}) bounded`;
  return row!.n > request.maxRows;
}

/** Pulls a batch of rows at a time, and the next batch only once the client has taken the last. */
async function streamRows(tx: TxSql, request: DatasetExportRequest, body: PassThrough, parquetOf: ParquetOfRows): Promise<void> {
  const rows = tx<ExportRow[]>`
    select id, trace_id, span_id, label, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at
    ${matchingItems(tx, request)}
    order by id ${request.maxRows === null ? tx`` : tx`limit ${request.maxRows}`}`;
  const write = async (data: Buffer | string) => {
    if (!body.write(data)) await writable(body);
  };
  if (request.format === 'parquet') {
    // Each batch becomes a Parquet file of its own (one row group), joined into one file as it goes;
    // no rows at all: an empty file of the same schema.
    const partsOf = async function* (batches: AsyncIterable<readonly object[]> | Iterable<readonly object[]>) {
      for await (const batch of batches) for await (const data of parquetOf(PARQUET_STRUCTURE, batch)) yield { data };
    };
    for await (const data of joinParquet(partsOf(rows.cursor(PARQUET_CURSOR_ROWS)), () => partsOf([[]]))) {
      if (body.destroyed) return;
      await write(data);
    }
    body.end();
    return;
  }
  const encode = encoders[request.format];
  if (request.format === 'csv') body.write(`${DATASET_EXPORT_COLUMNS.join(',')}\n`);
  for await (const batch of rows.cursor(CURSOR_ROWS)) {
    if (body.destroyed) break;
    await write(batch.map(encode).join(''));
  }
  body.end();
}

/**
 * GET /v1/datasets/{id}/export. Parquet is written by ClickHouse from the rows Postgres returns
 * (clickhouse-parquet.ts), a cursor batch at a time. One REPEATABLE READ read-only transaction: the bounded count
 * decides X-Service-Truncated, and the rows then streamed come from the same snapshot, so the
 * header and the body agree whatever is written meanwhile. Memory is bounded by one cursor batch
 * and the stream's buffer, not by the export.
 *
 * The transaction lives as long as the stream: a client that disconnects destroys the stream,
 * the loop sees it and stops, and the cursor and transaction are closed. A failure before the
 * count rejects (an ordinary error response); after the first byte it destroys the stream, and
 * the client sees an aborted transfer rather than a file that looks complete.
 */
export function datasetExports(sql: Sql, parquetOf: ParquetOfRows) {
  return {
    open(request: DatasetExportRequest): Promise<DatasetExport> {
      const body = new PassThrough();
      return new Promise<DatasetExport>((resolve, reject) => {
        let started = false;
        sql
          .begin('isolation level repeatable read read only', async (tx) => {
            const truncated = await exceedsCap(tx, request);
            started = true;
            resolve({ truncated, body });
            await streamRows(tx, request, body, parquetOf);
          })
          .catch((err: unknown) => {
            // Before the response began nobody listens to the stream: an error event would go unheard.
            if (started) body.destroy(err instanceof Error ? err : new Error(String(err)));
            else reject(err);
          });
      });
    },
  };
}

export type DatasetExports = ReturnType<typeof datasetExports>;
