#!/usr/bin/env bash
# `npm start` on a fresh clone: dependencies, Postgres + Redis, build, migrations, then the server
# (LOOPTRACE_ROLE=all by default: API and workers in one process, as embedded ClickHouse requires).
# Variables in ./.env, when present, are exported first (see .env.example).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -f .env ]]; then
  set -a
  # shellcheck disable=SC1091
  source .env
  set +a
fi

# Node.js >= 22: the machine's, or Node 24 brought into .tools/ (scripts/node.sh).
source scripts/node.sh
# npm writes node_modules/.package-lock.json on every install: older than the lock file = stale.
# `npm install`, not `npm ci`: the registry reachable here lacks other platforms' optional packages
# (@chdb/lib-darwin-*, ...), so the lock cannot list them and `npm ci` rejects it as out of sync.
# With the lock in sync, `npm install` installs exactly the locked versions and leaves it untouched.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm install --no-audit --no-fund
fi

bash scripts/services.sh
npm run -s build
# Embedded ClickHouse: ./data and the Postgres database are one installation. Refuses (saying what
# to do) a database that was made with another data directory, e.g. an older clone's.
node dist/cli.js data-dir check >/dev/null
bash scripts/web-build.sh # the dashboard at /, rebuilt only when web/ changed
echo "migrations applied: $(node dist/cli.js migrate)"

port="${PORT:-8080}"
cat <<EOF_HELP

Looptrace is starting on http://localhost:$port  (the dashboard; GET /healthz, /readyz, /metrics, /v1/openapi.json)
In another terminal, from this directory (README.md, "First requests", has blocks to paste):
  create a tenant (prints tenant_id, project_id and its first API key, shown once):
    npm run -s looptrace -- tenants create --name Acme --plan pro
  list its projects:
    curl -H "Authorization: Bearer <api_key>" http://localhost:$port/v1/projects
  the dashboard: open http://localhost:$port/ and pick that tenant and a role (development sign-in)
  a development session token for dashboard-only routes:
    npm run -s looptrace -- sessions mint --tenant <tenant_id> --role owner
EOF_HELP

LOOPTRACE_EXIT_WITH_PARENT=1 exec node dist/server.js
