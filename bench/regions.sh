#!/usr/bin/env bash
# Regions on PostgreSQL, with the release binary:
#
# 1. The cost of forwarding: an authenticated read (GET /v1/api-keys/{id})
#    of an eu application sent to the eu node itself, then to a us node
#    that forwards it there, side by side in one run (64 connections).
# 2. A region move of an application with USERS users and AUDIT audit rows
#    (rows made in SQL from one real row each: the move copies rows, it does
#    not read them): how long POST /v1/security/region took, and for how
#    long the application's requests were held (answered 503), as a poller
#    saw it. The audit rows are copied ahead while the application serves;
#    the hold covers the rest.
#
#   bash bench/regions.sh
#   USERS=10000 AUDIT=100000 DURATION=10s bash bench/regions.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-10s}"
USERS="${USERS:-10000}"
AUDIT="${AUDIT:-100000}"
PG_URL="${GATEHOUSE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
PG="${PG_URL%/*}"

source bench/common.sh

for db in catalog us eu ap; do
  psql "$PG_URL" -qc "DROP DATABASE IF EXISTS gh_bench_$db WITH (FORCE)" -c "CREATE DATABASE gh_bench_$db" >/dev/null
done
dir=$(mktemp -d)
export GATEHOUSE__STORAGE__DATA_DIR="$dir" GATEHOUSE__SERVER__WORKERS=2 RUST_LOG=warn \
  GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND=0 \
  GATEHOUSE__STORAGE__CATALOG_URL="$PG/gh_bench_catalog" GATEHOUSE__REGIONS__US__DATABASE_URL="$PG/gh_bench_us" \
  GATEHOUSE__REGIONS__EU__DATABASE_URL="$PG/gh_bench_eu" GATEHOUSE__REGIONS__AP__DATABASE_URL="$PG/gh_bench_ap" \
  GATEHOUSE__SERVER__PUBLIC_URL="http://127.0.0.1:1"
us_port=$(free_port) eu_port=$(free_port)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$dir"' EXIT
GATEHOUSE__SERVER__LISTEN="127.0.0.1:$eu_port" GATEHOUSE__NODE__REGIONS=eu "$BIN" serve >"$dir/eu.log" 2>&1 &
pids+=($!)
GATEHOUSE__SERVER__LISTEN="127.0.0.1:$us_port" GATEHOUSE__NODE__REGIONS=us \
  GATEHOUSE__NODE__PEERS__EU="http://127.0.0.1:$eu_port" "$BIN" serve >"$dir/us.log" 2>&1 &
pids+=($!)
for port in "$us_port" "$eu_port"; do
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
done

echo "== forwarding: an authenticated read of an eu application, at the eu node and through a us node"
creds=$("$BIN" bootstrap --name Forwarded --region eu)
app=$(echo "$creds" | json_field '["application_id"]')
key=$(echo "$creds" | json_field '["secret_key"]')
key_id=$(curl -sf -H "Authorization: Bearer $key" -H "x-application-id: $app" "http://127.0.0.1:$eu_port/v1/api-keys" |
  json_field '["data"][0]["id"]')
for node in "eu node (direct)=$eu_port" "us node (forwarded)=$us_port"; do
  port=${node##*=}
  result=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua -H "Authorization: Bearer $key" -H "x-application-id: $app" \
    "http://127.0.0.1:$port/v1/api-keys/$key_id" | grep RESULT)
  echo "${node%%=*}: $result"
done

echo "== a move from us to eu of an application with $USERS users and $AUDIT audit rows"
creds=$("$BIN" bootstrap --name Mover --region us)
app=$(echo "$creds" | json_field '["application_id"]')
key=$(echo "$creds" | json_field '["secret_key"]')
curl -sf -o /dev/null -X POST -H "x-application-id: $app" -H 'content-type: application/json' \
  -d '{"email": "template@example.com", "password": "correct horse battery staple"}' "http://127.0.0.1:$us_port/v1/auth/sign-up"
sleep 0.5
# Copies of the template rows with new ids (and emails, and chain positions:
# the chain's next seqs, the head moved past them, as a chain that grew).
psql "$PG/gh_bench_us" -q <<SQL
INSERT INTO users SELECT (jsonb_populate_record(NULL::users, to_jsonb(u) || jsonb_build_object(
  'id', gen_random_uuid(), 'email', 'user' || g || '@example.com'))).*
  FROM users u, generate_series(1, $USERS - 1) g WHERE u.application_id = '$app';
INSERT INTO audit_events SELECT (jsonb_populate_record(NULL::audit_events, to_jsonb(a) || jsonb_build_object(
  'id', gen_random_uuid(), 'seq', h.seq + g, 'prev_hash', md5(g::text) || md5(g::text)))).*
  FROM (SELECT * FROM audit_events WHERE application_id = '$app' ORDER BY seq DESC LIMIT 1) a,
  (SELECT seq FROM audit_heads WHERE application_id = '$app') h,
  generate_series(1, $AUDIT - (SELECT count(*) FROM audit_events WHERE application_id = '$app')) g;
UPDATE audit_heads SET seq = (SELECT max(seq) FROM audit_events WHERE application_id = '$app')
  WHERE application_id = '$app';
SQL
psql "$PG/gh_bench_us" -Atc "SELECT 'users: ' || count(*) FROM users WHERE application_id = '$app'" \
  -c "SELECT 'audit rows: ' || count(*) FROM audit_events WHERE application_id = '$app'"
# The poller: one GET every 10 ms; records when it first and last saw 503.
python3 - "$us_port" "$app" "$key" >"$dir/held" <<'PY' &
import sys, time, urllib.request, urllib.error
port, app, key = sys.argv[1:4]
first = last = None
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/security/region",
                                     headers={"x-application-id": app, "authorization": f"Bearer {key}"})
    try:
        status = urllib.request.urlopen(request, timeout=5).status
        body = ""
    except urllib.error.HTTPError as e:
        status = e.code
    now = time.monotonic()
    if status == 503:
        first = first or now
        last = now
    elif first is not None:
        break
    time.sleep(0.01)
print(f"{(last - first) * 1000:.0f}" if first else "0")
PY
poller=$!
sleep 0.3
started=$(date +%s%N)
moved=$(curl -s -w ' %{http_code}' -X POST -H "Authorization: Bearer $key" -H "x-application-id: $app" \
  -H 'content-type: application/json' -d '{"region": "eu"}' "http://127.0.0.1:$us_port/v1/security/region")
took=$(( ($(date +%s%N) - started) / 1000000 ))
wait "$poller"
echo "answer: $moved"
echo "move: ${took} ms in all (1 s of it the settling pause before the clean, while the application serves); requests held (503) for $(cat "$dir/held") ms as a poller saw it"
psql "$PG/gh_bench_eu" -Atc "SELECT 'in eu afterwards: ' || count(*) || ' users' FROM users WHERE application_id = '$app'"
psql "$PG/gh_bench_us" -Atc "SELECT 'in us afterwards: ' || count(*) || ' users' FROM users WHERE application_id = '$app'"
grep -h "copied\|cleaned" "$dir/us.log" | tail -2 || true
