// The payment processor's own library signs the events: the official
// `stripe` package's test-header helper makes every `Stripe-Signature`
// here, so Gatehouse's verifier is checked against the processor's
// implementation, not against itself.
import assert from "node:assert/strict";
import { test } from "node:test";
import Stripe from "stripe";

import { startGatehouse } from "./gatehouse.mjs";

const secret = "whsec_interop_processor_secret";
const stripe = new Stripe("sk_test_interop_not_used");

const header = (payload, options = {}) =>
  stripe.webhooks.generateTestHeaderString({
    payload,
    secret: options.secret ?? secret,
    timestamp: options.timestamp ?? Math.floor(Date.now() / 1000),
  });

let counter = 0;
// The account's metadata names the application (what the customer sets on
// their own account at the processor): the proof that verifies the claim.
const accountUpdated = (account, applicationId, detailsSubmitted, created = Math.floor(Date.now() / 1000)) =>
  JSON.stringify({
    id: `evt_interop_${++counter}`,
    object: "event",
    type: "account.updated",
    created,
    data: {
      object: {
        id: account,
        object: "account",
        charges_enabled: detailsSubmitted,
        payouts_enabled: detailsSubmitted,
        details_submitted: detailsSubmitted,
        metadata: applicationId === null ? {} : { gatehouse_application_id: applicationId },
        requirements: { disabled_reason: detailsSubmitted ? null : "requirements.past_due" },
      },
    },
  });

async function deliver(base, payload, signature) {
  const response = await fetch(`${base}/v1/billing/processor-webhooks`, {
    method: "POST",
    headers: { "content-type": "application/json; charset=utf-8", "stripe-signature": signature },
    body: payload,
  });
  return { status: response.status, json: await response.json() };
}

test("events signed by the stripe library are verified as the processor means them", async () => {
  const gatehouse = await startGatehouse({ GATEHOUSE__BILLING__PROCESSOR_WEBHOOK_SECRET: secret });
  try {
    const { base, call, applicationId } = gatehouse;
    const account = `acct_interop${Date.now()}`;
    const claimed = await call("POST", "/v1/billing/connect", { processor_account_id: account });
    assert.equal(claimed.status, 200, JSON.stringify(claimed.json));
    assert.equal(claimed.json.data.verified, false);
    const connectStatus = async () => (await call("GET", "/v1/billing/connect/status")).json.data;
    const onboarded = async () => (await connectStatus()).onboarded;
    const now = Math.floor(Date.now() / 1000);
    const refusedCases = [];

    // Tampered body: signed one payload, sent another.
    const signedPayload = accountUpdated(account, applicationId, true);
    const tampered = signedPayload.replace('"details_submitted":true', '"details_submitted":false');
    assert.notEqual(tampered, signedPayload);
    refusedCases.push(["tampered body", tampered, header(signedPayload)]);
    const old = accountUpdated(account, applicationId, true);
    // A minute past the 300 s tolerance either way: `now` is read before the
    // requests, and a slow run must not carry a timestamp back inside it
    // (the exact bounds are the Rust tests').
    refusedCases.push(["old timestamp", old, header(old, { timestamp: now - 360 })]);
    const future = accountUpdated(account, applicationId, true);
    refusedCases.push(["future timestamp", future, header(future, { timestamp: now + 360 })]);
    const wrong = accountUpdated(account, applicationId, true);
    refusedCases.push(["wrong secret", wrong, header(wrong, { secret: "whsec_someone_else" })]);
    for (const [name, payload, signature] of refusedCases) {
      const reply = await deliver(base, payload, signature);
      assert.equal(reply.status, 400, `${name}: ${JSON.stringify(reply.json)}`);
      assert.equal(reply.json.error.code, "invalid_signature", name);
    }
    assert.equal(await onboarded(), false, "nothing changed");

    // Correctly signed, but the account's metadata names no application: not applied.
    const anonymous = accountUpdated(account, null, true);
    assert.equal((await deliver(base, anonymous, header(anonymous))).status, 200);
    assert.deepEqual(await connectStatus(), {
      charges_enabled: false, details_submitted: false, disabled_reason: null, onboarded: false,
      payouts_enabled: false, processor_account_id: account, verified: false,
    });

    // Two v1 values, one valid (the processor rolling its secret).
    const rolled = accountUpdated(account, applicationId, true);
    const valid = header(rolled, { timestamp: now });
    const stale = header(rolled, { timestamp: now, secret: "whsec_previous" });
    const v1Of = (h) => h.split(",").find((part) => part.startsWith("v1="));
    const both = `t=${now},${v1Of(stale)},${v1Of(valid)}`;
    const taken = await deliver(base, rolled, both);
    assert.equal(taken.status, 200, JSON.stringify(taken.json));
    assert.deepEqual(taken.json.data, { received: true });
    const verified = await connectStatus();
    assert.equal(verified.verified, true, JSON.stringify(verified));
    assert.equal(verified.onboarded, true);

    // Valid, as the library makes it: applied (an older state after it is not).
    const later = accountUpdated(account, applicationId, false, now + 1);
    const applied = await deliver(base, later, header(later));
    assert.equal(applied.status, 200, JSON.stringify(applied.json));
    assert.equal(await onboarded(), false);
    const earlier = accountUpdated(account, applicationId, true, now - 100);
    assert.equal((await deliver(base, earlier, header(earlier))).status, 200);
    assert.equal(await onboarded(), false, "an older event does not regress the status");
  } finally {
    gatehouse.stop();
  }
});
