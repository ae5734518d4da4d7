#!/usr/bin/env bash
# The authenticated read (GET /v1/api-keys/{id} with a secret key) and the
# JWKS against GET /healthz, as ratios of throughput in alternating rounds:
# each round measures healthz, the read, the JWKS and healthz again on the
# same server, and divides by the mean of its two healthz figures; the
# table gives every round and the medians. One 10 s run of each moves by
# ten points between runs on this 2-core machine (the load generator shares
# the cores); the median of short rounds taken side by side does not.
# SQLite, 64 connections, 2 HTTP workers, the management rate limit off.
#
#   bash bench/ratios.sh
#   ROUNDS=9 DURATION=3s BIN=/tmp/old-gatehouse bash bench/ratios.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${ROUNDS:-7}"
DURATION="${DURATION:-3s}"
source bench/sqlite_server.sh
start_server
trap stop_server EXIT
# A signing key, so the JWKS answered is a real one (the first token makes it).
curl -sf -X POST -H "Authorization: Bearer $key" -H "x-application-id: $app" -H 'content-type: application/json' \
  -d '{}' "$base/v1/applications/$app/signing-keys/rotate" >/dev/null
rps() { wrk -t2 -c64 -d"$DURATION" -s bench/report.lua "$@" | grep '^RESULT' | sed 's/.*rps=\([0-9]*\).*/\1/'; }
wrk -t2 -c64 -d1s "$base/healthz" >/dev/null

echo "| round | healthz (mean of before and after) | authenticated read | JWKS | read / healthz | JWKS / healthz |"
echo "|---|---|---|---|---|---|"
rounds=()
for round in $(seq "$ROUNDS"); do
  before=$(rps "$base/healthz")
  read=$(rps -H "Authorization: Bearer $key" -H "x-application-id: $app" "$base/v1/api-keys/$key_id")
  jwks=$(rps "$base/v1/applications/$app/.well-known/jwks.json")
  after=$(rps "$base/healthz")
  rounds+=("$before $read $jwks $after")
  python3 -c "h=($before+$after)/2; print(f'| $round | {h:.0f} | $read | $jwks | {$read/h:.2f} | {$jwks/h:.2f} |')"
done
printf '%s\n' "${rounds[@]}" | python3 -c '
import sys, statistics
rows = [list(map(int, line.split())) for line in sys.stdin]
read = statistics.median(r / ((b + a) / 2) for b, r, j, a in rows)
jwks = statistics.median(j / ((b + a) / 2) for b, r, j, a in rows)
print(f"| median of {len(rows)} | | | | **{read:.2f}** | **{jwks:.2f}** |")'
