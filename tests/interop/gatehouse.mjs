// Starts the real gatehouse binary on a fresh data directory for a test.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const bin = process.env.GATEHOUSE_BIN ?? new URL("../../target/debug/gatehouse", import.meta.url).pathname;

export async function freePort() {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// `extraEnv`: more settings, or a function of the server's base URL that answers them.
export async function startGatehouse(extraEnv = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "gatehouse-interop-"));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    ...process.env,
    GATEHOUSE__STORAGE__DATA_DIR: dataDir,
    GATEHOUSE__SERVER__LISTEN: `127.0.0.1:${port}`,
    GATEHOUSE__WEBHOOKS__POLL_INTERVAL_MS: "20",
    RUST_LOG: "warn",
    ...(typeof extraEnv === "function" ? extraEnv(base) : extraEnv),
  };
  const boot = spawnSync(bin, ["bootstrap", "--name", "Interop"], { env, encoding: "utf8" });
  if (boot.status !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
  const { application_id, secret_key } = JSON.parse(boot.stdout);
  const child = spawn(bin, ["serve"], { env, stdio: ["ignore", "ignore", "inherit"] });
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  const call = async (method, path, body) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${secret_key}`,
        "x-application-id": application_id,
        ...(body ? { "content-type": "application/json" } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: response.status, json: await response.json() };
  };
  const stop = () => {
    child.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { base, applicationId: application_id, call, stop };
}

// The real OpenID provider (oidc_provider.mjs) on `port`, its one client
// calling back to `callback`; answers a function that stops it.
export async function startOidcProvider(port, clientId, clientSecret, callback) {
  const config = { port, clients: [{ client_id: clientId, client_secret: clientSecret, redirect_uris: [callback] }] };
  const script = new URL("./oidc_provider.mjs", import.meta.url).pathname;
  const child = spawn(process.execPath, [script, JSON.stringify(config)], { stdio: ["ignore", "pipe", "ignore"] });
  await new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`oidc-provider exited with ${code}`)));
    child.stdout.once("data", resolve);
  });
  return () => child.kill("SIGKILL");
}

// Gatehouse whose application signs in with `google`, which is a real
// OpenID provider (oidc-provider) on loopback holding `client`
// (`{ id, secret }`); answers the server and a function that stops the provider.
export async function startGatehouseWithGoogle(client) {
  const providerPort = await freePort();
  const issuer = `http://127.0.0.1:${providerPort}`;
  const gatehouse = await startGatehouse((base) => googleAt(issuer, base));
  const callback = `${gatehouse.base}/v1/auth/oauth/google/callback`;
  const stopProvider = await startOidcProvider(providerPort, client.id, client.secret, callback);
  const google = await gatehouse.call("PUT", `/v1/applications/${gatehouse.applicationId}/providers/oauth`, {
    provider: "google",
    enabled: true,
    client_id: client.id,
    client_secret: client.secret,
  });
  if (google.status !== 200) throw new Error(`enabling google failed: ${JSON.stringify(google.json)}`);
  return { gatehouse, stopProvider };
}

// The settings that point Gatehouse's `google` provider at `issuer`.
export function googleAt(issuer, base) {
  return {
    GATEHOUSE__SERVER__PUBLIC_URL: base,
    GATEHOUSE__OAUTH__ENDPOINTS__GOOGLE__ISSUER: issuer,
    GATEHOUSE__OAUTH__ENDPOINTS__GOOGLE__AUTHORIZATION_URL: `${issuer}/auth`,
    GATEHOUSE__OAUTH__ENDPOINTS__GOOGLE__TOKEN_URL: `${issuer}/token`,
    GATEHOUSE__OAUTH__ENDPOINTS__GOOGLE__USERINFO_URL: `${issuer}/me`,
    GATEHOUSE__OAUTH__ENDPOINTS__GOOGLE__JWKS_URL: `${issuer}/jwks`,
  };
}
