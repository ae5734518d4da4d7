// A real browser (headless Chromium, driven by puppeteer-core) runs a
// customer's single-page app against Gatehouse: its own script signs up,
// signs in, refreshes, manages personal keys and signs out over CORS, and
// verifies its access token with jose against the JWKS; and a user signs in
// with a provider (a real OpenID provider on loopback as `google`): the
// page starts with PKCE, the browser walks the provider's login and consent
// pages, and the page exchanges the one-time code it is sent back with. A
// page on an origin no application allows is refused by the browser itself.
// Passkeys are made and used by Chromium's virtual authenticator (DevTools'
// WebAuthn domain) on a page served as http://localhost:<port>.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { dirname, extname, join, normalize, sep } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import puppeteer from "puppeteer-core";

import { startGatehouseWithGoogle } from "./gatehouse.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const joseDir = join(here, "node_modules", "jose", "dist", "webapi");
const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

// Serves the demo page and jose's browser build, on one loopback address
// (named `name` in its origin).
function startStatic(host, name = host) {
  const server = createServer(async (req, res) => {
    const { pathname } = new URL(req.url, "http://x");
    try {
      if (pathname === "/app.html") {
        const html = await readFile(join(here, "spa", "app.html"));
        return res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html);
      }
      if (pathname.startsWith("/jose/")) {
        const file = normalize(join(joseDir, pathname.slice("/jose/".length)));
        if (!file.startsWith(joseDir + sep) || extname(file) !== ".js") return res.writeHead(404).end();
        const js = await readFile(file);
        return res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" }).end(js);
      }
    } catch {}
    res.writeHead(404).end();
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () =>
      resolve({ origin: `http://${name}:${server.address().port}`, close: () => server.close() }),
    );
  });
}

let gatehouse, allowedSite, otherSite, localSite, browser, stopProvider;
const GOOGLE_CLIENT = { id: "spa-google-client", secret: "spa-google-client-secret-1234567890" };

before(async () => {
  ({ gatehouse, stopProvider } = await startGatehouseWithGoogle(GOOGLE_CLIENT));
  // The app's own origin, and a second one (another loopback address, so
  // another site) that no application allows.
  allowedSite = await startStatic("127.0.0.1");
  otherSite = await startStatic("127.0.0.2");
  // WebAuthn needs a domain as relying-party id: the passkey page is
  // http://localhost:<port> (a secure context, as localhost is).
  localSite = await startStatic("127.0.0.1", "localhost");
  const patched = await gatehouse.call("PATCH", `/v1/applications/${gatehouse.applicationId}`, {
    allowed_origins: [allowedSite.origin],
  });
  assert.equal(patched.status, 200, JSON.stringify(patched.json));
  assert.deepEqual(patched.json.data.allowed_origins, [allowedSite.origin]);
  // puppeteer's `headless: true` is Chromium's `--headless=new`; as root the
  // sandbox cannot start, hence `--no-sandbox`.
  // Nothing but loopback: puppeteer already turns off background networking,
  // sync and the first-run checks; component updates and QUIC go too.
  const args = ["--no-sandbox", "--disable-component-update", "--disable-quic", "--disable-gpu"];
  browser = await puppeteer.launch({ executablePath: chromium, headless: true, args });
});

after(async () => {
  await browser?.close();
  allowedSite?.close();
  otherSite?.close();
  localSite?.close();
  gatehouse?.stop();
  stopProvider?.();
});

async function openApp(site) {
  const page = await browser.newPage();
  const failed = [];
  page.on("requestfailed", (request) => failed.push(`${request.method()} ${request.url()} ${request.failure()?.errorText}`));
  const url = `${site.origin}/app.html?api=${encodeURIComponent(gatehouse.base)}&app=${gatehouse.applicationId}`;
  const response = await page.goto(url);
  assert.equal(response.status(), 200);
  await page.waitForFunction(() => window.spaReady === true, { timeout: 5000 });
  return { page, failed };
}

