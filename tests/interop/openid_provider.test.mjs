// The application as an OpenID Provider, used the way relying parties use
// one: openid-client (node) builds the authorization request, headless
// Chromium walks Gatehouse's hosted sign-in page (axe-core checks it), and
// openid-client exchanges the code with PKCE, validates the ID token
// (EdDSA, nonce, `iss` of RFC 9207), fetches userinfo, refreshes,
// introspects and revokes. A second client signs in without a prompt, and
// `prompt=none` without a session comes back `login_required`. A user who
// forgot the password resets it there and chooses an organization; another
// signs in with an identity provider's button (oidc-provider on loopback).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import * as jose from "jose";
import * as client from "openid-client";
import puppeteer from "puppeteer-core";

import { startGatehouse, startGatehouseWithGoogle } from "./gatehouse.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const insecure = { execute: [client.allowInsecureRequests] };

// The relying party's callback: answers a page, so the browser stops there.
// `/frame?src=<url>` is a page of the relying party's that frames `src`.
function startCallback() {
  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://127.0.0.1");
    if (url.pathname === "/frame") {
      const src = url.searchParams.get("src").replace(/"/g, "&quot;");
      res.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><iframe src="${src}"></iframe>`);
      return;
    }
    res.writeHead(200, { "content-type": "text/plain" }).end("back");
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () =>
      resolve({ url: `http://127.0.0.1:${server.address().port}/callback`, close: () => server.close() }),
    );
  });
}

let gatehouse, callback, browser, stopProvider;
const GOOGLE_CLIENT = { id: "hosted-google-client", secret: "hosted-google-client-secret-12345678" };

before(async () => {
  // The application's `google` sign-in is a real OpenID provider
  // (oidc-provider) on loopback: the hosted sign-in page shows its button.
  ({ gatehouse, stopProvider } = await startGatehouseWithGoogle(GOOGLE_CLIENT));
  callback = await startCallback();
  const args = ["--no-sandbox", "--disable-component-update", "--disable-quic", "--disable-gpu"];
  browser = await puppeteer.launch({ executablePath: chromium, headless: true, args });
});

after(async () => {
  await browser?.close();
  callback?.close();
  gatehouse?.stop();
  stopProvider?.();
});

async function register(body) {
  const created = await gatehouse.call("POST", "/v1/oauth-clients", { redirect_uris: [callback.url], ...body });
  assert.equal(created.status, 201, JSON.stringify(created.json));
  return created.json.data;
}

// The serious and critical accessibility violations axe-core finds on the page.
async function violations(page) {
  await page.addScriptTag({ path: join(here, "node_modules", "axe-core", "axe.min.js") });
  const found = await page.evaluate(async () => (await globalThis.axe.run()).violations);
  return found.filter((v) => ["serious", "critical"].includes(v.impact)).map((v) => `${v.id}: ${v.help}`);
}

async function authorizationUrl(config, extra = {}) {
  const verifier = client.randomPKCECodeVerifier();
  const parameters = {
    redirect_uri: callback.url,
    scope: "openid email offline_access",
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    nonce: client.randomNonce(),
    state: client.randomState(),
    ...extra,
  };
  return { url: client.buildAuthorizationUrl(config, parameters), verifier, ...parameters };
}

