#!/usr/bin/env bash
# Three regions on this machine, as production runs them: one PostgreSQL
# database per region and one for the catalog (here: databases on the local
# server), Redis shared by every node. Four nodes: two for `us` (behind a
# load balancer in production), one for `eu`, one for `ap`; each forwards
# other regions' applications to a node of theirs.
#
#   bash deploy/local-cluster.sh          # Ctrl-C stops every node
#   PG=postgres://… REDIS=redis://… BASE_PORT=8081 bash deploy/local-cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PG="${PG:-postgres://postgres@127.0.0.1:5432}"
REDIS="${REDIS:-redis://127.0.0.1:6379}"
BASE_PORT="${BASE_PORT:-8081}"
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

us1=$BASE_PORT us2=$((BASE_PORT + 1)) eu=$((BASE_PORT + 2)) ap=$((BASE_PORT + 3))
export GATEHOUSE__NODE__PEERS__US="http://127.0.0.1:$us1" GATEHOUSE__NODE__PEERS__EU="http://127.0.0.1:$eu" \
  GATEHOUSE__NODE__PEERS__AP="http://127.0.0.1:$ap"
node() { # port regions
  GATEHOUSE__SERVER__LISTEN="127.0.0.1:$1" GATEHOUSE__SERVER__PUBLIC_URL="http://127.0.0.1:$1" \
    GATEHOUSE__NODE__REGIONS="$2" target/release/gatehouse serve &
}
node "$us1" us
node "$us2" us
node "$eu" eu
node "$ap" ap
trap 'kill $(jobs -p) 2>/dev/null' EXIT INT TERM
echo "us: http://127.0.0.1:$us1 and http://127.0.0.1:$us2   eu: http://127.0.0.1:$eu   ap: http://127.0.0.1:$ap"
echo "create an application: target/release/gatehouse bootstrap --name Demo --region eu (same environment variables)"
wait
