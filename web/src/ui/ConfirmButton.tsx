import { useState, type ReactNode } from 'react';

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
