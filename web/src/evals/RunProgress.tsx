import { useId } from 'react';
import { formatCount } from '../traces/format';
import type { EvalRun } from './types';

/** A run's items scored so far against the items it started with, as a progress bar and "done / total". */
export function RunProgress({ run }: { run: Pick<EvalRun, 'completed_count' | 'item_count'> }) {
  const id = useId();
  const total = run.item_count;
  return (
    <span className="run-progress">
      <progress aria-labelledby={id} max={Math.max(total, 1)} value={total === 0 ? 1 : run.completed_count} />
      <span id={id} className="meter-value">
        {formatCount(run.completed_count)} / {formatCount(total)} items
      </span>
    </span>
  );
}
