import { filtersFromParams, filtersToParams, type TraceFilters } from '../filters';

/** The time range presets: a relative range, measured back from when the list is loaded. */
export const RANGES = {
  '15m': { label: 'Last 15 min', ms: 15 * 60_000 },
  '1h': { label: 'Last 1 h', ms: 3_600_000 },
  '24h': { label: 'Last 24 h', ms: 24 * 3_600_000 },
  '7d': { label: 'Last 7 d', ms: 7 * 24 * 3_600_000 },
} as const;
export type RangeKey = keyof typeof RANGES;
const isRange = (value: string | null): value is RangeKey => value !== null && Object.hasOwn(RANGES, value);

/**
 * Everything the trace list shows, as its URL holds it (shareable, back-button safe): the API's
 * filters (q included; from/to for a custom range), a relative range (`range=1h`, which wins over
 * from/to), the trace open in the side panel (`peek`) and live mode (`live=1`).
 */
export interface ListState {
  filters: TraceFilters;
  range?: RangeKey;
  peek?: string;
  live: boolean;
}

export function listStateFromParams(params: URLSearchParams): ListState {
  const filters = filtersFromParams(params);
  const range = params.get('range');
  const state: ListState = { filters, live: params.get('live') === '1' };
  if (isRange(range)) {
    state.range = range;
    delete filters.from;
    delete filters.to;
  }
  const peek = params.get('peek');
  if (peek && /^[0-9a-fA-F-]{32,36}$/.test(peek)) state.peek = peek;
  return state;
}

export function listStateToParams(state: ListState): URLSearchParams {
  const params = filtersToParams(state.filters);
  if (state.range) {
    params.delete('from');
    params.delete('to');
    params.set('range', state.range);
  }
  if (state.peek) params.set('peek', state.peek);
  if (state.live) params.set('live', '1');
  return params;
}

/** What the list asks GET /v1/traces for: its filters, a relative range made absolute at `now`. */
export function queryOf(state: Pick<ListState, 'filters' | 'range'>, now: number): TraceFilters {
  if (!state.range) return state.filters;
  return { ...state.filters, from: new Date(now - RANGES[state.range].ms).toISOString() };
}

/** The part of the state that decides which traces are listed (not the peek, not live mode). */
export const selectionKey = (state: ListState): string => listStateToParams({ filters: state.filters, range: state.range, live: false }).toString();
