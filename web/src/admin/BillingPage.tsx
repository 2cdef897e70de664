import { useEffect } from 'react';
import { api, unwrap, type Ok } from '../api/client';
import { planName } from '../api/permissions';
import { useApi } from '../api/useApi';
import { formatCount, formatTime } from '../traces/format';
import { ErrorNotice } from '../ui/ErrorNotice';
import { usePermission } from '../ui/permission';

type Billing = Ok<'/v1/billing'>;

const METERS: { key: keyof Billing['usage']; label: string }[] = [
  { key: 'traces', label: 'Traces this month' },
  { key: 'evals', label: 'Evaluations this month' },
  { key: 'eval_rules', label: 'Eval rules' },
  { key: 'seats', label: 'Seats (active and invited members)' },
];

const LIMITS: { key: keyof Billing['limits']; label: string; unit?: string }[] = [
  { key: 'traces_per_month', label: 'Traces per month' },
  { key: 'evals_per_month', label: 'Evaluations per month' },
  { key: 'eval_rules', label: 'Eval rules' },
  { key: 'seats', label: 'Seats' },
  { key: 'dataset_export_rows', label: 'Dataset export rows' },
  { key: 'query_requests_per_minute', label: 'Query requests', unit: 'per minute' },
  { key: 'default_requests_per_minute', label: 'Other requests', unit: 'per minute' },
  { key: 'ingest_requests_per_minute', label: 'Ingest requests', unit: 'per minute' },
  { key: 'otlp_export_spans_per_page', label: 'OTLP export spans', unit: 'per page' },
];

const limitText = (limit: number | null, unit?: string) => (limit === null ? 'no limit' : `${formatCount(limit)}${unit ? ` ${unit}` : ''}`);

export function BillingPage() {
  const allowed = usePermission('GET /v1/billing');
  useEffect(() => {
    document.title = 'Billing and usage · Looptrace';
  }, []);
  return (
    <>
      <h1>Billing and usage</h1>
      {allowed.allowed ? (
        <BillingView />
      ) : (
        <div className="notice" role="note">
          <strong>Not available to you.</strong> Billing {allowed.reason}.
        </div>
      )}
    </>
  );
}

function BillingView() {
  const billing = useApi('billing', (signal) => unwrap(api.GET('/v1/billing', { signal })));
  if (billing.error !== undefined) return <ErrorNotice error={billing.error} />;
  if (!billing.data) return <p aria-live="polite">Loading billing…</p>;
  const { plan, period, usage, limits } = billing.data;
  return (
    <>
      <dl className="facts">
        <div>
          <dt>Plan</dt>
          <dd>
            <strong>{planName(plan)}</strong>
          </dd>
        </div>
        <div>
          <dt>Period (UTC month)</dt>
          <dd>
            {formatTime(period.start)} – {formatTime(period.end)}
          </dd>
        </div>
      </dl>
      <h2>Usage against the plan</h2>
      <ul className="meters">
        {METERS.map(({ key, label }) => {
          const { used, limit } = usage[key];
          const full = limit !== null && used >= limit;
          const id = `meter-${key}`;
          return (
            <li key={key}>
              <span id={id} className="meter-label">
                {label}
              </span>
              {limit === null ? (
                <span className="meter-track" aria-hidden="true" />
              ) : (
                <meter aria-labelledby={id} min={0} max={limit} value={Math.min(used, limit)} high={limit * 0.8} optimum={0} />
              )}
              <span className={full ? 'meter-value full' : 'meter-value'}>
                {formatCount(used)} of {limit === null ? 'no limit' : formatCount(limit)}
                {full && ' · limit reached'}
              </span>
            </li>
          );
        })}
      </ul>
      <h2>Limits of the {planName(plan)} plan</h2>
      <table className="admin limits">
        <caption className="visually-hidden">Limits of the {planName(plan)} plan</caption>
        <thead>
          <tr>
            <th scope="col">Limit</th>
            <th scope="col" className="num">
              Value
            </th>
          </tr>
        </thead>
        <tbody>
          {LIMITS.map(({ key, label, unit }) => (
            <tr key={key}>
              <th scope="row">{label}</th>
              <td className="num">{limitText(limits[key], unit)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
