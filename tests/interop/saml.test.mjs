// Enterprise SSO through a SAML 2.0 identity provider, in headless
// Chromium: pysaml2 (saml_idp.py, an implementation independent of ours)
// is an organization's IdP on loopback, with its own sign-in page. The
// organization verifies its domain against a real DNS server (dnsmasq),
// and its connection is made from the IdP's metadata URL. Then:
// - SP-initiated, through the hosted pages: openid-client sends the
//   browser to Gatehouse's sign-in page, "Use single sign-on" sends it to
//   the IdP with a request, the IdP's page posts the response to our
//   assertion consumer service, and the hosted page hands the client a
//   code whose ID token says `amr: ["sso"]`;
// - IdP-initiated, from the IdP's dashboard, to the connection's landing
//   page with a one-time code.
// axe-core checks nothing here that the OpenID Provider test does not: the
// pages are the same.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import * as client from "openid-client";
import puppeteer from "puppeteer-core";

import { freePort, startGatehouse } from "./gatehouse.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const insecure = { execute: [client.allowInsecureRequests] };
const DNSMASQ = "/usr/sbin/dnsmasq";

let gatehouse, idp, dns, browser, landing;
const children = [];

function spawnUntil(command, args, ready) {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "ignore"] });
  children.push(child);
  if (!ready) return Promise.resolve(child);
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`${command} exited with ${code}`)));
    child.stdout.once("data", () => resolve(child));
  });
}

// The application's pages: the relying party's callback and the landing
// of IdP-initiated sign-ins; each answers a page, so the browser stops there.
function startPages() {
  const server = createServer((req, res) => res.writeHead(200, { "content-type": "text/plain" }).end("back"));
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const base = `http://127.0.0.1:${server.address().port}`;
      resolve({ callback: `${base}/callback`, landing: `${base}/landing`, origin: base, close: () => server.close() });
    });
  });
}

const json = (response) => response.json().then((body) => ({ status: response.status, json: body }));

