/** Queries a new user can start from, each over the tables of docs/sql.md; test/e2e/dashboard-sql.test.ts runs every one. */
export const SQL_EXAMPLES = [
  {
    label: 'p95 latency per model',
    query: `-- LLM calls of the last 7 days: how many per model, and their p95 latency
SELECT model, count() AS calls, quantile(0.95)(latency_ms) AS p95_latency_ms
FROM spans
WHERE type = 'llm' AND start_time > now() - INTERVAL 7 DAY
GROUP BY model
ORDER BY calls DESC`,
  },
  {
    label: 'Failures per day',
    query: `-- Traces and failed traces per day, the last 30 days
SELECT toDate(started_at) AS day, count() AS traces, countIf(error IS NOT NULL) AS failed, round(failed / traces, 3) AS failure_rate
FROM traces
WHERE started_at > now() - INTERVAL 30 DAY
GROUP BY day
ORDER BY day`,
  },
  {
    label: 'Tokens per session',
    query: `-- The sessions that used the most tokens
SELECT session_id, count() AS traces, sum(total_token_count) AS tokens, round(sum(cost), 4) AS cost
FROM traces
WHERE session_id != ''
GROUP BY session_id
ORDER BY tokens DESC
LIMIT 100`,
  },
  {
    label: 'Failure types',
    query: `-- How often each failure type was detected on a span
SELECT failure_type, count() AS spans, uniq(trace_id) AS traces
FROM spans
WHERE failure_type != ''
GROUP BY failure_type
ORDER BY spans DESC`,
  },
] as const;
