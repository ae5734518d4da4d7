#!/usr/bin/env bash
# Memory under sign-ins: the release binary on SQLite, idle (3 s after it
# started, once it has given back the code only start-up ran), then right
# after 200 password sign-ins four at a time (ROUNDS of four; 50 by
# default), and 11 s later, once the hashing threads (idle for 10 s) have
# given their memory back; VmRSS, RssAnon and RssFile from /proc.
#
#   bash bench/memory.sh
#   ROUNDS=250 bash bench/memory.sh   # 1,000 sign-ins
#   GATEHOUSE__SECURITY__PASSWORD_HASH_CONCURRENCY=1 bash bench/memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
dir=$(mktemp -d)
port=$(free_port)
export GATEHOUSE__STORAGE__DATA_DIR="$dir" GATEHOUSE__SERVER__LISTEN="127.0.0.1:$port" RUST_LOG=warn \
  GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_EMAIL_PER_MINUTE=0 GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_IP_PER_MINUTE=0
app=$("$BIN" bootstrap --name Memory | python3 -c "import json,sys; print(json.load(sys.stdin)['application_id'])")
"$BIN" serve >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
base="http://127.0.0.1:$port"
for _ in $(seq 100); do curl -sf "$base/healthz" >/dev/null && break; sleep 0.1; done
sleep 3
memory() { grep -E '^(VmRSS|RssAnon|RssFile)' "/proc/$pid/status" | tr -s ' \t' ' ' | paste -sd ',' -; }
echo "| idle | $(memory) |"
body='{"email": "memory@example.com", "password": "correct horse battery"}'
curl -sf -o /dev/null -X POST "$base/v1/auth/sign-up" -H "x-application-id: $app" -H 'content-type: application/json' -d "$body"
for _ in $(seq "${ROUNDS:-50}"); do
  for _ in 1 2 3 4; do
    curl -sf -o /dev/null -X POST "$base/v1/auth/sign-in" -H "x-application-id: $app" -H 'content-type: application/json' -d "$body" &
  done
  wait $(jobs -p | grep -v "^$pid$")
done
echo "| after $((${ROUNDS:-50} * 4)) sign-ins | $(memory) |"
sleep 11
echo "| 11 s later | $(memory) |"
