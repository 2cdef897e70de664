#!/usr/bin/env bash
# `npm test` on a fresh clone: dependencies, Postgres + Redis, Chromium, typecheck, lint, the whole vitest suite.
# Tests use TEST_DATABASE_URL (default database looptrace_test) and TEST_REDIS_URL, never DATABASE_URL,
# so running them next to a dev server does not touch its data. Extra arguments go to vitest.
set -euo pipefail
cd "$(dirname "$0")/.."

# Node.js >= 22: the machine's, or Node 24 brought into .tools/ (scripts/node.sh).
source scripts/node.sh
# npm writes node_modules/.package-lock.json on every install: older than the lock file = stale.
# `npm install`, not `npm ci`: the registry reachable here lacks other platforms' optional packages
# (@chdb/lib-darwin-*, ...), so the lock cannot list them and `npm ci` rejects it as out of sync.
# With the lock in sync, `npm install` installs exactly the locked versions and leaves it untouched.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm install --no-audit --no-fund
fi

DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/looptrace_test}" \
  REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379/0}" \
  bash scripts/services.sh
# The dashboard's browser tests (test/e2e/) drive Debian's Chromium with playwright-core.
if ! command -v chromium >/dev/null; then
  echo "installing Debian's chromium for the browser tests"
  as_root=(); [[ $(id -u) -eq 0 ]] || as_root=(sudo)
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
npm run -s typecheck
npm run -s lint
exec npx vitest run "$@"
