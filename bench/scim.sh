#!/usr/bin/env bash
# SCIM directory throughput, side by side in one run of the release
# binary: GET /healthz and a plain secret-key read (the floor of every
# authenticated route) against what an identity provider sends: a User
# provisioned (POST /Users: the SCIM record, a Gatehouse user, its
# membership, their audit rows), the lookup it makes before each create
# (GET /Users?filter=userName eq "…", from an index), a User read by id, and
# deprovisioning (PATCH active false: the membership ended, the sessions
# revoked). 64 connections; the directory holds about USERS users when the
# reads run.
#
#   bash bench/scim.sh             # both backends
#   bash bench/scim.sh postgres    # one backend
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-10s}"
PG_URL="${GATEHOUSE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
BACKENDS=("${@:-sqlite postgres}")
BACKENDS=(${BACKENDS[*]})

source bench/common.sh

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
  local org directory token base_path key_id
  org=$(call POST /v1/organizations '{"name": "Measured"}' | json_field '["data"]["id"]')
  directory=$(call POST "/v1/organizations/$org/scim-directories" '{"name": "Bench IdP"}')
  token=$(echo "$directory" | json_field '["data"]["token"]')
  base_path="/v1/applications/$app/scim/v2/$(echo "$directory" | json_field '["data"]["id"]')"
  key_id=$(call GET /v1/api-keys | json_field '["data"][0]["id"]')

  local h64 k64 c64 f64 r64 d64 ids_file="$dir/ids" one
  h64=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua "$base_url/healthz" | grep '^RESULT' | cut -d' ' -f2-)
  k64=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua -H "Authorization: Bearer $key" -H "x-application-id: $app" \
    "$base_url/v1/api-keys/$key_id" | grep '^RESULT' | cut -d' ' -f2-)
  c64=$(TOKEN="$token" BASE_PATH="$base_path" wrk -t2 -c64 -d"$DURATION" -s bench/scim_create.lua "$base_url" |
    grep '^RESULT' | cut -d' ' -f2-)
  local total
  total=$(curl -sf -H "Authorization: Bearer $token" "$base_url$base_path/Users?count=0" | json_field '["totalResults"]')
  for start in $(seq 1 1000 "$total"); do
    curl -sf -H "Authorization: Bearer $token" "$base_url$base_path/Users?startIndex=$start&count=1000&attributes=userName" |
      python3 -c 'import json,sys; [print(r["id"], r["userName"]) for r in json.load(sys.stdin)["Resources"]]'
  done >"$dir/users"
  cut -d' ' -f1 "$dir/users" >"$ids_file"
  one=$(sed -n '1p' "$dir/users")
  f64=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua -H "Authorization: Bearer $token" \
    "$base_url$base_path/Users?filter=userName%20eq%20%22${one#* }%22" | grep '^RESULT' | cut -d' ' -f2-)
  r64=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua -H "Authorization: Bearer $token" \
    "$base_url$base_path/Users/${one%% *}" | grep '^RESULT' | cut -d' ' -f2-)
  d64=$(TOKEN="$token" BASE_PATH="$base_path" IDS_FILE="$ids_file" wrk -t2 -c64 -d"$DURATION" \
    -s bench/scim_deprovision.lua "$base_url" | grep '^RESULT' | cut -d' ' -f2-)
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
  echo "| $backend | healthz, 64 conn | $h64 |"
  echo "| $backend | GET /v1/api-keys/{id}, 64 conn | $k64 |"
  echo "| $backend | POST /Users (provision: record, user, membership), 64 conn | $c64 |"
  echo "| $backend | GET /Users?filter=userName eq (directory of $total), 64 conn | $f64 |"
  echo "| $backend | GET /Users/{id}, 64 conn | $r64 |"
  echo "| $backend | PATCH /Users/{id} active false (deprovision), 64 conn | $d64 |"
}

echo "| backend | measurement | result |"
echo "|---|---|---|"
for backend in "${BACKENDS[@]}"; do bench_backend "$backend"; done
