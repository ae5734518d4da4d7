"""PyJWT's PyJWKClient, with its default cache, verifying Gatehouse access
tokens as a Python resource server would: one token a line on stdin, one
answer a line on stdout (`ok <kid>` or `fail <error>`)."""
import sys

import jwt

jwks_url, issuer, audience = sys.argv[1:4]
client = jwt.PyJWKClient(jwks_url)
print("ready", flush=True)
for line in sys.stdin:
    token = line.strip()
    try:
        key = client.get_signing_key_from_jwt(token)
        jwt.decode(token, key, algorithms=["EdDSA"], audience=audience, issuer=issuer)
        print("ok", jwt.get_unverified_header(token)["kid"], flush=True)
    except Exception as error:  # the test reports any refusal, whatever its kind
        print("fail", type(error).__name__, error, flush=True)
