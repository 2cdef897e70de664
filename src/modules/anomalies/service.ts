import { z } from 'zod';
import { decodeCursor, filterFingerprint, toPage } from '../../platform/cursor.js';
import { newId } from '../../platform/ids.js';
import type { EventSink } from '../webhooks/types.js';
import { DEFAULT_SETTINGS, detectAnomalies, WINDOW_MS, type DetectorSettings } from './detector.js';
import type { AnomalyRepository, AnomalyRow, NewAnomaly } from './repo.js';
import type { Anomaly, ListAnomaliesQuery } from './schemas.js';
import type { MetricsService, ProjectWindow } from '../metrics/service.js';

/** A window is judged once it ended this long ago: the metrics rollup (every 5 s) and OTLP rollups (5 s+) are in. */
const SETTLE_MS = 2 * 60_000;
/** Each scan judges the last few complete windows, so a scan missed (worker down) is made up by the next. */
const LOOKBACK_WINDOWS = 3;

const listCursor = z.object({ w: z.iso.datetime(), i: z.guid() });

export interface ScanResult {
  tenants: number;
  windows: number;
  anomalies: number;
}

export function toAnomaly(row: AnomalyRow): Anomaly {
  return {
    id: row.id,
    project_id: row.project_id,
    metric: row.metric,
    window_start: row.window_start.toISOString(),
    window_end: row.window_end.toISOString(),
    observed: row.observed,
    expected: row.expected,
    score: row.score,
    severity: row.severity,
    created_at: row.created_at.toISOString(),
  };
}

/** The findings for the judged windows of one tenant, from its windows in scan order. */
function findingsOf(windows: readonly ProjectWindow[], judgedFromMs: number, settings: DetectorSettings): { judged: number; found: NewAnomaly[] } {
  const byProject = new Map<string, ProjectWindow[]>();
  for (const w of windows) byProject.set(w.projectId, [...(byProject.get(w.projectId) ?? []), w]);
  let judged = 0;
  const found: NewAnomaly[] = [];
  for (const [projectId, history] of byProject) {
    for (const observed of history.filter((w) => w.startMs >= judgedFromMs)) {
      judged += 1;
      for (const f of detectAnomalies(observed, history, settings)) {
        found.push({
          id: newId(),
          project_id: projectId,
          window_start: new Date(observed.startMs),
          window_end: new Date(observed.startMs + WINDOW_MS),
          ...f,
        });
      }
    }
  }
  return { judged, found };
}

/**
 * Anomalies in each project's latency p95, error rate, cost and token volume (see detector.ts).
 * The repeatable job scans; an anomaly is stored once per (project, metric, window) and fires
 * anomaly.detected in the transaction that stores it.
 */
export class AnomalyService {
  constructor(
    private readonly repo: AnomalyRepository,
    private readonly metrics: Pick<MetricsService, 'activeTenants' | 'projectWindows'>,
    private readonly events: EventSink,
    private readonly settings: DetectorSettings = DEFAULT_SETTINGS,
  ) {}

  /** One scan as of `now`; a tenant that fails does not stop the others, and fails the scan after them. */
  async scan(now = Date.now()): Promise<ScanResult> {
    const judgedTo = Math.floor((now - SETTLE_MS) / WINDOW_MS) * WINDOW_MS;
    const judgedFrom = judgedTo - LOOKBACK_WINDOWS * WINDOW_MS;
    const readFrom = judgedFrom - this.settings.baselineWindows * WINDOW_MS;
    const tenants = await this.metrics.activeTenants(judgedFrom, judgedTo);
    const result: ScanResult = { tenants: tenants.length, windows: 0, anomalies: 0 };
    const errors: unknown[] = [];
    for (const tenantId of tenants) {
      try {
        const { judged, found } = findingsOf(await this.metrics.projectWindows(tenantId, readFrom, judgedTo, WINDOW_MS / 60_000), judgedFrom, this.settings);
        result.windows += judged;
        result.anomalies += await this.store(tenantId, found);
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, `anomaly scan failed for ${errors.length} of ${tenants.length} tenants`);
    return result;
  }

  private async store(tenantId: string, found: readonly NewAnomaly[]): Promise<number> {
    if (found.length === 0) return 0;
    return this.repo.begin(async (tx) => {
      const stored = await this.repo.insertNew(tx, tenantId, found);
      for (const row of stored) {
        await this.events.emit(tenantId, { type: 'anomaly.detected', project_id: row.project_id, data: toAnomaly(row) }, tx);
      }
      return stored.length;
    });
  }

  /**
   * Data retention (src/modules/retention): the project's anomalies of windows that started before
   * `cutoff`, in batches of `batch`. The scan judges only recent windows, so none comes back.
   */
  async expireBefore(tenantId: string, projectId: string, cutoff: Date, batch: number): Promise<number> {
    let total = 0;
    for (;;) {
      const removed = await this.repo.deleteBefore(tenantId, projectId, cutoff, batch);
      total += removed;
      if (removed < batch) return total;
    }
  }

  async list(tenantId: string, query: ListAnomaliesQuery) {
    // The deprecated offset only places the first page; the cursors that follow do not depend on it.
    const { offset: _offset, ...filters } = query;
    const fingerprint = filterFingerprint(filters);
    const after = query.cursor ? decodeCursor(query.cursor, listCursor.extend({ f: z.literal(fingerprint) })) : null;
    const rows = await this.repo.list(tenantId, query, after ? { windowStart: new Date(after.w), id: after.i } : null);
    const page = toPage(rows, query.limit, (last) => ({ w: last.window_start.toISOString(), i: last.id, f: fingerprint }));
    return { anomalies: page.items.map(toAnomaly), next_cursor: page.next_cursor, has_more: page.has_more };
  }
}
