"""Credentials for the fuzzing run, each with the application's
`x-application-id` in place of the generated one (where the case has one
at all: the missing-header check takes it away), by security scheme: the
secret key for
the `secret_key` operations; for the `access_token` ones, an end user's
access token, signed in with the application's `x-application-id` (which a
configured token fetch cannot send), with the organization the user owns
made active (so the team and SSO domain routes act on it), checked before
each case and signed in again when it no longer works (the fuzzer's own
sign-out or immediate key rotation ends it); for the `enrollment_token` one
(`POST /v1/os/enroll`), a reusable enrollment token (no platform, no
`max_uses`, no expiry) created once with the secret key; for the
`client_basic` one, a service account's id and key as HTTP Basic at the
issuer's token endpoint, and a first-party confidential OAuth client's id
and secret at its introspection and revocation endpoints; for the
`scim_token` ones, the token of a directory of the fuzz user's
organization, with that directory and its application in the path (a
token opens only its own directory: any other path is 401)."""
import base64
import json
import os
import urllib.error
import urllib.request

import schemathesis

END_USER_OPERATIONS = r"^/v1/(auth/(me|mfa/|organizations/|sign-out|invitations/)|dashboard/|applications/[^/]+/oauth/userinfo$)"
ENROLLMENT_OPERATIONS = r"^/v1/os/enroll$"
TOKEN_ENDPOINT = r"^/v1/applications/[^/]+/oauth/token$"
PROVIDER_CLIENT_OPERATIONS = r"^/v1/applications/[^/]+/oauth/(introspect|revoke)$"
SCIM_OPERATIONS = r"^/v1/applications/[^/]+/scim/v2/"


def bearer(case, token):
    headers = {**(case.headers or {}), "Authorization": f"Bearer {token}"}
    if "x-application-id" in headers:
        headers["x-application-id"] = os.environ["GATEHOUSE_FUZZ_APPLICATION"]
    case.headers = headers


