import type { Project } from '../../admin/projects';
import { FAILURE_TYPES, failureTypeLabel, type TraceFilters } from '../filters';

type FilterKey = Exclude<keyof TraceFilters, 'q' | 'from' | 'to'>;

export interface Field {
  key: FilterKey;
  label: string;
  type: 'text' | 'count' | 'project' | 'failure';
}

/**
 * A filter chip: one or two parameters of GET /v1/traces edited together (a min and its max, a tag's
 * key and value). Search (q) has its own box and from/to the time range, so they are not chips.
 */
export interface FilterKind {
  id: string;
  label: string;
  fields: Field[];
  /** Fields that must all be given (the API refuses a tag key without its value). */
  together?: boolean;
}

export const FILTER_KINDS: FilterKind[] = [
  { id: 'project', label: 'Project', fields: [{ key: 'project_id', label: 'Project', type: 'project' }] },
  { id: 'name', label: 'Name', fields: [{ key: 'name', label: 'Trace name (exact)', type: 'text' }] },
  { id: 'model', label: 'Model', fields: [{ key: 'model', label: 'Model', type: 'text' }] },
  { id: 'session', label: 'Session', fields: [{ key: 'session_id', label: 'Session id', type: 'text' }] },
  { id: 'failure', label: 'Failure type', fields: [{ key: 'failure_type', label: 'Failure type', type: 'failure' }] },
  {
    id: 'latency',
    label: 'Latency',
    fields: [
      { key: 'latency_min', label: 'At least (ms)', type: 'count' },
      { key: 'latency_max', label: 'At most (ms)', type: 'count' },
    ],
  },
  {
    id: 'tokens',
    label: 'Tokens',
    fields: [
      { key: 'token_count_min', label: 'At least', type: 'count' },
      { key: 'token_count_max', label: 'At most', type: 'count' },
    ],
  },
  {
    id: 'tag',
    label: 'Tag',
    together: true,
    fields: [
      { key: 'tag_key', label: 'Tag key', type: 'text' },
      { key: 'tag_value', label: 'Tag value', type: 'text' },
    ],
  },
];

// A filter of GET /v1/traces that no chip, the search box nor the time range edits fails the build here.
type Chipped = FilterKind['fields'][number]['key'];
type MustBeNever<T extends never> = T;
type _EveryFilterHasAPlace = MustBeNever<Exclude<FilterKey, Chipped>>;

export const isActive = (kind: FilterKind, filters: TraceFilters): boolean => kind.fields.some((f) => filters[f.key] !== undefined);

/** The chip's text: "Latency: 100–500 ms", "Project: Support bot", "Tag: env = prod". */
export function describeChip(kind: FilterKind, filters: TraceFilters, projects: Project[] | undefined): string {
  const value = (field: Field): string | undefined => {
    const raw = filters[field.key];
    if (raw === undefined) return undefined;
    if (field.type === 'project') return projects?.find((p) => p.id === raw)?.name ?? String(raw);
    if (field.type === 'failure') return failureTypeLabel(String(raw));
    return String(raw);
  };
  const [first, second] = kind.fields.map(value);
  if (kind.id === 'tag') return `${kind.label}: ${first} = ${second}`;
  if (kind.fields.length === 2) {
    const unit = kind.id === 'latency' ? ' ms' : '';
    if (first !== undefined && second !== undefined) return `${kind.label}: ${first}–${second}${unit}`;
    return first !== undefined ? `${kind.label}: ≥ ${first}${unit}` : `${kind.label}: ≤ ${second}${unit}`;
  }
  return `${kind.label}: ${first}`;
}

/** The filters without this chip's parameters. */
export function withoutKind(kind: FilterKind, filters: TraceFilters): TraceFilters {
  const next = { ...filters };
  for (const field of kind.fields) delete next[field.key];
  return next;
}

export const FAILURE_OPTIONS = Object.entries(FAILURE_TYPES);
