#!/usr/bin/env bash
# Four regions on this machine, as production runs them: one PostgreSQL
# database per region and one for the catalog (here: databases on the local
# server), Redis shared by every node. Five nodes: two for `us` (behind a
# load balancer in production), one each for `eu`, `ap` and `ca` (a region
# only this configuration names). Each announces
# itself (its listen address and region) through Redis every second and
# forwards other regions' applications to their announced nodes in turn,
# passing over one that refuses connections; no node names another.
#
#   bash deploy/local-cluster.sh          # Ctrl-C stops every node
#   PG=postgres://… REDIS=redis://… BASE_PORT=8081 bash deploy/local-cluster.sh
#   BIN=target/debug/gatehouse DB_PREFIX=ghcluster DATA_DIR=/tmp/c …  (the cluster test)
# DEPLOYMENT (default: DB_PREFIX with `_` as `-`) names the cluster's Redis
# keys and channel, so clusters sharing one Redis stay apart.
# Every node is given every region's database URL: any node can move an
# application of its regions to another region (docs/guides/region-moves.md).
# Each node's pid is in $DATA_DIR/<node>.pid and its log in $DATA_DIR/<node>.log;
# its data directory (its claim on region moves it leaves behind) is
# $DATA_DIR/nodes/<node>, its own as on separate machines.
set -euo pipefail
cd "$(dirname "$0")/.."
PG="${PG:-postgres://postgres@127.0.0.1:5432}"
REDIS="${REDIS:-redis://127.0.0.1:6379}"
BASE_PORT="${BASE_PORT:-8081}"
DB_PREFIX="${DB_PREFIX:-gatehouse}"
DEPLOYMENT="${DEPLOYMENT:-${DB_PREFIX//_/-}}"
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=target/release/gatehouse
fi
for db in catalog us eu ap ca; do
  psql "$PG/postgres" -Atc "SELECT 1 FROM pg_database WHERE datname = '${DB_PREFIX}_$db'" | grep -q 1 ||
    psql "$PG/postgres" -qc "CREATE DATABASE ${DB_PREFIX}_$db"
done
export GATEHOUSE__STORAGE__CATALOG_URL="$PG/${DB_PREFIX}_catalog" \
  GATEHOUSE__REGIONS__US__DATABASE_URL="$PG/${DB_PREFIX}_us" \
  GATEHOUSE__REGIONS__EU__DATABASE_URL="$PG/${DB_PREFIX}_eu" \
  GATEHOUSE__REGIONS__AP__DATABASE_URL="$PG/${DB_PREFIX}_ap" \
  GATEHOUSE__REGIONS__CA__DATABASE_URL="$PG/${DB_PREFIX}_ca" \
  GATEHOUSE__DEPLOYMENT__REGIONS=us,eu,ap,ca \
  GATEHOUSE__CACHE__REDIS_URL="$REDIS" \
  GATEHOUSE__SECURITY__ALLOW_PRIVATE_DESTINATIONS=false \
  GATEHOUSE__DEPLOYMENT__NAME="$DEPLOYMENT" \
  GATEHOUSE__DEPLOYMENT__NODES=5
# The cluster test alone lets development applications reach loopback,
# where its SMTP server listens (a production application never may).
[ -z "${CLUSTER_TEST_LOOPBACK:-}" ] || export GATEHOUSE__SECURITY__ALLOW_PRIVATE_DESTINATIONS=true
DATA_DIR="${DATA_DIR:-./data/cluster}"
mkdir -p "$DATA_DIR"
# One master key for the whole deployment (production: from a secret store).
[ -f "$DATA_DIR/master.key" ] || head -c 32 /dev/urandom | base64 > "$DATA_DIR/master.key"
export GATEHOUSE__SECURITY__MASTER_KEY="$(cat "$DATA_DIR/master.key")"

us1=$BASE_PORT us2=$((BASE_PORT + 1)) eu=$((BASE_PORT + 2)) ap=$((BASE_PORT + 3)) ca=$((BASE_PORT + 4))
# One deployment, one issuer: tokens verify on every node.
export GATEHOUSE__SERVER__PUBLIC_URL="${PUBLIC_URL:-http://127.0.0.1:$us1}"
node() { # name port regions
  GATEHOUSE__SERVER__LISTEN="127.0.0.1:$2" GATEHOUSE__NODE__REGIONS="$3" \
    GATEHOUSE__STORAGE__DATA_DIR="$DATA_DIR/nodes/$1" "$BIN" serve >"$DATA_DIR/$1.log" 2>&1 &
  echo $! >"$DATA_DIR/$1.pid"
}
node us1 "$us1" us
node us2 "$us2" us
node eu "$eu" eu
node ap "$ap" ap
node ca "$ca" ca
trap 'kill $(jobs -p) 2>/dev/null' EXIT INT TERM
echo "us: http://127.0.0.1:$us1 and http://127.0.0.1:$us2   eu: http://127.0.0.1:$eu   ap: http://127.0.0.1:$ap   ca: http://127.0.0.1:$ca"
echo "create an application: target/release/gatehouse bootstrap --name Demo --region eu (same environment variables, and GATEHOUSE__STORAGE__DATA_DIR=$DATA_DIR)"
wait
