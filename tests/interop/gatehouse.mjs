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

export async function startGatehouse(extraEnv = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "gatehouse-interop-"));
  const port = await freePort();
  const env = {
    ...process.env,
    GATEHOUSE__STORAGE__DATA_DIR: dataDir,
    GATEHOUSE__SERVER__LISTEN: `127.0.0.1:${port}`,
    GATEHOUSE__WEBHOOKS__POLL_INTERVAL_MS: "20",
    RUST_LOG: "warn",
    ...extraEnv,
  };
  const boot = spawnSync(bin, ["bootstrap", "--name", "Interop"], { env, encoding: "utf8" });
  if (boot.status !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
  const { application_id, secret_key } = JSON.parse(boot.stdout);
  const child = spawn(bin, ["serve"], { env, stdio: ["ignore", "ignore", "inherit"] });
  const base = `http://127.0.0.1:${port}`;
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