test("a relying party signs a user in through the hosted page with openid-client and Chromium", async () => {
  const issuer = new URL(`${gatehouse.base}/v1/applications/${gatehouse.applicationId}`);
  const signUp = await fetch(`${gatehouse.base}/v1/auth/sign-up`, {
    method: "POST",
    headers: { "x-application-id": gatehouse.applicationId, "content-type": "application/json" },
    body: JSON.stringify({ email: "ada@example.com", password: "correct horse battery" }),
  });
  assert.equal(signUp.status, 201);
  const web = await register({ name: "Web", first_party: true });
  const config = await client.discovery(
    issuer,
    web.client_id,
    { client_secret: web.client_secret, id_token_signed_response_alg: "EdDSA" },
    undefined,
    insecure,
  );
  assert.deepEqual(config.serverMetadata().code_challenge_methods_supported, ["S256"]);

  // axe-core is injected into a page of its own, whose CSP is bypassed
  // for that script; the sign-in runs under the page's own policy (its
  // `form-action` must let the browser go back to the client).
  const audit = await (await browser.createBrowserContext()).newPage();
  await audit.setBypassCSP(true);
  await audit.goto((await authorizationUrl(config)).url.href);
  assert.deepEqual(await violations(audit), [], "the sign-in page");

  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  const request = await authorizationUrl(config);
  await page.goto(request.url.href);
  await page.type("#email", "ada@example.com");
  await page.type("#password", "correct horse battery");
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  const back = new URL(page.url());
  assert.equal(`${back.origin}${back.pathname}`, callback.url);

  const tokens = await client.authorizationCodeGrant(config, back, {
    pkceCodeVerifier: request.verifier,
    expectedNonce: request.nonce,
    expectedState: request.state,
    idTokenExpected: true,
  });
  const claims = tokens.claims();
  assert.equal(claims.email, "ada@example.com");
  assert.equal(claims.aud, web.client_id);
  const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
  assert.equal(info.email, "ada@example.com");

  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
  assert.ok(refreshed.access_token && refreshed.refresh_token !== tokens.refresh_token);
  assert.equal((await client.tokenIntrospection(config, refreshed.access_token)).client_id, web.client_id);

  // A second client of the application: signed in already, no prompt.
  const spa = await register({ name: "SPA", type: "public", first_party: true });
  const spaConfig = await client.discovery(
    issuer,
    spa.client_id,
    { id_token_signed_response_alg: "EdDSA" },
    client.None(),
    insecure,
  );
  const silent = await authorizationUrl(spaConfig, { prompt: "none" });
  await page.goto(silent.url.href);
  const spaTokens = await client.authorizationCodeGrant(spaConfig, new URL(page.url()), {
    pkceCodeVerifier: silent.verifier,
    expectedNonce: silent.nonce,
    expectedState: silent.state,
  });
  assert.equal(spaTokens.claims().sub, claims.sub);

  await client.tokenRevocation(config, refreshed.refresh_token);
  assert.equal((await client.tokenIntrospection(config, refreshed.access_token)).active, false);

  // Another browser, with no session: `prompt=none` comes back `login_required`.
  const fresh = await (await browser.createBrowserContext()).newPage();
  const none = await authorizationUrl(config, { prompt: "none" });
  await fresh.goto(none.url.href);
  await assert.rejects(
    client.authorizationCodeGrant(config, new URL(fresh.url()), {
      pkceCodeVerifier: none.verifier,
      expectedNonce: none.nonce,
      expectedState: none.state,
    }),
    (error) => {
      assert.equal(error.error, "login_required");
      return true;
    },
  );

  // RP-initiated logout with the ID token as the hint ends the hosted
  // sign-in: the next `prompt=none` comes back `login_required`.
  const web2 = await register({ name: "Web 2", first_party: true, post_logout_redirect_uris: [`${callback.url}?bye`] });
  const config2 = await client.discovery(
    issuer,
    web2.client_id,
    { client_secret: web2.client_secret, id_token_signed_response_alg: "EdDSA" },
    undefined,
    insecure,
  );
  const again = await authorizationUrl(config2);
  await page.goto(again.url.href);
  const web2Tokens = await client.authorizationCodeGrant(config2, new URL(page.url()), {
    pkceCodeVerifier: again.verifier,
    expectedNonce: again.nonce,
    expectedState: again.state,
  });
  const endSession = client.buildEndSessionUrl(config2, {
    id_token_hint: web2Tokens.id_token,
    post_logout_redirect_uri: `${callback.url}?bye`,
    state: "bye-state",
  });
  await page.goto(endSession.href);
  assert.equal(new URL(page.url()).searchParams.get("state"), "bye-state");
  const after = await authorizationUrl(config2, { prompt: "none" });
  await page.goto(after.url.href);
  assert.equal(new URL(page.url()).searchParams.get("error"), "login_required");
  await page.goto((await authorizationUrl(config2)).url.href); // sign in again for the consent step below
  await page.type("#email", "ada@example.com");
  await page.type("#password", "correct horse battery");
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);

  // A third-party client: its consent page passes axe-core too.
  const partner = await register({ name: "Partner" });
  const partnerConfig = await client.discovery(issuer, partner.client_id, partner.client_secret, undefined, insecure);
  await page.goto((await authorizationUrl(partnerConfig)).url.href);
  assert.match(await page.content(), /Allow Partner\?/);
  await Promise.all([page.waitForNavigation(), page.click("button[value=allow]")]);
  assert.ok(new URL(page.url()).searchParams.get("code"), "allowed: back with a code");
  const cookies = await context.cookies(issuer.href);
  const consentAudit = await (await browser.createBrowserContext()).newPage();
  await consentAudit.setBypassCSP(true);
  await consentAudit.browserContext().setCookie(...cookies);
  // The consent is remembered now; `prompt=consent` shows the page again.
  const askedAgain = (await authorizationUrl(partnerConfig)).url;
  askedAgain.searchParams.set("prompt", "consent");
  await consentAudit.goto(askedAgain.href);
  assert.match(await consentAudit.content(), /Allow Partner\?/);
  assert.deepEqual(await violations(consentAudit), [], "the consent page");
});

