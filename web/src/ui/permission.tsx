import type { FIELD_ROLES, FieldOperation, Operation } from '../api/access';
import { can, canSend, type Permission } from '../api/permissions';
import { useMe } from '../shell/MeContext';

/** Whether the signed-in person may call an operation (the API's own x-access), for disabling controls ahead. */
export function usePermission(operation: Operation): Permission {
  return can(useMe(), operation);
}

/** Whether the signed-in person may send a body field that only some of the operation's roles may (x-field-roles). */
export function useFieldPermission<O extends FieldOperation>(operation: O, field: keyof (typeof FIELD_ROLES)[O]): Permission {
  return canSend(useMe(), operation, field);
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
