import { z } from 'zod';
import { AppError } from '../../platform/errors.js';
import { decodeCursor, encodeCursor } from '../../platform/cursor.js';
import type { TracePosition } from './types.js';

const CLICKHOUSE_DATETIME_MS = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/;

/** Cursor of a trace listing: the last trace's keyset position and the digest of the listing's filters. */
const positionCursor = z.object({ s: z.string().regex(CLICKHOUSE_DATETIME_MS), i: z.guid(), f: z.string().max(64) });

export function encodePosition(position: TracePosition, fingerprint: string): string {
  return encodeCursor({ s: position.startedAt, i: position.id, f: fingerprint });
}

/** A cursor continues only the listing that issued it: other filters would skip or repeat traces. */
export function decodePosition(cursor: string, fingerprint: string): TracePosition {
  const decoded = decodeCursor(cursor, positionCursor);
  if (decoded.f !== fingerprint) {
    throw new AppError(400, 'invalid_cursor', 'cursor belongs to a listing with other filters; start again without it');
  }
  return { startedAt: decoded.s, id: decoded.i };
}