test("a single-page app on an allowed origin runs the end-user life cycle in a real browser", async (t) => {
  const { page } = await openApp(allowedSite);
  try {
    const email = "spa-user@example.com";
    const steps = await page.evaluate((e) => window.spa.fullFlow(e, "correct horse battery"), email);

    await t.test("sign-up and sign-in answer tokens the page can read", () => {
      assert.equal(steps.signUp.status, 201, JSON.stringify(steps.signUp));
      assert.equal(steps.signUp.json.data.user.email, email);
      assert.equal(steps.signIn.status, 200, JSON.stringify(steps.signIn));
      assert.equal(steps.signIn.json.data.user.id, steps.signUp.json.data.user.id);
      assert.match(steps.signIn.json.data.refresh_token, /^rt_/);
      assert.notEqual(steps.signIn.json.data.session.id, steps.signUp.json.data.session.id);
      // RateLimit-* are exposed to the page.
      assert.match(String(steps.signIn.exposed["ratelimit-limit"]), /^\d+$/, JSON.stringify(steps.signIn.exposed));
    });

    await t.test("GET /v1/auth/me names the user and the signed-in session", () => {
      assert.equal(steps.me.status, 200, JSON.stringify(steps.me));
      assert.equal(steps.me.json.data.user.id, steps.signUp.json.data.user.id);
      assert.equal(steps.me.json.data.user.email, email);
      assert.equal(steps.me.json.data.session.id, steps.signIn.json.data.session.id);
      assert.deepEqual(steps.me.json.data.organizations, []);
      // The page's x-request-id came back, readable (exposed).
      assert.equal(steps.me.json.meta.request_id, "spa-me-1");
      assert.equal(steps.me.exposed["x-request-id"], "spa-me-1");
    });

    await t.test("refresh rotates both tokens and the new access token works", () => {
      assert.equal(steps.refresh.status, 200, JSON.stringify(steps.refresh));
      assert.equal(steps.refresh.json.data.session.id, steps.signIn.json.data.session.id);
      assert.equal(steps.refreshedIsNew, true);
      assert.equal(steps.meAfterRefresh.status, 200, JSON.stringify(steps.meAfterRefresh));
    });

    await t.test("a TOTP enrolment starts from the page and is listed pending", () => {
      assert.equal(steps.startTotp.status, 201, JSON.stringify(steps.startTotp));
      assert.match(steps.startTotp.json.data.otpauth_uri, /^otpauth:\/\/totp\//);
      assert.equal(steps.factors.status, 200, JSON.stringify(steps.factors));
      assert.equal(steps.factors.json.data.totp.status, "pending");
    });

    await t.test("a personal key is created and listed", () => {
      assert.equal(steps.createKey.status, 201, JSON.stringify(steps.createKey));
      const key = steps.createKey.json.data;
      assert.equal(key.name, "spa key");
      assert.equal(typeof key.secret, "string");
      assert.ok(key.secret.length > 20);
      assert.equal(steps.listKeys.status, 200, JSON.stringify(steps.listKeys));
      const listed = steps.listKeys.json.data;
      assert.ok(Array.isArray(listed));
      assert.deepEqual(
        listed.map((k) => k.id),
        [key.id],
      );
      assert.equal(listed[0].active, true);
      assert.ok(!("secret" in listed[0]), "a listed key carries no secret");
    });

    await t.test("the page verifies its access token with jose against the JWKS (cross-origin)", () => {
      assert.equal(steps.verify.ok, true, JSON.stringify(steps.verify));
      const issuer = `${gatehouse.base}/v1/applications/${gatehouse.applicationId}`;
      assert.equal(steps.verify.jwksUri, `${issuer}/.well-known/jwks.json`);
      assert.equal(steps.verify.protectedHeader.alg, "EdDSA");
      assert.equal(steps.verify.payload.iss, issuer);
      assert.equal(steps.verify.payload.aud, gatehouse.applicationId);
      assert.equal(steps.verify.payload.sub, steps.signUp.json.data.user.id);
      assert.equal(steps.verify.payload.sid, steps.signIn.json.data.session.id);
      assert.equal(steps.verify.forged, "signature_failed");
    });

    await t.test("after sign-out neither the refresh token nor the access token works", () => {
      assert.equal(steps.signOut.status, 200, JSON.stringify(steps.signOut));
      assert.equal(steps.signOut.json.data.id, steps.signIn.json.data.session.id);
      // Errors are answered with CORS headers too: the page reads a 401, not a network error.
      assert.equal(steps.refreshAfterSignOut.status, 401, JSON.stringify(steps.refreshAfterSignOut));
      assert.equal(steps.refreshAfterSignOut.json.error.code, "unauthenticated");
      assert.equal(steps.meAfterSignOut.status, 401, JSON.stringify(steps.meAfterSignOut));
      // The sign-up's session is another one and still refreshes.
      assert.equal(steps.signUpSessionRefresh.status, 200, JSON.stringify(steps.signUpSessionRefresh));
    });
  } finally {
    await page.close();
  }
});

test("a user signs in with a provider in a real browser: PKCE, the provider's pages, the one-time code", async () => {
  const { page } = await openApp(allowedSite);
  try {
    // The page starts the sign-in: a navigation to Gatehouse, then to the provider.
    await Promise.all([page.waitForNavigation(), page.evaluate(() => window.spa.startProviderSignIn("google"))]);
    assert.ok(page.url().startsWith(`http://127.0.0.1:`) && page.url().includes("/interaction/"), page.url());
    await page.type("input[name=login]", "spa-provider-user");
    await page.type("input[name=password]", "any password");
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
    // The consent page, then back through Gatehouse's callback to the page.
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
    assert.ok(page.url().startsWith(`${allowedSite.origin}/app.html`), page.url());
    const back = new URL(page.url());
    assert.ok(back.searchParams.get("code"), page.url());
    assert.ok(!back.searchParams.has("access_token"), "no token travels in a URL");
    await page.waitForFunction(() => window.providerSignIn !== undefined, { timeout: 5000 });
    const result = await page.evaluate(() => window.providerSignIn);
    assert.equal(result.stateMatches, true, JSON.stringify(result));
    assert.equal(result.exchange.status, 200, JSON.stringify(result.exchange));
    assert.equal(result.exchange.json.data.user.email, "spa-provider-user@example.com");
    assert.equal(result.me.status, 200, JSON.stringify(result.me));
    assert.equal(result.me.json.data.user.email, "spa-provider-user@example.com");
    // The code was spent by the page: a second exchange is refused.
    assert.equal(result.again.status, 400, JSON.stringify(result.again));
    assert.equal(result.again.json.error.code, "invalid_grant");
  } finally {
    await page.close();
  }
});

test("an owner's team page invites a colleague, who accepts, and manages an SSO domain, in a real browser", async () => {
  const { page } = await openApp(allowedSite);
  try {
    const password = "correct horse battery";
    const owner = await page.evaluate((e, p) => window.spa.signUp(e, p), "team-owner@example.com", password);
    assert.equal(owner.status, 201, JSON.stringify(owner.json));
    const organization = await gatehouse.call("POST", "/v1/organizations", { name: "SPA team" });
    const organizationId = organization.json.data.id;
    const membership = await gatehouse.call("POST", `/v1/organizations/${organizationId}/memberships`, {
      user_id: owner.json.data.user.id,
      role: "owner",
    });
    assert.equal(membership.status, 201, JSON.stringify(membership.json));

    const invitee = "team-colleague@example.com";
    const steps = await page.evaluate((o, i, d) => window.spa.teamFlow(o, i, d), organizationId, invitee, "spa-team.example");
    assert.equal(steps.activate.status, 200, JSON.stringify(steps.activate.json));
    assert.equal(steps.invite.status, 201, JSON.stringify(steps.invite.json));
    assert.equal(steps.invite.json.data.status, "pending");
    assert.deepEqual(steps.invitations.json.data.map((i) => i.email), [invitee]);
    assert.equal(steps.claim.status, 201, JSON.stringify(steps.claim));
    assert.equal(steps.claim.json.data.verification.name, "_gatehouse-challenge.spa-team.example");
    assert.equal(steps.domains.json.data.length, 1);
    assert.equal(steps.remove.status, 200, "a DELETE passes the browser's preflight");
    assert.deepEqual(steps.remove.json.data, {});

    // The invitation email, from the development outbox, carries the code.
    let code;
    for (let i = 0; i < 100 && !code; i++) {
      const outbox = await gatehouse.call("GET", `/v1/applications/${gatehouse.applicationId}/providers/messaging/outbox`);
      const message = outbox.json.data.find((m) => m.recipient === invitee && m.subject.startsWith("Join "));
      code = message?.body.split("\n\n")[2]?.trim();
      if (!code) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.ok(code, "the invitation email was recorded");
    const accepted = await page.evaluate((e, p, c) => window.spa.acceptInvitation(e, p, c), invitee, password, code);
    assert.equal(accepted.status, 200, JSON.stringify(accepted.json));
    assert.deepEqual([accepted.json.data.organization_id, accepted.json.data.role], [organizationId, "admin"]);
  } finally {
    await page.close();
  }
});

test("a page on an origin no application allows is refused by the browser, and no user is created", async () => {
  const { page, failed } = await openApp(otherSite);
  try {
    const email = "other-origin@example.com";
    const result = await page.evaluate((e) => window.spa.signUp(e, "correct horse battery"), email);
    assert.equal(result.error, "TypeError", JSON.stringify(result));
    assert.equal(result.status, undefined);
    assert.ok(
      failed.some((line) => line.includes("/v1/auth/sign-up")),
      `the sign-up request failed in the browser: ${JSON.stringify(failed)}`,
    );

    // The preflight the browser sent is refused: no CORS headers for this origin.
    const preflight = await fetch(`${gatehouse.base}/v1/auth/sign-up`, {
      method: "OPTIONS",
      headers: {
        origin: otherSite.origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type,x-application-id",
      },
    });
    assert.equal(preflight.status, 403);
    assert.equal((await preflight.json()).error.code, "origin_not_allowed");
    assert.equal(preflight.headers.get("access-control-allow-origin"), null);
    // Without the browser, the server refuses the origin on the request itself.
    const direct = await fetch(`${gatehouse.base}/v1/auth/sign-up`, {
      method: "POST",
      headers: { origin: otherSite.origin, "x-application-id": gatehouse.applicationId, "content-type": "application/json" },
      body: JSON.stringify({ email, password: "correct horse battery" }),
    });
    assert.equal(direct.status, 403);
    assert.equal((await direct.json()).error.code, "origin_not_allowed");
    assert.equal(direct.headers.get("access-control-allow-origin"), null);

    // And the secret-key API confirms nothing was created.
    const users = await gatehouse.call("GET", "/v1/users?limit=100");
    assert.equal(users.status, 200, JSON.stringify(users.json));
    assert.ok(Array.isArray(users.json.data));
    assert.ok(!users.json.data.some((u) => u.email === email), JSON.stringify(users.json.data));
    assert.ok(users.json.data.some((u) => u.email === "spa-user@example.com"), "the allowed page's user exists");
  } finally {
    await page.close();
  }
});

test("passkeys in a real browser: Chromium's authenticator registers one, signs in with it alone and as a second step", async () => {
  const patched = await gatehouse.call("PATCH", `/v1/applications/${gatehouse.applicationId}`, {
    allowed_origins: [allowedSite.origin, localSite.origin],
    passkey_rp_id: "localhost",
  });
  assert.equal(patched.status, 200, JSON.stringify(patched.json));
  const { page } = await openApp(localSite);
  const devtools = await page.createCDPSession();
  await devtools.send("WebAuthn.enable");
  // A platform authenticator with user verification (a fingerprint, say)
  // that keeps discoverable credentials; the user always consents.
  const { authenticatorId } = await devtools.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  const aal = (token) => JSON.parse(Buffer.from(token.split(".")[1], "base64url")).aal;
  try {
    const email = "passkey-user@example.com";
    const password = "correct horse battery";
    const signedUp = await page.evaluate((e, p) => window.spa.signUp(e, p), email, password);
    assert.equal(signedUp.status, 201, JSON.stringify(signedUp.json));

    const registration = await page.evaluate((t) => window.spa.registerPasskey(t), signedUp.json.data.access_token);
    assert.equal(registration.begun.status, 200, JSON.stringify(registration.begun.json));
    assert.equal(registration.registered.status, 201, JSON.stringify(registration.registered.json));
    assert.equal(registration.registered.json.data.name, "This browser");
    const { credentials } = await devtools.send("WebAuthn.getCredentials", { authenticatorId });
    assert.equal(credentials.length, 1);
    assert.equal(credentials[0].isResidentCredential, true, "a discoverable credential");
    assert.equal(credentials[0].rpId, "localhost");

    const alone = await page.evaluate(() => window.spa.signInWithPasskey());
    assert.equal(alone.signedIn.status, 200, JSON.stringify(alone.signedIn.json ?? alone));
    assert.equal(alone.signedIn.json.data.user.email, email);
    assert.equal(aal(alone.signedIn.json.data.access_token), "aal2");
    assert.equal(alone.replayed.status, 400, "a ceremony is used once");
    assert.equal(alone.replayed.json.error.code, "invalid_grant");

    const twoSteps = await page.evaluate((e, p) => window.spa.signInWithPasswordAndPasskey(e, p), email, password);
    assert.equal(twoSteps.first.json.data.mfa_required, true, JSON.stringify(twoSteps.first.json));
    assert.deepEqual(twoSteps.first.json.data.factors, ["passkey"]);
    assert.equal(twoSteps.completed.status, 200, JSON.stringify(twoSteps.completed.json));
    assert.equal(aal(twoSteps.completed.json.data.access_token), "aal2");
    const after = await devtools.send("WebAuthn.getCredentials", { authenticatorId });
    assert.equal(after.credentials[0].signCount, credentials[0].signCount + 2, "the authenticator signed twice");
  } finally {
    await devtools.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId });
    await page.close();
  }
});
