import type { paths } from '../api/schema';

type TraceQuery = NonNullable<paths['/v1/traces']['get']['parameters']['query']>;
/** Every filter of GET /v1/traces (and of its export): the query without paging. */
export type TraceFilters = Omit<TraceQuery, 'limit' | 'cursor'>;
export type FailureType = NonNullable<TraceFilters['failure_type']>;

/** Labels of the API's failure types; a type the API adds fails the build until it is named here. */
export const FAILURE_TYPES: Record<FailureType, string> = {
  timeout: 'Timeout',
  rate_limit: 'Rate limit',
  invalid_response: 'Invalid response',
  context_length: 'Context length',
};

const TEXT = ['q', 'project_id', 'name', 'model', 'session_id', 'tag_key', 'tag_value', 'from', 'to'] as const;
const COUNTS = ['latency_min', 'latency_max', 'token_count_min', 'token_count_max'] as const;
type Handled = (typeof TEXT)[number] | (typeof COUNTS)[number] | 'failure_type';
// A filter the API adds and this page does not handle fails the build here.
type MustBeNever<T extends never> = T;
type _EveryFilterHandled = MustBeNever<Exclude<keyof TraceFilters, Handled>>;

/** A failure type as people read it; a type this build does not know as the API names it. */
export const failureTypeLabel = (type: string): string => FAILURE_TYPES[type as FailureType] ?? type;

const isFailureType = (value: string): value is FailureType => Object.hasOwn(FAILURE_TYPES, value);

/** The filters a URL's query names (the list's state lives in its URL: shareable, back-button safe). */
export function filtersFromParams(params: URLSearchParams): TraceFilters {
  const filters: TraceFilters = {};
  for (const key of TEXT) {
    const value = params.get(key)?.trim();
    if (value) filters[key] = value;
  }
  for (const key of COUNTS) {
    const value = params.get(key);
    if (value && /^\d+$/.test(value)) filters[key] = Number(value);
  }
  const failure = params.get('failure_type');
  if (failure && isFailureType(failure)) filters.failure_type = failure;
  return filters;
}

export function filtersToParams(filters: TraceFilters): URLSearchParams {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(filters)) if (value !== undefined && value !== '') params.set(key, String(value));
  return params;
}

/** `2026-01-02T03:04:05.000Z` → the `datetime-local` value of that instant in this browser's zone. */
export function isoToLocalInput(iso: string | undefined): string {
  if (!iso) return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
}

export function localInputToIso(local: string): string | undefined {
  const date = new Date(local);
  return local && !Number.isNaN(date.getTime()) ? date.toISOString() : undefined;
}
