#!/usr/bin/env bash
# Sustained mixed load on one application, held for minutes, reported per
# window: four readers (GET /v1/api-keys), two writers (create a secret key,
# then revoke it) and one connection of the other write paths
# (bench/mixed_writes.lua: organizations, users and profiles, a sign-in
# every tenth round), with a webhook endpoint taking every event, so
# deliveries flow to a local receiver (bench/receiver.mjs) all along. The
# release binary with 2 HTTP workers; the management and per-address
# sign-in rate limits are off (one client address sends everything).
#
#   bash bench/soak.sh                    # PostgreSQL + Redis, then SQLite; 10 minutes each
#   MINUTES=3 WINDOW=20 bash bench/soak.sh postgres
#
# Per window: each group's request rate and p99, deliveries, errors, the
# server's RSS, and the database's state: on PostgreSQL the summed private
# memory of the server's backends, on SQLite the size of the regional WAL
# file. At the end: the last window against the first after warm-up, and
# against the peak window (the target: at least 95% of the peak).
#
# PostgreSQL runs as in production: with autovacuum (its default, and not
# optional on managed services). A server configured without it (this
# machine's test cluster is) has it turned on for the run and restored
# after; AUTOVACUUM=keep measures the server as it is configured.
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES="${MINUTES:-10}"
WINDOW="${WINDOW:-60}"
PG_URL="${GATEHOUSE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
REDIS_URL="${GATEHOUSE_TEST_REDIS_URL:-redis://127.0.0.1:6379}"
BACKENDS=("${@:-postgres sqlite}")
BACKENDS=(${BACKENDS[*]})

source bench/common.sh
command -v node >/dev/null || { echo "soak: node is needed for the webhook receiver (bench/receiver.mjs)" >&2; exit 1; }

field() { echo "$1" | sed "s/.*$2=\([0-9.]*\).*/\1/"; }

