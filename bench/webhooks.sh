#!/usr/bin/env bash
# Webhook delivery throughput: a backlog of messages for 10 endpoints is made
# by one server run whose delivery worker sleeps, then a fresh server drains it
# into a local keep-alive receiver (bench/receiver.mjs). Deliveries/s is the
# receiver's count over the time from its first to its last delivery. While
# the backlog drains, wrk measures an authenticated API read at 4 connections.
#
#   bash bench/webhooks.sh              # SQLite
#   BACKEND=postgres bash bench/webhooks.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PRODUCE="${PRODUCE:-5s}"
BACKEND="${BACKEND:-sqlite}"
PG_URL="${GATEHOUSE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
source bench/common.sh

dir=$(mktemp -d)
port=$(free_port)
export GATEHOUSE__STORAGE__DATA_DIR="$dir" GATEHOUSE__SERVER__LISTEN="127.0.0.1:$port" GATEHOUSE__SERVER__WORKERS=2 \
  GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND=0 RUST_LOG=warn \
  GATEHOUSE__SECURITY__ALLOW_PRIVATE_DESTINATIONS=true # the receiver is on loopback, on either backend
if [ "$BACKEND" = postgres ]; then
  for db in catalog us eu ap; do psql "$PG_URL" -qc "DROP DATABASE IF EXISTS gh_bench_$db" -c "CREATE DATABASE gh_bench_$db" >/dev/null 2>&1; done
  base="${PG_URL%/*}"
  export GATEHOUSE__STORAGE__CATALOG_URL="$base/gh_bench_catalog" GATEHOUSE__REGIONS__US__DATABASE_URL="$base/gh_bench_us" \
    GATEHOUSE__REGIONS__EU__DATABASE_URL="$base/gh_bench_eu" GATEHOUSE__REGIONS__AP__DATABASE_URL="$base/gh_bench_ap"
fi
creds=$("$BIN" bootstrap --name Bench)
app=$(echo "$creds" | json_field '["application_id"]')
key=$(echo "$creds" | json_field '["secret_key"]')
auth=(-H "Authorization: Bearer $key" -H "x-application-id: $app")

receiver_port=$(free_port)
node bench/receiver.mjs "$receiver_port" >/dev/null &
receiver=$!
trap 'kill $receiver $server 2>/dev/null || true; rm -rf "$dir"' EXIT

# A backlog: events produced while the worker sleeps (it polls once at start, then hourly).
produce() {
  GATEHOUSE__WEBHOOKS__POLL_INTERVAL_MS=3600000 "$BIN" serve >/dev/null 2>&1 &
  server=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  sleep 0.5
  produced=$(wrk -t2 -c16 -d"$PRODUCE" -s bench/patch.lua "${auth[@]}" "http://127.0.0.1:$port/v1/applications/$app" |
    awk '/requests in/ {print $1}')
  kill $server; wait $server 2>/dev/null || true
}

# Drains the backlog with a fresh server; with an argument, measures the API beside it.
drain() {
  local expected=$((produced * 10)) api="" count seconds stats
  curl -s "http://127.0.0.1:$receiver_port/reset" >/dev/null
  "$BIN" serve >/dev/null 2>&1 &
  server=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  if [ -n "${1:-}" ]; then
    api=$(wrk -t1 -c4 -d5s -s bench/report.lua "${auth[@]}" "http://127.0.0.1:$port/v1/api-keys/$key_id" | grep '^RESULT' | cut -d' ' -f2-)
  fi
  for _ in $(seq 600); do
    count=$(curl -sf "http://127.0.0.1:$receiver_port/stats" | json_field '["count"]')
    [ "$count" -ge "$expected" ] && break
    sleep 0.1
  done
  stats=$(curl -sf "http://127.0.0.1:$receiver_port/stats")
  count=$(echo "$stats" | json_field '["count"]')
  seconds=$(echo "$stats" | json_field '["seconds"]')
  kill $server; wait $server 2>/dev/null || true
  echo "| $BACKEND | ${1:+with API load: }backlog of $produced events x 10 endpoints | $count deliveries in ${seconds}s = $(python3 -c "print(round($count / $seconds))")/s |"
  [ -z "$api" ] || echo "| $BACKEND | GET /v1/api-keys/{id} at 4 conn while draining | $api |"
}

"$BIN" serve >/dev/null 2>&1 &
server=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
for i in $(seq 10); do
  curl -sf "${auth[@]}" -H 'content-type: application/json' -d "{\"url\": \"http://127.0.0.1:$receiver_port/hook/$i\", \"event_types\": [\"application\"]}" \
    "http://127.0.0.1:$port/v1/webhooks" >/dev/null
done
key_id=$(curl -sf "${auth[@]}" "http://127.0.0.1:$port/v1/api-keys" | json_field '["data"][0]["id"]')
kill $server; wait $server 2>/dev/null || true

echo "| backend | measurement | result |"
echo "|---|---|---|"
produce
drain
produce
drain with-api
