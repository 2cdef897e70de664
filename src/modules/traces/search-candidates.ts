import { TraceFilter } from './filters.js';
import type { TraceRepository } from './repo.js';
import type { TraceFilterQuery } from './schemas.js';
import { SEARCH_CANDIDATES_MAX, searchTokens } from './search.js';

/**
 * The filter of a listing or export, narrowed by its search's rarer tokens. A token held by at most
 * SEARCH_CANDIDATES_MAX traces (in their rows or spans, per the text indexes) names every trace that
 * can match: the intersection of such tokens' traces is all the listing has to look at, and those
 * tokens are settled (the index found them in each candidate; a token found only in a superseded
 * version of a row counts until the versions merge: docs/api-decisions.md). The more common tokens
 * are checked on the candidates only. When every token is more common than that, the filter is the
 * plain one: the newest traces match so often that reading them newest first finds a page soon.
 */
export async function narrowedBySearch(repo: Pick<TraceRepository, 'searchCandidates'>, tenantId: string, query: TraceFilterQuery): Promise<TraceFilter> {
  // Also validates the rest of the query before any store is asked.
  const plain = TraceFilter.fromQuery(tenantId, query);
  const tokens = query.q === undefined ? [] : searchTokens(query.q);
  if (tokens.length === 0) return plain;
  const found = await Promise.all(tokens.map((token) => repo.searchCandidates(tenantId, query.project_id, token, SEARCH_CANDIDATES_MAX)));
  const settled = new Set<string>();
  const sets: Set<string>[] = [];
  found.forEach(({ traces, spans }, i) => {
    if (traces.length > SEARCH_CANDIDATES_MAX || spans.length > SEARCH_CANDIDATES_MAX) return;
    settled.add(tokens[i]!);
    sets.push(new Set([...traces, ...spans]));
  });
  if (sets.length === 0) return plain;
  const [first, ...others] = sets.sort((a, b) => a.size - b.size);
  const candidates = [...first!].filter((id) => others.every((set) => set.has(id)));
  return TraceFilter.fromQuery(tenantId, query, { candidates, settled });
}
