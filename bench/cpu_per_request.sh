#!/usr/bin/env bash
# The server's CPU per request (user and system, from /proc/<pid>/stat
# around each load) for GET /healthz and the secret-key-authenticated
# GET /v1/api-keys/{id}: what a request costs the server itself, apart from
# wrk's share of the same 2 cores. SQLite, 2 HTTP workers, 64 connections,
# the management rate limit off.
#
#   bash bench/cpu_per_request.sh
#   BIN=/tmp/old-gatehouse DURATION=6s bash bench/cpu_per_request.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-6s}"
source bench/sqlite_server.sh
start_server
trap stop_server EXIT
ticks() { awk '{print $14, $15}' "/proc/$pid/stat"; } # user and system, in clock ticks
hz=$(getconf CLK_TCK)

measure() { # name url [header...]
  local name=$1 url=$2 headers=() before after result
  shift 2
  for h in "$@"; do headers+=(-H "$h"); done
  before=$(ticks)
  result=$(wrk -t2 -c64 -d"$DURATION" -s bench/report.lua "${headers[@]}" "$url" | grep '^RESULT' | cut -d' ' -f2-)
  after=$(ticks)
  python3 - "$name" "$result" "$before" "$after" "$hz" "$DURATION" <<'PY'
import sys
name, result, before, after, hz, duration = sys.argv[1:]
rps = float(result.split('rps=')[1].split()[0])
requests = rps * float(duration.rstrip('s'))
(u0, s0), (u1, s1) = before.split(), after.split()
per = lambda a, b: (int(b) - int(a)) / int(hz) * 1e6 / requests
print(f"| {name} | {rps:.0f} | {per(u0, u1):.2f} µs | {per(s0, s1):.2f} µs |")
PY
}

echo "| request (64 conn) | rps | server user CPU / request | server system CPU / request |"
echo "|---|---|---|---|"
measure "GET /healthz" "$base/healthz"
measure "GET /v1/api-keys/{id}" "$base/v1/api-keys/$key_id" "Authorization: Bearer $key" "x-application-id: $app"