// pyotp (an independent TOTP implementation) gives the authenticator's code.
function pyotp(uri, offset) {
  const script = "import pyotp, sys, time; print(pyotp.parse_uri(sys.argv[1]).at(time.time() + int(sys.argv[2])))";
  const run = spawnSync("python3", ["-c", script, uri, String(offset)], { encoding: "utf8" });
  assert.equal(run.status, 0, `pyotp: ${run.stderr}`);
  return run.stdout.trim();
}

test("a client asking for aal2 gets a sign-in that proved TOTP on the hosted page", async () => {
  const issuer = new URL(`${gatehouse.base}/v1/applications/${gatehouse.applicationId}`);
  const headers = { "x-application-id": gatehouse.applicationId, "content-type": "application/json" };
  const signUp = await fetch(`${gatehouse.base}/v1/auth/sign-up`, {
    method: "POST",
    headers,
    body: JSON.stringify({ email: "grace@example.com", password: "correct horse battery" }),
  });
  const grace = (await signUp.json()).data;
  const bearer = { ...headers, authorization: `Bearer ${grace.access_token}` };
  const started = await (await fetch(`${gatehouse.base}/v1/auth/me/mfa/totp`, { method: "POST", headers: bearer })).json();
  const uri = started.data.otpauth_uri;
  const confirmed = await fetch(`${gatehouse.base}/v1/auth/me/mfa/totp/confirm`, {
    method: "POST",
    headers: bearer,
    body: JSON.stringify({ code: pyotp(uri, 0) }),
  });
  assert.equal(confirmed.status, 200);

  const web = await register({ name: "Strict", first_party: true });
  const config = await client.discovery(
    issuer,
    web.client_id,
    { client_secret: web.client_secret, id_token_signed_response_alg: "EdDSA" },
    undefined,
    insecure,
  );
  const page = await (await browser.createBrowserContext()).newPage();
  await page.setBypassCSP(true); // for axe-core on the second step
  const request = await authorizationUrl(config, { acr_values: "aal2" });
  await page.goto(request.url.href);
  await page.type("#email", "grace@example.com");
  await page.type("#password", "correct horse battery");
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  assert.deepEqual(await violations(page), [], "the second-factor page");
  // The second step: the authenticator's next code (the one confirming it is spent).
  await page.type("#code", pyotp(uri, 30));
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), {
    pkceCodeVerifier: request.verifier,
    expectedNonce: request.nonce,
    expectedState: request.state,
  });
  assert.equal(tokens.claims().acr, "aal2");
  assert.deepEqual(tokens.claims().amr, ["pwd", "otp", "mfa"]);
});

