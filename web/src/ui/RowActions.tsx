import type { ReactNode } from 'react';
import type { Operation } from '../api/access';
import { ConfirmButton } from './ConfirmButton';
import { EditButton } from './editing';
import { ErrorNotice } from './ErrorNotice';
import { Reason, usePermission } from './permission';
import { useAction } from './useAction';

/**
 * The delete of an editable list, from its DELETE operation: whether the signed-in person may
 * (x-access), one delete at a time, and the list's reload after one. `reason` and `error` go above
 * the list (why the row buttons are disabled, the API's refusal of the last delete); each row's
 * RowActions takes the rest.
 */
export function useRowDelete(operation: Operation, { reasonId, what, reload }: { reasonId: string; what: string; reload: () => void }) {
  const permission = usePermission(operation);
  const action = useAction();
  return {
    permission,
    reasonId,
    busy: action.busy !== null,
    remove: (id: string, call: () => Promise<unknown>) => void action.run(id, call).then((done) => done && reload()),
    reason: <Reason id={reasonId} permission={permission} what={what} />,
    error: action.error !== undefined && <ErrorNotice error={action.error} />,
  };
}

export type RowDelete = ReturnType<typeof useRowDelete>;

/**
 * A list row's actions: Edit (when the list edits), what else the row does, then its delete
 * behind an inline confirmation, disabled with the reason `useRowDelete` gives.
 */
export function RowActions({
  id,
  subject,
  onEdit,
  deleter,
  action = 'Delete',
  confirmLabel = 'Delete now',
  question,
  call,
  children,
}: {
  id: string;
  /** The row's name, for the buttons' accessible names. */
  subject: string;
  onEdit?: () => void;
  deleter: RowDelete;
  action?: string;
  confirmLabel?: string;
  question: ReactNode;
  /** The API call that deletes the row. */
  call: () => Promise<unknown>;
  /** Other buttons, before the delete. */
  children?: ReactNode;
}) {
  const { permission } = deleter;
  return (
    <>
      {onEdit && (
        <>
          <EditButton subject={subject} onClick={onEdit} />{' '}
        </>
      )}
      {children}
      <ConfirmButton
        action={action}
        subject={subject}
        confirmLabel={confirmLabel}
        question={question}
        disabled={!permission.allowed || deleter.busy}
        describedBy={permission.allowed ? undefined : deleter.reasonId}
        onConfirm={() => deleter.remove(id, call)}
      />
    </>
  );
}
