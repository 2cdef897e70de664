import { ApiError } from '../api/client';
import { ErrorNotice } from '../ui/ErrorNotice';

/** What each of the query's own refusals means, ahead of the server's message. */
const TITLES: Record<string, string> = {
  'sql.refused': 'The query was refused.',
  'sql.invalid_query': 'ClickHouse could not run the query.',
  'sql.query_too_long': 'The query is too long.',
  'sql.limit_exceeded': 'The query went past a limit.',
};

const text = (value: unknown): string | undefined => (typeof value === 'string' || typeof value === 'number' ? String(value) : undefined);

/**
 * A refusal of the query itself: the server's code and message, why it was refused (`reason`,
 * sql.refused) and the engine's error code (sql.invalid_query); any other failure as everywhere else.
 */
export function SqlErrorNotice({ error }: { error: unknown }) {
  if (!(error instanceof ApiError) || !(error.body.code in TITLES)) return <ErrorNotice error={error} />;
  const { status, body } = error;
  const reason = text(body.reason);
  const engineCode = text(body.engine_code);
  return (
    <div role="alert" className="notice notice-error">
      <strong>{TITLES[body.code]}</strong> {body.error}
      {reason && (
        <p className="sql-reason">
          Reason: <strong>{reason}</strong>
        </p>
      )}
      <p className="notice-meta">
        {status} · <code>{body.code}</code>
        {engineCode && <> · ClickHouse error {engineCode}</>} · request {body.request_id}
      </p>
    </div>
  );
}
