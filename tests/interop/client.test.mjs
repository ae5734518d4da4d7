// A typed client generated from the OpenAPI document (tests/client:
// openapi-typescript + openapi-fetch) type-checks a management flow and an
// end-user flow against types regenerated from this binary's document, then
// runs them against the real server, checking every answer against the
// document too. A document that drifts from the code fails here.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

import { startGatehouse } from "./gatehouse.mjs";

const client = fileURLToPath(new URL("../client/", import.meta.url));
const bin = resolve(process.env.GATEHOUSE_BIN ?? fileURLToPath(new URL("../../target/debug/gatehouse", import.meta.url)));
const env = { ...process.env, GATEHOUSE_BIN: bin };

function sh(what, command, args) {
  const result = spawnSync(command, args, { cwd: client, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}`;
  assert.equal(result.error, undefined, `${what}: ${result.error?.message}`);
  assert.equal(result.status, 0, `${what} failed:\n${output}`);
  return output;
}

// startGatehouse keeps the bootstrap key to itself: it mints the program's own
// admin key with it.
async function adminKeyOf(gatehouse) {
  const minted = await gatehouse.call("POST", "/v1/api-keys", { name: "typed client", scopes: ["admin", "audit:read"] });
  assert.equal(minted.status, 201, JSON.stringify(minted.json));
  return minted.json.data.secret;
}

test("the client generated from the OpenAPI document type-checks and runs both flows against the server", async (t) => {
  if (!existsSync(join(client, "node_modules", ".package-lock.json"))) {
    sh("npm ci in tests/client", "npm", ["ci", "--no-audit", "--no-fund"]);
  }

  await t.test("npm run check: the types regenerated from `gatehouse openapi` type-check the program", () => {
    sh("npm run check (openapi-typescript, then tsc --noEmit)", "npm", ["run", "check"]);
  });

  const out = mkdtempSync(join(client, ".build-"));
  const gatehouse = await startGatehouse();
  try {
    sh("tsc (emit)", process.execPath, [
      join(client, "node_modules", "typescript", "bin", "tsc"),
      "-p", ".", "--noEmit", "false", "--outDir", out,
    ]);
    const { run } = await import(pathToFileURL(join(out, "flows.js")).href);

    const summary = await run({
      base: gatehouse.base,
      applicationId: gatehouse.applicationId,
      secretKey: await adminKeyOf(gatehouse),
    });
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

    const m = summary.management;
    assert.match(m.keyId, uuid);
    assert.match(m.keyPrefix, /^sk_test_[0-9A-Za-z]{4}$/);
    assert.ok(m.listedKeys >= 3, "the bootstrap key, the admin key and the new one are listed");
    assert.match(m.webhookId, uuid);
    assert.equal(m.webhookStatus, "active");
    assert.equal(m.deliveredEvent, "api_key.revoked");
    assert.equal(m.deliveryStatus, "succeeded");
    assert.ok(m.auditRows >= 2, "api_key.created and api_key.revoked at least");
    assert.ok(m.auditCreatedSeq >= 1);
    assert.equal(m.missingKeyCode, "not_found");
    assert.equal(m.invalidUrlCode, "invalid_url");
    assert.equal(m.badLimitCode, "validation_failed");
    assert.equal(m.badLimitField, "limit");

    const u = summary.endUser;
    assert.match(u.userId, uuid);
    assert.match(u.sessionId, uuid);
    assert.equal(u.refreshedSessionId, u.sessionId);
    assert.match(u.personalKeyId, uuid);
    assert.match(u.personalKeyPrefix, /^uk_test_[0-9A-Za-z]{4}$/);
    assert.equal(u.listedPersonalKeys, 1);
    assert.equal(u.signedOutActive, false);
    assert.equal(u.duplicateSignUpCode, "conflict");
    assert.equal(u.afterSignOutCode, "unauthenticated");

    assert.ok(summary.checkedAnswers >= 18, `${summary.checkedAnswers} answers checked against the document`);
  } finally {
    gatehouse.stop();
    rmSync(out, { recursive: true, force: true });
  }
});
