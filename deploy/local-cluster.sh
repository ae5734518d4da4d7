#!/usr/bin/env bash
# Two nodes on this machine, as production runs them: PostgreSQL per region
# (here: databases on the local server), one catalog, Redis shared.
# Node "us" holds the us region; node "euap" holds eu and ap. Each forwards
# requests for the other's regions to it.
#
#   bash deploy/local-cluster.sh        # Ctrl-C stops both nodes
set -euo pipefail
cd "$(dirname "$0")/.."
PG="${PG:-postgres://postgres@127.0.0.1:5432}"
REDIS="${REDIS:-redis://127.0.0.1:6379}"
cargo build --release --quiet
for db in catalog us eu ap; do
  psql "$PG/postgres" -Atc "SELECT 1 FROM pg_database WHERE datname = 'gatehouse_$db'" | grep -q 1 ||
    psql "$PG/postgres" -qc "CREATE DATABASE gatehouse_$db"
done
export GATEHOUSE__STORAGE__CATALOG_URL="$PG/gatehouse_catalog" \
  GATEHOUSE__REGIONS__US__DATABASE_URL="$PG/gatehouse_us" \
  GATEHOUSE__REGIONS__EU__DATABASE_URL="$PG/gatehouse_eu" \
  GATEHOUSE__REGIONS__AP__DATABASE_URL="$PG/gatehouse_ap" \
  GATEHOUSE__CACHE__REDIS_URL="$REDIS" \
  GATEHOUSE__STORAGE__DATA_DIR="${DATA_DIR:-./data/cluster}"
mkdir -p "$GATEHOUSE__STORAGE__DATA_DIR"
# One master key for the whole deployment (production: from a secret store).
[ -f "$GATEHOUSE__STORAGE__DATA_DIR/master.key" ] || head -c 32 /dev/urandom | base64 > "$GATEHOUSE__STORAGE__DATA_DIR/master.key"
export GATEHOUSE__SECURITY__MASTER_KEY="$(cat "$GATEHOUSE__STORAGE__DATA_DIR/master.key")"

GATEHOUSE__SERVER__LISTEN=127.0.0.1:8081 GATEHOUSE__NODE__REGIONS=us \
  GATEHOUSE__NODE__PEERS__EU=http://127.0.0.1:8082 GATEHOUSE__NODE__PEERS__AP=http://127.0.0.1:8082 \
  target/release/gatehouse serve &
GATEHOUSE__SERVER__LISTEN=127.0.0.1:8082 GATEHOUSE__NODE__REGIONS=eu,ap \
  GATEHOUSE__NODE__PEERS__US=http://127.0.0.1:8081 \
  target/release/gatehouse serve &
trap 'kill $(jobs -p) 2>/dev/null' EXIT INT TERM
echo "us node: http://127.0.0.1:8081   eu+ap node: http://127.0.0.1:8082"
echo "create an application: target/release/gatehouse bootstrap --name Demo --region eu (same environment variables)"
wait
