import { useId, useState, type FormEvent, type ReactNode } from 'react';
import type { Operation } from '../api/access';
import { can } from '../api/permissions';
import { useMe } from '../shell/MeContext';
import { ErrorNotice } from '../ui/ErrorNotice';

/**
 * Why a decision cannot be taken now: the role or plan (from the API's own access policy), else
 * the state of the thing decided. The API stays the authority: a refusal it gives is shown as is.
 */
export function useBlocked(operation: Operation, stateReason: string | null): string | null {
  const permission = can(useMe(), operation);
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
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await run();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="decision" onSubmit={(e) => void submit(e)} aria-label={label}>
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
      {error !== undefined && <ErrorNotice error={error} />}
    </form>
  );
}
