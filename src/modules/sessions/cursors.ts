import { z } from 'zod';
import { decodeCursor, encodeCursor } from '../../platform/cursor.js';
import { AppError } from '../../platform/errors.js';
import type { TracePosition } from '../traces/types.js';
import type { SessionPosition } from './repo.js';
import type { SessionWindow } from './window.js';

const CLICKHOUSE_DATETIME_MS = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/;
const windowShape = z.tuple([z.number().int(), z.number().int()]);

/** Sessions list cursor: the resolved window, the parameters' digest, the last session's position. */
const listCursor = z.object({ w: windowShape, f: z.string().max(64), l: z.string().regex(CLICKHOUSE_DATETIME_MS), s: z.string().max(256) });
/** Session detail cursor: the same window and digest, the last trace's position. */
const tracesCursor = z.object({ w: windowShape, f: z.string().max(64), t: z.string().regex(CLICKHOUSE_DATETIME_MS), i: z.guid() });

const foreignCursor = () =>
  new AppError(400, 'invalid_cursor', 'cursor belongs to a listing with other parameters; start again without it');

export function encodeSessionCursor(window: SessionWindow, fingerprint: string, at: SessionPosition): string {
  return encodeCursor({ w: [window.fromMs, window.toMs], f: fingerprint, l: at.lastEnd, s: at.sessionId });
}

export function decodeSessionCursor(cursor: string, fingerprint: string): { window: SessionWindow; after: SessionPosition } {
  const c = decodeCursor(cursor, listCursor);
  if (c.f !== fingerprint) throw foreignCursor();
  return { window: { fromMs: c.w[0], toMs: c.w[1] }, after: { lastEnd: c.l, sessionId: c.s } };
}

export function encodeTracesCursor(window: SessionWindow, fingerprint: string, at: TracePosition): string {
  return encodeCursor({ w: [window.fromMs, window.toMs], f: fingerprint, t: at.startedAt, i: at.id });
}

export function decodeTracesCursor(cursor: string, fingerprint: string): { window: SessionWindow; after: TracePosition } {
  const c = decodeCursor(cursor, tracesCursor);
  if (c.f !== fingerprint) throw foreignCursor();
  return { window: { fromMs: c.w[0], toMs: c.w[1] }, after: { startedAt: c.t, id: c.i } };
}
