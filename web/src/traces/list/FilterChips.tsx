import { useEffect, useRef, useState, type FormEvent } from 'react';
import { ProjectOptions, type Project } from '../../admin/projects';
import { Menu } from '../../ui/Menu';
import { Popover } from '../../ui/Popover';
import { filtersFromParams, type TraceFilters } from '../filters';
import { describeChip, FAILURE_OPTIONS, FILTER_KINDS, isActive, withoutKind, type Field, type FilterKind } from './filterKinds';

interface Props {
  filters: TraceFilters;
  projects: Project[] | undefined;
  onChange: (filters: TraceFilters) => void;
}

/**
 * The list's filters as chips: "Add filter" offers every filter not in use; a chip opens its editor
 * when clicked and goes with its × button. Applying an editor changes the filters (and the URL).
 */
export function FilterChips({ filters, projects, onChange }: Props) {
  const [editing, setEditing] = useState<string | null>(null);
  // After a chip is applied or removed the focus goes to that chip, or to "Add filter", not to <body>.
  const group = useRef<HTMLDivElement>(null);
  const [focusNext, setFocusNext] = useState<string | null>(null);
  useEffect(() => {
    if (focusNext === null) return;
    const chip = focusNext ? group.current?.querySelector<HTMLElement>(`[data-chip="${focusNext}"]`) : undefined;
    if (focusNext && !chip) return; // its filters are on their way to the URL
    setFocusNext(null);
    (chip ?? group.current?.querySelector<HTMLElement>('[aria-haspopup="menu"]'))?.focus();
  }, [focusNext, filters]);
  const active = FILTER_KINDS.filter((kind) => isActive(kind, filters));
  const draft = FILTER_KINDS.find((kind) => kind.id === editing && !isActive(kind, filters));
  const addable = FILTER_KINDS.filter((kind) => !isActive(kind, filters)).map((kind) => ({ id: kind.id, label: kind.label }));

  const editor = (kind: FilterKind) => (
    <ChipEditor
      kind={kind}
      filters={filters}
      projects={projects}
      onClose={() => setEditing(null)}
      onApply={(next) => {
        setEditing(null);
        setFocusNext(kind.id);
        onChange(next);
      }}
    />
  );

  return (
    <div ref={group} className="chips" role="group" aria-label="Filters">
      {active.map((kind) => {
        const text = describeChip(kind, filters, projects);
        return (
          <span key={kind.id} className="chip dropdown">
            <button type="button" className="chip-edit" data-chip={kind.id} aria-haspopup="dialog" aria-expanded={editing === kind.id} onClick={() => setEditing(editing === kind.id ? null : kind.id)}>
              {text}
            </button>
            <button type="button" className="chip-remove" aria-label={`Remove ${text}`} onClick={() => (setFocusNext(''), onChange(withoutKind(kind, filters)))}>
              ×
            </button>
            {editing === kind.id && editor(kind)}
          </span>
        );
      })}
      {draft && (
        <span className="chip chip-draft dropdown">
          <span className="chip-edit">{draft.label}…</span>
          {editor(draft)}
        </span>
      )}
      <Menu label="Add filter" items={addable} onChoose={setEditing} />
      {active.length > 0 && (
        <button type="button" className="chips-clear" onClick={() => onChange(FILTER_KINDS.reduce((rest, kind) => withoutKind(kind, rest), filters))}>
          Clear filters
        </button>
      )}
    </div>
  );
}

function ChipEditor({ kind, filters, projects, onApply, onClose }: { kind: FilterKind; filters: TraceFilters; projects: Project[] | undefined; onApply: (filters: TraceFilters) => void; onClose: () => void }) {
  const [problem, setProblem] = useState('');
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const params = new URLSearchParams();
    for (const field of kind.fields) {
      const value = String(form.get(field.key) ?? '').trim();
      if (value) params.set(field.key, value);
    }
    const chosen = filtersFromParams(params);
    const given = kind.fields.filter((f) => chosen[f.key] !== undefined);
    if (given.length === 0) return setProblem(kind.together ? 'Give both.' : 'Give a value.');
    if (kind.together && given.length < kind.fields.length) return setProblem('Give both.');
    const [min, max] = kind.fields.map((f) => chosen[f.key]);
    if (typeof min === 'number' && typeof max === 'number' && min > max) return setProblem('The minimum is above the maximum.');
    onApply({ ...withoutKind(kind, filters), ...chosen });
  };
  return (
    <Popover label={`Filter: ${kind.label}`} onClose={onClose}>
      <form className="chip-form" onSubmit={submit}>
        {kind.fields.map((field) => (
          <FieldInput key={field.key} field={field} value={filters[field.key]} projects={projects} />
        ))}
        {problem && (
          <p role="alert" className="chip-problem">
            {problem}
          </p>
        )}
        <div className="chip-form-actions">
          <button type="submit" className="primary">
            Apply
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Popover>
  );
}

function FieldInput({ field, value, projects }: { field: Field; value: string | number | undefined; projects: Project[] | undefined }) {
  const current = value === undefined ? '' : String(value);
  if (field.type === 'project' || field.type === 'failure') {
    return (
      <label>
        {field.label}
        <select name={field.key} defaultValue={current}>
          {field.type === 'project' ? (
            <ProjectOptions projects={projects} empty="Choose a project" />
          ) : (
            <>
              <option value="">Choose a failure type</option>
              {FAILURE_OPTIONS.map(([type, label]) => (
                <option key={type} value={type}>
                  {label}
                </option>
              ))}
            </>
          )}
        </select>
      </label>
    );
  }
  return (
    <label>
      {field.label}
      {field.type === 'count' ? (
        <input name={field.key} type="number" min={0} step={1} inputMode="numeric" defaultValue={current} />
      ) : (
        <input name={field.key} type="text" defaultValue={current} />
      )}
    </label>
  );
}
