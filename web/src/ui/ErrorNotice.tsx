import { ApiError } from '../api/client';
import { planName } from '../api/permissions';

/** What the API said when it refused or failed, as the API said it: status, message, code, request id. */
export function ErrorNotice({ error }: { error: unknown }) {
  if (!(error instanceof ApiError)) {
    return (
      <div role="alert" className="notice notice-error">
        <strong>Could not reach the API.</strong> {error instanceof Error ? error.message : String(error)}
      </div>
    );
  }
  const { status, body } = error;
  const detail = (
    <p className="notice-meta">
      {status} · <code>{body.code}</code> · request {body.request_id}
    </p>
  );
  if (status === 402) {
    return (
      <div role="alert" className="notice notice-upgrade">
        <strong>Upgrade needed.</strong> {body.error}.
        {body.required_plan && (
          <p>
            The <strong>{planName(body.required_plan)}</strong> plan or above allows this. An owner of the tenant can change its plan.
          </p>
        )}
        {detail}
      </div>
    );
  }
  const title: Record<number, string> = {
    400: 'The API refused these parameters.',
    403: 'Not allowed.',
    404: 'Not found.',
    429: 'Too many requests: try again shortly.',
  };
  return (
    <div role="alert" className="notice notice-error">
      <strong>{title[status] ?? 'The API could not answer.'}</strong> {body.error}
      {body.details && (
        <ul>
          {body.details.map((d) => (
            <li key={d.path}>
              <code>{d.path}</code>: {d.message}
            </li>
          ))}
        </ul>
      )}
      {detail}
    </div>
  );
}
