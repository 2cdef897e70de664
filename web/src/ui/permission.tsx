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
