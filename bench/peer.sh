#!/usr/bin/env bash
# Gatehouse beside a peer, in one run on this machine: oidc-provider (the
# OpenID-certified Node.js server, pinned in bench/peer/package-lock.json,
# in-memory adapter, EdDSA JWT access tokens), one process and a cluster
# of two. One server runs at a time; each gets the same wrk load (2
# threads, 64 connections): the issuer's JWKS, its discovery document, and
# machine tokens by client_credentials (HTTP Basic, scope "a b"). Gatehouse
# runs on SQLite with 2 HTTP workers; its /healthz is its own ceiling.
# Then, Gatehouse on each backend, SQLite (the embedded default) and
# PostgreSQL (production's), each change and its audit rows committed
# before the answer, against the peer's one process (what it issues is in
# its memory; a cluster's processes would not share it):
# - refresh-token rotation, 16 connections each rotating its own token;
# - the authorization-code exchange with PKCE (64 connections, each code
#   spent once): Gatehouse's codes come from its authorization endpoint for
#   a browser signed in on the hosted page (that rate is reported too), the
#   peer's are minted in its memory before it listens;
# - userinfo with a client's access token (64 connections).
#
#   bash bench/peer.sh                 # DURATION=10s by default (in seconds)
#   BIN=target/release/gatehouse bash bench/peer.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-10s}"
PG_URL="${GATEHOUSE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

source bench/common.sh
scratch="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$scratch"; }
trap cleanup EXIT
cp bench/peer/package.json bench/peer/package-lock.json bench/peer/server.mjs "$scratch/"
npm ci --prefix "$scratch" --no-audit --no-fund --silent

rps() { sed 's/.*rps=\([0-9]*\).*/\1/'; }
load() { # url [wrk args...]
  local url=$1; shift
  wrk -t2 -c64 -d"$DURATION" -s bench/report.lua "$@" "$url" | grep '^RESULT' | cut -d' ' -f2-
}
tokens() { # url basic
  BASIC="$2" wrk -t2 -c64 -d"$DURATION" -s bench/machine_token.lua "$1" | grep '^RESULT' | cut -d' ' -f2-
}
refresh() { # url tokens-file [basic]
  TOKENS_FILE="$2" BASIC="${3:-}" wrk -t16 -c16 -d"$DURATION" -s bench/refresh.lua "$1" | grep '^RESULT' | cut -d' ' -f2-
}
callback="https://client.example/callback"
verifier="bench-code-verifier-0123456789-0123456789-0123456789"
challenge=$(python3 -c 'import base64, hashlib, sys; print(base64.urlsafe_b64encode(hashlib.sha256(sys.argv[1].encode()).digest()).rstrip(b"=").decode())' "$verifier")
exchange() { # url codes-file basic
  CODES_FILE="$2" BASIC="$3" THREADS=2 VERIFIER="$verifier" REDIRECT_URI="https%3A%2F%2Fclient.example%2Fcallback" \
    wrk -t2 -c64 -d"$DURATION" -s bench/code_exchange.lua "$1" | grep '^RESULT' | cut -d' ' -f2-
}
declare -A result

# Gatehouse.
port=$(free_port)
export GATEHOUSE__STORAGE__DATA_DIR="$scratch/data" GATEHOUSE__SERVER__LISTEN="127.0.0.1:$port" \
  GATEHOUSE__SERVER__WORKERS=2 GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND=0 RUST_LOG=warn
creds=$("$BIN" bootstrap --name Peer)
app=$(echo "$creds" | json_field '["application_id"]')
key=$(echo "$creds" | json_field '["secret_key"]')
"$BIN" serve >/dev/null 2>&1 &
pid=$!
base="http://127.0.0.1:$port"
for _ in $(seq 100); do curl -sf "$base/healthz" >/dev/null && break; sleep 0.1; done
manage() { curl -sf -X POST -H "Authorization: Bearer $key" -H "x-application-id: $app" -H 'content-type: application/json' -d "$2" "$base$1"; }
account=$(manage /v1/service-accounts '{"name": "bench", "scopes": ["a", "b"]}' | json_field '["data"]["id"]')
secret=$(manage "/v1/service-accounts/$account/keys" '{"name": "bench"}' | json_field '["data"]["secret"]')
issuer="$base/v1/applications/$app"
result[gatehouse_ceiling]=$(load "$base/healthz")
result[gatehouse_jwks]=$(load "$issuer/.well-known/jwks.json")
result[gatehouse_discovery]=$(load "$issuer/.well-known/openid-configuration")
result[gatehouse_tokens]=$(tokens "$issuer/oauth/token" "$(printf '%s:%s' "$account" "$secret" | base64 -w0)")
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""

