// A scheduled signing-key rotation never breaks a verifier: jose's
// createRemoteJWKSet and PyJWT's PyJWKClient, each with its default cache,
// verify fresh tokens continuously from before the rotation until well
// after the new key has started signing, without one refusal. The JWKS
// max-age is 30 s here (jose will not refetch within 30 s of a fetch), so
// the next key is published 50 s (max-age + 20 s) before it signs.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";

import { startGatehouse } from "./gatehouse.mjs";

const MAX_AGE_SECONDS = 30;

async function post(base, applicationId, path, body) {
  const response = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "x-application-id": applicationId, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = await response.json();
  assert.equal(response.status, path.endsWith("sign-up") ? 201 : 200, JSON.stringify(json));
  return json.data;
}

// PyJWT in a process of its own, asked one token at a time.
function startPyJwt(jwksUrl, issuer, audience) {
  const script = new URL("./pyjwt_verifier.py", import.meta.url).pathname;
  const child = spawn("python3", [script, jwksUrl, issuer, audience], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => (await lines.next()).value;
  return {
    ready: next(),
    verify: async (token) => {
      child.stdin.write(`${token}\n`);
      return next();
    },
    stop: () => child.kill("SIGKILL"),
  };
}

test("jose and PyJWT verify every token through a scheduled rotation", { timeout: 180_000 }, async () => {
  const gatehouse = await startGatehouse({ GATEHOUSE__TOKENS__JWKS_MAX_AGE_SECONDS: String(MAX_AGE_SECONDS) });
  const issuer = `${gatehouse.base}/v1/applications/${gatehouse.applicationId}`;
  const jwksUrl = `${issuer}/.well-known/jwks.json`;
  const pyjwt = startPyJwt(jwksUrl, issuer, gatehouse.applicationId);
  try {
    assert.equal(await pyjwt.ready, "ready");
    const jose = createRemoteJWKSet(new URL(jwksUrl)); // jose's defaults: 30 s cooldown, 10 min cache
    const options = { issuer, audience: gatehouse.applicationId, algorithms: ["EdDSA"] };
    // One user; each refresh answers a token signed by the key current then.
    const signedUp = await post(gatehouse.base, gatehouse.applicationId, "/v1/auth/sign-up", {
      email: "ada@example.com",
      password: "correct horse battery",
    });
    let refreshToken = signedUp.refresh_token;
    const verifyFresh = async () => {
      const refreshed = await post(gatehouse.base, gatehouse.applicationId, "/v1/auth/token", {
        refresh_token: refreshToken,
      });
      refreshToken = refreshed.refresh_token;
      const token = refreshed.access_token;
      const kid = decodeProtectedHeader(token).kid;
      const joseAnswer = await jwtVerify(token, jose, options).then(
        () => "ok",
        (error) => `fail ${error.code}`,
      );
      assert.equal(joseAnswer, "ok", `jose refused a token of ${kid}`);
      assert.equal(await pyjwt.verify(token), `ok ${kid}`, `PyJWT refused a token of ${kid}`);
      return kid;
    };

    const first = await verifyFresh(); // both verifiers now hold the JWKS with the first key
    const rotated = await gatehouse.call("POST", `/v1/applications/${gatehouse.applicationId}/signing-keys/rotate`);
    assert.equal(rotated.status, 200, JSON.stringify(rotated.json));
    const { kid: next, signs_from } = rotated.json.data;
    const signsIn = Date.parse(signs_from) - Date.now();
    assert.ok(signsIn > MAX_AGE_SECONDS * 1000, `the next key signs in ${signsIn} ms`);

    const seen = new Set();
    const until = Date.parse(signs_from) + 10_000;
    let verified = 0;
    while (Date.now() < until) {
      seen.add(await verifyFresh());
      verified += 1;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.deepEqual([...seen].sort(), [first, next].sort(), "tokens of both keys were verified");
    assert.equal(await verifyFresh(), next);
    console.log(`rotation: ${verified} tokens verified by jose and PyJWT each, across the switch to ${next}`);
  } finally {
    pyjwt.stop();
    gatehouse.stop();
  }
});
