#!/usr/bin/env bash
# Governance under load, side by side in one run of the release binary:
# GET /healthz and a plain secret-key read (GET /v1/api-keys/{id}, the
# floor of every authenticated route) against
# GET /v1/organizations/{id}/entitlements (20
# features, a plan granting 10 of them, 3 overrides: resolved from the
# tenant state and the organization's cached inputs), and membership grants
# (POST …/memberships) under ten enforced separation-of-duties policies,
# each grant of a role a policy names (the user's row lock, the user's
# memberships read, the check, the insert, its audit row). 64 connections.
#
#   bash bench/governance.sh             # both backends
#   bash bench/governance.sh postgres    # one backend
#   DURATION=20s bash bench/governance.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-10s}"
PG_URL="${GATEHOUSE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
BACKENDS=("${@:-sqlite postgres}")
BACKENDS=(${BACKENDS[*]})
USERS="${USERS:-500}"
ORGS="${ORGS:-60}"

source bench/common.sh

rps() { sed 's/.*rps=\([0-9]*\).*/\1/'; }

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
  local creds app key base_url
  creds=$("$BIN" bootstrap --name Bench)
  app=$(echo "$creds" | json_field '["application_id"]')
  key=$(echo "$creds" | json_field '["secret_key"]')
  "$BIN" serve >/dev/null 2>&1 &
  pid=$!
  base_url="http://127.0.0.1:$port"
  for _ in $(seq 100); do curl -sf "$base_url/healthz" >/dev/null && break; sleep 0.1; done
  call() { # method path [body]
    curl -sf -X "$1" -H "Authorization: Bearer $key" -H "x-application-id: $app" -H 'content-type: application/json' \
      ${3:+-d "$3"} "$base_url$2"
  }
  local grants="{" i
  for i in $(seq 0 19); do
    call PUT "/v1/features/f$i" '{"kind": "limit", "default_value": 1}' >/dev/null
    [ "$i" -lt 10 ] && grants="$grants\"f$i\": $((i * 10)),"
  done
  call PUT /v1/plans/pro "{\"name\": \"Pro\", \"grants\": ${grants%,}}}" >/dev/null
  local org
  org=$(call POST /v1/organizations '{"name": "Measured"}' | json_field '["data"]["id"]')
  call PUT "/v1/organizations/$org/plan" '{"plan_key": "pro"}' >/dev/null
  for i in 0 5 15; do call PUT "/v1/organizations/$org/entitlement-overrides/f$i" '{"value": 7}' >/dev/null; done
  for i in $(seq 0 9); do
    call POST /v1/sod-policies "{\"name\": \"p$i\", \"role_a\": \"approver$i\", \"role_b\": \"requester$i\"}" >/dev/null
  done
  local users_file="$dir/users" orgs_file="$dir/orgs"
  for i in $(seq "$USERS"); do
    call POST /v1/users "{\"email\": \"u$i@bench.example\"}" | json_field '["data"]["id"]'
  done >"$users_file"
  for i in $(seq "$ORGS"); do call POST /v1/organizations "{\"name\": \"o$i\"}" | json_field '["data"]["id"]'; done >"$orgs_file"

  local h64 k64 e64 g64 key_id
  key_id=$(call GET /v1/api-keys | json_field '["data"][0]["id"]')
  h64=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua "$base_url/healthz" | grep '^RESULT' | cut -d' ' -f2-)
  k64=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua -H "Authorization: Bearer $key" -H "x-application-id: $app" \
    "$base_url/v1/api-keys/$key_id" | grep '^RESULT' | cut -d' ' -f2-)
  e64=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua -H "Authorization: Bearer $key" -H "x-application-id: $app" \
    "$base_url/v1/organizations/$org/entitlements" | grep '^RESULT' | cut -d' ' -f2-)
  g64=$(USERS_FILE="$users_file" ORGS_FILE="$orgs_file" APP="$app" KEY="$key" \
    wrk -t2 -c64 -d"$DURATION" -s bench/grant.lua "$base_url" | grep '^RESULT' | cut -d' ' -f2-)
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
  echo "| $backend | healthz, 64 conn | $h64 |"
  echo "| $backend | GET /v1/api-keys/{id}, 64 conn | $k64 |"
  echo "| $backend | GET …/organizations/{id}/entitlements (20 features), 64 conn | $e64 |"
  echo "| $backend | POST …/memberships under 10 enforced policies, 64 conn | $g64 |"
  echo "| $backend | entitlements / healthz at 64 conn | $(python3 -c "print(f'{$(echo "$e64" | rps)/$(echo "$h64" | rps):.0%}')") |"
  echo "| $backend | entitlements / secret-key read at 64 conn | $(python3 -c "print(f'{$(echo "$e64" | rps)/$(echo "$k64" | rps):.0%}')") |"
}

echo "| backend | measurement | result |"
echo "|---|---|---|"
for backend in "${BACKENDS[@]}"; do bench_backend "$backend"; done
