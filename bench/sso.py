#!/usr/bin/env python3
"""Enterprise SSO sign-in latency, with a real OpenID Provider or SAML IdP.

    python3 bench/sso.py path/to/gatehouse [sign-ins] [--saml]

With `--saml` the organization's identity provider is pysaml2
(tests/interop/saml_idp.py, signing with xmlsec1), and the callback step is
the assertion consumer service: the response's signature and checks, the
user made and joined. The IdP's own work (its page, signing) is left out.

Runs the binary on SQLite files in a new directory and the certified
`oidc-provider` package (tests/interop, `npm ci --prefix tests/interop`)
as an organization's provider, on loopback. The organization's domain is
marked verified in the region's database (as its DNS check would). Then
it signs users in one after another, each as a new browser would:
home realm discovery (`POST /v1/auth/sso/start`), the provider's login
and consent pages, Gatehouse's callback (the code exchanged at the
provider, the ID token verified, the user made and joined to the
organization), and the one-time code's exchange for tokens. It prints the
median and 95th percentile of each of Gatehouse's three steps and of their
sum; the provider's own pages are left out.
"""
import json
import os
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlparse

import requests

ROOT = Path(__file__).resolve().parent.parent
APP_ORIGIN = "http://127.0.0.1:3999"
CLIENT_ID, CLIENT_SECRET = "bench-client", "bench-client-secret-0123456789abcdef"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def provider(port, callback):
    config = {"port": port, "clients": [{"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
                                         "redirect_uris": [callback]}]}
    child = subprocess.Popen(["node", "oidc_provider.mjs", json.dumps(config)], cwd=ROOT / "tests/interop",
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert child.stdout.readline().strip() == "ready", "oidc-provider did not start"
    return child


def saml_idp(port):
    fixtures = ROOT / "tests/fixtures/saml"
    child = subprocess.Popen(["python3", str(ROOT / "tests/interop/saml_idp.py"), str(port),
                              str(fixtures / "idp.key"), str(fixtures / "idp.crt")],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert child.stdout.readline().strip() == "listening", "the SAML IdP did not start"
    return child


def form_of(html):
    """The page's first form: its action and its inputs."""
    form = html[html.index("<form"):]
    action = re.search(r'action="([^"]*)"', form[:form.index(">")]).group(1).replace("&amp;", "&")
    fields = {}
    for tag in re.findall(r"<input[^>]*>", form[:form.index("</form>")]):
        name = re.search(r'name="([^"]*)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name:
            fields[name.group(1)] = value.group(1) if value else ""
    return action, fields


def at_provider(browser, url, login):
    """Walks the provider's login and consent pages: answers the callback URL."""
    while not url.startswith(APP_ORIGIN) and "/v1/auth/sso/" not in url:
        answer = browser.get(url, allow_redirects=False)
        while answer.status_code in (302, 303) and "/v1/auth/sso/" not in answer.headers["location"]:
            url = urljoin(answer.url, answer.headers["location"])
            answer = browser.get(url, allow_redirects=False)
        if answer.status_code in (302, 303):
            return urljoin(answer.url, answer.headers["location"])
        action, fields = form_of(answer.text)
        if "login" in fields:
            fields.update(login=login, password="any password")
        answer = browser.post(urljoin(answer.url, action), data=fields, allow_redirects=False)
        url = urljoin(answer.url, answer.headers["location"])
    return url


def main():
    saml = "--saml" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--saml"]
    binary, count = args[0], int(args[1]) if len(args) > 1 else 50
    workdir = tempfile.mkdtemp()
    port, provider_port = free_port(), free_port()
    base, issuer = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{provider_port}"
    env = dict(os.environ, GATEHOUSE__STORAGE__DATA_DIR=f"{workdir}/data", GATEHOUSE__SERVER__LISTEN=f"127.0.0.1:{port}",
               GATEHOUSE__SERVER__WORKERS="2", GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_IP_PER_MINUTE="0",
               GATEHOUSE__RATE_LIMITS__MANAGEMENT_PER_APPLICATION_PER_SECOND="0", RUST_LOG="warn")
    created = json.loads(subprocess.check_output([binary, "bootstrap", "--name", "Bench"], env=env, cwd=workdir))
    app, key = created["application_id"], created["secret_key"]
    server = subprocess.Popen([binary, "serve"], env=env, cwd=workdir, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    idp = None
    try:
        for _ in range(100):
            try:
                requests.get(f"{base}/healthz", timeout=1)
                break
            except requests.ConnectionError:
                time.sleep(0.1)
        headers = {"authorization": f"Bearer {key}", "x-application-id": app}
        api = lambda method, path, body=None: requests.request(method, base + path, json=body, headers=headers).json()
        api("PATCH", f"/v1/applications/{app}", {"allowed_origins": [APP_ORIGIN]})
        organization = api("POST", "/v1/organizations", {"name": "Bench"})["data"]["id"]
        with sqlite3.connect(f"{workdir}/data/us.db") as db:
            now = datetime.now(timezone.utc).isoformat()
            db.execute("INSERT INTO sso_domains (id, application_id, organization_id, domain, verification_token, "
                       "status, created_at, verified_at) VALUES (?, ?, ?, 'example.com', 't', 'verified', ?, ?)",
                       (uuid.uuid4().bytes, uuid.UUID(app).bytes, uuid.UUID(organization).bytes, now, now))
        if saml:
            idp = saml_idp(provider_port)
            api("POST", f"/v1/organizations/{organization}/sso-connections",
                {"protocol": "saml", "name": "Bench IdP", "idp_metadata_url": f"{issuer}/metadata"})
        else:
            idp = provider(provider_port, "http://127.0.0.1:9/not-yet")
            connection = api("POST", f"/v1/organizations/{organization}/sso-connections",
                             {"protocol": "oidc", "name": "Bench IdP", "issuer": issuer, "client_id": CLIENT_ID,
                              "client_secret": CLIENT_SECRET})["data"]
            idp.kill()
            idp.wait()
            idp = provider(provider_port, connection["redirect_uri"])

        steps = {"start": [], "callback": [], "exchange": []}
        public = {"x-application-id": app}
        for i in range(count):
            browser = requests.Session()
            body = {"email": f"user{i}@example.com", "redirect_uri": f"{APP_ORIGIN}/done"}
            began = time.perf_counter()
            started = requests.post(f"{base}/v1/auth/sso/start", json=body, headers=public)
            steps["start"].append(time.perf_counter() - began)
            assert started.status_code == 200, started.text
            at_idp = started.json()["data"]["authorization_url"]
            if saml:
                form = requests.get(f"{at_idp}&user=user{i}@example.com").json()
                fields = {"SAMLResponse": form["SAMLResponse"], "RelayState": form["RelayState"]}
                began = time.perf_counter()
                back = browser.post(form["action"], data=fields, allow_redirects=False)
            else:
                callback = at_provider(browser, at_idp, f"user{i}@example.com")
                began = time.perf_counter()
                back = browser.get(callback, allow_redirects=False)
            steps["callback"].append(time.perf_counter() - began)
            code = parse_qs(urlparse(back.headers["location"]).query).get("code")
            assert code, back.headers["location"]
            began = time.perf_counter()
            tokens = requests.post(f"{base}/v1/auth/oauth/exchange", json={"code": code[0]}, headers=public)
            steps["exchange"].append(time.perf_counter() - began)
            assert tokens.status_code == 200, tokens.text
        total = [sum(parts) for parts in zip(*steps.values())]
        print(f"| step ({count} sign-ins, one at a time) | median | p95 |")
        print("|---|---|---|")
        for name, values in [*steps.items(), ("Gatehouse's total", total)]:
            ordered = sorted(values)
            p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
            print(f"| {name} | {statistics.median(values) * 1000:.1f} ms | {p95 * 1000:.1f} ms |")
    finally:
        if idp:
            idp.kill()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
