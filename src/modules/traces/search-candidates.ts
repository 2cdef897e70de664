import { TraceFilter } from './filters.js';
import type { TraceRepository } from './repo.js';
import type { TraceFilterQuery } from './schemas.js';
import { SEARCH_CANDIDATES_MAX, searchTokens } from './search.js';
import type { StoredTrace } from './stored.js';
import { clickHouseToMillis } from './time-slices.js';
import type { TraceKeyPosition, TracePosition } from './types.js';

/**
 * The filter of a listing or export, narrowed by its search's rarer tokens. A token held by at most
 * SEARCH_CANDIDATES_MAX traces (per the token index, trace_tokens) names every trace that can
 * match, at its place: the intersection of such tokens' traces is all the listing has to look at,
 * and those tokens are settled. The more common tokens are checked on the candidates only. When
 * every token is more common than that, the filter is the plain one, read newest first in time
 * slices (search.ts): such a token's traces are found soon, and listing them all would cost more.
 */
export async function narrowedBySearch(repo: Pick<TraceRepository, 'tokenPositions'>, tenantId: string, query: TraceFilterQuery): Promise<TraceFilter> {
  // Also validates the rest of the query before any store is asked.
  const plain = TraceFilter.fromQuery(tenantId, query);
  const tokens = query.q === undefined ? [] : searchTokens(query.q);
  if (tokens.length === 0) return plain;
  const found = await Promise.all(tokens.map((token) => repo.tokenPositions(tenantId, query.project_id, token, SEARCH_CANDIDATES_MAX)));
  const settled = new Set<string>();
  const sets: Map<string, TraceKeyPosition>[] = [];
  found.forEach((positions, i) => {
    if (positions.length > SEARCH_CANDIDATES_MAX) return;
    settled.add(tokens[i]!);
    sets.push(new Map(positions.map((p) => [p.id, p])));
  });
  if (sets.length === 0) return plain;
  const [first, ...others] = sets.sort((a, b) => a.size - b.size);
  const candidates = [...first!.values()].filter((p) => others.every((set) => set.has(p.id)));
  return TraceFilter.fromQuery(tenantId, query, { candidates, settled });
}

/**
 * Up to `want` of a narrowed filter's traces after `after`, newest first (started_at desc, id desc).
 *
 * The candidates come with their place, so they are put in order here and ClickHouse is asked by
 * exact sorting key, newest first, a batch at a time: first which of a batch the filter keeps (keys
 * and filter columns only), then the page's rows. Reading the candidates by id instead (the bloom
 * index) took about 200 ms at 10M traces wherever they lay: it read every granule holding one, and
 * the text columns of each from its granule's start.
 *
 * A batch never splits traces of the same millisecond, so that ClickHouse alone orders ties by
 * id (its UUID order is not the text's) and the batches' answers follow one another.
 */
export function candidatesNewestFirst(
  repo: Pick<TraceRepository, 'keysMatching' | 'atKeys'>,
  filter: TraceFilter,
  after: TracePosition | null,
  want: number,
): Promise<StoredTrace[]> {
  const { fromMs, toMs } = filter.range;
  const afterMs = after ? clickHouseToMillis(after.startedAt) : null;
  const ordered = (filter.candidates ?? [])
    .filter(
      (p) =>
        (filter.projectId === undefined || p.projectId === filter.projectId) &&
        (fromMs === null || p.startedAtMs >= fromMs) &&
        (toMs === null || p.startedAtMs <= toMs) &&
        (afterMs === null || p.startedAtMs <= afterMs),
    )
    .sort((a, b) => b.startedAtMs - a.startedAtMs);
  return filter.placeDecides ? pageAtPlaces(repo, filter.tenantId, ordered, after, want) : pageOfKept(repo, filter, ordered, after, want);
}

/** The candidates' order is the answer's: only a deleted trace, or one not yet stored, is missing from a batch. */
async function pageAtPlaces(repo: Pick<TraceRepository, 'atKeys'>, tenantId: string, ordered: readonly TraceKeyPosition[], after: TracePosition | null, want: number) {
  const rows: StoredTrace[] = [];
  for (const batch of batchesOf(ordered, want)) {
    if (rows.length >= want) break;
    rows.push(...(await repo.atKeys(tenantId, batch, after, want - rows.length)));
  }
  return rows;
}

async function pageOfKept(repo: Pick<TraceRepository, 'keysMatching' | 'atKeys'>, filter: TraceFilter, ordered: readonly TraceKeyPosition[], after: TracePosition | null, want: number) {
  const page: TraceKeyPosition[] = [];
  for (const batch of batchesOf(ordered, want * 2)) {
    if (page.length >= want) break;
    const kept = new Set(await repo.keysMatching(filter, batch, after, want - page.length));
    page.push(...batch.filter((p) => kept.has(p.id)));
  }
  return repo.atKeys(filter.tenantId, page, null, want);
}

/** `ordered` in batches of `first` positions, then four times more each time, each extended to the end of its millisecond. */
function* batchesOf(ordered: readonly TraceKeyPosition[], first: number): Generator<TraceKeyPosition[]> {
  for (let from = 0, size = first; from < ordered.length; size *= 4) {
    let to = Math.min(from + size, ordered.length);
    while (to < ordered.length && ordered[to]!.startedAtMs === ordered[to - 1]!.startedAtMs) to++;
    yield ordered.slice(from, to);
    from = to;
  }
}
