import { useReducer, useState, type ReactNode } from 'react';
import { ErrorNotice } from './ErrorNotice';

/**
 * A list page with one create-or-edit form above it: the item being edited (null: the form
 * creates), the last "saved" message, and the list's version, bumped after every save or delete so
 * that it reloads. `formKey` remounts the form on a new item or revision, resetting its fields.
 */
export function useEditor<T extends { id: string }>(revision: (item: T) => string | number) {
  const [version, reload] = useReducer((n: number) => n + 1, 0);
  const [editing, setEditing] = useState<T | null>(null);
  const [saved, setSaved] = useState('');
  return {
    version,
    reload,
    editing,
    formKey: editing ? `${editing.id}:${revision(editing)}` : `new:${version}`,
    edit(item: T) {
      setSaved('');
      setEditing(item);
    },
    onSaved(message: string) {
      setSaved(message);
      setEditing(null);
      reload();
    },
    onCancel: () => setEditing(null),
    status: (
      <p role="status" className="hint">
        {saved}
      </p>
    ),
  };
}

/** "Edit" in a row of a list, naming the item for screen readers. */
export function EditButton({ subject, onClick }: { subject: string; onClick: () => void }) {
  return (
    <button type="button" onClick={onClick}>
      Edit<span className="visually-hidden"> {subject}</span>
    </button>
  );
}

/** The end of a create-or-edit form: submit, cancel while editing, and why the last try failed. */
export function FormFooter({
  editing,
  busy,
  disabled,
  createLabel,
  saveLabel,
  onCancel,
  invalid,
  error,
  children,
}: {
  editing: boolean;
  busy: boolean;
  disabled: boolean;
  createLabel: string;
  /** Only for a form that also edits. */
  saveLabel?: string;
  onCancel?: () => void;
  /** Found in the page before sending (JSON that does not parse…). */
  invalid?: string;
  /** The API's refusal. */
  error: unknown;
  /** Shown next to the buttons (a hint why submit is disabled). */
  children?: ReactNode;
}) {
  return (
    <>
      <div className="form-row">
        <button type="submit" className="primary" disabled={disabled}>
          {busy ? 'Saving…' : editing && saveLabel ? saveLabel : createLabel}
        </button>
        {editing && onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel editing
          </button>
        )}
        {children}
      </div>
      {invalid && (
        <p role="alert" className="notice notice-error">
          {invalid}
        </p>
      )}
      {error !== undefined && <ErrorNotice error={error} />}
    </>
  );
}
