# Sourced by the per-request benchmarks (ratios.sh, cpu_per_request.sh,
# instructions.sh): wrk, the release binary (or $BIN), and one server on
# SQLite with the management rate limit off, its application, an admin
# secret key and that key's id. Sets dir, base, app, key, key_id and pid;
# the caller's EXIT trap stops the server (`stop_server`).
#
#   WORKERS=1 start_server valgrind --tool=callgrind …   # under a runner
source bench/common.sh
# The server's data (and whatever a runner writes there).
dir=$(mktemp -d)

start_server() { # [runner args...]
  local port
  port=$(free_port)
  export GATEHOUSE__STORAGE__DATA_DIR="$dir" GATEHOUSE__SERVER__LISTEN="127.0.0.1:$port" \
    GATEHOUSE__SERVER__WORKERS="${WORKERS:-2}" GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND=0 RUST_LOG="${BENCH_LOG:-warn}"
  local creds
  creds=$("$BIN" bootstrap --name Bench)
  app=$(echo "$creds" | json_field '["application_id"]')
  key=$(echo "$creds" | json_field '["secret_key"]')
  "$@" "$BIN" serve >/dev/null 2>"$dir/server.log" &
  pid=$!
  base="http://127.0.0.1:$port"
  # A server under valgrind takes a minute to start.
  for _ in $(seq 600); do curl -sf "$base/healthz" >/dev/null && break; sleep 0.1; done
  key_id=$(curl -sf -H "Authorization: Bearer $key" -H "x-application-id: $app" "$base/v1/api-keys" | json_field '["data"][0]["id"]')
}

stop_server() {
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  rm -rf "$dir"
}
