import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { useMe } from '../shell/MeContext';
import { ExportButtons, saveFile } from '../ui/ExportButtons';
import { Reason, usePermission } from '../ui/permission';
import { useAction } from '../ui/useAction';
import { SQL_EXAMPLES } from './examples';
import { fetchSqlFile, runSql, type SqlResult } from './sqlApi';
import { SqlErrorNotice } from './SqlErrorNotice';
import { SqlResultTable } from './SqlResultTable';
import { useStoredQuery } from './useStoredQuery';
import './sql.css';

const SQL_FORMATS = ['csv', 'parquet'] as const;

/** POST /v1/sql (Pro plan and above): an editor, its answer as a table, and the same query as a CSV or Parquet file. */
export function SqlPage() {
  const me = useMe();
  const allowed = usePermission('POST /v1/sql');
  const [query, setQuery] = useStoredQuery(me.tenant.id, SQL_EXAMPLES[0].query);
  const editor = useRef<HTMLTextAreaElement>(null);
  const running = useAction();
  // The answer shown and the query that gave it: the downloads are of that query, not of later edits.
  const [answer, setAnswer] = useState<{ query: string; result: SqlResult } | null>(null);
  useEffect(() => {
    document.title = 'SQL · Looptrace';
  }, []);

  const mayRun = allowed.allowed && running.busy === null && query.trim() !== '';
  const run = async () => {
    if (!mayRun) return;
    const ran = query;
    setAnswer(null);
    const result = await running.run('run', () => runSql(ran));
    if (result) setAnswer({ query: ran, result });
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      void run();
    }
  };
  const insert = (example: string) => {
    setQuery(example);
    editor.current?.focus();
  };

  return (
    <>
      <h1>SQL</h1>
      <p className="hint">
        One read-only ClickHouse <code>SELECT</code> over this tenant&apos;s <code>traces</code>, <code>spans</code> and <code>metrics_1m</code>, with the API&apos;s column names
        (docs/sql.md lists them). At most 10 s; the table shows up to 10,000 rows, a download up to 1,000,000.
      </p>
      <div className="sql-examples" role="group" aria-label="Examples">
        <span>Insert an example:</span>
        {SQL_EXAMPLES.map((example) => (
          <button key={example.label} type="button" onClick={() => insert(example.query)}>
            {example.label}
          </button>
        ))}
      </div>
      <label htmlFor="sql-query">Query</label>
      <textarea
        id="sql-query"
        ref={editor}
        className="sql-editor"
        value={query}
        onChange={(event) => setQuery(event.target.value)}
        onKeyDown={onKeyDown}
        spellCheck={false}
        autoCapitalize="off"
        autoComplete="off"
        rows={10}
        aria-describedby="sql-keys"
      />
      <p className="sql-run">
        <button type="button" className="primary" onClick={() => void run()} disabled={!mayRun} aria-describedby={allowed.allowed ? undefined : 'sql-reason'}>
          {running.busy ? 'Running…' : 'Run'}
        </button>
        <span id="sql-keys" className="muted">
          or Ctrl+Enter (⌘+Enter on a Mac)
        </span>
      </p>
      <Reason id="sql-reason" permission={allowed} what="Running SQL" />
      {running.error !== undefined && <SqlErrorNotice error={running.error} />}
      {answer && (
        <section aria-labelledby="sql-result-title">
          <h2 id="sql-result-title">Result</h2>
          <SqlResultTable result={answer.result} />
          <ExportButtons
            name="Download the query"
            text="Download this query as"
            formats={SQL_FORMATS}
            download={async (format) => saveFile(await fetchSqlFile(answer.query, format), `query.${format}`)}
          />
        </section>
      )}
    </>
  );
}
