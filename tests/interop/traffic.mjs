// Drives a started Gatehouse through the events its metrics count: sign-ups,
// sign-ins (good and bad), refreshes (good and reused), bad access tokens,
// bad secret keys, end-user reads, and a webhook delivered to a local receiver.
import { createServer } from "node:http";

export function startReceiver() {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      received++;
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}/hook`,
        received: () => received,
        close: () => server.close(),
      }),
    ),
  );
}

async function endUser(base, applicationId, method, path, { token, body } = {}) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      "x-application-id": applicationId,
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body ? { "content-type": "application/json" } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: response.status, json: await response.json().catch(() => null) };
}

let round = 0;

export async function generateTraffic(gatehouse) {
  const { base, applicationId: app } = gatehouse;
  const email = `metrics-${++round}@example.com`;
  const receiver = await startReceiver();
  try {
    const hook = await gatehouse.call("POST", "/v1/webhooks", { url: receiver.url, event_types: ["user"] });
    if (hook.status !== 201) throw new Error(`webhook: ${JSON.stringify(hook.json)}`);

    const password = "correct horse battery";
    const up = await endUser(base, app, "POST", "/v1/auth/sign-up", { body: { email, password } });
    if (up.status !== 201) throw new Error(`sign-up: ${JSON.stringify(up.json)}`);
    const signedIn = await endUser(base, app, "POST", "/v1/auth/sign-in", { body: { email, password } });
    await endUser(base, app, "POST", "/v1/auth/sign-in", { body: { email, password: "wrong one!" } });
    const { access_token, refresh_token } = signedIn.json.data;
    await endUser(base, app, "GET", "/v1/auth/me", { token: access_token });
    await endUser(base, app, "GET", "/v1/auth/me", { token: "not.a.jwt" });
    await endUser(base, app, "GET", "/v1/auth/me", { token: `${access_token.slice(0, -4)}AAAA` });
    // A refresh, then the rotated token again (reuse: the session ends).
    await endUser(base, app, "POST", "/v1/auth/token", { body: { refresh_token } });
    await endUser(base, app, "POST", "/v1/auth/token", { body: { refresh_token } });
    await endUser(base, app, "POST", "/v1/auth/token", { body: { refresh_token: "rt_unknown" } });
    await endUser(base, app, "GET", "/v1/auth/me", { token: access_token }); // session ended
    // Secret keys: a malformed one, another application's (unknown here)
    // and a revoked one (inactive).
    const other = await gatehouse.call("POST", "/v1/applications", { name: `other ${round}` });
    const revoked = await gatehouse.call("POST", "/v1/api-keys", { name: `revoked ${round}` });
    await gatehouse.call("POST", `/v1/api-keys/${revoked.json.data.id}/revoke`);
    for (const key of ["sk_test_nope", other.json.data.secret_key, revoked.json.data.secret]) {
      await fetch(`${base}/v1/api-keys`, { headers: { authorization: `Bearer ${key}`, "x-application-id": app } });
    }
    // Cache traffic: JWKS and discovery twice.
    for (let i = 0; i < 2; i++) {
      await fetch(`${base}/v1/applications/${app}/.well-known/jwks.json`);
      await fetch(`${base}/v1/applications/${app}/.well-known/openid-configuration`);
    }
    await fetch(`${base}/readyz`);
    await fetch(`${base}/no/such/route`);
    // More sign-ins at once than the hashing threads and queue admit (the
    // server is started with a small password_hash_concurrency and queue):
    // the surplus is shed with 503.
    await Promise.all(
      [...Array(6)].map((_, i) =>
        endUser(base, app, "POST", "/v1/auth/sign-in", { body: { email: `nobody-${round}-${i}@example.com`, password } }),
      ),
    );
    // The user.created event reaches the receiver.
    for (let i = 0; i < 200 && receiver.received() < 1; i++) await new Promise((r) => setTimeout(r, 25));
    if (receiver.received() < 1) throw new Error("no webhook delivery arrived");
  } finally {
    receiver.close();
  }
}

export async function scrapeMetrics(base) {
  // Histogram samples are folded into buckets on a scrape (and every 5 s).
  const response = await fetch(`${base}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return response.text();
}

// Names of the series families in a Prometheus text exposition.
export function exportedNames(text) {
  const names = new Set();
  for (const line of text.split("\n")) {
    const match = /^(?:# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) |([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ])/.exec(line);
    if (match) names.add(match[1] ?? match[2]);
  }
  return names;
}
