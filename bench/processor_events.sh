#!/usr/bin/env bash
# Inbound processor events applied per second (each verified, deduplicated,
# projected, audited and invalidated in its application's region), on
# SQLite and PostgreSQL, release binary, 16 concurrent senders.
#   bash bench/processor_events.sh [sqlite|postgres]...   SECONDS=10
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_RUN="${SECONDS_RUN:-10}"
PG_URL="${GATEHOUSE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
BACKENDS=("${@:-sqlite postgres}")
BACKENDS=(${BACKENDS[*]})
source bench/common.sh
secret="whsec_bench_$(date +%s)"

for backend in "${BACKENDS[@]}"; do
  dir=$(mktemp -d); port=$(free_port)
  export GATEHOUSE__STORAGE__DATA_DIR="$dir" GATEHOUSE__SERVER__LISTEN="127.0.0.1:$port" GATEHOUSE__SERVER__WORKERS=2 \
    GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND=0 GATEHOUSE__BILLING__PROCESSOR_WEBHOOK_SECRET="$secret" RUST_LOG=warn
  unset GATEHOUSE__STORAGE__CATALOG_URL GATEHOUSE__REGIONS__US__DATABASE_URL GATEHOUSE__REGIONS__EU__DATABASE_URL GATEHOUSE__REGIONS__AP__DATABASE_URL
  if [ "$backend" = postgres ]; then
    for db in catalog us eu ap; do
      psql "$PG_URL" -qc "DROP DATABASE IF EXISTS gh_bench_$db" -c "CREATE DATABASE gh_bench_$db" >/dev/null
    done
    base="${PG_URL%/*}"
    export GATEHOUSE__STORAGE__CATALOG_URL="$base/gh_bench_catalog" GATEHOUSE__REGIONS__US__DATABASE_URL="$base/gh_bench_us" \
      GATEHOUSE__REGIONS__EU__DATABASE_URL="$base/gh_bench_eu" GATEHOUSE__REGIONS__AP__DATABASE_URL="$base/gh_bench_ap"
  fi
  creds=$("$BIN" bootstrap --name Bench)
  app=$(echo "$creds" | json_field '["application_id"]')
  key=$(echo "$creds" | json_field '["secret_key"]')
  "$BIN" serve >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  curl -sf -o /dev/null -X POST "http://127.0.0.1:$port/v1/billing/connect" -H "Authorization: Bearer $key" \
    -H "x-application-id: $app" -H 'content-type: application/json' -d '{"processor_account_id": "acct_bench"}'
  # The claim above is verified by the first event (its metadata names the application).
  echo "| $backend | $(node bench/processor_events.mjs "http://127.0.0.1:$port" "$secret" acct_bench "$app" 16 "$SECONDS_RUN") |"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
done
