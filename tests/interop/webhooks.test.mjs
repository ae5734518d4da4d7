// The official Standard Webhooks library verifies Gatehouse's deliveries.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { Webhook } from "standardwebhooks";

import { startGatehouse } from "./gatehouse.mjs";

function startReceiver() {
  const deliveries = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      deliveries.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ url: `http://127.0.0.1:${server.address().port}/hook`, deliveries, close: () => server.close() }),
    ),
  );
}

async function waitFor(deliveries, count) {
  for (let i = 0; i < 200 && deliveries.length < count; i++) await new Promise((r) => setTimeout(r, 25));
  assert.ok(deliveries.length >= count, `expected ${count} deliveries, got ${deliveries.length}`);
}

test("deliveries verify with the standardwebhooks library, before and after a secret rotation", async () => {
  const gatehouse = await startGatehouse();
  const receiver = await startReceiver();
  try {
    const created = await gatehouse.call("POST", "/v1/webhooks", { url: receiver.url, event_types: ["api_key"] });
    assert.equal(created.status, 201);
    const secret = created.json.data.secret;

    const key = await gatehouse.call("POST", "/v1/api-keys", { name: "interop" });
    assert.equal(key.status, 201);
    await waitFor(receiver.deliveries, 1);
    const [first] = receiver.deliveries;
    const payload = new Webhook(secret).verify(first.body, first.headers);
    assert.equal(payload.type, "api_key.created");
    assert.equal(payload.data.aggregate_id, key.json.data.id);
    assert.throws(() => new Webhook(secret).verify(first.body.replace("interop", "intercept"), first.headers));
    assert.throws(() => new Webhook(secret).verify(first.body, { ...first.headers, "webhook-signature": "v1," }));

    const rotated = await gatehouse.call("POST", `/v1/webhooks/${created.json.data.id}/rotate-secret`);
    assert.equal(rotated.status, 200);
    await gatehouse.call("POST", "/v1/api-keys", { name: "after-rotation" });
    await waitFor(receiver.deliveries, 2);
    const second = receiver.deliveries[1];
    assert.equal(new Webhook(rotated.json.data.secret).verify(second.body, second.headers).type, "api_key.created");
    assert.equal(new Webhook(secret).verify(second.body, second.headers).type, "api_key.created");
  } finally {
    receiver.close();
    gatehouse.stop();
  }
});
