#!/usr/bin/env bash
# User-space instructions per request, counted by callgrind: GET /healthz,
# the secret-key-authenticated GET /v1/api-keys/{id} and the JWKS.
# Instruction counts do not move with the machine's load, so two builds can
# be compared in one line each where wrk's rates move by 20% between runs.
# The kernel's share (the socket calls, the same for every route) is not in
# them. SQLite, one HTTP worker, one keep-alive connection, the management
# rate limit off; the server runs under valgrind, whose CPU has no SHA
# instructions: the read's SHA-256 of the presented key is counted in
# software (about 3,500 instructions), where the machine itself runs it
# with SHA-NI (perf: about 0.06 µs a read).
#
#   bash bench/instructions.sh
#   BIN=/tmp/old-gatehouse REQUESTS=5000 bash bench/instructions.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS="${REQUESTS:-2000}"
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; }
source bench/sqlite_server.sh
WORKERS=1 start_server valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out"
trap stop_server EXIT
port=${base##*:}

# GETs on one keep-alive connection: port, count, path, then "Name: value" headers.
client='
import http.client, sys
port, count, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
headers = dict(h.split(": ", 1) for h in sys.argv[4:])
connection = http.client.HTTPConnection("127.0.0.1", port)
for _ in range(count):
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    response.read()
    if response.status != 200:
        sys.exit(f"{path}: {response.status}")
'
# Warms the route, zeroes the counters, sends the requests, dumps the counts.
count() { # name path [header...]
  local name=$1
  shift
  python3 -c "$client" "$port" 200 "$@"
  callgrind_control --zero "$pid" >/dev/null 2>&1
  python3 -c "$client" "$port" "$REQUESTS" "$@"
  callgrind_control --dump="$name" "$pid" >/dev/null 2>&1
}
count healthz /healthz
count read "/v1/api-keys/$key_id" "Authorization: Bearer $key" "x-application-id: $app"
count jwks "/v1/applications/$app/.well-known/jwks.json"

# actix-http zeroes two 3 KiB header tables per request with `rep stosb`,
# which callgrind counts byte by byte; the second column leaves libc's
# memset out.
echo "| request | instructions / request | without memset | / healthz (without memset) |"
echo "|---|---|---|---|"
python3 - "$dir" "$REQUESTS" <<'PY'
import glob, re, subprocess, sys
directory, requests = sys.argv[1], int(sys.argv[2])
counts = {}
for path in sorted(glob.glob(f"{directory}/callgrind.out.*")):
    text = open(path).read()
    name = re.search(r"^desc: Trigger: dump (\S+)", text, re.M).group(1)
    total = int(re.search(r"^summary: (\d+)", text, re.M).group(1))
    annotated = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", path],
                               capture_output=True, text=True).stdout
    memset = sum(int(m.group(1).replace(",", "")) for m in
                 re.finditer(r"^\s*([\d,]+) \(.*\)\s+\S*memset\S*:__memset", annotated, re.M))
    counts[name] = (total / requests, (total - memset) / requests)
names = {"healthz": "GET /healthz", "read": "GET /v1/api-keys/{id}", "jwks": "GET …/.well-known/jwks.json"}
base = counts["healthz"][1]
for name, (total, without) in counts.items():
    print(f"| {names[name]} | {total:,.0f} | {without:,.0f} | {without / base:.2f} |")
PY
