import { useState, type FormEvent } from 'react';
import { isoToLocalInput, localInputToIso } from '../filters';
import { RANGES, type RangeKey } from './listState';

interface Range {
  range?: RangeKey;
  from?: string;
  to?: string;
}

/**
 * The list's time range: all time, a preset measured back from now (15 min, 1 h, 24 h, 7 d), or a
 * custom from/to. A preset applies at once; a custom range when its form is applied.
 */
export function TimeRange({ value, onChange }: { value: Range; onChange: (range: Range) => void }) {
  const custom = value.range === undefined && (value.from !== undefined || value.to !== undefined);
  const [editing, setEditing] = useState(false);
  const [problem, setProblem] = useState('');
  const choice = editing || custom ? 'custom' : (value.range ?? '');

  const choose = (next: string) => {
    if (next === 'custom') return setEditing(true);
    setEditing(false);
    onChange(next === '' ? {} : { range: next as RangeKey });
  };
  const apply = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const [from, to] = [localInputToIso(String(form.get('from') ?? '')), localInputToIso(String(form.get('to') ?? ''))];
    // The API refuses to before from: say so here rather than show its 400.
    if (from && to && from > to) return setProblem('"To" is before "From".');
    setProblem('');
    setEditing(false);
    onChange({ from, to });
  };

  return (
    <div className="time-range">
      <label>
        <span className="visually-hidden">Time range</span>
        <select value={choice} onChange={(e) => choose(e.target.value)}>
          <option value="">All time</option>
          {Object.entries(RANGES).map(([key, { label }]) => (
            <option key={key} value={key}>
              {label}
            </option>
          ))}
          <option value="custom">Custom…</option>
        </select>
      </label>
      {choice === 'custom' && (
        <form className="custom-range" aria-label="Custom time range" onSubmit={apply} key={`${value.from}-${value.to}`}>
          <label>
            From
            <input name="from" type="datetime-local" step={1} defaultValue={isoToLocalInput(value.from)} />
          </label>
          <label>
            To
            <input name="to" type="datetime-local" step={1} defaultValue={isoToLocalInput(value.to)} />
          </label>
          <button type="submit">Apply range</button>
          {problem && (
            <span role="alert" className="chip-problem">
              {problem}
            </span>
          )}
        </form>
      )}
    </div>
  );
}
