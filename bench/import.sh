#!/usr/bin/env bash
# Bulk import throughput and a user's export and erasure, on SQLite and
# PostgreSQL: `gatehouse users import` of USERS users (bcrypt hashes, a
# third of them in one of 50 organizations), timed whole; then the size
# and time of one user's export and of their erasure through the API; then
# the whole application's archive (`gatehouse export`) and its import into a
# fresh embedded deployment (`gatehouse import`), and a master-key rotation
# there (`gatehouse master-key rotate`).
#   bash bench/import.sh [sqlite] [postgres]
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL="${GATEHOUSE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
BACKENDS=("${@:-sqlite postgres}")
BACKENDS=(${BACKENDS[*]})
USERS="${USERS:-10000}"

source bench/common.sh

bench_backend() {
  local backend=$1 dir port pid
  dir=$(mktemp -d)
  port=$(free_port)
  export GATEHOUSE__STORAGE__DATA_DIR="$dir" GATEHOUSE__SERVER__LISTEN="127.0.0.1:$port" \
    GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND=0 RUST_LOG=warn
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
  python3 - "$USERS" > "$dir/users.ndjson" <<'PY'
import json, sys, bcrypt
hash = bcrypt.hashpw(b"correct horse battery", bcrypt.gensalt(rounds=10)).decode()
for i in range(int(sys.argv[1])):
    line = {"external_id": f"legacy-{i}", "email": f"user{i}@example.com", "password_hash": hash, "profile": {}}
    if i % 3 == 0:
        line["organizations"] = [{"slug": f"org-{i % 50}", "role": "member"}]
    print(json.dumps(line))
PY
  local started ended
  started=$(date +%s.%N)
  "$BIN" users import --application "$app" "$dir/users.ndjson" > "$dir/import.out"
  ended=$(date +%s.%N)
  python3 - "$backend" "$USERS" "$started" "$ended" "$dir/import.out" <<'PY'
import json, sys
backend, users, started, ended, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
jobs = [json.loads(l) for l in open(out)]
created = sum(j["created"] for j in jobs)
seconds = ended - started
print(f"{backend}: imported {created} of {users} users in {seconds:.1f} s = {created / seconds * 60:,.0f} users/minute")
PY
  "$BIN" serve >/dev/null 2>&1 &
  pid=$!
  local base_url="http://127.0.0.1:$port"
  for _ in $(seq 100); do curl -sf "$base_url/healthz" >/dev/null && break; sleep 0.1; done
  local user
  user=$(curl -sf "$base_url/v1/users?email=user3@example.com" -H "Authorization: Bearer $key" -H "x-application-id: $app" | json_field '["data"][0]["id"]')
  curl -sf "$base_url/v1/auth/sign-in" -H "x-application-id: $app" -H 'content-type: application/json' \
    -d '{"email": "user3@example.com", "password": "correct horse battery"}' >/dev/null
  curl -sf -o "$dir/export.json" -w "$backend: one user's export: %{size_download} bytes in %{time_total} s\n" \
    "$base_url/v1/users/$user/export" -H "Authorization: Bearer $key" -H "x-application-id: $app"
  curl -sf -o /dev/null -X DELETE -w "$backend: one user's erasure: %{time_total} s\n" \
    "$base_url/v1/users/$user" -H "Authorization: Bearer $key" -H "x-application-id: $app"
  # The whole application as an archive, exported while it serves, and
  # imported into a fresh embedded deployment.
  local started ended
  started=$(date +%s.%N)
  "$BIN" export --application "$app" --to "$dir/archive" --key-file "$dir/archive.key" >/dev/null
  ended=$(date +%s.%N)
  echo "$backend: the application's archive: $(du -sb "$dir/archive" | cut -f1) bytes, exported in $(elapsed "$started" "$ended") s"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  started=$(date +%s.%N)
  env -u GATEHOUSE__STORAGE__CATALOG_URL -u GATEHOUSE__REGIONS__US__DATABASE_URL -u GATEHOUSE__REGIONS__EU__DATABASE_URL \
    -u GATEHOUSE__REGIONS__AP__DATABASE_URL GATEHOUSE__STORAGE__DATA_DIR="$dir/second" \
    "$BIN" import --from "$dir/archive" --key-file "$dir/archive.key" >/dev/null
  ended=$(date +%s.%N)
  echo "$backend: that archive imported into a fresh SQLite deployment in $(elapsed "$started" "$ended") s"
  # A master-key rotation of that deployment (the server stopped: the command alone).
  GATEHOUSE__STORAGE__DATA_DIR="$dir/second" "$BIN" master-key new >/dev/null
  started=$(date +%s.%N)
  env -u GATEHOUSE__STORAGE__CATALOG_URL -u GATEHOUSE__REGIONS__US__DATABASE_URL -u GATEHOUSE__REGIONS__EU__DATABASE_URL \
    -u GATEHOUSE__REGIONS__AP__DATABASE_URL GATEHOUSE__STORAGE__DATA_DIR="$dir/second" \
    "$BIN" master-key rotate > "$dir/rotation.json"
  ended=$(date +%s.%N)
  echo "$backend: its master-key rotation: $(json_field '["resealed"]' < "$dir/rotation.json") values sealed again in $(elapsed "$started" "$ended") s"
  rm -rf "$dir"
}

elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }

for backend in "${BACKENDS[@]}"; do bench_backend "$backend"; done