# Gatehouse's stateful rows, on each backend (SQLite: the embedded
# default; PostgreSQL: production's), every change committed before the
# answer: refresh (16 sessions of one user), the authorization requests of
# a signed-in browser, the code exchange and userinfo, by a first-party
# confidential client.
stateful() { # backend
  local backend=$1 db
  port=$(free_port)
  export GATEHOUSE__STORAGE__DATA_DIR="$scratch/$backend" GATEHOUSE__SERVER__LISTEN="127.0.0.1:$port" \
    GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_EMAIL_PER_MINUTE=0 GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_IP_PER_MINUTE=0
  unset GATEHOUSE__STORAGE__CATALOG_URL GATEHOUSE__REGIONS__US__DATABASE_URL GATEHOUSE__REGIONS__EU__DATABASE_URL \
    GATEHOUSE__REGIONS__AP__DATABASE_URL
  if [ "$backend" = postgres ]; then
    for db in catalog us eu ap; do
      psql "$PG_URL" -qc "DROP DATABASE IF EXISTS gh_bench_$db" -c "CREATE DATABASE gh_bench_$db" >/dev/null
    done
    export GATEHOUSE__STORAGE__CATALOG_URL="${PG_URL%/*}/gh_bench_catalog" \
      GATEHOUSE__REGIONS__US__DATABASE_URL="${PG_URL%/*}/gh_bench_us" \
      GATEHOUSE__REGIONS__EU__DATABASE_URL="${PG_URL%/*}/gh_bench_eu" \
      GATEHOUSE__REGIONS__AP__DATABASE_URL="${PG_URL%/*}/gh_bench_ap"
  fi
  creds=$("$BIN" bootstrap --name Peer)
  app=$(echo "$creds" | json_field '["application_id"]')
  key=$(echo "$creds" | json_field '["secret_key"]')
  export APP=$app # bench/refresh.lua's
  "$BIN" serve >/dev/null 2>&1 &
  pid=$!
  base="http://127.0.0.1:$port"
  issuer="$base/v1/applications/$app"
  for _ in $(seq 100); do curl -sf "$base/healthz" >/dev/null && break; sleep 0.1; done
  user() { curl -sf -X POST -H 'content-type: application/json' -H "x-application-id: $app" -d '{"email": "peer@example.com", "password": "correct horse battery"}' "$base$1"; }
  user /v1/auth/sign-up >/dev/null
  for _ in $(seq 16); do user /v1/auth/sign-in | json_field '["data"]["refresh_token"]'; done >"$scratch/gatehouse_tokens"
  result[${backend}_refresh]=$(refresh "$base/v1/auth/token" "$scratch/gatehouse_tokens")

  client=$(manage /v1/oauth-clients "{\"name\": \"bench\", \"redirect_uris\": [\"$callback\"], \"first_party\": true}")
  client_id=$(echo "$client" | json_field '["data"]["client_id"]')
  client_secret=$(echo "$client" | json_field '["data"]["client_secret"]')
  client_basic=$(printf '%s:%s' "$client_id" "$client_secret" | base64 -w0)
  authorize="/v1/applications/$app/oauth/authorize?response_type=code&client_id=$client_id&redirect_uri=https%3A%2F%2Fclient.example%2Fcallback&scope=openid+email+offline_access&state=s&nonce=n&code_challenge=$challenge&code_challenge_method=S256"
  cookie=$(python3 bench/hosted_sign_in.py "$base" "$authorize" peer@example.com "correct horse battery")
  rm -rf "$scratch/minted"; mkdir "$scratch/minted"
  # Minted for twice as long as the exchange runs: an exchange faster than
  # the minting would otherwise run out of codes and count fast refusals.
  result[${backend}_authorize]=$(CODES_DIR="$scratch/minted" COOKIE="$cookie" AUTHORIZE="$authorize" \
    wrk -t2 -c64 -d"$(( ${DURATION%s} * 2 ))s" -s bench/mint_codes.lua "$base" | grep '^RESULT' | cut -d' ' -f2-)
  cat "$scratch/minted"/* >"$scratch/all_codes"
  head -1 "$scratch/all_codes" >"$scratch/first_code"
  tail -n +2 "$scratch/all_codes" >"$scratch/gatehouse_codes"
  access=$(curl -sf -u "$client_id:$client_secret" -d grant_type=authorization_code -d "code=$(cat "$scratch/first_code")" \
    --data-urlencode "redirect_uri=$callback" -d "code_verifier=$verifier" "$issuer/oauth/token" | json_field '["access_token"]')
  result[${backend}_exchange]=$(exchange "$issuer/oauth/token" "$scratch/gatehouse_codes" "$client_basic")
  result[${backend}_userinfo]=$(load "$issuer/oauth/userinfo" -H "authorization: Bearer $access")
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
}
stateful sqlite
stateful postgres

# The peer, one process and a cluster of two.
for workers in 1 2; do
  port=$(free_port)
  minted=()
  # Enough codes for 10 s at 12,000 a second: none may run out (a refused code is fast).
  [ "$workers" = 1 ] && minted=("$scratch" 120000 "$challenge")
  node "$scratch/server.mjs" "$port" "$workers" bench-client bench-client-secret "${minted[@]}" >"$scratch/peer.out" 2>/dev/null &
  pid=$!
  for _ in $(seq 600); do grep -q ready "$scratch/peer.out" 2>/dev/null && break; sleep 0.1; done
  base="http://127.0.0.1:$port"
  basic=$(printf 'bench-client:bench-client-secret' | base64 -w0)
  if [ "$workers" = 1 ]; then # first: the codes live 60 s
    result[peer1_exchange]=$(exchange "$base/token" "$scratch/codes" "$basic")
    result[peer1_userinfo]=$(load "$base/me" -H "authorization: Bearer $(cat "$scratch/userinfo_token")")
  fi
  result[peer${workers}_jwks]=$(load "$base/jwks")
  result[peer${workers}_discovery]=$(load "$base/.well-known/openid-configuration")
  result[peer${workers}_tokens]=$(tokens "$base/token" "$basic")
  [ "$workers" = 1 ] && result[peer1_refresh]=$(refresh "$base/token" "$scratch/refresh_tokens" "$basic")
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
done

ratio() { python3 -c "print(f'{$1/$2:.2f}×')"; }
echo "| measurement (64 conn) | Gatehouse | peer, 1 process | peer, cluster of 2 | Gatehouse / peer cluster |"
echo "|---|---|---|---|---|"
echo "| own ceiling (Gatehouse /healthz) | ${result[gatehouse_ceiling]} | | | |"
for what in jwks discovery tokens; do
  g=$(echo "${result[gatehouse_$what]}" | rps); p2=$(echo "${result[peer2_$what]}" | rps)
  echo "| $what | ${result[gatehouse_$what]} | ${result[peer1_$what]} | ${result[peer2_$what]} | $(ratio "$g" "$p2") |"
done
for backend in sqlite postgres; do
  name=$([ "$backend" = sqlite ] && echo SQLite || echo PostgreSQL)
  g=$(echo "${result[${backend}_refresh]}" | rps); p1=$(echo "${result[peer1_refresh]}" | rps)
  echo "| refresh with rotation (16 conn; Gatehouse on $name, the peer in memory) | ${result[${backend}_refresh]} | ${result[peer1_refresh]} | (tokens in each process's memory) | $(ratio "$g" "$p1") of the one process |"
  echo "| authorization requests of a signed-in browser (Gatehouse on $name: each code stored) | ${result[${backend}_authorize]} | | | |"
  for what in exchange userinfo; do
    g=$(echo "${result[${backend}_$what]}" | rps); p1=$(echo "${result[peer1_$what]}" | rps)
    echo "| $what (Gatehouse on $name, the peer in memory) | ${result[${backend}_$what]} | ${result[peer1_$what]} | (in each process's memory) | $(ratio "$g" "$p1") of the one process |"
  done
done
