import type { ClickHouseStore } from '../../stores/clickhouse.js';
import { bind, queryTag, TenantWhere } from '../../stores/clickhouse-where.js';
import { tagPair } from '../../platform/tag-pairs.js';
import { JSON_NUMBERS } from '../../stores/clickhouse.js';
import { SPAN_SELECT_COLUMNS, TRACE_SELECT_COLUMNS, type StoredSpan, type StoredTrace } from './stored.js';

/** Whose data: one end user, named by the trace field or attribute that carries it. */
export interface TraceSubject {
  kind: 'session_id' | 'external_id' | 'user_id';
  value: string;
}

/** A trace of a subject and the project it lives in (the first column of every sorting key after the tenant). */
export interface TraceRef {
  trace_id: string;
  project_id: string;
}

/**
 * ClickHouse side of data-subject requests (src/modules/privacy): which traces are the subject's,
 * what they hold, and their erasure. Every statement names the tenant and the traces' projects, so
 * it reads the (tenant, project, …) prefix of the sorting keys. Deletes are by trace id, never by
 * the subject's value: ClickHouse keeps the text of a mutation in system.mutations. Every read
 * goes to the primary: an erasure or export must cover each trace acknowledged before it, and
 * `remaining` checks the deletes where they ran.
 */
export function subjectTraceRepository(ch: ClickHouseStore) {
  const byRefs = (tenantId: string, refs: readonly TraceRef[], idColumn: 'id' | 'trace_id') => {
    const where = TenantWhere.forTenant(tenantId).and`project_id IN ${bind('Array(UUID)', [...new Set(refs.map((r) => r.project_id))])}`;
    const ids = bind('Array(UUID)', refs.map((r) => r.trace_id));
    return idColumn === 'id' ? where.and`id IN ${ids}` : where.and`trace_id IN ${ids}`;
  };

  return {
    /**
     * Every trace of the tenant (all projects) that any stored version of its trace row, or any of
     * its spans, ties to the subject (docs/api-decisions.md, "Data-subject requests"). Versions
     * are not collapsed: a trace that ever carried the subject is the subject's. Span metadata
     * counts because OTLP attributes that ingest maps onto no span field stay there under their
     * own key (docs/ingest.md), as native span metadata does; an end-user id may be a string or an
     * integer attribute (`42` matches "42").
     */
    async find(tenantId: string, subject: TraceSubject): Promise<TraceRef[]> {
      const traces = TenantWhere.forTenant(tenantId);
      const spans = traces.sibling();
      const value = bind('String', subject.value);
      if (subject.kind === 'session_id') {
        traces.and`session_id = ${value}`;
        spans.and`has(arrayMap(k -> JSONExtractString(metadata, k), ['session.id', 'gen_ai.conversation.id', 'traceloop.association.properties.session_id']), ${value})`;
      } else if (subject.kind === 'external_id') {
        traces.and`external_id = ${value}`;
      } else {
        traces.and`has(tag_pairs, ${bind('String', tagPair('user_id', subject.value))}) OR JSONExtractString(metadata, 'user_id') = ${value}`;
        spans.and`has(arrayMap(k -> if(JSONType(metadata, k) IN ('Int64', 'UInt64'), JSONExtractRaw(metadata, k), JSONExtractString(metadata, k)),
                           ['user.id', 'enduser.id', 'user_id', 'traceloop.association.properties.user_id']), ${value})`;
      }
      const fromSpans = subject.kind === 'external_id' ? '' : ` UNION DISTINCT SELECT trace_id, project_id FROM spans WHERE ${spans.sql}`;
      return ch.rowsFromPrimary<TraceRef>(
        'privacy.subject_traces',
        `SELECT DISTINCT id AS trace_id, project_id FROM traces WHERE ${traces.sql}${fromSpans}`,
        traces.params,
        queryTag('privacy.subject_traces', tenantId),
      );
    },

    /** Spans stored of these traces (one per span, whatever versions are stored). */
    async countSpans(tenantId: string, refs: readonly TraceRef[]): Promise<number> {
      if (refs.length === 0) return 0;
      const where = byRefs(tenantId, refs, 'trace_id');
      const [row] = await ch.rowsFromPrimary<{ n: number | string }>(
        'privacy.count_spans',
        `SELECT uniqExact(trace_id, span_id) AS n FROM spans WHERE ${where.sql}`,
        where.params,
        queryTag('privacy.count_spans', tenantId),
      );
      return Number(row?.n ?? 0);
    },

    /** The traces as the API shows them (latest version of each). */
    async traces(tenantId: string, refs: readonly TraceRef[]): Promise<StoredTrace[]> {
      if (refs.length === 0) return [];
      const where = byRefs(tenantId, refs, 'id');
      return ch.rowsFromPrimary<StoredTrace>(
        'privacy.traces',
        `SELECT ${TRACE_SELECT_COLUMNS} FROM traces FINAL WHERE ${where.sql} AND is_deleted = 0 ORDER BY id, version DESC LIMIT 1 BY id`,
        where.params,
        { ...queryTag('privacy.traces', tenantId), ...JSON_NUMBERS },
      );
    },

    /** Their spans, trace by trace in start order. */
    async spans(tenantId: string, refs: readonly TraceRef[]): Promise<StoredSpan[]> {
      if (refs.length === 0) return [];
      const where = byRefs(tenantId, refs, 'trace_id');
      return ch.rowsFromPrimary<StoredSpan>(
        'privacy.spans',
        `SELECT ${SPAN_SELECT_COLUMNS} FROM spans FINAL WHERE ${where.sql} ORDER BY trace_id, start_time, span_id`,
        where.params,
        { ...queryTag('privacy.spans', tenantId), ...JSON_NUMBERS },
      );
    },

    /** Rows of these traces still stored in spans, trace_tokens and traces (0 once an erasure has taken them). */
    async remaining(tenantId: string, refs: readonly TraceRef[]): Promise<number> {
      if (refs.length === 0) return 0;
      const count = async (name: string, table: string, idColumn: 'id' | 'trace_id') => {
        const where = byRefs(tenantId, refs, idColumn);
        const [row] = await ch.rowsFromPrimary<{ n: number | string }>(name, `SELECT count() AS n FROM ${table} WHERE ${where.sql}`, where.params);
        return Number(row?.n ?? 0);
      };
      const counts = [
        await count('privacy.remaining_spans', 'spans', 'trace_id'),
        await count('privacy.remaining_tokens', 'trace_tokens', 'trace_id'),
        await count('privacy.remaining_traces', 'traces', 'id'),
      ];
      return counts.reduce((a, b) => a + b, 0);
    },

    /**
     * Lightweight deletes, waited for (lightweight_deletes_sync = 2: every replica has applied
     * them before this returns). Spans first, the trace row last: a retry after a failure in
     * between still finds what is left through the request's own list of traces.
     */
    async erase(tenantId: string, refs: readonly TraceRef[]): Promise<void> {
      if (refs.length === 0) return;
      const spans = byRefs(tenantId, refs, 'trace_id');
      // spans and trace_tokens both name the trace trace_id.
      await ch.command('privacy.erase_spans', `DELETE FROM spans WHERE ${spans.sql} SETTINGS lightweight_deletes_sync = 2`, spans.params);
      await ch.command('privacy.erase_tokens', `DELETE FROM trace_tokens WHERE ${spans.sql} SETTINGS lightweight_deletes_sync = 2`, spans.params);
      const traces = byRefs(tenantId, refs, 'id');
      await ch.command('privacy.erase_traces', `DELETE FROM traces WHERE ${traces.sql} SETTINGS lightweight_deletes_sync = 2`, traces.params);
    },

    /**
     * A lightweight delete hides rows at once and removes them from disk at the next merge of
     * their parts; this rewrites the parts that hold deleted rows now, so that an erasure is
     * physical when its request says completed.
     */
    async purge(): Promise<void> {
      for (const table of ['spans', 'trace_tokens', 'traces']) {
        await ch.command(`privacy.purge_${table}`, `ALTER TABLE ${table} APPLY DELETED MASK SETTINGS mutations_sync = 2`);
      }
    },
  };
}

export type SubjectTraceRepository = ReturnType<typeof subjectTraceRepository>;
