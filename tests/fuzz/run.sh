#!/usr/bin/env bash
# Schema-driven fuzzing: schemathesis runs every operation of the live
# server's /v1/openapi.json with all checks on (schemathesis.toml), each
# with its scheme's credential: a secret key, an end user's access token, an enrollment token, a SCIM directory's token. The run has
# no network but loopback (a network namespace), so the webhooks and hooks
# the fuzzer registers can never reach anything.
#   usage: tests/fuzz/run.sh [path/to/gatehouse]   (needs root for unshare)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(realpath "${1:-$here/../../target/debug/gatehouse}")"
if [ -z "${GATEHOUSE_FUZZ_INSIDE:-}" ]; then
  command -v schemathesis >/dev/null || pip3 install --quiet --disable-pip-version-check "schemathesis==4.32.5"
  exec unshare --net env GATEHOUSE_FUZZ_INSIDE=1 bash "$0" "$bin"
fi
ip link set lo up

work="$(mktemp -d)"
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
export GATEHOUSE__STORAGE__DATA_DIR="$work/data" GATEHOUSE__SERVER__LISTEN="127.0.0.1:18080" RUST_LOG=warn
# Room for everything the fuzzer creates: count limits and rate limits are
# tested elsewhere (tests/api/hardening.rs, rate_limits.rs).
export GATEHOUSE__LIMITS__HOOKS_PER_APPLICATION=100000 GATEHOUSE__LIMITS__WEBHOOKS_PER_APPLICATION=100000 \
  GATEHOUSE__LIMITS__PROFILE_FIELDS_PER_APPLICATION=100000 GATEHOUSE__LIMITS__ACTIVE_SECRET_KEYS_PER_APPLICATION=100000 \
  GATEHOUSE__LIMITS__PERSONAL_KEYS_PER_USER=100000 GATEHOUSE__LIMITS__SERVICE_ACCOUNTS_PER_APPLICATION=100000 \
  GATEHOUSE__LIMITS__SOD_POLICIES_PER_APPLICATION=100000 GATEHOUSE__LIMITS__FEATURES_PER_APPLICATION=100000 \
  GATEHOUSE__LIMITS__PLANS_PER_APPLICATION=100000 GATEHOUSE__LIMITS__OAUTH_CLIENTS_PER_APPLICATION=100000 \
  GATEHOUSE__LIMITS__SCIM_DIRECTORIES_PER_APPLICATION=100000 \
  GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_EMAIL_PER_MINUTE=0 GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_IP_PER_MINUTE=0 \
  GATEHOUSE__RATE_LIMITS__SIGN_UP_PER_IP_PER_MINUTE=0 GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND=0 \
  GATEHOUSE__SECURITY__PASSWORD_HASH_QUEUE=1000
# SSO domain verification asks a DNS server on a loopback port nothing
# listens on: refused at once, 503 (tests/api/sso_domains.rs runs a real one).
export GATEHOUSE__DNS__NAMESERVERS="127.0.0.1:9"
base="http://127.0.0.1:18080"
boot="$("$bin" bootstrap --name Fuzz)"
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])$2)" "$1"; }
app="$(field "$boot" "['application_id']")"
key="$(field "$boot" "['secret_key']")"
"$bin" serve >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -sf "$base/healthz" >/dev/null && break; sleep 0.1; done

# The end user whose access token the access-token operations carry.
export GATEHOUSE_FUZZ_AUTH_LOG="$work/auth.log"
export GATEHOUSE_FUZZ_BASE="$base" GATEHOUSE_FUZZ_APPLICATION="$app" GATEHOUSE_FUZZ_SECRET_KEY="$key" \
  GATEHOUSE_FUZZ_EMAIL="fuzz@example.com" GATEHOUSE_FUZZ_PASSWORD="correct horse battery"
signed_up="$(curl -sf -X POST "$base/v1/auth/sign-up" -H "x-application-id: $app" -H 'content-type: application/json' \
  -d "{\"email\": \"$GATEHOUSE_FUZZ_EMAIL\", \"password\": \"$GATEHOUSE_FUZZ_PASSWORD\"}")"
# The user proves its email (the code is in the development application's
# messaging outbox): the fuzzer may turn `require_verified_email` on, and
# the user's sign-ins must still work, so every end-user answer is judged.
code=""
for _ in $(seq 100); do
  code="$(curl -sf "$base/v1/applications/$app/providers/messaging/outbox" -H "x-application-id: $app" \
    -H "authorization: Bearer $key" | python3 -c '
