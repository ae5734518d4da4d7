#!/usr/bin/env bash
# End-user benchmarks of the release binary on PostgreSQL, side by side in
# one run: GET /healthz; the JWKS document; refresh-token rotation (each
# rotation written to PostgreSQL with its audit row) at 16 connections;
# password sign-ins against argon2 alone (`gatehouse measure-hashing`, run
# just before and just after them: both its ceiling, cores / one hash's
# time, and its measured rate with every core hashing); and sign-ins
# refused under overload.
#
#   bash bench/end_users.sh
#   DURATION=20s bash bench/end_users.sh
#
# Sign-in and sign-up rate limits are turned off so the service, not the
# limiter, is measured; 2 HTTP workers; wrk on the same machine.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-10s}"
PG_URL="${GATEHOUSE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
source bench/common.sh
result() { grep '^RESULT' | cut -d' ' -f2-; }
rps() { echo "$1" | sed 's/.*rps=\([0-9]*\).*/\1/'; }

dir=$(mktemp -d)
port=$(free_port)
base="${PG_URL%/*}"
for db in catalog us eu ap; do
  psql "$PG_URL" -qc "DROP DATABASE IF EXISTS gh_bench_$db" -c "CREATE DATABASE gh_bench_$db" >/dev/null
done
export GATEHOUSE__STORAGE__DATA_DIR="$dir" GATEHOUSE__SERVER__LISTEN="127.0.0.1:$port" GATEHOUSE__SERVER__WORKERS=2 \
  GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_EMAIL_PER_MINUTE=0 GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_IP_PER_MINUTE=0 \
  GATEHOUSE__RATE_LIMITS__SIGN_UP_PER_IP_PER_MINUTE=0 RUST_LOG=warn \
  GATEHOUSE__STORAGE__CATALOG_URL="$base/gh_bench_catalog" GATEHOUSE__REGIONS__US__DATABASE_URL="$base/gh_bench_us" \
  GATEHOUSE__REGIONS__EU__DATABASE_URL="$base/gh_bench_eu" GATEHOUSE__REGIONS__AP__DATABASE_URL="$base/gh_bench_ap"
app=$("$BIN" bootstrap --name Bench | json_field '["application_id"]')
"$BIN" serve >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
url="http://127.0.0.1:$port"
for _ in $(seq 100); do curl -sf "$url/healthz" >/dev/null && break; sleep 0.1; done
post() { curl -sf -X POST -H "content-type: application/json" -H "x-application-id: $app" -d "$2" "$url$1"; }
post /v1/auth/sign-up '{"email":"bench@example.com","password":"correct horse battery"}' >/dev/null
export APP="$app" EMAIL="bench@example.com" PASSWORD="correct horse battery" TOKENS_FILE="$dir/tokens"
for _ in $(seq 16); do
  post /v1/auth/sign-in '{"email":"bench@example.com","password":"correct horse battery"}' | json_field '["data"]["refresh_token"]'
done >"$TOKENS_FILE"

healthz=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua "$url/healthz" | result)
jwks=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua "$url/v1/applications/$app/.well-known/jwks.json" | result)
refresh=$(wrk -t16 -c16 -d"$DURATION" -s bench/refresh.lua "$url/v1/auth/token" | result)
one_signin=$(wrk -t1 -c1 -d"$DURATION" -s bench/signin.lua "$url/v1/auth/sign-in" | result)
# This machine's speed drifts by a fifth over minutes: hashing is measured
# on both sides of the sign-ins and the two runs averaged.
hashing_before=$("$BIN" measure-hashing --rounds 20)
signins=$(wrk -t2 -c8 -d"$DURATION" -s bench/signin.lua "$url/v1/auth/sign-in" | result)
hashing_after=$("$BIN" measure-hashing --rounds 20)
# Overload: 64 connections against 2 hashing slots and a queue of 16; the
# sign-ins past the queue must be refused at once, not after seconds.
wrk -t2 -c64 -d"$DURATION" -s bench/signin.lua "$url/v1/auth/sign-in" >"$dir/overload" &
overload_pid=$!
sleep 2
refusals=$(for _ in $(seq 40); do
  curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -X POST -H "content-type: application/json" -H "x-application-id: $app" \
    -d '{"email":"bench@example.com","password":"correct horse battery"}' "$url/v1/auth/sign-in"
done | python3 -c '
import sys
rows = [l.split() for l in sys.stdin if l.strip()]
shed = sorted(float(t) * 1000 for code, t in rows if code == "503")
ok = sum(1 for code, _ in rows if code == "200")
print(f"{len(shed)} of {len(rows)} refused with 503, slowest {shed[-1]:.1f} ms, median {shed[len(shed)//2]:.1f} ms; {ok} served" if shed else f"none refused; {ok} of {len(rows)} served")')
wait "$overload_pid"
overload=$(result <"$dir/overload")
mean_of() { python3 -c "import json,sys; print((json.loads(sys.argv[1])['$1'] + json.loads(sys.argv[2])['$1']) / 2)" "$hashing_before" "$hashing_after"; }
ceiling=$(mean_of ceiling_per_second)
parallel=$(mean_of parallel_per_second)

echo "| measurement | result |"
echo "|---|---|"
echo "| healthz, 64 conn | $healthz |"
echo "| JWKS, 64 conn | $jwks |"
echo "| JWKS / healthz | $(python3 -c "print(f'{$(rps "$jwks")/$(rps "$healthz"):.0%}')") |"
echo "| refresh (rotation + audit row on PostgreSQL), 16 conn | $refresh |"
echo "| one sign-in at a time (argon2id m=19456 t=2 p=1 + the rest) | $one_signin |"
echo "| sign-ins, 8 conn | $signins |"
echo "| argon2 alone (\`gatehouse measure-hashing\`), before the sign-ins | $hashing_before |"
echo "| argon2 alone, after them | $hashing_after |"
echo "| sign-ins / ceiling (cores / one hash's time; mean of the two) | $(python3 -c "print(f'{$(rps "$signins")/$ceiling:.0%}')") |"
echo "| sign-ins / argon2 alone on every core (parallel_per_second; mean of the two) | $(python3 -c "print(f'{$(rps "$signins")/$parallel:.0%}')") |"
echo "| sign-ins, 64 conn (overload; wrk counts 503s as non2xx) | $overload |"
echo "| probes during the overload | $refusals |"
