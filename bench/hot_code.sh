#!/usr/bin/env bash
# Regenerates src/hot_code.order, the functions a serving release binary
# runs, which the release link lays out first and together (lld's
# --symbol-ordering-file, see src/build.rs). The kernel maps a binary's code
# 64 KiB around each page it faults in: spread over the 23 MB of .text,
# the 3.7 MB that serve requests kept 15 MiB of mapped files resident after
# 1,000 sign-ins; together, 8.6 MiB (BENCHMARKS.md, "Hot code first").
#
# Callgrind lists every function that runs, however rarely: the server
# runs under it on SQLite, counters zeroed once it listens (start-up code
# runs once and goes back to the kernel), then serves what a running
# service does: its pollers idle, sign-up, sign-ins on both hashing
# threads, refresh, sign-out, the authenticated reads, the JWKS and
# discovery documents, a service account's machine tokens, healthz and
# metrics. Symbol names carry a hash of the crate's build settings, and
# link-time optimisation inlines differently as the code changes, so
# regenerate it after dependency, feature or toolchain changes and after
# changes on the serving path (a stale name is skipped; bench/memory.sh
# shows what is lost: RssFile).
#
#   bash bench/hot_code.sh
#   BIN=target/release/gatehouse bash bench/hot_code.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; }
source bench/sqlite_server.sh
export GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_EMAIL_PER_MINUTE=0 GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_IP_PER_MINUTE=0
start_server valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" \
  --demangle=no --compress-strings=no --compress-pos=no --dump-instr=no
trap stop_server EXIT
callgrind_control --zero "$pid" >/dev/null

admin=(-H "Authorization: Bearer $key" -H "x-application-id: $app" -H 'content-type: application/json')
user=(-H "x-application-id: $app" -H 'content-type: application/json')
credentials='{"email": "hot@example.com", "password": "correct horse battery"}'
sleep 3 # the pollers' rounds
curl -sf -o /dev/null -X POST "${user[@]}" -d "$credentials" "$base/v1/auth/sign-up"
for round in 1 2; do
  for i in 1 2 3 4; do
    curl -sf -o "$dir/session-$round-$i" -X POST "${user[@]}" -d "$credentials" "$base/v1/auth/sign-in" &
  done
  wait $(jobs -p | grep -v "^$pid$")
done
for session in "$dir"/session-*; do
  refresh=$(json_field '["data"]["refresh_token"]' <"$session")
  rotated=$(curl -sf -X POST "${user[@]}" -d "{\"refresh_token\": \"$refresh\"}" "$base/v1/auth/token")
  access=$(echo "$rotated" | json_field '["data"]["access_token"]')
  curl -sf -o /dev/null -H "Authorization: Bearer $access" "${user[@]}" "$base/v1/auth/me"
  curl -sf -o /dev/null -X POST -H "Authorization: Bearer $access" "${user[@]}" "$base/v1/auth/sign-out"
done
account=$(curl -sf -X POST "${admin[@]}" -d '{"name": "hot", "scopes": ["a"]}' "$base/v1/service-accounts" | json_field '["data"]["id"]')
secret=$(curl -sf -X POST "${admin[@]}" -d '{"name": "hot"}' "$base/v1/service-accounts/$account/keys" | json_field '["data"]["secret"]')
for _ in $(seq 20); do
  curl -sf -o /dev/null -u "$account:$secret" -d grant_type=client_credentials "$base/v1/applications/$app/oauth/token"
  curl -sf -o /dev/null "${admin[@]}" "$base/v1/api-keys/$key_id"
  curl -sf -o /dev/null "${admin[@]}" "$base/v1/users"
  curl -sf -o /dev/null "$base/v1/applications/$app/.well-known/jwks.json"
  curl -sf -o /dev/null "$base/v1/applications/$app/.well-known/openid-configuration"
  curl -sf -o /dev/null "$base/healthz"
done
curl -sf -o /dev/null "$base/metrics"
sleep 3
callgrind_control --dump=serving "$pid" >/dev/null

# The functions of the binary itself that ran, most instructions first.
python3 - "$dir" "$(basename "$BIN")" >"$dir/hot_code.order" <<'PY'
import collections, glob, sys
directory, binary = sys.argv[1], sys.argv[2]
cost = collections.Counter()
for path in glob.glob(f"{directory}/callgrind.out*"):
    if "Trigger: dump serving" not in open(path, errors="replace").read(4096):
        continue
    obj = fn = None
    after_calls = False
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("ob="):
            obj = line[3:]
        elif line.startswith("fn="):
            fn = line[3:]
        elif line.startswith("calls="):
            after_calls = True  # the next cost line is the call's, not fn's
        elif line[:1].isdigit() or line[:1] in "+-*":
            if after_calls:
                after_calls = False
            elif fn and obj and obj.endswith("/" + binary):
                parts = line.split()
                if len(parts) > 1:
                    # "name'2": callgrind's name for a recursion level
                    cost[fn.split("'")[0]] += int(parts[1])
for name, _ in cost.most_common():
    print(name)
PY
[ -s "$dir/hot_code.order" ] || { echo "callgrind's dump named no function of $BIN" >&2; exit 1; }
mv "$dir/hot_code.order" src/hot_code.order
echo "src/hot_code.order: $(wc -l <src/hot_code.order) functions"