// A new user signs up on the hosted page. Libraries that verify only RS256
// (openid-client's default, authlib's OIDC checks) get RS256 ID tokens from
// the application's RSA key, which jose and authlib verify against the JWKS.
test("a new user signs up on the hosted page; an RS256 client's ID tokens verify with jose and authlib", async () => {
  const issuer = new URL(`${gatehouse.base}/v1/applications/${gatehouse.applicationId}`);
  const legacy = await register({ name: "Legacy", first_party: true, id_token_signed_response_alg: "RS256" });
  // No `id_token_signed_response_alg` here: openid-client expects RS256 by default.
  const config = await client.discovery(issuer, legacy.client_id, legacy.client_secret, undefined, insecure);
  assert.ok(config.serverMetadata().id_token_signing_alg_values_supported.includes("RS256"));
  assert.ok(config.serverMetadata().prompt_values_supported.includes("create"));

  // A new user signs up on the hosted page (`prompt=create`), which axe-core checks too.
  const audit = await (await browser.createBrowserContext()).newPage();
  await audit.setBypassCSP(true);
  await audit.goto((await authorizationUrl(config, { prompt: "create" })).url.href);
  assert.deepEqual(await violations(audit), [], "the sign-up page");
  const page = await (await browser.createBrowserContext()).newPage();
  const request = await authorizationUrl(config, { prompt: "create" });
  await page.goto(request.url.href);
  assert.match(await page.content(), /Create your .* account/);
  await page.type("#email", "rsa@example.com");
  await page.type("#password", "correct horse battery");
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), {
    pkceCodeVerifier: request.verifier,
    expectedNonce: request.nonce,
    expectedState: request.state,
  });
  const jwks = jose.createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri), {
    [jose.customFetch]: (url, options) => fetch(url, options),
  });
  const { payload, protectedHeader } = await jose.jwtVerify(tokens.id_token, jwks, {
    algorithms: ["RS256"],
    issuer: issuer.href,
    audience: legacy.client_id,
  });
  assert.equal(protectedHeader.alg, "RS256");
  assert.equal(payload.email, "rsa@example.com");

  const run = spawnSync(
    "python3",
    [join(here, "authlib_relying_party.py"), issuer.href, legacy.client_id, legacy.client_secret, callback.url,
      "rsa@example.com", "correct horse battery"],
    { encoding: "utf8", timeout: 60_000 },
  );
  assert.equal(run.status, 0, `authlib: ${run.stderr}`);
  const claims = JSON.parse(run.stdout);
  assert.equal(claims.sub, payload.sub);
  assert.equal(claims.aud, legacy.client_id);
});

