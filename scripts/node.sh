# Sourced by start.sh and test.sh (from the repository root): puts a Node.js >= 22 first on PATH.
# The machine's own when it is new enough; otherwise Node.js 24 LTS from the npm registry (npm's
# `node` package, which carries the official binary) under .tools/, installed once and reused.
LOOPTRACE_NODE_VERSION=24.21.0

machine_node=$(node -v 2>/dev/null || echo none)
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)' 2>/dev/null; then
  command -v npm >/dev/null || { echo "Looptrace needs npm (any version) to bring its own Node.js: install Node.js and npm first" >&2; exit 1; }
  local_node="${LOOPTRACE_ROOT:-$PWD}/.tools/node-$LOOPTRACE_NODE_VERSION"
  if [[ ! -x "$local_node/node_modules/.bin/node" ]]; then
    npm install --prefix "$local_node" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "node@$LOOPTRACE_NODE_VERSION" >/dev/null
  fi
  export PATH="$local_node/node_modules/.bin:$PATH"
  echo "Node.js $machine_node is older than 22: using the project's Node.js $(node -v) from .tools/" >&2
fi
