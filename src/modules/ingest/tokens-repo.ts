import { TupleParam } from '@clickhouse/client';
import { SEARCH_TEXT_MAX_LENGTH } from '../../platform/text-tokens.js';
import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { TOKEN_INSERT_COLUMNS } from './rows.js';
import type { TokenWrites } from './tokens.js';

const DATETIME = "DateTime64(3, 'UTC')";

/**
 * The tokens of a span's text as ClickHouse makes them, for text already stored: the same words
 * as platform/text-tokens.ts (splitByNonAlpha, lowercased, none longer than a query can be).
 * clickhouse/009_trace_tokens.sql fills the table with the same expression.
 */
const STORED_SPAN_TOKENS = `arrayFilter(w -> lengthUTF8(w) <= ${SEARCH_TEXT_MAX_LENGTH}, splitByNonAlpha(lowerUTF8(concat(name, ' ', input, ' ', output, ' ', ifNull(error, '')))))`;

/** A trace row written from stored spans: its key and version, which its token rows take. */
export interface StoredTraceKey {
  tenantId: string;
  projectId: string;
  traceId: string;
  startedAt: string; // DateTime64(3) literal
  version: number;
}

/** SQL of `trace_tokens`, the search's per-trace index (clickhouse/009_trace_tokens.sql), as ingest writes it. */
export function traceTokensRepository(ch: ClickHouseStore) {
  return {
    /** A commit's token rows, then the moves of its traces whose start moved: one statement each, whatever the number of traces. */
    async write(writes: TokenWrites): Promise<void> {
      if (writes.rows.length > 0) await ch.insert('trace_tokens', writes.rows, TOKEN_INSERT_COLUMNS);
      if (writes.moves.length === 0) return;
      // `keys` repeats the moves' old keys as a plain list: the primary key prunes by it before the join.
      await ch.command(
        'ingest.tokens_move',
        `INSERT INTO trace_tokens (tenant_id, project_id, started_at, trace_id, tokens, version)
         SELECT t.tenant_id, t.project_id, m.to, t.trace_id, t.tokens, m.version
         FROM trace_tokens AS t
         INNER JOIN (
           SELECT m.1 AS tenant_id, m.2 AS project_id, m.3 AS from, m.4 AS trace_id, m.5 AS to, m.6 AS version
           FROM (SELECT arrayJoin({moves:Array(Tuple(UUID, UUID, ${DATETIME}, UUID, ${DATETIME}, UInt64))}) AS m)
         ) AS m ON t.tenant_id = m.tenant_id AND t.project_id = m.project_id AND t.started_at = m.from AND t.trace_id = m.trace_id
         WHERE (t.tenant_id, t.project_id, t.started_at, t.trace_id) IN {keys:Array(Tuple(UUID, UUID, ${DATETIME}, UUID))}`,
        {
          moves: writes.moves.map((m) => new TupleParam([m.tenant_id, m.project_id, m.from, m.trace_id, m.to, m.version])),
          keys: writes.moves.map((m) => new TupleParam([m.tenant_id, m.project_id, m.from, m.trace_id])),
        },
      );
    },

    /**
     * Token rows for traces rewritten from their stored spans (their writer died after storing
     * them, or they were stored before their state was kept): the spans' tokens, made by
     * ClickHouse, at the rewritten row's key. One statement for all.
     */
    async fromStoredSpans(keys: readonly StoredTraceKey[]): Promise<void> {
      if (keys.length === 0) return;
      await ch.command(
        'ingest.tokens_from_spans',
        `INSERT INTO trace_tokens (tenant_id, project_id, started_at, trace_id, tokens, version)
         SELECT s.tenant_id, s.project_id, k.started_at, s.trace_id, s.tokens, k.version
         FROM (
           SELECT tenant_id, project_id, trace_id, arrayStringConcat(arrayDistinct(arrayFlatten(groupArray(${STORED_SPAN_TOKENS}))), ' ') AS tokens
           FROM spans
           WHERE (tenant_id, project_id, trace_id) IN {traces:Array(Tuple(UUID, UUID, UUID))}
           GROUP BY tenant_id, project_id, trace_id
         ) AS s
         INNER JOIN (
           SELECT k.1 AS tenant_id, k.2 AS trace_id, k.3 AS started_at, k.4 AS version
           FROM (SELECT arrayJoin({keys:Array(Tuple(UUID, UUID, ${DATETIME}, UInt64))}) AS k)
         ) AS k ON s.tenant_id = k.tenant_id AND s.trace_id = k.trace_id`,
        {
          traces: keys.map((k) => new TupleParam([k.tenantId, k.projectId, k.traceId])),
          keys: keys.map((k) => new TupleParam([k.tenantId, k.traceId, k.startedAt, k.version])),
        },
      );
    },
  };
}

export type TraceTokensRepository = ReturnType<typeof traceTokensRepository>;
