#!/usr/bin/env bash
# Builds the web dashboard (web/ → web/dist, served by the API at /) when its sources changed since
# the last build; otherwise says nothing and does nothing. Used by `npm start` and the browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."

# One build at a time (parallel test files, a test run next to npm start); a waiter then finds it fresh.
exec 9>"${TMPDIR:-/tmp}/looptrace-web-build.lock"
flock 9

built=web/dist/index.html
if [[ -f "$built" ]] && [[ -z "$(find web/src web/index.html web/vite.config.ts package.json package-lock.json -newer "$built" -print -quit)" ]]; then
  exit 0
fi
npm run -s web:build