backend_kib() { # the summed private memory of the PostgreSQL backends serving the soak's databases
  # (RSS would count every page of shared buffers each backend has touched)
  local pid total=0
  for pid in $(psql "$PG_URL" -Atc "SELECT pid FROM pg_stat_activity WHERE datname LIKE 'gh_soak_%' AND backend_type = 'client backend'"); do
    total=$((total + $(awk '/^Private_(Clean|Dirty):/ {s+=$2} END {print s+0}' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

soak_backend() {
  local backend=$1 dir port pid
  dir=$(mktemp -d)
  port=$(free_port)
  export GATEHOUSE__STORAGE__DATA_DIR="$dir" GATEHOUSE__SERVER__LISTEN="127.0.0.1:$port" \
    GATEHOUSE__SERVER__WORKERS=2 GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND=0 \
    GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_IP_PER_MINUTE=0 GATEHOUSE__LIMITS__ACTIVE_SECRET_KEYS_PER_APPLICATION=1000 RUST_LOG=warn \
    GATEHOUSE__SECURITY__ALLOW_PRIVATE_DESTINATIONS=true # the webhook receiver is on loopback, on either backend
  unset GATEHOUSE__STORAGE__CATALOG_URL GATEHOUSE__REGIONS__US__DATABASE_URL GATEHOUSE__REGIONS__EU__DATABASE_URL \
    GATEHOUSE__REGIONS__AP__DATABASE_URL GATEHOUSE__CACHE__REDIS_URL
  if [ "$backend" = postgres ]; then
    for db in catalog us eu ap; do
      psql "$PG_URL" -qc "DROP DATABASE IF EXISTS gh_soak_$db" -c "CREATE DATABASE gh_soak_$db" >/dev/null
    done
    local base="${PG_URL%/*}"
    export GATEHOUSE__STORAGE__CATALOG_URL="$base/gh_soak_catalog" GATEHOUSE__REGIONS__US__DATABASE_URL="$base/gh_soak_us" \
      GATEHOUSE__REGIONS__EU__DATABASE_URL="$base/gh_soak_eu" GATEHOUSE__REGIONS__AP__DATABASE_URL="$base/gh_soak_ap" \
      GATEHOUSE__CACHE__REDIS_URL="$REDIS_URL"
  fi
  local creds
  creds=$("$BIN" bootstrap --name Soak)
  export APP KEY
  APP=$(echo "$creds" | json_field '["application_id"]')
  KEY=$(echo "$creds" | json_field '["secret_key"]')
  "$BIN" serve >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  curl -sf -H "Authorization: Bearer $KEY" -H "x-application-id: $APP" -H 'content-type: application/json' \
    -d "{\"url\": \"http://127.0.0.1:$receiver_port/soak\"}" "http://127.0.0.1:$port/v1/webhooks" >/dev/null
  echo "### $backend, $MINUTES minutes in windows of $WINDOW s"
  echo "| window | readers rps | readers p99 ms | key writers rps | key writers p99 ms | other writes rps | other writes p99 ms | deliveries/s | errors | server RSS MiB | $([ "$backend" = postgres ] && echo "db backends private MiB" || echo "WAL MiB") |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  local windows=$((MINUTES * 60 / WINDOW)) first_rps="" first_p99="" first_rss="" peak_rps=0 rps p99 rss
  for w in $(seq 1 "$windows"); do
    local readers writers others
    readers=$(mktemp); writers=$(mktemp); others=$(mktemp)
    curl -sf "http://127.0.0.1:$receiver_port/reset" >/dev/null
    wrk -t2 -c4 -d"${WINDOW}s" -s bench/report.lua -H "Authorization: Bearer $KEY" -H "x-application-id: $APP" \
      "http://127.0.0.1:$port/v1/api-keys" | grep '^RESULT' >"$readers" &
    local reading=$!
    wrk -t1 -c1 -d"${WINDOW}s" -s bench/mixed_writes.lua "http://127.0.0.1:$port" | grep '^RESULT' >"$others" &
    local othering=$!
    wrk -t2 -c2 -d"${WINDOW}s" -s bench/create_revoke.lua "http://127.0.0.1:$port" | grep '^RESULT' >"$writers"
    wait "$reading" "$othering"
    local r w_ o errors delivered
    r=$(cat "$readers"); w_=$(cat "$writers"); o=$(cat "$others"); rm -f "$readers" "$writers" "$others"
    delivered=$(curl -sf "http://127.0.0.1:$receiver_port/stats" | json_field '["count"]')
    rss=$(( $(ps -o rss= -p "$pid") / 1024 ))
    errors=$(( $(field "$r" errors) + $(field "$r" non2xx) + $(field "$w_" errors) + $(field "$w_" non2xx) + $(field "$o" errors) + $(field "$o" non2xx) ))
    local db_mib
    if [ "$backend" = postgres ]; then
      db_mib=$(( $(backend_kib) / 1024 ))
    else
      db_mib=$(( $(stat -c %s "$dir/us.db-wal" 2>/dev/null || echo 0) / 1048576 ))
    fi
    echo "| $w | $(field "$r" rps) | $(field "$r" p99_ms) | $(field "$w_" rps) | $(field "$w_" p99_ms) | $(field "$o" rps) | $(field "$o" p99_ms) | $((delivered / WINDOW)) | $errors | $rss | $db_mib |"
    rps=$(python3 -c "print($(field "$r" rps) + $(field "$w_" rps) + $(field "$o" rps))")
    p99=$(field "$r" p99_ms)
    peak_rps=$(python3 -c "print(max($peak_rps, $rps))")
    # The first window is warm-up; the second is the baseline.
    if [ "$w" = 2 ] || { [ "$windows" -lt 2 ] && [ "$w" = 1 ]; }; then first_rps=$rps; first_p99=$p99; first_rss=$rss; fi
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
  echo
  echo "$backend: last window / first after warm-up: rate $(python3 -c "print(f'{$rps/$first_rps:.0%}')"), readers p99 $(python3 -c "print(f'{$p99/$first_p99:.0%}')"), RSS +$((rss - first_rss)) MiB; last window / the peak window: rate $(python3 -c "print(f'{$rps/$peak_rps:.0%}')")"
  echo
}

receiver_port=$(free_port)
node bench/receiver.mjs "$receiver_port" >/dev/null &
receiver=$!
cleanup() {
  kill "$receiver" 2>/dev/null || true
  [ -n "${restore_autovacuum:-}" ] && psql "$PG_URL" -qc "ALTER SYSTEM RESET autovacuum" -c "SELECT pg_reload_conf()" >/dev/null
  return 0
}
trap cleanup EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$receiver_port/stats" >/dev/null && break; sleep 0.1; done
if [[ " ${BACKENDS[*]} " == *" postgres "* ]] && [ "${AUTOVACUUM:-on}" != keep ] &&
  [ "$(psql "$PG_URL" -Atc 'SHOW autovacuum')" = off ]; then
  echo "(autovacuum is off in this PostgreSQL server's configuration: on for this run, as in production)"
  psql "$PG_URL" -qc "ALTER SYSTEM SET autovacuum = on" -c "SELECT pg_reload_conf()" >/dev/null
  restore_autovacuum=1
fi
for backend in "${BACKENDS[@]}"; do soak_backend "$backend"; done
