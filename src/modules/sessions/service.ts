import { notFound } from '../../platform/errors.js';
import { clickHouseToIso } from '../../platform/time.js';
import type { TraceService } from '../traces/service.js';
import { decodeSessionCursor, decodeTracesCursor, encodeSessionCursor, encodeTracesCursor } from './cursors.js';
import type { SessionRepository, StoredSession } from './repo.js';
import type { ListSessionsQuery, Session, SessionTracesQuery } from './schemas.js';
import { paramsFingerprint, resolveWindow, type SessionWindow } from './window.js';
import { roundUsd } from '../../platform/money.js';

const iso = (ms: number) => new Date(ms).toISOString();

export function toSession(row: StoredSession): Session {
  return {
    session_id: row.session_id,
    trace_count: Number(row.n_traces),
    span_count: Number(row.n_spans),
    total_cost: roundUsd(Number(row.cost_total)),
    prompt_tokens: Number(row.prompt_total),
    completion_tokens: Number(row.completion_total),
    total_tokens: Number(row.tokens_total),
    first_started_at: clickHouseToIso(row.first_start),
    last_ended_at: clickHouseToIso(row.last_end),
    error_count: Number(row.n_errors),
  };
}

export class SessionService {
  constructor(
    private readonly repo: SessionRepository,
    private readonly traces: TraceService,
    private readonly now: () => number = Date.now,
  ) {}

  /** GET /v1/sessions: sessions with traces in the window, most recent activity (last ended_at) first. */
  async list(tenantId: string, query: ListSessionsQuery) {
    const fingerprint = paramsFingerprint(query);
    const resumed = query.cursor ? decodeSessionCursor(query.cursor, fingerprint) : null;
    const window = resumed?.window ?? resolveWindow(query, this.now());
    const filter = this.traces.filter(tenantId, windowFilter(query.project_id, window));
    const rows = await this.repo.list(filter, resumed?.after ?? null, query.limit + 1);
    const hasMore = rows.length > query.limit;
    const items = hasMore ? rows.slice(0, query.limit) : rows;
    const last = items[items.length - 1];
    return {
      sessions: items.map(toSession),
      has_more: hasMore,
      next_cursor: hasMore && last ? encodeSessionCursor(window, fingerprint, { lastEnd: last.last_end, sessionId: last.session_id }) : null,
    };
  }

  /** GET /v1/sessions/{id}: the session's totals over the window and its traces, oldest first. */
  async get(tenantId: string, sessionId: string, query: SessionTracesQuery) {
    const fingerprint = paramsFingerprint(query, sessionId);
    const resumed = query.cursor ? decodeTracesCursor(query.cursor, fingerprint) : null;
    const window = resumed?.window ?? resolveWindow(query, this.now());
    const filterQuery = { ...windowFilter(query.project_id, window), session_id: sessionId };
    const summary = await this.repo.summary(this.traces.filter(tenantId, filterQuery));
    if (!summary) throw notFound('session');
    const page = await this.traces.sessionTraces(tenantId, filterQuery, resumed?.after ?? null, query.limit);
    return {
      session: toSession(summary),
      traces: page.traces,
      has_more: page.has_more,
      next_cursor: page.has_more && page.last ? encodeTracesCursor(window, fingerprint, page.last) : null,
    };
  }
}

function windowFilter(projectId: string | undefined, window: SessionWindow) {
  return { project_id: projectId, from: iso(window.fromMs), to: iso(window.toMs) };
}
