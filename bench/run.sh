#!/usr/bin/env bash
# Load benchmark of the release binary, measured side by side in one run:
# GET /healthz against a secret-key-authenticated GET /v1/api-keys/{id},
# the cached connect status (GET /v1/billing/connect/status) and machine
# tokens (client_credentials at the issuer's token endpoint),
# at 64 connections (throughput) and 4 connections (latency), on SQLite and
# on PostgreSQL; plus the server's idle memory.
#
#   bash bench/run.sh            # both backends
#   bash bench/run.sh sqlite     # one backend
#   DURATION=20s bash bench/run.sh
#
# Settings: the management rate limit is turned off
# (GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND=0) so the
# benchmark measures the service, not the limiter; 2 HTTP workers; wrk with 2
# threads on the same machine.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-10s}"
PG_URL="${GATEHOUSE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
BACKENDS=("${@:-sqlite postgres}")
BACKENDS=(${BACKENDS[*]})

source bench/common.sh

load() { # connections url [header...]
  local connections=$1 url=$2; shift 2
  local headers=()
  for h in "$@"; do headers+=(-H "$h"); done
  wrk -t2 -c"$connections" -d"$DURATION" -s bench/report.lua "${headers[@]}" "$url" | grep '^RESULT' | cut -d' ' -f2-
}

bench_backend() {
  local backend=$1 dir port pid
  dir=$(mktemp -d)
  port=$(free_port)
  export GATEHOUSE__STORAGE__DATA_DIR="$dir" GATEHOUSE__SERVER__LISTEN="127.0.0.1:$port" \
    GATEHOUSE__SERVER__WORKERS=2 GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND=0 RUST_LOG=warn
  unset GATEHOUSE__STORAGE__CATALOG_URL GATEHOUSE__REGIONS__US__DATABASE_URL GATEHOUSE__REGIONS__EU__DATABASE_URL GATEHOUSE__REGIONS__AP__DATABASE_URL
  if [ "$backend" = postgres ]; then
    for db in catalog us eu ap; do
      psql "$PG_URL" -qc "DROP DATABASE IF EXISTS gh_bench_$db" -c "CREATE DATABASE gh_bench_$db" >/dev/null
    done
    local base="${PG_URL%/*}"
    export GATEHOUSE__STORAGE__CATALOG_URL="$base/gh_bench_catalog" GATEHOUSE__REGIONS__US__DATABASE_URL="$base/gh_bench_us" \
      GATEHOUSE__REGIONS__EU__DATABASE_URL="$base/gh_bench_eu" GATEHOUSE__REGIONS__AP__DATABASE_URL="$base/gh_bench_ap"
  fi
  local creds app key
  creds=$("$BIN" bootstrap --name Bench)
  app=$(echo "$creds" | json_field '["application_id"]')
  key=$(echo "$creds" | json_field '["secret_key"]')
  "$BIN" serve >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  sleep 1
  local idle_kib key_id url
  idle_kib=$(ps -o rss= -p "$pid" | tr -d ' ')
  key_id=$(curl -sf -H "Authorization: Bearer $key" -H "x-application-id: $app" "http://127.0.0.1:$port/v1/api-keys" | json_field '["data"][0]["id"]')
  url="http://127.0.0.1:$port/v1/api-keys/$key_id"
  local account_id account_secret basic
  account_id=$(curl -sf -X POST -H "Authorization: Bearer $key" -H "x-application-id: $app" -H 'content-type: application/json' \
    -d '{"name": "bench", "scopes": ["a", "b"]}' "http://127.0.0.1:$port/v1/service-accounts" | json_field '["data"]["id"]')
  account_secret=$(curl -sf -X POST -H "Authorization: Bearer $key" -H "x-application-id: $app" -H 'content-type: application/json' \
    -d '{"name": "bench"}' "http://127.0.0.1:$port/v1/service-accounts/$account_id/keys" | json_field '["data"]["secret"]')
  basic=$(printf '%s:%s' "$account_id" "$account_secret" | base64 -w0)
  local h64 k64 c64 m64 h4 k4
  h64=$(load 64 "http://127.0.0.1:$port/healthz")
  k64=$(load 64 "$url" "Authorization: Bearer $key" "x-application-id: $app")
  c64=$(load 64 "http://127.0.0.1:$port/v1/billing/connect/status" "Authorization: Bearer $key" "x-application-id: $app")
  m64=$(BASIC="$basic" wrk -t2 -c64 -d"$DURATION" -s bench/machine_token.lua \
    "http://127.0.0.1:$port/v1/applications/$app/oauth/token" | grep '^RESULT' | cut -d' ' -f2-)
  h4=$(load 4 "http://127.0.0.1:$port/healthz")
  k4=$(load 4 "$url" "Authorization: Bearer $key" "x-application-id: $app")
  local loaded_kib
  loaded_kib=$(ps -o rss= -p "$pid" | tr -d ' ')
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
  echo "| $backend | healthz, 64 conn | $h64 |"
  echo "| $backend | GET /v1/api-keys/{id}, 64 conn | $k64 |"
  echo "| $backend | GET /v1/billing/connect/status, 64 conn | $c64 |"
  echo "| $backend | POST …/oauth/token (client_credentials), 64 conn | $m64 |"
  echo "| $backend | healthz, 4 conn | $h4 |"
  echo "| $backend | GET /v1/api-keys/{id}, 4 conn | $k4 |"
  local h_rps k_rps c_rps m_rps
  h_rps=$(echo "$h64" | sed 's/.*rps=\([0-9]*\).*/\1/')
  k_rps=$(echo "$k64" | sed 's/.*rps=\([0-9]*\).*/\1/')
  c_rps=$(echo "$c64" | sed 's/.*rps=\([0-9]*\).*/\1/')
  m_rps=$(echo "$m64" | sed 's/.*rps=\([0-9]*\).*/\1/')
  echo "| $backend | authenticated / healthz at 64 conn | $(python3 -c "print(f'{$k_rps/$h_rps:.0%}')") |"
  echo "| $backend | connect status / healthz at 64 conn | $(python3 -c "print(f'{$c_rps/$h_rps:.0%}')") |"
  echo "| $backend | machine tokens / healthz at 64 conn | $(python3 -c "print(f'{$m_rps/$h_rps:.0%}')") |"
  echo "| $backend | RSS idle / after load | $((idle_kib / 1024)) MiB / $((loaded_kib / 1024)) MiB |"
}

echo "| backend | measurement | result |"
echo "|---|---|---|"
for backend in "${BACKENDS[@]}"; do bench_backend "$backend"; done
