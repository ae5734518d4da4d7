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
BACKENDS=("${@:-sqlite postgres}")
BACKENDS=(${BACKENDS[*]})

source bench/common.sh

bench_backend() {
  local backend=$1
  serve_backend "$backend"
  local org directory token base_path key_id
  org=$(management POST /v1/organizations '{"name": "Measured"}' | json_field '["data"]["id"]')
  directory=$(management POST "/v1/organizations/$org/scim-directories" '{"name": "Bench IdP"}')
  token=$(echo "$directory" | json_field '["data"]["token"]')
  base_path="/v1/applications/$APP/scim/v2/$(echo "$directory" | json_field '["data"]["id"]')"
  key_id=$(management GET /v1/api-keys | json_field '["data"][0]["id"]')

  local h64 k64 c64 f64 r64 d64 ids_file="$DIR/ids" one
  h64=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua "$BASE_URL/healthz" | grep '^RESULT' | cut -d' ' -f2-)
  k64=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua -H "Authorization: Bearer $KEY" -H "x-application-id: $APP" \
    "$BASE_URL/v1/api-keys/$key_id" | grep '^RESULT' | cut -d' ' -f2-)
  c64=$(TOKEN="$token" BASE_PATH="$base_path" wrk -t2 -c64 -d"$DURATION" -s bench/scim_create.lua "$BASE_URL" |
    grep '^RESULT' | cut -d' ' -f2-)
  # This machine's PostgreSQL runs with autovacuum off (the service warns):
  # the statistics autovacuum would gather after the creates, gathered here.
  [ "$backend" = postgres ] && psql "${GATEHOUSE_TEST_POSTGRES_URL%/*}/gh_bench_us" -qc "ANALYZE" >/dev/null
  local total
  total=$(curl -sf -H "Authorization: Bearer $token" "$BASE_URL$base_path/Users?count=0" | json_field '["totalResults"]')
  for start in $(seq 1 1000 "$total"); do
    curl -sf -H "Authorization: Bearer $token" "$BASE_URL$base_path/Users?startIndex=$start&count=1000&attributes=userName" |
      python3 -c 'import json,sys; [print(r["id"], r["userName"]) for r in json.load(sys.stdin)["Resources"]]'
  done >"$DIR/users"
  cut -d' ' -f1 "$DIR/users" >"$ids_file"
  one=$(sed -n '1p' "$DIR/users")
  f64=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua -H "Authorization: Bearer $token" \
    "$BASE_URL$base_path/Users?filter=userName%20eq%20%22${one#* }%22" | grep '^RESULT' | cut -d' ' -f2-)
  r64=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua -H "Authorization: Bearer $token" \
    "$BASE_URL$base_path/Users/${one%% *}" | grep '^RESULT' | cut -d' ' -f2-)
  d64=$(TOKEN="$token" BASE_PATH="$base_path" IDS_FILE="$ids_file" wrk -t2 -c64 -d"$DURATION" \
    -s bench/scim_deprovision.lua "$BASE_URL" | grep '^RESULT' | cut -d' ' -f2-)
  stop_backend
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
