#!/usr/bin/env bash
# Makes Postgres and Redis available for Looptrace on a Debian/Ubuntu machine.
#
#  - Uses the servers at DATABASE_URL / REDIS_URL when they answer
#    (defaults: postgres://postgres@127.0.0.1:5432/looptrace, redis://127.0.0.1:6379).
#  - Otherwise, as root and for a loopback address: installs postgresql and redis-server with
#    apt-get when missing, starts them without systemd (containers have none), and lets the
#    Postgres role from DATABASE_URL connect over TCP:
#      * URL without a password: `trust` for 127.0.0.1/32 and ::1/128 (a development machine;
#        the lines are marked "looptrace scripts/services.sh" in pg_hba.conf),
#      * URL with a password: the role gets that password (Debian's default scram rule applies).
#  - Otherwise prints what to do and exits 1.
# Idempotent; silent when everything already answers. Progress goes to stderr.
set -euo pipefail

DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/looptrace}"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
WAIT_SECONDS="${SERVICES_WAIT_SECONDS:-30}"
HBA_MARK="# looptrace scripts/services.sh: local development access"

say() { echo "services.sh: $*" >&2; }

# scheme://[user[:password]@]host[:port][/path] → URL_USER URL_PASSWORD URL_HOST URL_PORT
parse_url() {
  local url="$1" default_port="$2"
  local re='^[a-z]+://(([^:@/]*)(:([^@/]*))?@)?(\[[^]]+\]|[^:/?]+)(:([0-9]+))?'
  if [[ ! "$url" =~ $re ]]; then
    say "cannot parse URL: $url"
    exit 1
  fi
  URL_USER="${BASH_REMATCH[2]}"
  URL_PASSWORD="${BASH_REMATCH[4]}"
  URL_HOST="${BASH_REMATCH[5]//[\[\]]/}"
  URL_PORT="${BASH_REMATCH[7]:-$default_port}"
}

