import { useId, type FormEvent, type ReactNode } from 'react';
import type { Operation } from '../api/access';
import { ErrorNotice } from '../ui/ErrorNotice';
import { usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';

/**
 * Why a decision cannot be taken now: the role or plan (from the API's own access policy), else
 * the state of the thing decided. The API stays the authority: a refusal it gives is shown as is.
 */
export function useBlocked(operation: Operation, stateReason: string | null): string | null {
  const permission = usePermission(operation);
  return permission.allowed ? stateReason : permission.reason;
}

/** One decision (approve, rollback…): a button, disabled with the reason when it is not allowed; the API's refusal shown under it. */
export function DecisionButton({
  operation,
  label,
  stateReason,
  primary,
  run,
  children,
}: {
  operation: Operation;
  label: string;
  /** Why the current state does not allow it; null when it does. */
  stateReason: string | null;
  primary?: boolean;
  run: () => Promise<unknown>;
  children?: ReactNode;
}) {
  const blocked = useBlocked(operation, stateReason);
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