// The newest password-reset email's code, read from the development outbox.
async function resetCodeSent(email) {
  for (let i = 0; i < 100; i++) {
    const outbox = await gatehouse.call("GET", `/v1/applications/${gatehouse.applicationId}/providers/messaging/outbox`);
    const sent = outbox.json.data.find((m) => m.recipient === email && m.subject.startsWith("Reset your"));
    if (sent) return sent.body.split("\n\n")[2].trim();
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no reset email reached ${email}`);
}

// A user who forgot the password resets it on the hosted pages, signs in,
// and chooses one of their organizations; each of those pages, and the
// emailed-code page of a sign-up that needs a verified email, passes axe-core.
test("a forgotten password and an organization's choice on the hosted pages, with axe-core on each", async () => {
  const issuer = new URL(`${gatehouse.base}/v1/applications/${gatehouse.applicationId}`);
  const signUp = await fetch(`${gatehouse.base}/v1/auth/sign-up`, {
    method: "POST",
    headers: { "x-application-id": gatehouse.applicationId, "content-type": "application/json" },
    body: JSON.stringify({ email: "hedy@example.com", password: "correct horse battery" }),
  });
  const hedy = (await signUp.json()).data.user;
  const organizations = [];
  for (const name of ["Acme", "Globex"]) {
    const created = await gatehouse.call("POST", "/v1/organizations", { name });
    const id = created.json.data.id;
    await gatehouse.call("POST", `/v1/organizations/${id}/memberships`, { user_id: hedy.id, role: "member" });
    organizations.push(id);
  }
  const scopes = ["openid", "email", "organization"];
  const web = await register({ name: "Console", first_party: true, scopes });
  const config = await client.discovery(
    issuer,
    web.client_id,
    { client_secret: web.client_secret, id_token_signed_response_alg: "EdDSA" },
    undefined,
    insecure,
  );
  const page = await (await browser.createBrowserContext()).newPage();
  await page.setBypassCSP(true); // for axe-core on each step
  const request = await authorizationUrl(config, { scope: scopes.join(" "), login_hint: "hedy@example.com" });
  await page.goto(request.url.href);
  await Promise.all([page.waitForNavigation(), page.click("button[value=ask]")]);
  assert.match(await page.content(), /Reset your password/);
  assert.deepEqual(await violations(page), [], "the forgotten-password page");
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  assert.match(await page.content(), /Choose a new password/);
  assert.deepEqual(await violations(page), [], "the new-password page");
  await page.type("#reset_code", await resetCodeSent("hedy@example.com"));
  await page.type("#password", "a brand new password");
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  assert.match(await page.content(), /Your password is changed/);
  await page.type("#password", "a brand new password");
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  assert.match(await page.content(), /Choose an organization/);
  assert.deepEqual(await violations(page), [], "the organization page");
  await Promise.all([page.waitForNavigation(), page.click(`button[value="${organizations[1]}"]`)]);
  const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), {
    pkceCodeVerifier: request.verifier,
    expectedNonce: request.nonce,
    expectedState: request.state,
  });
  assert.equal(tokens.claims().org, organizations[1]);
  const info = await client.fetchUserInfo(config, tokens.access_token, tokens.claims().sub);
  assert.equal(info.org, organizations[1]);
  assert.equal(info.org_role, "member");

  // An application that requires a verified email asks a new user for the emailed code.
  const settings = `/v1/applications/${gatehouse.applicationId}`;
  assert.equal((await gatehouse.call("PATCH", settings, { require_verified_email: true })).status, 200);
  try {
    const audit = await (await browser.createBrowserContext()).newPage();
    await audit.setBypassCSP(true);
    await audit.goto((await authorizationUrl(config, { prompt: "create" })).url.href);
    await audit.type("#email", "katherine@example.com");
    await audit.type("#password", "correct horse battery");
    await Promise.all([audit.waitForNavigation(), audit.click("button[type=submit]")]);
    assert.match(await audit.content(), /Verify your email/);
    assert.deepEqual(await violations(audit), [], "the emailed-code page");
  } finally {
    await gatehouse.call("PATCH", settings, { require_verified_email: false });
  }
});

// The sign-in page's "Continue with Google": Chromium goes to the provider
// (the page's CSP lets the form's redirect go there), signs in on its
// pages, and comes back through Gatehouse to the client with a code.
test("a user signs in with an identity provider's button on the hosted page", async () => {
  const issuer = new URL(`${gatehouse.base}/v1/applications/${gatehouse.applicationId}`);
  const web = await register({ name: "Portal", first_party: true });
  const config = await client.discovery(
    issuer,
    web.client_id,
    { client_secret: web.client_secret, id_token_signed_response_alg: "EdDSA" },
    undefined,
    insecure,
  );
  const page = await (await browser.createBrowserContext()).newPage();
  const request = await authorizationUrl(config);
  await page.goto(request.url.href);
  await Promise.all([page.waitForNavigation(), page.click("button[value=google]")]);
  assert.ok(page.url().includes("/interaction/"), page.url());
  await page.type("input[name=login]", "hosted-provider-user");
  await page.type("input[name=password]", "any password");
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]); // the provider's consent
  const back = new URL(page.url());
  assert.equal(`${back.origin}${back.pathname}`, callback.url, page.url());
  const tokens = await client.authorizationCodeGrant(config, back, {
    pkceCodeVerifier: request.verifier,
    expectedNonce: request.nonce,
    expectedState: request.state,
  });
  assert.equal(tokens.claims().email, "hosted-provider-user@example.com");
});

// Registers a passkey for the user behind `token` in Chromium's virtual
// authenticator, from a page of the service's own origin.
async function registerPasskey(page, applicationId, token) {
  return page.evaluate(
    async (applicationId, token) => {
      const headers = { "x-application-id": applicationId, authorization: `Bearer ${token}` };
      const fromB64 = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
      const toB64 = (buffer) =>
        btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
      const begun = await (await fetch("/v1/auth/me/passkeys/options", { method: "POST", headers })).json();
      const o = begun.data.options.publicKey;
      const excludeCredentials = (o.excludeCredentials ?? []).map((c) => ({ ...c, id: fromB64(c.id) }));
      const publicKey = { ...o, challenge: fromB64(o.challenge), user: { ...o.user, id: fromB64(o.user.id) }, excludeCredentials };
      const created = await navigator.credentials.create({ publicKey });
      const credential = {
        id: created.id,
        rawId: toB64(created.rawId),
        type: created.type,
        response: {
          clientDataJSON: toB64(created.response.clientDataJSON),
          attestationObject: toB64(created.response.attestationObject),
          transports: created.response.getTransports(),
        },
        clientExtensionResults: created.getClientExtensionResults(),
      };
      const body = JSON.stringify({ ceremony: begun.data.ceremony, credential, name: "Chromium" });
      const response = await fetch("/v1/auth/me/passkeys", {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body,
      });
      return response.status;
    },
    applicationId,
    token,
  );
}

// Passkeys on the hosted pages need the service on the application's
// passkey domain (a custom domain in production): here a node whose public
// URL is http://localhost:<port>, with `passkey_rp_id: localhost`.
test("a passkey signs in on the hosted page, alone and as a password's second step", async () => {
  const local = await startGatehouse((base) => ({ GATEHOUSE__SERVER__PUBLIC_URL: base.replace("127.0.0.1", "localhost") }));
  const context = await browser.createBrowserContext();
  try {
    const origin = local.base.replace("127.0.0.1", "localhost");
    const settings = `/v1/applications/${local.applicationId}`;
    const patched = await local.call("PATCH", settings, { allowed_origins: [origin], passkey_rp_id: "localhost" });
    assert.equal(patched.status, 200, JSON.stringify(patched.json));
    const created = await local.call("POST", "/v1/oauth-clients", {
      name: "Web",
      first_party: true,
      redirect_uris: [callback.url],
    });
    const web = created.json.data;
    const signUp = await fetch(`${local.base}/v1/auth/sign-up`, {
      method: "POST",
      headers: { "x-application-id": local.applicationId, "content-type": "application/json" },
      body: JSON.stringify({ email: "ada@example.com", password: "correct horse battery" }),
    });
    const ada = (await signUp.json()).data;

    const page = await context.newPage();
    await page.setBypassCSP(true); // for axe-core
    const devtools = await page.createCDPSession();
    await devtools.send("WebAuthn.enable");
    await devtools.send("WebAuthn.addVirtualAuthenticator", {
      options: {
        protocol: "ctap2",
        transport: "internal",
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    await page.goto(`${origin}/healthz`);
    assert.equal(await registerPasskey(page, local.applicationId, ada.access_token), 201);

    const verifier = client.randomPKCECodeVerifier();
    const authorize = new URL(`${origin}${settings}/oauth/authorize`);
    for (const [name, value] of Object.entries({
      response_type: "code",
      client_id: web.client_id,
      redirect_uri: callback.url,
      scope: "openid email",
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    })) {
      authorize.searchParams.set(name, value);
    }
    const exchange = async (back) => {
      const code = new URL(back).searchParams.get("code");
      assert.ok(code, back);
      const response = await fetch(`${local.base}${settings}/oauth/token`, {
        method: "POST",
        headers: {
          authorization: `Basic ${Buffer.from(`${web.client_id}:${web.client_secret}`).toString("base64")}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: callback.url, code_verifier: verifier }),
      });
      assert.equal(response.status, 200);
      const tokens = await response.json();
      return JSON.parse(Buffer.from(tokens.id_token.split(".")[1], "base64url"));
    };

    // Alone: the sign-in page's "Sign in with a passkey", no email typed.
    await page.goto(authorize.href);
    await Promise.all([page.waitForNavigation(), page.click("button[value=sign_in]")]);
    assert.deepEqual(await violations(page), [], "the passkey page");
    await Promise.all([page.waitForNavigation(), page.click("#use-passkey")]);
    const alone = await exchange(page.url());
    assert.equal(alone.sub, ada.user.id);
    assert.equal(alone.acr, "aal2");

    // After the password (a new sign-in: `prompt=login`), the passkey is the second step.
    authorize.searchParams.set("prompt", "login");
    await page.goto(authorize.href);
    await page.type("#email", "ada@example.com");
    await page.type("#password", "correct horse battery");
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
    assert.match(await page.content(), /Confirm it is you with your passkey/);
    assert.deepEqual(await violations(page), [], "the second step with a passkey");
    await Promise.all([page.waitForNavigation(), page.click("button[value=second_step]")]);
    await Promise.all([page.waitForNavigation(), page.click("#use-passkey")]);
    const second = await exchange(page.url());
    assert.equal(second.sub, ada.user.id);
    assert.equal(second.acr, "aal2");
  } finally {
    await context.close();
    local.stop();
  }
});

