"""A SAML 2.0 identity provider built on pysaml2 (an implementation
independent of Gatehouse's), on loopback, for the SAML connection tests.

    python3 saml_idp.py PORT KEY CERT [--sign response|assertion|both|none]

- GET  /metadata                      its IdP metadata (signing certificate CERT)
- GET  /sso/redirect?SAMLRequest=…&RelayState=…&user=EMAIL
      the HTTP-Redirect binding: parses the AuthnRequest against the
      service provider's metadata (read from the request's Issuer, its
      entity ID, which must be a loopback URL) and answers, as JSON, the
      HTTP-POST form a browser would submit: {"action", "SAMLResponse",
      "RelayState"}, for `user` signed in here. Without `user`, a browser's
      page: a sign-in form (POST /sso/login), whose answer is the HTTP-POST
      form that submits itself to the SP.
- GET  /start?sp=SP_METADATA_URL      the IdP's dashboard tile: the same
      sign-in form, for an IdP-initiated response to that SP.
- POST /sign {"sign": …, "encrypt": bool, "authn_class": URI, "unsolicited_to": ACS URL}
      changes what is signed (whether the assertion is encrypted to the
      SP's encryption certificate, and the AuthnStatement's class) from now
      on; with `unsolicited_to`,
      answers an IdP-initiated response to that ACS instead.

It prints "listening" once it serves.
"""
import base64
import html
import json
import re
import sys
import tempfile
import urllib.parse
import urllib.request
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import functools

import saml2.entity
import saml2.sigver
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.config import IdPConfig
from saml2.metadata import create_metadata_string
from saml2.saml import NAMEID_FORMAT_EMAILADDRESS, NameID
from saml2.server import Server

# pysaml2 encrypts an IdP's assertions with 3DES, which no current IdP
# uses (nor Gatehouse accepts): AES-256-CBC, as Okta, Entra ID and ADFS do.
saml2.entity.pre_encryption_part = functools.partial(
    saml2.sigver.pre_encryption_part, msg_enc="http://www.w3.org/2001/04/xmlenc#aes256-cbc"
)
_encrypt_assertion = saml2.sigver.SecurityContext.encrypt_assertion
saml2.sigver.SecurityContext.encrypt_assertion = lambda self, statement, enc_key, template, key_type="aes-256", node_xpath=None: _encrypt_assertion(
    self, statement, enc_key, template, key_type="aes-256", node_xpath=node_xpath
)

PORT, KEY, CERT = int(sys.argv[1]), sys.argv[2], sys.argv[3]
SIGN = sys.argv[sys.argv.index("--sign") + 1] if "--sign" in sys.argv else "both"
ENCRYPT = False
AUTHN_CLASS = None
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


def login_page(hidden):
    fields = "".join(f'<input type="hidden" name="{k}" value="{html.escape(v)}">' for k, v in hidden.items())
    return (
        '<!doctype html><title>Test IdP</title><form method="post" action="/sso/login">'
        f'{fields}<label>Email <input name="user" type="email"></label><button>Sign in</button></form>'
    )


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
        global SIGN, ENCRYPT, AUTHN_CLASS
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.path == "/sso/login":
            return self.login(dict(urllib.parse.parse_qsl(raw.decode())))
        body = json.loads(raw or b"{}")
        SIGN = body.get("sign", SIGN)
        ENCRYPT = body.get("encrypt", ENCRYPT)
        AUTHN_CLASS = body.get("authn_class", AUTHN_CLASS)
        if body.get("unsolicited_to"):
            sp_entity = body["unsolicited_to"].rsplit("/", 1)[0] + "/metadata"
            form = self.respond(sp_entity, None, body.get("user", "alice@example.com"), body.get("relay_state", ""))
            return self.answer(200, json.dumps(form))
        self.answer(200, json.dumps({"sign": SIGN, "encrypt": ENCRYPT}))

    def login(self, form):
        """The sign-in form posted: the page that posts the response to the SP."""
        if "sp" in form:
            answer = self.respond(form["sp"], None, form["user"], "")
        else:
            sp_entity = issuer_of(form["SAMLRequest"])
            with tempfile.NamedTemporaryFile("wb", suffix=".xml", delete=False) as sp_metadata:
                sp_metadata.write(urllib.request.urlopen(sp_entity, timeout=5).read())
            request = Server(config=config(sp_metadata.name)).parse_authn_request(
                form["SAMLRequest"], BINDING_HTTP_REDIRECT
            )
            answer = self.respond(sp_entity, request.message.id, form["user"], form["RelayState"])
        fields = "".join(
            f'<input type="hidden" name="{name}" value="{html.escape(answer[name])}">'
            for name in ("SAMLResponse", "RelayState")
            if answer[name]
        )
        page = (
            f'<!doctype html><title>Signing in</title><form method="post" action="{html.escape(answer["action"])}">'
            f"{fields}<button>Continue</button></form><script>document.forms[0].submit()</script>"
        )
        self.answer(200, page, "text/html")

    def respond(self, sp_entity, in_response_to, user, relay_state):
        """The HTTP-POST form of a response for `user` to the SP."""
        with tempfile.NamedTemporaryFile("wb", suffix=".xml", delete=False) as sp_metadata:
            sp_metadata.write(urllib.request.urlopen(sp_entity, timeout=5).read())
        idp = Server(config=config(sp_metadata.name))
        destination = idp.metadata.assertion_consumer_service(sp_entity, BINDING_HTTP_POST)[0]["location"]
        response = idp.create_authn_response(
            identity={"mail": [user], "givenName": ["Alice"], "sn": ["Example"]},
            in_response_to=in_response_to,
            destination=destination,
            sp_entity_id=sp_entity,
            name_id=NameID(format=NAMEID_FORMAT_EMAILADDRESS, text=user),
            sign_response=SIGN in ("response", "both"),
            sign_assertion=SIGN in ("assertion", "both"),
            encrypt_assertion=ENCRYPT,
            authn={"class_ref": AUTHN_CLASS} if AUTHN_CLASS else None,
            encrypted_advice_attributes=False,
            sign_alg=RSA_SHA256,
            digest_alg=SHA256,
        )
        encoded = base64.b64encode(str(response).encode()).decode()
        return {"action": destination, "SAMLResponse": encoded, "RelayState": relay_state}

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/metadata":
            return self.answer(200, METADATA, "application/samlmetadata+xml")
        if url.path == "/start":
            return self.answer(200, login_page({"sp": query["sp"]}), "text/html")
        if url.path != "/sso/redirect":
            return self.answer(404, "{}")
        if "user" not in query:
            fields = {"SAMLRequest": query["SAMLRequest"], "RelayState": query.get("RelayState", "")}
            return self.answer(200, login_page(fields), "text/html")
        sp_entity = issuer_of(query["SAMLRequest"])
        if not sp_entity or not sp_entity.startswith("http://127.0.0.1:"):
            return self.answer(400, json.dumps({"error": "the request's issuer is not a loopback SP"}))
        with tempfile.NamedTemporaryFile("wb", suffix=".xml", delete=False) as sp_metadata:
            sp_metadata.write(urllib.request.urlopen(sp_entity, timeout=5).read())
        request = Server(config=config(sp_metadata.name)).parse_authn_request(query["SAMLRequest"], BINDING_HTTP_REDIRECT)
        user = query.get("user", "alice@example.com")
        self.answer(200, json.dumps(self.respond(sp_entity, request.message.id, user, query.get("RelayState", ""))))


server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
print("listening", flush=True)
server.serve_forever()
