// Regenerates generated/schema.d.ts from the OpenAPI document the Gatehouse
// binary prints (`gatehouse openapi`, the same document as GET
// /v1/openapi.json). GATEHOUSE_BIN selects the binary, as in tests/interop.
// Nothing generated is committed: every check starts from the binary, so a
// document that drifts from what flows.ts does breaks `tsc`.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const bin = process.env.GATEHOUSE_BIN ?? here("../../target/debug/gatehouse");

const printed = spawnSync(bin, ["openapi"], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
if (printed.error) throw new Error(`cannot run ${bin} openapi: ${printed.error.message}`);
if (printed.status !== 0) throw new Error(`${bin} openapi exited ${printed.status}: ${printed.stderr}`);
const document = JSON.parse(printed.stdout);
if (typeof document.openapi !== "string" || !document.openapi.startsWith("3.1")) {
  throw new Error(`${bin} openapi did not print an OpenAPI 3.1 document`);
}

mkdirSync(here("generated"), { recursive: true });
writeFileSync(here("generated/schema.json"), JSON.stringify(document, null, 2) + "\n");
const generated = spawnSync(
  process.execPath,
  [here("node_modules/openapi-typescript/bin/cli.js"), here("generated/schema.json"), "-o", here("generated/schema.d.ts")],
  { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
);
process.stdout.write(generated.stdout);
process.stderr.write(generated.stderr);
if (generated.status !== 0) throw new Error(`openapi-typescript exited ${generated.status}`);
