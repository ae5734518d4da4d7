// A program written against the client generated from Gatehouse's OpenAPI
// document (openapi-typescript types, openapi-fetch calls). Every request and
// every field read goes through the generated types, with no `any` and no
// casts, so `tsc` fails when the document stops describing what this program
// does. At run time each answer is also checked against the document
// (conformance.ts): its status must be declared and its body must match.
//
// `run` performs a management flow with the secret key and an end-user flow,
// throws with a clear message on anything unexpected, and returns a summary.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import createClient, { type Middleware } from "openapi-fetch";

import { Document } from "./conformance.js";
import type { components, paths } from "./generated/schema.js";

type ErrorEnvelope = components["schemas"]["ErrorEnvelope"];
type ErrorCode = components["schemas"]["Error"]["code"];
type ApiKeyView = components["schemas"]["ApiKeyView"];
type AuditRow = components["schemas"]["AuditRow"];

export interface RunOptions {
  /** `http://127.0.0.1:<port>` of a running Gatehouse. */
  base: string;
  applicationId: string;
  /** A secret key of that application with `admin` and `audit:read`. */
  secretKey: string;
}

export interface Summary {
  management: {
    keyId: string;
    keyPrefix: string;
    listedKeys: number;
    webhookId: string;
    webhookStatus: string;
    deliveredEvent: string;
    deliveryStatus: string;
    auditRows: number;
    auditCreatedSeq: number;
    missingKeyCode: ErrorCode;
    invalidUrlCode: ErrorCode;
    badLimitCode: ErrorCode;
    badLimitField: string;
  };
  endUser: {
    userId: string;
    sessionId: string;
    refreshedSessionId: string;
    personalKeyId: string;
    personalKeyPrefix: string;
    listedPersonalKeys: number;
    signedOutActive: boolean;
    duplicateSignUpCode: ErrorCode;
    afterSignOutCode: ErrorCode;
  };
  /** Answers checked against the document at run time. */
  checkedAnswers: number;
}

class FlowError extends Error {}

function fail(message: string): never {
  throw new FlowError(message);
}

function expect(condition: boolean, message: string): asserts condition {
  if (!condition) fail(message);
}

/** The success answer of a call that must answer `status`. */
function ok<T, E>(what: string, status: number, result: { data?: T; error?: E; response: Response }): T {
  if (result.response.status !== status || result.data === undefined) {
    fail(`${what}: expected ${status}, got ${result.response.status} ${JSON.stringify(result.error ?? result.data ?? null)}`);
  }
  return result.data;
}

/**
 * The error envelope of a call that must fail with `status` and `code`.
 * (openapi-fetch hands out `Readable<ErrorEnvelope>`, whose helper drops keys
 * typed exactly `null`, such as the envelope's `data: null`; the run-time
 * conformance check still requires it.)
 */
function refused<T, E extends Pick<ErrorEnvelope, "success" | "error" | "meta">>(
  what: string,
  status: number,
  code: ErrorCode,
  result: { data?: T; error?: E; response: Response },
): E {
  const envelope = result.error;
  if (result.response.status !== status || envelope === undefined) {
    fail(`${what}: expected ${status} ${code}, got ${result.response.status} ${JSON.stringify(result.data ?? envelope ?? null)}`);
  }
  expect(envelope.success === false, `${what}: not an error envelope: ${JSON.stringify(envelope)}`);
  expect(envelope.error.code === code, `${what}: expected error code ${code}, got ${envelope.error.code} (${envelope.error.message})`);
  expect(envelope.error.message.length > 0, `${what}: an error without a message`);
  expect(envelope.meta.request_id.length > 0, `${what}: an error without meta.request_id`);
  return envelope;
}