async function asUser(token, method, path, body) {
  const response = await fetch(`${gatehouse.base}${path}`, {
    method,
    headers: {
      "x-application-id": gatehouse.applicationId,
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body ? { "content-type": "application/json" } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  return json(response);
}

const pysaml2 = spawnSync("python3", ["-c", "import saml2"]).status === 0;
const skip = !existsSync(DNSMASQ) || !existsSync("/usr/bin/xmlsec1") || !pysaml2;
if (skip && process.env.GATEHOUSE_TEST_REQUIRE_SAML) {
  throw new Error("GATEHOUSE_TEST_REQUIRE_SAML is set but dnsmasq, xmlsec1 or pysaml2 is missing");
}

before(async () => {
  if (skip) return;
  const dnsPort = await freePort();
  gatehouse = await startGatehouse((base) => ({
    GATEHOUSE__SERVER__PUBLIC_URL: base,
    GATEHOUSE__DNS__NAMESERVERS: `127.0.0.1:${dnsPort}`,
  }));
  landing = await startPages();
  const patched = await gatehouse.call("PATCH", `/v1/applications/${gatehouse.applicationId}`, {
    allowed_origins: [landing.origin],
  });
  assert.equal(patched.status, 200, JSON.stringify(patched.json));
  const idpPort = await freePort();
  const fixture = (file) => join(here, "..", "fixtures", "saml", file);
  await spawnUntil("python3", [join(here, "saml_idp.py"), String(idpPort), fixture("idp.key"), fixture("idp.crt")], true);
  idp = `http://127.0.0.1:${idpPort}`;

  // An owner verifies the organization's domain from the dashboard.
  const owner = await asUser(null, "POST", "/v1/auth/sign-up", { email: "owner@acme.test", password: "correct horse battery" });
  assert.equal(owner.status, 201, JSON.stringify(owner.json));
  const organization = (await gatehouse.call("POST", "/v1/organizations", { name: "Acme" })).json.data;
  const member = await gatehouse.call("POST", `/v1/organizations/${organization.id}/memberships`, {
    user_id: owner.json.data.user.id,
    role: "owner",
  });
  assert.equal(member.status, 201, JSON.stringify(member.json));
  const active = await asUser(owner.json.data.access_token, "POST", `/v1/auth/organizations/${organization.id}/activate`);
  assert.equal(active.status, 200, JSON.stringify(active.json));
  const token = active.json.data.access_token;
  const claim = await asUser(token, "POST", "/v1/dashboard/sso/domains", { domain: "acme.test" });
  assert.equal(claim.status, 201, JSON.stringify(claim.json));
  const { name, value } = claim.json.data.verification;
  const dnsArgs = ["--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts", "--bind-interfaces",
    "--listen-address=127.0.0.1", "--pid-file=", "--user=root", "--local=/test/", `--port=${dnsPort}`,
    `--txt-record=${name},${value}`];
  dns = await spawnUntil(DNSMASQ, dnsArgs, false);
  let verified;
  for (let i = 0; i < 50 && verified?.status !== 200; i++) {
    await new Promise((r) => setTimeout(r, 100));
    verified = await asUser(token, "POST", `/v1/dashboard/sso/domains/${claim.json.data.id}/verify`);
  }
  assert.equal(verified.status, 200, JSON.stringify(verified.json));

  const connection = await gatehouse.call("POST", `/v1/organizations/${organization.id}/sso-connections`, {
    protocol: "saml",
    name: "Acme IdP",
    idp_metadata_url: `${idp}/metadata`,
    idp_initiated: true,
    idp_initiated_redirect_uri: landing.landing,
  });
  assert.equal(connection.status, 201, JSON.stringify(connection.json));
  gatehouse.connection = connection.json.data;
  const args = ["--no-sandbox", "--disable-component-update", "--disable-quic", "--disable-gpu"];
  browser = await puppeteer.launch({ executablePath: chromium, headless: true, args });
});

after(async () => {
  await browser?.close();
  landing?.close();
  gatehouse?.stop();
  for (const child of children) child.kill("SIGKILL");
});

test("an organization's user signs in to a relying party through its SAML IdP, from the hosted page", { skip }, async () => {
  const registered = await gatehouse.call("POST", "/v1/oauth-clients", {
    name: "Web",
    first_party: true,
    redirect_uris: [landing.callback],
  });
  assert.equal(registered.status, 201, JSON.stringify(registered.json));
  const web = registered.json.data;
  const issuer = new URL(`${gatehouse.base}/v1/applications/${gatehouse.applicationId}`);
  const config = await client.discovery(issuer, web.client_id, { client_secret: web.client_secret }, undefined, insecure);
  const verifier = client.randomPKCECodeVerifier();
  const nonce = client.randomNonce();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: landing.callback,
    scope: "openid email",
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    nonce,
    state,
  });

  const page = await (await browser.createBrowserContext()).newPage();
  await page.goto(url.href);
  await page.type("#email", "ada@acme.test");
  await Promise.all([page.waitForNavigation(), page.click("button[name=sso]")]);
  // The hosted page may list the organization's IdP to continue with.
  if (!page.url().startsWith(idp)) {
    await Promise.all([page.waitForNavigation(), page.click("button[name=sign_in_with]")]);
  }
  assert.ok(page.url().startsWith(`${idp}/sso/redirect?SAMLRequest=`), page.url());
  await page.type("input[name=user]", "ada@acme.test");
  await Promise.all([page.waitForNavigation({ waitUntil: "networkidle0" }), page.click("button")]);
  for (let i = 0; i < 50 && !page.url().startsWith(landing.callback); i++) await new Promise((r) => setTimeout(r, 100));
  const back = new URL(page.url());
  assert.equal(back.origin + back.pathname, landing.callback, page.url());

  const tokens = await client.authorizationCodeGrant(config, back, {
    pkceCodeVerifier: verifier,
    expectedNonce: nonce,
    expectedState: state,
  });
  const claims = tokens.claims();
  assert.equal(claims.email, "ada@acme.test");
  assert.deepEqual(claims.amr, ["sso"]);
});

test("an IdP-initiated sign-in lands on the connection's page with a one-time code", { skip }, async () => {
  const page = await (await browser.createBrowserContext()).newPage();
  await page.goto(`${idp}/start?sp=${encodeURIComponent(gatehouse.connection.service_provider.metadata_url)}`);
  await page.type("input[name=user]", "bea@acme.test");
  await Promise.all([page.waitForNavigation({ waitUntil: "networkidle0" }), page.click("button")]);
  for (let i = 0; i < 50 && !page.url().startsWith(landing.landing); i++) await new Promise((r) => setTimeout(r, 100));
  const back = new URL(page.url());
  assert.equal(back.origin + back.pathname, landing.landing, page.url());
  const exchanged = await asUser(null, "POST", "/v1/auth/oauth/exchange", { code: back.searchParams.get("code") });
  assert.equal(exchanged.status, 200, JSON.stringify(exchanged.json));
  assert.equal(exchanged.json.data.user.email, "bea@acme.test");
});
