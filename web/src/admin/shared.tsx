import { useState, type ReactNode } from 'react';
import type { Operation } from '../api/access';
import { can, type Permission } from '../api/permissions';
import { useMe } from '../shell/MeContext';

/** Whether the signed-in person may call an operation (the API's own x-access), for disabling controls ahead. */
export function usePermission(operation: Operation): Permission {
  return can(useMe(), operation);
}

/** Owner-only parts of an operation that x-access does not split out (retention_days of PATCH /v1/projects/{id}). */
export function useOwnerOnly(): Permission {
  const role = useMe().user.role;
  return role === 'owner' ? { allowed: true } : { allowed: false, reason: `needs the owner role (you are ${role})` };
}

/** Why the controls it describes are disabled (their aria-describedby points at `id`); nothing when allowed. */
export function Reason({ id, permission, what }: { id: string; permission: Permission; what: string }) {
  if (permission.allowed) return null;
  return (
    <p id={id} className="hint reason">
      {what}: {permission.reason}.
    </p>
  );
}

/** One write at a time: which one runs, and the API's refusal of the last one (for ErrorNotice). */
export function useAction() {
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>();
  const run = async <T,>(label: string, call: () => Promise<T>): Promise<T | undefined> => {
    setBusy(label);
    setError(undefined);
    try {
      return await call();
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      setBusy(null);
    }
  };
  return { busy, error, run, clear: () => setError(undefined) };
}

/** An inline "are you sure?": the first button asks, the confirm button takes the focus. */
export function ConfirmButton({
  action,
  subject,
  confirmLabel,
  question,
  onConfirm,
  disabled,
  describedBy,
}: {
  /** The visible verb ("Delete"); the subject completes the accessible name without crowding a table row. */
  action: string;
  subject: string;
  confirmLabel: string;
  question: ReactNode;
  onConfirm: () => void;
  disabled?: boolean;
  describedBy?: string;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" onClick={() => setAsking(true)} disabled={disabled} aria-describedby={describedBy}>
        {action}
        <span className="visually-hidden"> {subject}</span>
      </button>
    );
  }
  return (
    <span className="confirm" role="group" aria-label={`${action} ${subject}`}>
      <span>{question}</span>
      <button
        type="button"
        className="danger"
        autoFocus
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        {confirmLabel}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

export const personName = (p: { email: string | null; first_name: string | null; last_name: string | null }, fallback: string): string =>
  [p.first_name, p.last_name].filter(Boolean).join(' ') || p.email || fallback;
