// openid-client (the certified OpenID Connect relying party library for
// node) against the application's issuer: discovery, userinfo,
// introspection and revocation, as a relying party and a resource server
// registered as OAuth clients would call them.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as client from "openid-client";

import { startGatehouse } from "./gatehouse.mjs";

async function signUp(base, applicationId, email) {
  const response = await fetch(`${base}/v1/auth/sign-up`, {
    method: "POST",
    headers: { "x-application-id": applicationId, "content-type": "application/json" },
    body: JSON.stringify({ email, password: "correct horse battery" }),
  });
  const json = await response.json();
  assert.equal(response.status, 201, JSON.stringify(json));
  return json.data;
}

test("openid-client discovers the issuer and calls userinfo, introspection and revocation", async () => {
  const gatehouse = await startGatehouse();
  try {
    const registered = await gatehouse.call("POST", "/v1/oauth-clients", {
      name: "openid-client",
      first_party: true,
      redirect_uris: ["http://127.0.0.1:3999/callback"],
    });
    assert.equal(registered.status, 201, JSON.stringify(registered.json));
    const { client_id, client_secret } = registered.json.data;

    const issuer = new URL(`${gatehouse.base}/v1/applications/${gatehouse.applicationId}`);
    const config = await client.discovery(issuer, client_id, client_secret, undefined, {
      execute: [client.allowInsecureRequests],
    });
    const metadata = config.serverMetadata();
    assert.equal(metadata.issuer, issuer.href);
    assert.equal(metadata.userinfo_endpoint, `${issuer.href}/oauth/userinfo`);

    const ada = await signUp(gatehouse.base, gatehouse.applicationId, "ada@example.com");
    const info = await client.fetchUserInfo(config, ada.access_token, ada.user.id);
    assert.equal(info.sub, ada.user.id);
    assert.equal(info.email, "ada@example.com");
    // The library checks the subject it expects.
    await assert.rejects(client.fetchUserInfo(config, ada.access_token, "someone-else"));

    const introspected = await client.tokenIntrospection(config, ada.access_token);
    assert.equal(introspected.active, true);
    assert.equal(introspected.sub, ada.user.id);
    const refresh = await client.tokenIntrospection(config, ada.refresh_token, { token_type_hint: "refresh_token" });
    assert.equal(refresh.active, true);
    assert.equal(refresh.token_type, "refresh_token");

    await client.tokenRevocation(config, ada.refresh_token);
    assert.equal((await client.tokenIntrospection(config, ada.access_token)).active, false);
    await assert.rejects(client.fetchUserInfo(config, ada.access_token, ada.user.id), (error) => {
      assert.equal(error.status, 401);
      assert.match(error.response.headers.get("www-authenticate"), /error="invalid_token"/);
      return true;
    });

    // A wrong secret is refused as the standard says.
    const wrong = await client.discovery(issuer, client_id, "ocs_test_wrong", undefined, {
      execute: [client.allowInsecureRequests],
    });
    // (RFC 6749 section 5.2: 401 with the scheme the client should use.)
    await assert.rejects(client.tokenIntrospection(wrong, ada.access_token), (error) => {
      assert.equal(error.status, 401);
      assert.equal(error.cause[0].scheme, "basic");
      return true;
    });
  } finally {
    gatehouse.stop();
  }
});