is_loopback() { [[ "$1" == "localhost" || "$1" == 127.* || "$1" == "::1" ]]; }
have() { command -v "$1" >/dev/null 2>&1; }
tcp_open() { timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

parse_url "$DATABASE_URL" 5432
PG_HOST="$URL_HOST" PG_PORT="$URL_PORT" PG_USER="${URL_USER:-postgres}" PG_PASSWORD="$URL_PASSWORD"
parse_url "$REDIS_URL" 6379
REDIS_HOST="$URL_HOST" REDIS_PORT="$URL_PORT" REDIS_PASSWORD="$URL_PASSWORD"

pg_up() {
  if have pg_isready; then pg_isready -q -h "$PG_HOST" -p "$PG_PORT" -t 2; else tcp_open "$PG_HOST" "$PG_PORT"; fi
}
# Up *and* our role can log in over TCP (the server answering is not enough on a fresh install).
pg_login_ok() {
  have psql || return 0 # cannot check without a client; the app will say what is wrong
  PGPASSWORD="$PG_PASSWORD" PGCONNECT_TIMEOUT=3 psql -X -q -w -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres \
    -tAc 'select 1' >/dev/null 2>&1
}
redis_up() {
  if have redis-cli; then
    [[ "$(env ${REDIS_PASSWORD:+REDISCLI_AUTH="$REDIS_PASSWORD"} redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>/dev/null)" == "PONG" ]]
  else
    tcp_open "$REDIS_HOST" "$REDIS_PORT"
  fi
}
wait_for() {
  local i
  for ((i = 0; i < WAIT_SECONDS * 2; i++)); do
    "$@" && return 0
    sleep 0.5
  done
  return 1
}

manual_help() {
  cat >&2 <<EOF
services.sh: $1
Looptrace needs Postgres (DATABASE_URL=$DATABASE_URL)
and Redis (REDIS_URL=$REDIS_URL). Either:
  - run this script as root on Debian/Ubuntu to install and start them:  sudo bash scripts/services.sh
  - or install them yourself:
      sudo apt-get install -y postgresql redis-server
      sudo pg_ctlcluster --skip-systemctl-redirect <version> main start   # or: sudo service postgresql start
      sudo redis-server --daemonize yes --bind 127.0.0.1 --port $REDIS_PORT
      # let role "$PG_USER" log in over TCP without a password (development only): add
      #   host all all 127.0.0.1/32 trust
      # at the top of /etc/postgresql/<version>/main/pg_hba.conf, then reload Postgres
  - or with Docker:  docker compose up -d postgres redis
  - or point DATABASE_URL / REDIS_URL at servers you already have.
EOF
  exit 1
}

can_manage_locally() { [[ $(id -u) -eq 0 ]] && is_loopback "$1"; }

APT_UPDATED=0
apt_install() {
  have apt-get || manual_help "apt-get not found: install $* yourself"
  say "installing $* (apt-get)"
  if [[ $APT_UPDATED -eq 0 ]]; then
    apt-get update -qq >/dev/null
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# The Debian cluster listening on PG_PORT: prints "<version> <name>", creating one when none exists.
pg_cluster() {
  local line
  line=$(pg_lsclusters -h 2>/dev/null | awk -v port="$PG_PORT" '$3 == port { print $1, $2; exit }')
  if [[ -z "$line" ]]; then
    local version
    version=$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n 1)
    [[ -n "$version" ]] || manual_help "postgresql is installed but no server version was found"
    local name=main
    [[ -d "/etc/postgresql/$version/main" ]] && name="looptrace-$PG_PORT" # main exists on another port
    say "creating Postgres cluster $version/$name on port $PG_PORT"
    pg_createcluster "$version" "$name" --port "$PG_PORT" >/dev/null
    line="$version $name"
  fi
  echo "$line"
}

# Over the Unix socket as the postgres OS user (peer auth), which works before any TCP rule does.
pg_as_superuser() { runuser -u postgres -- psql -X -q -p "$PG_PORT" -d postgres -v ON_ERROR_STOP=1 -tAc "$1"; }

ensure_postgres() {
  if pg_up && pg_login_ok; then return 0; fi
  can_manage_locally "$PG_HOST" || manual_help "Postgres at $PG_HOST:$PG_PORT is not reachable (or role \"$PG_USER\" cannot log in)"
  have pg_ctlcluster || apt_install postgresql postgresql-client
  local cluster version name
  cluster=$(pg_cluster)
  read -r version name <<<"$cluster"
  if ! pg_up; then
    say "starting Postgres $version/$name"
    pg_ctlcluster --skip-systemctl-redirect "$version" "$name" start >/dev/null 2>&1 || service postgresql start >/dev/null
    wait_for pg_up || manual_help "Postgres $version/$name did not start; see /var/log/postgresql/"
  fi
  pg_login_ok && return 0

  say "letting role \"$PG_USER\" log in over TCP"
  local role_sql="'${PG_USER//\'/\'\'}'" ident="\"${PG_USER//\"/\"\"}\""
  if [[ "$(pg_as_superuser "select count(*) from pg_roles where rolname = $role_sql")" == "0" ]]; then
    pg_as_superuser "create role $ident login createdb" >/dev/null
  fi
  if [[ -n "$PG_PASSWORD" ]]; then
    pg_as_superuser "alter role $ident with login password '${PG_PASSWORD//\'/\'\'}'" >/dev/null
  else
    local hba
    hba=$(pg_as_superuser 'show hba_file')
    if ! grep -qF "$HBA_MARK" "$hba"; then
      # pg_hba is first-match: the trust lines must come before Debian's scram-sha-256 ones.
      printf '%s\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n' "$HBA_MARK" | cat - "$hba" >"$hba.looptrace"
      cat "$hba.looptrace" >"$hba" && rm -f "$hba.looptrace"
    fi
    pg_as_superuser 'select pg_reload_conf()' >/dev/null
  fi
  wait_for pg_login_ok || manual_help "role \"$PG_USER\" still cannot log in over TCP at $PG_HOST:$PG_PORT"
}

ensure_redis() {
  redis_up && return 0
  can_manage_locally "$REDIS_HOST" || manual_help "Redis at $REDIS_HOST:$REDIS_PORT is not reachable"
  have redis-server || apt_install redis-server
  say "starting Redis on 127.0.0.1:$REDIS_PORT"
  mkdir -p /var/lib/redis /var/log/redis
  local args=(--daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --dir /var/lib/redis
    --logfile "/var/log/redis/looptrace-$REDIS_PORT.log" --dbfilename "looptrace-$REDIS_PORT.rdb")
  if [[ -n "$REDIS_PASSWORD" ]]; then args+=(--requirepass "$REDIS_PASSWORD"); fi
  redis-server "${args[@]}" >/dev/null
  wait_for redis_up || manual_help "Redis did not start; see /var/log/redis/looptrace-$REDIS_PORT.log"
}

ensure_postgres
ensure_redis
