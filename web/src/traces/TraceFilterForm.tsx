import type { FormEvent } from 'react';
import { ProjectOptions, type Project } from '../admin/projects';
import { FAILURE_TYPES, filtersFromParams, isoToLocalInput, localInputToIso, type TraceFilters } from './filters';

interface Props {
  filters: TraceFilters;
  /** The tenant's active projects; undefined while they load. */
  projects: Project[] | undefined;
  onApply: (filters: TraceFilters) => void;
}

/** Every filter of GET /v1/traces. Applying writes them to the URL; the list follows the URL. */
export function TraceFilterForm({ filters, projects, onApply }: Props) {

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const params = new URLSearchParams();
    for (const [key, value] of form) if (typeof value === 'string' && value.trim() !== '') params.set(key, value.trim());
    for (const key of ['from', 'to']) {
      const iso = localInputToIso(params.get(key) ?? '');
      if (iso) params.set(key, iso);
      else params.delete(key);
    }
    onApply(filtersFromParams(params));
  };

  const text = (name: keyof TraceFilters, label: string, hint?: string) => (
    <label>
      {label}
      <input name={name} type="text" defaultValue={String(filters[name] ?? '')} placeholder={hint} />
    </label>
  );
  const count = (name: keyof TraceFilters, label: string) => (
    <label>
      {label}
      <input name={name} type="number" min={0} step={1} inputMode="numeric" defaultValue={String(filters[name] ?? '')} />
    </label>
  );

  return (
    <form className="filters" onSubmit={submit} onReset={() => onApply({})} aria-label="Trace filters">
      {text('q', 'Search', 'every word, in names, inputs, outputs, errors')}
      <label>
        Project
        <select name="project_id" defaultValue={filters.project_id ?? ''}>
          <ProjectOptions projects={projects} empty="All projects" />
        </select>
      </label>
      {text('name', 'Name', 'exact trace name')}
      {text('model', 'Model')}
      {text('session_id', 'Session')}
      <label>
        Failure type
        <select name="failure_type" defaultValue={filters.failure_type ?? ''}>
          <option value="">Any</option>
          {Object.entries(FAILURE_TYPES).map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      {count('latency_min', 'Latency from (ms)')}
      {count('latency_max', 'Latency to (ms)')}
      {count('token_count_min', 'Tokens from')}
      {count('token_count_max', 'Tokens to')}
      {text('tag_key', 'Tag key', 'with a tag value')}
      {text('tag_value', 'Tag value', 'with a tag key')}
      <label>
        Started from
        <input name="from" type="datetime-local" step={1} defaultValue={isoToLocalInput(filters.from)} />
      </label>
      <label>
        Started until
        <input name="to" type="datetime-local" step={1} defaultValue={isoToLocalInput(filters.to)} />
      </label>
      <div className="filter-actions">
        <button type="submit" className="primary">
          Apply filters
        </button>
        <button type="reset">Clear</button>
      </div>
    </form>
  );
}