// The hosted pages refuse every frame (`frame-ancestors 'none'`) unless the
// application lets its allowed origins frame them.
test("the hosted pages load in a frame only on the application's allowed origins, when it allows that", async () => {
  const web = await register({ name: "Framed", first_party: true });
  const issuer = new URL(`${gatehouse.base}/v1/applications/${gatehouse.applicationId}`);
  const config = await client.discovery(issuer, web.client_id, web.client_secret, undefined, insecure);
  const signIn = (await authorizationUrl(config)).url.href;
  const rpOrigin = new URL(callback.url).origin;
  const framed = async () => {
    const page = await (await browser.createBrowserContext()).newPage();
    await page.goto(`${rpOrigin}/frame?src=${encodeURIComponent(signIn)}`);
    const frame = page.frames().find((f) => f !== page.mainFrame());
    await new Promise((r) => setTimeout(r, 300));
    const shown = frame.url().startsWith(gatehouse.base) && /Sign in to/.test(await frame.content().catch(() => ""));
    await page.browserContext().close();
    return shown;
  };
  assert.equal(await framed(), false, "no frame by default");
  const settings = `/v1/applications/${gatehouse.applicationId}`;
  const allowed = await gatehouse.call("PATCH", settings, { allowed_origins: [rpOrigin], hosted_pages_in_frames: true });
  assert.equal(allowed.status, 200, JSON.stringify(allowed.json));
  try {
    assert.equal(await framed(), true, "framed by an allowed origin");
  } finally {
    await gatehouse.call("PATCH", settings, { allowed_origins: [], hosted_pages_in_frames: false });
  }
});
