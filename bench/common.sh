# Sourced by every bench script, from the repository's root: wrk, the
# release binary (BIN=/path/to/gatehouse measures another build instead,
# an earlier commit side by side), and the helpers they share.
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN="$PWD/target/release/gatehouse"
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
json_field() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }

# Bootstraps an application and starts the binary on one backend (`sqlite`:
# files in a new directory; `postgres`: fresh gh_bench_* databases at
# $PG_URL), with 2 HTTP workers, logs at warn and the management rate limit
# off. Sets DIR, PID, APP, KEY and BASE_URL; `stop_backend` ends it.
serve_backend() {
  local backend=$1 port pg_url="${GATEHOUSE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
  DIR=$(mktemp -d)
  port=$(free_port)
  export GATEHOUSE__STORAGE__DATA_DIR="$DIR" GATEHOUSE__SERVER__LISTEN="127.0.0.1:$port" \
    GATEHOUSE__SERVER__WORKERS=2 GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND=0 RUST_LOG=warn
  unset GATEHOUSE__STORAGE__CATALOG_URL GATEHOUSE__REGIONS__US__DATABASE_URL GATEHOUSE__REGIONS__EU__DATABASE_URL GATEHOUSE__REGIONS__AP__DATABASE_URL
  if [ "$backend" = postgres ]; then
    for db in catalog us eu ap; do
      psql "$pg_url" -qc "DROP DATABASE IF EXISTS gh_bench_$db" -c "CREATE DATABASE gh_bench_$db" >/dev/null
    done
    local base="${pg_url%/*}"
    export GATEHOUSE__STORAGE__CATALOG_URL="$base/gh_bench_catalog" GATEHOUSE__REGIONS__US__DATABASE_URL="$base/gh_bench_us" \
      GATEHOUSE__REGIONS__EU__DATABASE_URL="$base/gh_bench_eu" GATEHOUSE__REGIONS__AP__DATABASE_URL="$base/gh_bench_ap"
  fi
  local creds
  creds=$("$BIN" bootstrap --name Bench)
  APP=$(echo "$creds" | json_field '["application_id"]')
  KEY=$(echo "$creds" | json_field '["secret_key"]')
  "$BIN" serve >/dev/null 2>&1 &
  PID=$!
  BASE_URL="http://127.0.0.1:$port"
  for _ in $(seq 100); do curl -sf "$BASE_URL/healthz" >/dev/null && break; sleep 0.1; done
}

stop_backend() {
  kill "$PID"; wait "$PID" 2>/dev/null || true
  rm -rf "$DIR"
}

# A secret-key request to the served application: method path [body].
management() {
  curl -sf -X "$1" -H "Authorization: Bearer $KEY" -H "x-application-id: $APP" -H 'content-type: application/json' \
    ${3:+-d "$3"} "$BASE_URL$2"
}