@schemathesis.auth(refresh_interval=None, retry_on=[401]).apply_to(path_regex=END_USER_OPERATIONS)
class AccessToken:
    """Checked before every case (`GET /v1/auth/me`, no password hash): the
    fuzzer's own calls end the session (sign-out) or retire every signing
    key (an immediate rotation), and the stateful phase does not re-login
    on a 401 by itself."""

    token = None

    def get(self, case, context):
        if self.token is None or not self.still_valid(self.token):
            self.token = self.signed_in()
        return self.token

    @staticmethod
    def still_valid(token):
        request = urllib.request.Request(
            os.environ["GATEHOUSE_FUZZ_BASE"] + "/v1/auth/me",
            headers={"x-application-id": os.environ["GATEHOUSE_FUZZ_APPLICATION"], "authorization": f"Bearer {token}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10):
                return True
        except urllib.error.HTTPError:
            return False

    def signed_in(self):
        try:
            return self.sign_in()
        except urllib.error.HTTPError as error:
            # Kept for run.sh to show: a failed re-login turns every later end-user answer into a 401.
            with open(os.environ["GATEHOUSE_FUZZ_AUTH_LOG"], "a") as log:
                log.write(f"{error.url}: {error.code} {error.read().decode(errors='replace')}\n")
            raise

    def sign_in(self):
        body = {"email": os.environ["GATEHOUSE_FUZZ_EMAIL"], "password": os.environ["GATEHOUSE_FUZZ_PASSWORD"]}
        request = urllib.request.Request(
            os.environ["GATEHOUSE_FUZZ_BASE"] + "/v1/auth/sign-in",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json", "x-application-id": os.environ["GATEHOUSE_FUZZ_APPLICATION"]},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            token = json.load(answer)["data"]["access_token"]
        activate = urllib.request.Request(
            f"{os.environ['GATEHOUSE_FUZZ_BASE']}/v1/auth/organizations/{os.environ['GATEHOUSE_FUZZ_ORGANIZATION']}/activate",
            headers={"x-application-id": os.environ["GATEHOUSE_FUZZ_APPLICATION"], "authorization": f"Bearer {token}"},
            method="POST",
        )
        with urllib.request.urlopen(activate, timeout=10) as answer:
            return json.load(answer)["data"]["access_token"]

    def set(self, case, token, context):
        bearer(case, token)


@schemathesis.auth(retry_on=[401]).apply_to(path_regex=ENROLLMENT_OPERATIONS)
class EnrollmentToken:
    def get(self, case, context):
        request = urllib.request.Request(
            os.environ["GATEHOUSE_FUZZ_BASE"] + "/v1/os/enrollment-tokens",
            data=json.dumps({"label": "fuzz hosts"}).encode(),
            headers={
                "content-type": "application/json",
                "x-application-id": os.environ["GATEHOUSE_FUZZ_APPLICATION"],
                "authorization": "Bearer " + os.environ["GATEHOUSE_FUZZ_SECRET_KEY"],
            },
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.load(answer)["data"]["token_secret"]

    def set(self, case, token, context):
        bearer(case, token)


@schemathesis.auth().apply_to(path_regex=TOKEN_ENDPOINT)
class ClientCredentials:
    """A service account's id and key, as HTTP Basic (`client_basic`)."""

    def get(self, case, context):
        pair = f"{os.environ['GATEHOUSE_FUZZ_CLIENT_ID']}:{os.environ['GATEHOUSE_FUZZ_CLIENT_SECRET']}"
        return base64.b64encode(pair.encode()).decode()

    def set(self, case, credentials, context):
        case.headers = {**(case.headers or {}), "Authorization": f"Basic {credentials}"}


@schemathesis.auth().apply_to(path_regex=PROVIDER_CLIENT_OPERATIONS)
class OAuthClientCredentials:
    """A first-party confidential OAuth client's id and secret, as HTTP
    Basic (`client_basic` at introspection and revocation)."""

    def get(self, case, context):
        pair = f"{os.environ['GATEHOUSE_FUZZ_OAUTH_CLIENT_ID']}:{os.environ['GATEHOUSE_FUZZ_OAUTH_CLIENT_SECRET']}"
        return base64.b64encode(pair.encode()).decode()

    def set(self, case, credentials, context):
        case.headers = {**(case.headers or {}), "Authorization": f"Basic {credentials}"}


@schemathesis.auth().apply_to(path_regex=SCIM_OPERATIONS)
class ScimToken:
    """The directory's token, at the directory's own base URL."""

    def get(self, case, context):
        return os.environ["GATEHOUSE_FUZZ_SCIM_TOKEN"]

    def set(self, case, token, context):
        case.path_parameters = {
            **(case.path_parameters or {}),
            "application_id": os.environ["GATEHOUSE_FUZZ_APPLICATION"],
            "directory_id": os.environ["GATEHOUSE_FUZZ_SCIM_DIRECTORY"],
        }
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {token}"}


@schemathesis.auth().skip_for(
    path_regex=f"{END_USER_OPERATIONS}|{ENROLLMENT_OPERATIONS}|{TOKEN_ENDPOINT}|{PROVIDER_CLIENT_OPERATIONS}|{SCIM_OPERATIONS}"
)
class SecretKey:
    def get(self, case, context):
        return os.environ["GATEHOUSE_FUZZ_SECRET_KEY"]

    def set(self, case, key, context):
        bearer(case, key)


@schemathesis.hook
def map_query(context, query):
    """A provider sign-in's start names its application in the query (a
    browser navigation sends no header): the fuzzed one, where the case has
    one at all."""
    if query and "application_id" in query:
        query["application_id"] = os.environ["GATEHOUSE_FUZZ_APPLICATION"]
    return query


@schemathesis.hook
def map_path_parameters(context, path_parameters):
    """Routes under `/v1/applications/{application_id}/…` act on the
    caller's own application (another is 404): the fuzzed one."""
    if path_parameters and "application_id" in path_parameters:
        path_parameters["application_id"] = os.environ["GATEHOUSE_FUZZ_APPLICATION"]
    return path_parameters


@schemathesis.check
def sign_up_503_is_a_hook(ctx, response, case):
    """Sign-up's one tolerated 503 is a `pre_sign_up` hook that cannot be
    reached (the hooks the fuzzer registers point off the loopback-only
    network): `hook_unavailable`, nothing else."""
    if case.path == "/v1/auth/sign-up" and response.status_code == 503:
        code = (response.json().get("error") or {}).get("code")
        assert code == "hook_unavailable", f"sign-up answered 503 {code}, not hook_unavailable"


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    """`POST /v1/users/imports` takes NDJSON, text on the wire: a generated
    string goes as it is (lines of whatever it holds). A value of another
    type (a negative case) has no NDJSON form: it goes as an empty body,
    which holds no line and is refused (422)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return b""