/** Checks every answer against the document the server publishes. */
function conformance(document: Document, counter: { checked: number }): Middleware {
  return {
    async onResponse({ request, schemaPath, response }) {
      const declared = document.response(request.method, schemaPath, response.status);
      if ("problem" in declared) fail(declared.problem);
      const body: unknown = await response.clone().json();
      const problems = document.check(toJson(body), declared.schema);
      if (problems.length > 0) {
        fail(`${request.method} ${schemaPath} ${response.status} does not match the document:\n  ${problems.join("\n  ")}`);
      }
      counter.checked++;
      return undefined;
    },
  };
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function toJson(value: unknown): Json {
  if (value === null || typeof value === "boolean" || typeof value === "number" || typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(toJson);
  if (typeof value === "object") {
    const out: { [key: string]: Json } = {};
    for (const [k, v] of Object.entries(value)) out[k] = toJson(v);
    return out;
  }
  return fail(`not JSON: ${String(value)}`);
}

/** A local receiver for webhook deliveries, on 127.0.0.1 only. */
async function receiver(): Promise<{ url: string; events: string[]; close: () => Promise<void> }> {
  const events: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      try {
        const body: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        if (typeof body === "object" && body !== null && "type" in body && typeof body.type === "string") {
          events.push(body.type);
        }
      } catch {}
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") fail("webhook receiver: no port");
  const { port }: AddressInfo = address;
  return {
    url: `http://127.0.0.1:${port}/gatehouse-events`,
    events,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function managementFlow(options: RunOptions, middleware: Middleware): Promise<Summary["management"]> {
  const api = createClient<paths>({
    baseUrl: options.base,
    headers: { authorization: `Bearer ${options.secretKey}` },
  });
  api.use(middleware);
  const app = { header: { "x-application-id": options.applicationId } };

  // Create a secret key.
  const created = ok(
    "POST /v1/api-keys",
    201,
    await api.POST("/v1/api-keys", {
      params: app,
      body: { name: "typed-client deployer", scopes: ["users:read", "audit:read"], expires_in_days: 30 },
    }),
  );
  const key = created.data;
  expect(created.success, "create key: not a success envelope");
  expect(/^sk_test_[0-9A-Za-z]{38}$/.test(key.secret), `create key: secret ${key.secret} is not sk_test_…`);
  expect(key.prefix === key.secret.slice(0, 12), `create key: prefix ${key.prefix} is not the secret's first 12 characters`);
  expect(key.active && key.revoked_at === null, "create key: a new key is active and unrevoked");
  expect([...key.scopes].sort().join(",") === "audit:read,users:read", `create key: scopes ${key.scopes.join(",")}`);
  expect(typeof key.expires_at === "string", "create key: expires_in_days gives an expires_at");
  expect(created.meta.request_id.length > 0, "create key: meta.request_id");

  // List keys: the new one is there, without its secret.
  const listed = ok("GET /v1/api-keys", 200, await api.GET("/v1/api-keys", { params: { ...app, query: { limit: 100 } } }));
  const found: ApiKeyView | undefined = listed.data.find((k) => k.id === key.id);
  expect(found !== undefined, `list keys: ${key.id} is not listed`);
  expect(found.name === "typed-client deployer" && found.prefix === key.prefix, "list keys: name and prefix");
  expect(!("secret" in found), "list keys: a listed key carries no secret");
  expect(typeof listed.meta.has_more === "boolean", "list keys: meta.has_more on a list");

  // A typed 404: an unknown key id.
  const missing = refused(
    "GET /v1/api-keys/{unknown}",
    404,
    "not_found",
    await api.GET("/v1/api-keys/{key_id}", {
      params: { ...app, path: { key_id: "01890000-0000-7000-8000-000000000000" } },
    }),
  );

  // Register a webhook on a local receiver; a development application allows http.
  const events = await receiver();
  try {
    const hook = ok(
      "POST /v1/webhooks",
      201,
      await api.POST("/v1/webhooks", {
        params: app,
        body: { url: events.url, event_types: ["api_key"], description: "typed client" },
      }),
    ).data;
    expect(hook.url === events.url, `webhook: url ${hook.url}`);
    expect(hook.secret.startsWith("whsec_"), "webhook: secret is whsec_…");
    expect(hook.status === "active", `webhook: status ${hook.status}`);
    expect(hook.event_types.join(",") === "api_key", `webhook: event_types ${hook.event_types.join(",")}`);

    // A typed 422: a url that is not http(s).
    const invalid = refused(
      "POST /v1/webhooks (ftp url)",
      422,
      "invalid_url",
      await api.POST("/v1/webhooks", { params: app, body: { url: "ftp://127.0.0.1/hook" } }),
    );

    // Revoking the key is an api_key event: it reaches the receiver and the deliveries.
    const revoked = ok(
      "POST /v1/api-keys/{id}/revoke",
      200,
      await api.POST("/v1/api-keys/{key_id}/revoke", { params: { ...app, path: { key_id: key.id } } }),
    ).data;
    expect(!revoked.active && typeof revoked.revoked_at === "string", "revoke: the key is inactive with revoked_at");

    let deliveryStatus = "none";
    let deliveredEvent = "none";
    for (let i = 0; i < 200 && deliveryStatus !== "succeeded"; i++) {
      const deliveries = ok(
        "GET /v1/webhooks/{id}/deliveries",
        200,
        await api.GET("/v1/webhooks/{webhook_id}/deliveries", { params: { ...app, path: { webhook_id: hook.id } } }),
      ).data;
      const first = deliveries[0];
      if (first !== undefined) {
        deliveryStatus = first.status;
        deliveredEvent = first.event_type;
      }
      if (deliveryStatus !== "succeeded") await sleep(50);
    }
    expect(deliveryStatus === "succeeded", `webhook: the api_key.revoked delivery is ${deliveryStatus}`);
    expect(events.events.includes("api_key.revoked"), `webhook: the receiver got ${events.events.join(",")}`);

    // The audit export, filtered by type family, shows the key's creation.
    const exported = ok(
      "GET /v1/audit-logs/export",
      200,
      await api.GET("/v1/audit-logs/export", { params: { ...app, query: { type: "api_key", limit: 1000 } } }),
    ).data;
    expect(exported.every((row) => row.type.startsWith("api_key.")), "audit: the type filter lets other types through");
    const creation: AuditRow | undefined = exported.find((row) => row.type === "api_key.created" && row.aggregate_id === key.id);
    expect(creation !== undefined, `audit: no api_key.created row for ${key.id} in ${JSON.stringify(exported.map((r) => r.type))}`);
    expect(creation.actor_kind === "api_key" && typeof creation.actor_id === "string", "audit: made with a secret key");
    expect(/^[0-9a-f]{64}$/.test(creation.hash) && /^[0-9a-f]{64}$/.test(creation.prev_hash), "audit: chain hashes");
    const seqs = exported.map((row) => row.seq);
    expect(seqs.every((seq, i) => i === 0 || seq > (seqs[i - 1] ?? 0)), "audit: rows are in seq order");

    // A typed 422 with details: an export limit out of range.
    const badLimit = refused(
      "GET /v1/audit-logs/export?limit=5000",
      422,
      "validation_failed",
      await api.GET("/v1/audit-logs/export", { params: { ...app, query: { limit: 5000 } } }),
    );
    const issue = badLimit.error.details?.[0];
    expect(issue !== undefined, "export limit: validation_failed names the field");

    const webhooks = ok("GET /v1/webhooks", 200, await api.GET("/v1/webhooks", { params: app })).data;
    const listedHook = webhooks.find((w) => w.id === hook.id);
    expect(listedHook !== undefined && !("secret" in listedHook), "webhooks: listed, without its secret");

    return {
      keyId: key.id,
      keyPrefix: key.prefix,
      listedKeys: listed.data.length,
      webhookId: hook.id,
      webhookStatus: hook.status,
      deliveredEvent,
      deliveryStatus,
      auditRows: exported.length,
      auditCreatedSeq: creation.seq,
      missingKeyCode: missing.error.code,
      invalidUrlCode: invalid.error.code,
      badLimitCode: badLimit.error.code,
      badLimitField: issue.field,
    };
  } finally {
    await events.close();
  }
}

async function endUserFlow(options: RunOptions, middleware: Middleware): Promise<Summary["endUser"]> {
  // End-user routes carry the access token per call, never the secret key.
  const auth = createClient<paths>({ baseUrl: options.base });
  auth.use(middleware);
  const app = { "x-application-id": options.applicationId };
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const email = `typed-${Date.now()}@example.com`;
  const password = "correct horse battery staple";

  const signedUp = ok(
    "POST /v1/auth/sign-up",
    201,
    await auth.POST("/v1/auth/sign-up", { params: { header: app }, body: { email, password } }),
  ).data;
  expect(signedUp.user.email === email, `sign-up: email ${signedUp.user.email}`);
  expect(signedUp.session.user_id === signedUp.user.id && signedUp.session.active, "sign-up: an active session of the user");
  expect(signedUp.token_type === "Bearer" && signedUp.expires_in > 0, "sign-up: a bearer token that expires");
  expect(signedUp.access_token.split(".").length === 3, "sign-up: the access token is a JWT");
  expect(signedUp.user.has_password, "sign-up: has_password");

  const duplicate = refused(
    "POST /v1/auth/sign-up (same email)",
    409,
    "conflict",
    await auth.POST("/v1/auth/sign-up", { params: { header: app }, body: { email, password } }),
  );

  const me = ok(
    "GET /v1/auth/me",
    200,
    await auth.GET("/v1/auth/me", { params: { header: app }, headers: bearer(signedUp.access_token) }),
  ).data;
  expect(me.user.id === signedUp.user.id && me.session.id === signedUp.session.id, "me: the same user and session");
  expect(me.organizations.length === 0, "me: no organizations yet");

  const refreshed = ok(
    "POST /v1/auth/token",
    200,
    await auth.POST("/v1/auth/token", { params: { header: app }, body: { refresh_token: signedUp.refresh_token } }),
  ).data;
  expect(refreshed.refresh_token !== signedUp.refresh_token, "refresh: the refresh token rotates");
  expect(refreshed.session.id === signedUp.session.id, "refresh: the same session");
  const access = refreshed.access_token;

  const personal = ok(
    "POST /v1/auth/me/api-keys",
    201,
    await auth.POST("/v1/auth/me/api-keys", {
      params: { header: app },
      headers: bearer(access),
      body: { name: "laptop", scopes: ["read"] },
    }),
  ).data;
  expect(/^uk_test_[0-9A-Za-z]{38}$/.test(personal.secret), `personal key: ${personal.secret} is not uk_test_…`);
  expect(personal.active && personal.expires_at === null, "personal key: active, never expires");

  const personalKeys = ok(
    "GET /v1/auth/me/api-keys",
    200,
    await auth.GET("/v1/auth/me/api-keys", { params: { header: app }, headers: bearer(access) }),
  ).data;
  expect(personalKeys.some((k) => k.id === personal.id), "personal keys: the new key is listed");

  const signedOut = ok(
    "POST /v1/auth/sign-out",
    200,
    await auth.POST("/v1/auth/sign-out", { params: { header: app }, headers: bearer(access) }),
  ).data;
  expect(signedOut.id === signedUp.session.id, "sign-out: ends this session");
  expect(!signedOut.active && typeof signedOut.revoked_at === "string", "sign-out: the session is inactive");

  const afterSignOut = refused(
    "GET /v1/auth/me/api-keys after sign-out",
    401,
    "unauthenticated",
    await auth.GET("/v1/auth/me/api-keys", { params: { header: app }, headers: bearer(access) }),
  );

  return {
    userId: signedUp.user.id,
    sessionId: signedUp.session.id,
    refreshedSessionId: refreshed.session.id,
    personalKeyId: personal.id,
    personalKeyPrefix: personal.prefix,
    listedPersonalKeys: personalKeys.length,
    signedOutActive: signedOut.active,
    duplicateSignUpCode: duplicate.error.code,
    afterSignOutCode: afterSignOut.error.code,
  };
}

export async function run(options: RunOptions): Promise<Summary> {
  // The document the server publishes (the one the types were generated from).
  const published = await fetch(`${options.base}/v1/openapi.json`);
  expect(published.status === 200, `GET /v1/openapi.json: ${published.status}`);
  const body: unknown = await published.json();
  expect(typeof body === "object" && body !== null && !Array.isArray(body), "GET /v1/openapi.json: not an object");
  const counter = { checked: 0 };
  const middleware = conformance(new Document(Object.fromEntries(Object.entries(body))), counter);

  const management = await managementFlow(options, middleware);
  const endUser = await endUserFlow(options, middleware);
  return { management, endUser, checkedAnswers: counter.checked };
}
