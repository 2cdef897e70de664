import { formatCount } from '../traces/format';
import type { SqlResult } from './sqlApi';

// Numbers are right-aligned to compare by eye; wrappers such as Nullable(…) do not change that.
const NUMERIC = /^(?:(?:Nullable|LowCardinality)\()*(?:U?Int\d+|Float\d+|Decimal)/;

function cellText(value: unknown): string {
  if (value === null) return 'NULL';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** A query's answer: its columns with their ClickHouse types, its rows, and what answering cost. */
export function SqlResultTable({ result }: { result: SqlResult }) {
  const numeric = result.columns.map((column) => NUMERIC.test(column.type));
  const rows = result.rows.length;
  return (
    <>
      <p role="status" className="sql-summary">
        {formatCount(rows)} {rows === 1 ? 'row' : 'rows'} · {formatCount(result.rows_read)} rows read · {result.elapsed_ms.toFixed(1)} ms
      </p>
      {result.truncated && (
        <p className="notice notice-upgrade">
          <strong>Truncated:</strong> only the first {formatCount(rows)} rows are shown. Download the query as CSV or Parquet for more, or narrow it.
        </p>
      )}
      <div className="sql-result" role="region" aria-label="Query result" tabIndex={0}>
        <table className="list sql-table">
          <caption className="visually-hidden">Result of the query</caption>
          <thead>
            <tr>
              {result.columns.map((column, i) => (
                <th key={i} scope="col" className={numeric[i] ? 'num' : undefined}>
                  {column.name}
                  <span className="sql-type">{column.type}</span>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {result.rows.map((row, r) => (
              <tr key={r}>
                {row.map((value, i) => (
                  <td key={i} className={value === null ? 'muted' : numeric[i] ? 'num' : undefined}>
                    {cellText(value)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
