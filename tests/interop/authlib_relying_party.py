"""authlib as a Python relying party of Gatehouse's OpenID Provider: it
validates the discovery document as OpenID Connect Discovery 1.0, runs the
authorization-code flow with PKCE through the hosted sign-in page (a
scripted browser: the page needs no JavaScript, so its form is read and
posted as a browser would), validates the RS256 ID token against the JWKS
(signature, iss, aud, nonce, at_hash) and fetches userinfo.

Arguments: issuer client_id client_secret redirect_uri email password.
Prints the ID token's claims as JSON; exits non-zero on any failure.
"""
import json
import sys
import warnings
from html.parser import HTMLParser
from urllib.parse import urljoin

import requests
from authlib.integrations.requests_client import OAuth2Session
from authlib.oidc.core import CodeIDToken
from authlib.oidc.discovery import OpenIDProviderMetadata

warnings.filterwarnings("ignore", message=".*authlib.jose module is deprecated.*")
from authlib.common.security import generate_token  # noqa: E402
from authlib.jose import JsonWebKey, jwt  # noqa: E402


class Form(HTMLParser):
    """The page's first form: its action and its fields' names and values."""

    def __init__(self):
        super().__init__()
        self.action, self.fields, self.inside = None, {}, False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form" and self.action is None:
            self.action, self.inside = attrs.get("action", ""), True
        elif tag in ("input", "button") and self.inside and attrs.get("name"):
            self.fields.setdefault(attrs["name"], attrs.get("value") or "")

    def handle_endtag(self, tag):
        if tag == "form":
            self.inside = False


def main(issuer, client_id, client_secret, redirect_uri, email, password):
    discovery = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()
    metadata = OpenIDProviderMetadata(discovery)
    metadata.validate()
    assert metadata["issuer"] == issuer, metadata["issuer"]

    session = OAuth2Session(
        client_id,
        client_secret,
        scope="openid email",
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
    )
    verifier, nonce = generate_token(48), generate_token(20)
    url, state = session.create_authorization_url(
        metadata["authorization_endpoint"], code_verifier=verifier, nonce=nonce
    )

    browser = requests.Session()
    page = browser.get(url, timeout=10)
    assert page.status_code == 200, page.status_code
    form = Form()
    form.feed(page.text)
    fields = {**form.fields, "email": email, "password": password}
    answer = browser.post(urljoin(page.url, form.action), data=fields, allow_redirects=False, timeout=10)
    assert answer.status_code == 303, (answer.status_code, answer.text[:500])
    callback = answer.headers["location"]
    assert callback.startswith(redirect_uri), callback

    token = session.fetch_token(
        metadata["token_endpoint"], authorization_response=callback, state=state, code_verifier=verifier
    )
    jwks = JsonWebKey.import_key_set(requests.get(metadata["jwks_uri"], timeout=10).json())
    claims = jwt.decode(
        token["id_token"],
        jwks,
        claims_cls=CodeIDToken,
        claims_options={"iss": {"essential": True, "values": [issuer]}},
        claims_params={"nonce": nonce, "client_id": client_id, "access_token": token["access_token"]},
    )
    claims.validate()
    assert claims.header["alg"] == "RS256", claims.header

    info = session.get(metadata["userinfo_endpoint"], timeout=10).json()
    assert info["sub"] == claims["sub"], (info, dict(claims))
    assert info["email"] == email, info
    print(json.dumps(dict(claims)))


if __name__ == "__main__":
    try:
        main(*sys.argv[1:7])
    except Exception as error:  # reported whole: the test shows it
        print(f"failed: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
