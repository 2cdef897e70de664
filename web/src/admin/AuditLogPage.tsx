import { ListState, LoadMore } from '../ui/lists';
import { useEffect, useState } from 'react';
import { api, unwrap, type Ok } from '../api/client';
import { useApi } from '../api/useApi';
import { formatCount, formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { JsonBlock } from '../ui/Payload';
import { useAction } from '../ui/useAction';
import { usePermission } from '../ui/permission';
import { usePages } from '../api/usePages';

type Verification = Ok<'/v1/audit-log/verify'>;
type Anchor = Ok<'/v1/compliance'>['audit_anchors'][number];

const ANCHOR_DAYS = 7;
const ANCHOR_TEXT: Record<Anchor['status'], string> = {
  verified: 'verified',
  missing: 'missing: the day ended without an anchor',
  signature_invalid: 'signature invalid: the stored anchor was altered',
  chain_mismatch: 'chain mismatch: the audit log no longer holds that head',
  unknown_key: 'unknown key: signed by a key this service does not hold',
};

export function AuditLogPage() {
  const list = usePages(
    'audit-log',
    (cursor, signal) => unwrap(api.GET('/v1/audit-log', { params: { query: { limit: 50, cursor } }, signal })),
    (page) => page.entries,
  );
  useEffect(() => {
    document.title = 'Audit log · Looptrace';
  }, []);
  return (
    <>
      <h1>Audit log</h1>
      <p className="hint">Every change to the tenant, newest first. Each row carries the hash of the previous one, and each ended UTC day is anchored with a signature.</p>
      <VerifyChain />
      <Anchors />
      <h2>Entries</h2>
      <ListState list={list} loading="Loading the audit log…" empty={<p>No entries yet.</p>} />
      {list.items.length > 0 && (
        <table className="admin audit">
          <caption className="visually-hidden">Audit log entries, newest first</caption>
          <thead>
            <tr>
              <th scope="col" className="num">
                Seq
              </th>
              <th scope="col">Time</th>
              <th scope="col">Actor</th>
              <th scope="col">Action</th>
              <th scope="col">Resource</th>
              <th scope="col">Details</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((entry) => (
              <tr key={entry.id}>
                <td className="num">{entry.seq}</td>
                <td>{formatTime(entry.created_at)}</td>
                <td>
                  {entry.actor_type}
                  {entry.actor_id && (
                    <div className="muted">
                      <code>{entry.actor_id}</code>
                    </div>
                  )}
                </td>
                <td>
                  <code>{entry.action}</code>
                </td>
                <td>
                  {entry.resource_type ?? '—'}
                  {entry.resource_id && (
                    <div className="muted">
                      <code>{entry.resource_id}</code>
                    </div>
                  )}
                </td>
                <td>
                  {Object.keys(entry.details).length > 0 ? (
                    <details>
                      <summary>
                        Details<span className="visually-hidden"> of entry {entry.seq}</span>
                      </summary>
                      <JsonBlock label={`Details of entry ${entry.seq}`} value={entry.details} />
                      {entry.request_id && <p className="muted">request {entry.request_id}</p>}
                      <p className="muted hash">
                        hash <code>{entry.hash}</code>
                      </p>
                    </details>
                  ) : (
                    <span className="muted">none</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore list={list} />
    </>
  );
}

function VerifyChain() {
  const allowed = usePermission('GET /v1/audit-log/verify');
  const verify = useAction();
  const [result, setResult] = useState<Verification | null>(null);
  const run = async () => {
    setResult(null);
    const answer = await verify.run('verify', () => unwrap(api.GET('/v1/audit-log/verify')));
    if (answer) setResult(answer);
  };
  return (
    <section className="card" aria-labelledby="verify-title">
      <h2 id="verify-title">Hash chain</h2>
      <p>
        <button type="button" onClick={() => void run()} disabled={!allowed.allowed || verify.busy !== null}>
          {verify.busy ? 'Verifying…' : 'Verify the chain'}
        </button>
        {!allowed.allowed && <span className="hint"> {allowed.reason}</span>}
      </p>
      <div role="status">
        {result &&
          (result.valid ? (
            <p className="verify-ok">
              <strong>The chain holds:</strong> {formatCount(result.rows_checked)} rows checked. Head <code className="hash">{result.head_hash}</code>
            </p>
          ) : (
            <p className="verify-broken">
              <strong>The chain is broken</strong> at seq {result.broken_at_seq ?? '?'}: {result.reason ?? 'no reason given'}. {formatCount(result.rows_checked)} rows checked; last good head{' '}
              <code className="hash">{result.head_hash}</code>
            </p>
          ))}
      </div>
      {verify.error !== undefined && <ErrorNotice error={verify.error} />}
    </section>
  );
}

function Anchors() {
  const report = useApi('compliance', (signal) => unwrap(api.GET('/v1/compliance', { params: { query: { days: ANCHOR_DAYS } }, signal })));
  const anchors = report.data ? [...report.data.audit_anchors].reverse() : [];
  return (
    <section className="card" aria-labelledby="anchors-title">
      <h2 id="anchors-title">Daily anchors (last {ANCHOR_DAYS} days)</h2>
      {report.error !== undefined && <ErrorNotice error={report.error} />}
      {report.loading && <p aria-live="polite">Loading the anchors…</p>}
      {report.data && anchors.length === 0 && <p>No ended day yet since the tenant was created.</p>}
      {anchors.length > 0 && (
        <table className="admin">
          <caption className="visually-hidden">Audit anchors per UTC day, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Day (UTC)</th>
              <th scope="col">Status</th>
              <th scope="col" className="num">
                Rows
              </th>
              <th scope="col">Anchored</th>
              <th scope="col">Head</th>
            </tr>
          </thead>
          <tbody>
            {anchors.map((anchor) => (
              <tr key={anchor.date}>
                <td>{anchor.date}</td>
                <td>
                  <span className={`badge ${anchor.status === 'verified' ? 'ok' : anchor.status === 'missing' ? 'neutral' : 'error'}`}>{ANCHOR_TEXT[anchor.status]}</span>
                </td>
                <td className="num">{anchor.row_count ?? '—'}</td>
                <td>{anchor.anchored_at ? formatTime(anchor.anchored_at) : '—'}</td>
                <td>{anchor.head_hash ? <code className="hash">{anchor.head_hash.slice(0, 16)}…</code> : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
