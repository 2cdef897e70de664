/**
 * One Postgres database per test process (`<TEST_DATABASE_URL's name>_p<pid>`), made the
 * process's DATABASE_URL before anything reads it. Processes share Postgres but each has its own
 * embedded ClickHouse, and some work spans the whole database (settling abandoned trace writes,
 * claiming dirty metrics minutes): in a shared database one process would settle another's rows
 * against the wrong ClickHouse. The first app of the process creates and migrates it.
 */
function processDatabaseUrl(shared: string): string {
  const url = new URL(shared);
  url.pathname = `${url.pathname}_p${process.pid}`;
  return url.toString();
}

process.env.DATABASE_URL = processDatabaseUrl(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/looptrace_test');