import json, sys
sent = [m for m in json.load(sys.stdin)["data"] if m["recipient"] == sys.argv[1] and m["subject"].startswith("Verify your email")]
print(sent[0]["body"].split("\n\n")[1].strip() if sent else "")' "$GATEHOUSE_FUZZ_EMAIL")"
  [ -n "$code" ] && break
  sleep 0.1
done
curl -sf -o /dev/null -X POST "$base/v1/auth/email/verify" -H "x-application-id: $app" -H 'content-type: application/json' \
  -d "{\"email\": \"$GATEHOUSE_FUZZ_EMAIL\", \"code\": \"$code\"}"
# The organization that user owns, active in the tokens the fuzzer carries.
organization="$(curl -sf -X POST "$base/v1/organizations" -H "x-application-id: $app" -H "authorization: Bearer $key" \
  -H 'content-type: application/json' -d '{"name": "Fuzz team"}')"
export GATEHOUSE_FUZZ_ORGANIZATION="$(field "$organization" "['data']['id']")"
curl -sf -o /dev/null -X POST "$base/v1/organizations/$GATEHOUSE_FUZZ_ORGANIZATION/memberships" -H "x-application-id: $app" \
  -H "authorization: Bearer $key" -H 'content-type: application/json' \
  -d "{\"user_id\": \"$(field "$signed_up" "['data']['user']['id']")\", \"role\": \"owner\"}"

# A provider to start signing in with, and an origin to come back to.
curl -sf -o /dev/null -X PATCH "$base/v1/applications/$app" -H "x-application-id: $app" -H "authorization: Bearer $key" \
  -H 'content-type: application/json' -d '{"allowed_origins": ["https://app.example.com"]}'
curl -sf -o /dev/null -X PUT "$base/v1/applications/$app/providers/oauth" -H "x-application-id: $app" \
  -H "authorization: Bearer $key" -H 'content-type: application/json' \
  -d '{"provider": "google", "enabled": true, "client_id": "fuzz-client", "client_secret": "fuzz-secret"}'

# The service account whose key the token endpoint's cases carry.
account="$(curl -sf -X POST "$base/v1/service-accounts" -H "x-application-id: $app" -H "authorization: Bearer $key" \
  -H 'content-type: application/json' -d '{"name": "fuzz machine", "scopes": ["a", "b"]}')"
export GATEHOUSE_FUZZ_CLIENT_ID="$(field "$account" "['data']['id']")"
account_key="$(curl -sf -X POST "$base/v1/service-accounts/$GATEHOUSE_FUZZ_CLIENT_ID/keys" -H "x-application-id: $app" \
  -H "authorization: Bearer $key" -H 'content-type: application/json' -d '{"name": "fuzz"}')"
export GATEHOUSE_FUZZ_CLIENT_SECRET="$(field "$account_key" "['data']['secret']")"
# The OAuth client whose secret the introspection and revocation cases carry.
oauth_client="$(curl -sf -X POST "$base/v1/oauth-clients" -H "x-application-id: $app" -H "authorization: Bearer $key" \
  -H 'content-type: application/json' \
  -d '{"name": "fuzz resource server", "first_party": true, "redirect_uris": ["https://app.example.com/callback"]}')"
export GATEHOUSE_FUZZ_OAUTH_CLIENT_ID="$(field "$oauth_client" "['data']['client_id']")"
export GATEHOUSE_FUZZ_OAUTH_CLIENT_SECRET="$(field "$oauth_client" "['data']['client_secret']")"

# The SCIM directory of that organization whose token the SCIM operations carry.
directory="$(curl -sf -X POST "$base/v1/organizations/$GATEHOUSE_FUZZ_ORGANIZATION/scim-directories" \
  -H "x-application-id: $app" -H "authorization: Bearer $key" -H 'content-type: application/json' \
  -d '{"name": "fuzz directory", "group_roles": [{"group": "Admins", "role": "admin"}]}')"
export GATEHOUSE_FUZZ_SCIM_DIRECTORY="$(field "$directory" "['data']['id']")"
export GATEHOUSE_FUZZ_SCIM_TOKEN="$(field "$directory" "['data']['token']")"

cd "$here"
status=0
SCHEMATHESIS_HOOKS="$here/hooks.py" schemathesis run "$base/v1/openapi.json" --checks all || status=1
if [ -s "$work/auth.log" ]; then
  echo "the end user's sign-in failed during the run:" >&2; cat "$work/auth.log" >&2; status=1
fi
if grep -q "panicked" "$work/serve.log"; then
  echo "the server panicked:" >&2; grep -A5 panicked "$work/serve.log" >&2; status=1
fi
exit $status
