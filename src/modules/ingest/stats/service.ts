import { z } from 'zod';
import { decodeCursor, encodeCursor } from '../../../platform/cursor.js';
import { AppError } from '../../../platform/errors.js';
import type { ProjectService } from '../../projects/service.js';
import type { IngestCounters } from './counters.js';
import type { IngestStatsRepository, StatsRow } from './repo.js';
import { DEFAULT_RANGE_MINUTES, MAX_RANGE_MINUTES, type IngestStatsQuery, type IngestStatsResponse, type IngestStatsRow } from './schemas.js';
import { MINUTE_MS, NO_PROJECT, type ReasonCounts } from './types.js';

const badParameter = (name: string, message: string) =>
  new AppError(400, 'bad_request', `query.${name}: ${message}`, { details: [{ path: `query.${name}`, message }] });

// Postgres timestamptz covers far more; this keeps Date arithmetic exact and the range sane.
const MAX_TIME_MS = Date.UTC(2106, 0, 1);

/** The range and project a page reads; a cursor carries it, with the position after the last row. */
const cursorShape = z.object({
  from: z.number().int(),
  to: z.number().int(),
  project: z.guid().nullable(),
  m: z.number().int(),
  p: z.guid(),
});

/** The requested range as whole minutes; refused when it is empty or over 24 hours. */
export function resolveStatsRange(query: Pick<IngestStatsQuery, 'from' | 'to'>, now: number): { fromMs: number; toMs: number } {
  const toRaw = query.to ? Date.parse(query.to) : now;
  const fromRaw = query.from ? Date.parse(query.from) : toRaw - DEFAULT_RANGE_MINUTES * MINUTE_MS;
  if (fromRaw < 0 || fromRaw >= MAX_TIME_MS) throw badParameter('from', 'must lie between 1970 and 2105');
  if (toRaw <= 0 || toRaw >= MAX_TIME_MS) throw badParameter('to', 'must lie between 1970 and 2105');
  const fromMs = Math.floor(fromRaw / MINUTE_MS) * MINUTE_MS;
  const toMs = Math.ceil(toRaw / MINUTE_MS) * MINUTE_MS;
  if (fromMs >= toMs) throw query.to ? badParameter('to', 'must be after from') : badParameter('from', 'must be before to, which defaults to now');
  const minutes = (toMs - fromMs) / MINUTE_MS;
  if (minutes > MAX_RANGE_MINUTES) {
    throw badParameter('from', `the range holds ${minutes} minutes, at most ${MAX_RANGE_MINUTES} (24 hours) are allowed: narrow from/to`);
  }
  return { fromMs, toMs };
}

const counts = (c: ReasonCounts) => Object.fromEntries(Object.entries(c).filter(([, n]) => Number(n) > 0).map(([r, n]) => [r, Number(n)]));

function toRow(r: StatsRow): IngestStatsRow {
  return {
    project_id: r.project_id === NO_PROJECT ? null : r.project_id,
    minute: r.minute.toISOString(),
    traces_received: r.traces_received,
    traces_stored: r.traces_stored,
    spans_received: r.spans_received,
    spans_stored: r.spans_stored,
    refused: counts(r.refused_spans),
    refused_traces: counts(r.refused_traces),
  };
}

/** GET /v1/ingest/stats: received, stored and refused counts per project and minute. */
export class IngestStatsService {
  constructor(
    private readonly repo: IngestStatsRepository,
    private readonly projects: ProjectService,
    private readonly counters: IngestCounters,
  ) {}

  /**
   * Data retention (src/modules/retention): the project's counts of minutes before `cutoff`, in
   * batches of `batch`; they describe traces the same sweep removes. Counts of no project (the nil
   * project_id of refusals that named none) are kept.
   */
  async expireBefore(tenantId: string, projectId: string, cutoff: Date, batch: number): Promise<number> {
    let total = 0;
    for (;;) {
      const removed = await this.repo.deleteBefore(tenantId, projectId, cutoff, batch);
      total += removed;
      if (removed < batch) return total;
    }
  }

  async query(tenantId: string, query: IngestStatsQuery, now = Date.now()): Promise<IngestStatsResponse> {
    const position = query.cursor ? decodeCursor(query.cursor, cursorShape) : undefined;
    const { fromMs, toMs } = position ? { fromMs: position.from, toMs: position.to } : resolveStatsRange(query, now);
    const projectId = position ? position.project : (query.project_id ?? null);
    // Another tenant's project (or none) is a 404 with no numbers; an archived one keeps its counts.
    if (projectId !== null && !position) await this.projects.get(tenantId, projectId);
    // This process's counts of the last second are written first, so a reader here sees its own requests.
    await this.counters.flush();
    const rows = await this.repo.page({
      tenantId,
      fromMs,
      toMs,
      ...(projectId !== null ? { projectId } : {}),
      ...(position ? { after: { minuteMs: position.m, projectId: position.p } } : {}),
      limit: query.limit,
    });
    const hasMore = rows.length > query.limit;
    const page = hasMore ? rows.slice(0, query.limit) : rows;
    const last = page[page.length - 1];
    return {
      from: new Date(fromMs).toISOString(),
      to: new Date(toMs).toISOString(),
      project_id: projectId,
      stats: page.map(toRow),
      has_more: hasMore,
      next_cursor: hasMore && last ? encodeCursor({ from: fromMs, to: toMs, project: projectId, m: last.minute.getTime(), p: last.project_id }) : null,
    };
  }
}
