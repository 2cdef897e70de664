import { useId, type FormEvent, type ReactNode } from 'react';
import type { StateOperation } from '../api/access';
import { acceptsState } from '../api/permissions';
import { ErrorNotice } from '../ui/ErrorNotice';
import { usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';

/** The state of the thing decided: its `status`, and how the page names it. */
export interface DecisionState {
  status: string;
  label: string;
}

/**
 * Why a decision cannot be taken now: the role or plan (the operation's x-access), else the state
 * of the thing decided (its x-from-states), said as `notFrom` and the state's name. Both come from
 * the API's own declarations; the API stays the authority: a refusal it gives is shown as is.
 */
export function useBlocked(operation: StateOperation, state: DecisionState, notFrom: string): string | null {
  const permission = usePermission(operation);
  if (!permission.allowed) return permission.reason;
  return acceptsState(operation, state.status) ? null : `${notFrom} (its state: ${state.label})`;
}

/** One decision (approve, rollback…): a button, disabled with the reason when it is not allowed; the API's refusal shown under it. */
export function DecisionButton({
  operation,
  label,
  state,
  notFrom,
  primary,
  run,
  children,
}: {
  operation: StateOperation;
  label: string;
  state: DecisionState;
  /** Why a state the operation does not accept rules it out. */
  notFrom: string;
  primary?: boolean;
  run: () => Promise<unknown>;
  children?: ReactNode;
}) {
  const blocked = useBlocked(operation, state, notFrom);
  const reasonId = useId();
  const decide = useAction();
  const busy = decide.busy !== null;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    void decide.run(label, run);
  };
  return (
    <form className="decision" onSubmit={submit} aria-label={label}>
      {children}
      <div className="decision-row">
        <button type="submit" className={primary ? 'primary' : undefined} disabled={blocked !== null || busy} aria-describedby={blocked ? reasonId : undefined}>
          {busy ? `${label}…` : label}
        </button>
        {blocked && (
          <small id={reasonId} className="decision-reason">
            {label}: {blocked}
          </small>
        )}
      </div>
      {decide.error !== undefined && <ErrorNotice error={decide.error} />}
    </form>
  );
}
