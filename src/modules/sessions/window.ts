import { createHash } from 'node:crypto';
import { AppError } from '../../platform/errors.js';
import { ceilMillis, floorMillis, isoToNanos } from '../../platform/time.js';

/** Sessions are aggregated over traces started in this window unless the request names one. */
export const DEFAULT_SESSION_WINDOW_MS = 30 * 24 * 3_600_000;

export interface SessionWindow {
  fromMs: number;
  toMs: number;
}

export interface WindowParams {
  project_id?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
}

/** `to` defaults to now and `from` to 30 days before `to`; both inclusive. */
export function resolveWindow(params: WindowParams, now: number): SessionWindow {
  const toMs = params.to === undefined ? now : floorMillis(isoToNanos(params.to));
  const fromMs = params.from === undefined ? toMs - DEFAULT_SESSION_WINDOW_MS : ceilMillis(isoToNanos(params.from));
  if (fromMs > toMs) {
    throw new AppError(400, 'bad_request', 'query.from: must be <= to (which defaults to now)', {
      details: [{ path: 'query.from', message: 'must be <= to' }],
    });
  }
  return { fromMs, toMs };
}

/**
 * Digest of the parameters as sent (not as resolved), so page 2 of a listing whose `to` defaulted
 * to "now" still matches its cursor, which pins the resolved window.
 */
export function paramsFingerprint(params: WindowParams, sessionId = ''): string {
  const canonical = [params.project_id ?? null, params.from ?? null, params.to ?? null, sessionId];
  return createHash('sha256').update(JSON.stringify(canonical)).digest('base64url').slice(0, 12);
}
