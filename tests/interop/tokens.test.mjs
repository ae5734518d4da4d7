// The jose library verifies Gatehouse's end-user access tokens against the
// application's published JWKS, as any resource server would.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify } from "jose";

import { startGatehouse } from "./gatehouse.mjs";

// An unauthenticated end-user call: only the application header.
async function endUser(base, applicationId, path, body) {
  const response = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "x-application-id": applicationId, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

async function signUp(base, applicationId, email) {
  const signed = await endUser(base, applicationId, "/v1/auth/sign-up", { email, password: "correct horse battery" });
  assert.equal(signed.status, 201, JSON.stringify(signed.json));
  assert.equal(signed.json.success, true);
  return signed.json.data;
}

const issuerOf = (base, applicationId) => `${base}/v1/applications/${applicationId}`;
const jwksUrlOf = (base, applicationId) => `${issuerOf(base, applicationId)}/.well-known/jwks.json`;
const verifyOptions = (base, applicationId) => ({
  issuer: issuerOf(base, applicationId),
  audience: applicationId,
  algorithms: ["EdDSA"],
});

test("access tokens verify with jose against the application's JWKS, and only its own", async (t) => {
  const gatehouse = await startGatehouse();
  try {
    const { base } = gatehouse;
    const a = gatehouse.applicationId;
    assert.match(base, /^http:\/\/127\.0\.0\.1:\d+$/);

    const other = await gatehouse.call("POST", "/v1/applications", { name: "other" });
    assert.equal(other.status, 201, JSON.stringify(other.json));
    assert.equal(other.json.success, true);
    const b = other.json.data.id;
    assert.match(other.json.data.secret_key, /^sk_/);
    assert.notEqual(b, a);

    const ada = await signUp(base, a, "ada@example.com");
    const grace = await signUp(base, b, "grace@example.com");
    for (const signed of [ada, grace]) {
      assert.equal(typeof signed.access_token, "string");
      assert.equal(typeof signed.refresh_token, "string");
      assert.equal(signed.token_type, "Bearer");
      assert.equal(signed.expires_in, 300);
    }

    const jwksA = createRemoteJWKSet(new URL(jwksUrlOf(base, a)));
    const jwksB = createRemoteJWKSet(new URL(jwksUrlOf(base, b)));

    await t.test("A's token verifies against A's JWKS with the documented header and claims", async () => {
      const before = Math.floor(Date.now() / 1000);
      const { payload, protectedHeader } = await jwtVerify(ada.access_token, jwksA, verifyOptions(base, a));
      assert.equal(protectedHeader.alg, "EdDSA");
      assert.equal(protectedHeader.typ, "JWT");
      assert.equal(typeof protectedHeader.kid, "string");
      assert.ok(protectedHeader.kid.length > 0);

      assert.equal(payload.iss, issuerOf(base, a));
      assert.equal(payload.aud, a);
      assert.equal(payload.sub, ada.user.id);
      assert.equal(payload.sid, ada.session.id);
      assert.equal(payload.aal, "aal1");
      for (const claim of ["iat", "nbf", "exp"]) assert.equal(typeof payload[claim], "number", claim);
      assert.equal(payload.exp - payload.iat, 300);
      assert.ok(payload.nbf <= payload.iat);
      assert.ok(Math.abs(payload.iat - before) <= 60, `iat ${payload.iat} is near now ${before}`);
      assert.equal(typeof payload.jti, "string");
      assert.ok(payload.jti.length > 0);
      assert.ok(!("org" in payload), "no active organization, so no org claim");
      assert.ok(!("org_role" in payload), "no active organization, so no org_role claim");
    });

    await t.test("B's token verifies against B's JWKS but not against A's", async () => {
      const { payload } = await jwtVerify(grace.access_token, jwksB, verifyOptions(base, b));
      assert.equal(payload.sub, grace.user.id);
      assert.equal(payload.aud, b);

      // B's key is not in A's key set.
      await assert.rejects(jwtVerify(grace.access_token, jwksA, verifyOptions(base, a)), errors.JOSEError);
      await assert.rejects(jwtVerify(grace.access_token, jwksA, verifyOptions(base, b)), errors.JOSEError);
      // B's token relabelled with A's kid: the key is found, the signature is not A's.
      const kidA = decodeProtectedHeader(ada.access_token).kid;
      const header = Buffer.from(JSON.stringify({ alg: "EdDSA", typ: "JWT", kid: kidA })).toString("base64url");
      const relabelled = [header, ...grace.access_token.split(".").slice(1)].join(".");
      await assert.rejects(
        jwtVerify(relabelled, jwksA, verifyOptions(base, b)),
        errors.JWSSignatureVerificationFailed,
      );
      // A's token presented as B's (right keys, wrong issuer and audience).
      await assert.rejects(jwtVerify(ada.access_token, jwksB, verifyOptions(base, b)), errors.JOSEError);
    });

    await t.test("discovery names the issuer and JWKS; the JWKS is cacheable for five minutes", async () => {
      const discovery = await fetch(`${issuerOf(base, a)}/.well-known/openid-configuration`);
      assert.equal(discovery.status, 200);
      const metadata = await discovery.json();
      assert.equal(metadata.issuer, issuerOf(base, a));
      assert.equal(metadata.jwks_uri, jwksUrlOf(base, a));

      const jwks = await fetch(metadata.jwks_uri);
      assert.equal(jwks.status, 200);
      assert.equal(jwks.headers.get("cache-control"), "public, max-age=300");
      const { keys } = await jwks.json();
      assert.ok(Array.isArray(keys) && keys.length >= 1);
      const kid = decodeProtectedHeader(ada.access_token).kid;
      const key = keys.find((k) => k.kid === kid);
      assert.ok(key, `the token's kid ${kid} is published`);
      assert.equal(key.kty, "OKP");
      assert.equal(key.crv, "Ed25519");
      assert.ok(!("d" in key), "no private part is published");
    });

    await t.test("a refreshed access token verifies too", async () => {
      const refreshed = await endUser(base, a, "/v1/auth/token", { refresh_token: ada.refresh_token });
      assert.equal(refreshed.status, 200, JSON.stringify(refreshed.json));
      assert.equal(refreshed.json.success, true);
      const data = refreshed.json.data;
      assert.equal(typeof data.access_token, "string");
      assert.notEqual(data.access_token, ada.access_token);
      assert.notEqual(data.refresh_token, ada.refresh_token);

      const { payload } = await jwtVerify(data.access_token, jwksA, verifyOptions(base, a));
      assert.equal(payload.sub, ada.user.id);
      assert.equal(payload.sid, ada.session.id);
      assert.equal(payload.exp - payload.iat, 300);
      const first = await jwtVerify(ada.access_token, jwksA, verifyOptions(base, a));
      assert.notEqual(payload.jti, first.payload.jti);
    });
  } finally {
    gatehouse.stop();
  }
});

test("machine tokens (client_credentials) verify with jose as RFC 9068 access tokens", async () => {
  const gatehouse = await startGatehouse();
  try {
    const { base, applicationId } = gatehouse;
    const account = await gatehouse.call("POST", "/v1/service-accounts", { name: "billing-worker", scopes: ["invoices:read", "invoices:write"] });
    assert.equal(account.status, 201, JSON.stringify(account.json));
    const key = await gatehouse.call("POST", `/v1/service-accounts/${account.json.data.id}/keys`, { name: "prod" });
    assert.equal(key.status, 201, JSON.stringify(key.json));

    // The token endpoint as the discovery document names it.
    const discovery = await (await fetch(`${issuerOf(base, applicationId)}/.well-known/openid-configuration`)).json();
    assert.equal(discovery.token_endpoint, `${issuerOf(base, applicationId)}/oauth/token`);
    const basic = Buffer.from(`${account.json.data.id}:${key.json.data.secret}`).toString("base64");
    const response = await fetch(discovery.token_endpoint, {
      method: "POST",
      headers: { authorization: `Basic ${basic}`, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "client_credentials", scope: "invoices:read" }),
    });
    const answer = await response.json();
    assert.equal(response.status, 200, JSON.stringify(answer));
    assert.equal(answer.token_type, "Bearer");

    const jwks = createRemoteJWKSet(new URL(discovery.jwks_uri));
    const { payload, protectedHeader } = await jwtVerify(answer.access_token, jwks, {
      ...verifyOptions(base, applicationId),
      typ: "at+jwt",
      requiredClaims: ["client_id", "scope", "jti", "iat", "exp", "sub"],
    });
    assert.equal(protectedHeader.typ, "at+jwt");
    assert.equal(payload.sub, account.json.data.id);
    assert.equal(payload.client_id, account.json.data.id);
    assert.equal(payload.scope, "invoices:read");
    // A verifier expecting an end user's token (typ JWT) refuses it.
    await assert.rejects(jwtVerify(answer.access_token, jwks, { ...verifyOptions(base, applicationId), typ: "JWT" }), errors.JWTClaimValidationFailed);
  } finally {
    gatehouse.stop();
  }
});
