"""A SAML 2.0 identity provider built on pysaml2 (an implementation
independent of Gatehouse's), on loopback, for the SAML connection tests.

    python3 saml_idp.py PORT KEY CERT [--sign response|assertion|both|none]

- GET  /metadata                      its IdP metadata (signing certificate CERT)
- GET  /sso/redirect?SAMLRequest=…&RelayState=…&user=EMAIL
      the HTTP-Redirect binding: parses the AuthnRequest against the
      service provider's metadata (read from the request's Issuer, its
      entity ID, which must be a loopback URL) and answers, as JSON, the
      HTTP-POST form a browser would submit: {"action", "SAMLResponse",
      "RelayState"}, for `user` signed in here.
- POST /sign {"sign": …}              changes what is signed from now on.

It prints "listening" once it serves.
"""
import base64
import json
import re
import sys
import tempfile
import urllib.parse
import urllib.request
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.config import IdPConfig
from saml2.metadata import create_metadata_string
from saml2.saml import NAMEID_FORMAT_EMAILADDRESS, NameID
from saml2.server import Server

PORT, KEY, CERT = int(sys.argv[1]), sys.argv[2], sys.argv[3]
SIGN = sys.argv[sys.argv.index("--sign") + 1] if "--sign" in sys.argv else "both"
BASE = f"http://127.0.0.1:{PORT}"
RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
SHA256 = "http://www.w3.org/2001/04/xmlenc#sha256"


def config(sp_metadata_file=None):
    settings = {
        "entityid": f"{BASE}/metadata",
        "service": {
            "idp": {
                "endpoints": {"single_sign_on_service": [(f"{BASE}/sso/redirect", BINDING_HTTP_REDIRECT)]},
                "name_id_format": [NAMEID_FORMAT_EMAILADDRESS],
                "policy": {"default": {"lifetime": {"minutes": 5}, "attribute_restrictions": None}},
            }
        },
        "key_file": KEY,
        "cert_file": CERT,
        "xmlsec_binary": "/usr/bin/xmlsec1",
        "signing_algorithm": RSA_SHA256,
        "digest_algorithm": SHA256,
        "metadata": {"local": [sp_metadata_file]} if sp_metadata_file else {},
    }
    conf = IdPConfig()
    conf.load(settings)
    return conf


METADATA = create_metadata_string(None, config=config(), valid=24, sign=False)


def issuer_of(saml_request):
    """The AuthnRequest's Issuer, read before its metadata is known."""
    xml = zlib.decompress(base64.b64decode(saml_request), -15).decode()
    found = re.search(r"<(?:\w+:)?Issuer[^>]*>([^<]+)</", xml)
    return found.group(1).strip() if found else None


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        global SIGN
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        SIGN = body.get("sign", SIGN)
        self.answer(200, json.dumps({"sign": SIGN}))

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/metadata":
            return self.answer(200, METADATA, "application/samlmetadata+xml")
        if url.path != "/sso/redirect":
            return self.answer(404, "{}")
        sp_entity = issuer_of(query["SAMLRequest"])
        if not sp_entity or not sp_entity.startswith("http://127.0.0.1:"):
            return self.answer(400, json.dumps({"error": "the request's issuer is not a loopback SP"}))
        with tempfile.NamedTemporaryFile("wb", suffix=".xml", delete=False) as sp_metadata:
            sp_metadata.write(urllib.request.urlopen(sp_entity, timeout=5).read())
        idp = Server(config=config(sp_metadata.name))
        request = idp.parse_authn_request(query["SAMLRequest"], BINDING_HTTP_REDIRECT)
        user = query.get("user", "alice@example.com")
        destination = idp.metadata.assertion_consumer_service(sp_entity, BINDING_HTTP_POST)[0]["location"]
        response = idp.create_authn_response(
            identity={"mail": [user], "givenName": ["Alice"], "sn": ["Example"]},
            in_response_to=request.message.id,
            destination=destination,
            sp_entity_id=sp_entity,
            name_id=NameID(format=NAMEID_FORMAT_EMAILADDRESS, text=user),
            sign_response=SIGN in ("response", "both"),
            sign_assertion=SIGN in ("assertion", "both"),
            sign_alg=RSA_SHA256,
            digest_alg=SHA256,
        )
        encoded = base64.b64encode(str(response).encode()).decode()
        form = {"action": destination, "SAMLResponse": encoded, "RelayState": query.get("RelayState", "")}
        self.answer(200, json.dumps(form))


server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
print("listening", flush=True)
server.serve_forever()
