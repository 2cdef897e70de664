import { z } from 'zod';
import { sha256Hex } from './crypto.js';
import { AppError } from './errors.js';

/** Opaque keyset cursors: base64url of a small JSON object whose shape each list defines. */
export function encodeCursor(value: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function decodeCursor<T>(cursor: string, shape: z.ZodType<T>): T {
  try {
    const parsed = shape.safeParse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
    if (parsed.success) return parsed.data;
  } catch {
    // fall through: any undecodable cursor is the caller's error
  }
  throw new AppError(400, 'invalid_cursor', 'cursor is malformed or belongs to another listing');
}

export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  cursor: z.string().min(1).max(1024).optional(),
};

/** Runs a keyset query that fetched `limit + 1` rows and turns it into a page. */
export function toPage<R>(rows: R[], limit: number, cursorOf: (last: R) => Record<string, unknown>) {
  const hasMore = rows.length > limit;
  const items = hasMore ? rows.slice(0, limit) : rows;
  const last = items[items.length - 1];
  return { items, has_more: hasMore, next_cursor: hasMore && last ? encodeCursor(cursorOf(last)) : null };
}

/**
 * Digest of a listing's filters (its query without limit and cursor), carried in its cursors: a
 * cursor reused with other filters is refused instead of silently skipping or repeating rows.
 */
export function filterFingerprint(query: { limit: number; cursor?: string | undefined }): string {
  const { limit: _limit, cursor: _cursor, ...filter } = query;
  return sha256Hex(JSON.stringify(Object.entries(filter).filter(([, v]) => v !== undefined).sort())).slice(0, 12);
}
