// A real OpenID provider for Gatehouse's provider sign-in test: the
// certified `oidc-provider` package with its development login and consent
// pages (any login, any password), on 127.0.0.1.
//
//   node oidc_provider.mjs '<json config>'
//
// config: {port, clients: [{client_id, client_secret, redirect_uris}], record?}:
// with `record`, every PKCE verifier the token endpoint receives is appended
// to that file (a test checks that no log of Gatehouse shows one).
// The login names the account: `<name>` has the verified email
// `<name>@example.com`; `unverified-<name>` has it unverified; `noemail-<name>`
// has none; a login with an `@` is that address, verified. The `profile`
// scope adds `name` (`<login> Example`), `department` (`Research`) and,
// as Microsoft Entra ID gives it, `preferred_username`
// (`<name>@example.com` whatever the email). Prints "ready" once it
// listens; runs until killed.
import { appendFileSync } from "node:fs";
import Provider from "oidc-provider";
import { exportJWK, generateKeyPair } from "jose";

// stdout carries only "ready" (the caller may stop reading it); the
// provider's own notices go to stderr.
console.log = console.info = console.warn = (...args) => console.error(...args);

const config = JSON.parse(process.argv[2]);
const issuer = `http://127.0.0.1:${config.port}`;

const { privateKey } = await generateKeyPair("RS256", { extractable: true });
const signing = { ...(await exportJWK(privateKey)), alg: "RS256", use: "sig", kid: "test-rs256" };

const provider = new Provider(issuer, {
  jwks: { keys: [signing] },
  clients: config.clients.map((client) => ({
    ...client,
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_post",
  })),
  claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name", "department", "preferred_username"] },
  scopes: ["openid", "email", "profile"],
  async findAccount(_ctx, id) {
    const email = id.includes("@")
      ? id
      : id.startsWith("noemail-")
        ? undefined
        : `${id.replace(/^unverified-/, "")}@example.com`;
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          email,
          email_verified: email ? !id.startsWith("unverified-") : undefined,
          name: `${id} Example`,
          department: "Research",
          preferred_username: `${id.replace(/^(unverified|noemail)-/, "").split("@")[0]}@example.com`,
        };
      },
    };
  },
});
if (config.record) {
  provider.use(async (ctx, next) => {
    await next();
    const verifier = ctx.oidc?.params?.code_verifier;
    if (ctx.path === "/token" && verifier) appendFileSync(config.record, `${verifier}\n`);
  });
}
provider.on("server_error", (_ctx, error) => console.error("oidc-provider:", error));

provider.listen(config.port, "127.0.0.1", () => process.stdout.write("ready\n"));
