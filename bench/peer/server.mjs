// The peer for bench/peer.sh: oidc-provider (in memory) issuing EdDSA JWT
// access tokens by client_credentials, by refresh-token rotation and by the
// authorization-code exchange with PKCE, and answering userinfo; one
// process or a cluster.
//
//   node server.mjs <port> <workers> <client_id> <client_secret> [<directory> <codes> <challenge>]
//
// With a directory (one process only: what it stores is in the process's
// memory), it first writes there what a relying party would hold after
// earlier flows, each of its own grant: `refresh_tokens` (16, one a line,
// as an authorization-code flow with offline_access leaves them), `codes`
// (<codes> authorization codes for the callback, PKCE S256 <challenge>,
// scope "openid email offline_access") and `userinfo_token` (an access
// token for userinfo). Prints "ready" once every worker listens.
import cluster from "node:cluster";
import { generateKeyPairSync } from "node:crypto";

const [port, workers, clientId, clientSecret, directory, codes, challenge] = process.argv.slice(2);
const resource = "https://api.example";
const callback = "https://client.example/callback";

// oidc-provider's own in-memory adapter keeps only the last 1,000 of each
// model (an LRU); the benchmark's codes outnumber that. A plain map.
const stored = new Map();
class MapAdapter {
  constructor(name) {
    this.name = name;
  }
  key(id) {
    return `${this.name}:${id}`;
  }
  async upsert(id, payload) {
    stored.set(this.key(id), payload);
  }
  async find(id) {
    return stored.get(this.key(id));
  }
  async findByUid() {
    return undefined;
  }
  async findByUserCode() {
    return undefined;
  }
  async consume(id) {
    const payload = stored.get(this.key(id));
    if (payload) payload.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id) {
    stored.delete(this.key(id));
  }
  async revokeByGrantId() {}
}

if (cluster.isPrimary && Number(workers) > 1) {
  // One key for every worker, as one deployment would have.
  const { privateKey } = generateKeyPairSync("ed25519");
  const jwk = JSON.stringify({ ...privateKey.export({ format: "jwk" }), alg: "EdDSA", use: "sig", kid: "bench" });
  let listening = 0;
  for (let i = 0; i < Number(workers); i++) {
    cluster.fork({ PEER_JWK: jwk }).on("message", () => {
      if (++listening === Number(workers)) process.stdout.write("ready\n");
    });
  }
} else {
  const { default: Provider } = await import("oidc-provider");
  const jwk = process.env.PEER_JWK
    ? JSON.parse(process.env.PEER_JWK)
    : { ...generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" }), alg: "EdDSA", use: "sig", kid: "bench" };
  const quiet = () => {};
  console.log = console.info = console.warn = quiet;
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    jwks: { keys: [jwk] },
    enabledJWA: { idTokenSigningAlgValues: ["EdDSA"] },
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        grant_types: ["client_credentials", "authorization_code", "refresh_token"],
        response_types: ["code"],
        redirect_uris: [callback],
        token_endpoint_auth_method: "client_secret_basic",
        id_token_signed_response_alg: "EdDSA",
      },
    ],
    adapter: MapAdapter,
    scopes: ["openid", "email", "a", "b", "offline_access"],
    // Every refresh rotates, as Gatehouse's do.
    rotateRefreshToken: true,
    findAccount: (ctx, accountId) => ({
      accountId,
      claims: () => ({ sub: accountId, email: `${accountId}@example.com`, email_verified: true }),
    }),
    claims: { openid: ["sub"], email: ["email", "email_verified"] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: "a b",
          audience: resource,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "EdDSA" } },
        }),
      },
    },
  });
  if (directory) {
    const { writeFileSync } = await import("node:fs");
    const client = await provider.Client.find(clientId);
    const tokens = [];
    for (let i = 0; i < 16; i++) {
      const accountId = `user-${i}`;
      const grant = new provider.Grant({ accountId, clientId });
      grant.addOIDCScope("offline_access");
      grant.addResourceScope(resource, "a b");
      const grantId = await grant.save();
      const token = new provider.RefreshToken({
        accountId, client, grantId, gty: "authorization_code", scope: "offline_access a b", resource,
      });
      tokens.push(await token.save());
    }
    writeFileSync(`${directory}/refresh_tokens`, tokens.join("\n") + "\n");

    const scope = "openid email offline_access";
    const minted = [];
    const authTime = Math.floor(Date.now() / 1000);
    for (let i = 0; i < Number(codes); i++) {
      const accountId = `user-${i}`;
      const grant = new provider.Grant({ accountId, clientId });
      grant.addOIDCScope(scope);
      grant.addResourceScope(resource, "a b");
      const grantId = await grant.save();
      const code = new provider.AuthorizationCode({
        accountId, client, grantId, scope, resource, authTime, redirectUri: callback,
        codeChallenge: challenge, codeChallengeMethod: "S256", nonce: "n",
      });
      minted.push(await code.save());
    }
    writeFileSync(`${directory}/codes`, minted.join("\n") + "\n");

    const grant = new provider.Grant({ accountId: "user-info", clientId });
    grant.addOIDCScope(scope);
    const grantId = await grant.save();
    const access = new provider.AccessToken({ accountId: "user-info", client, grantId, scope: "openid email", gty: "authorization_code" });
    writeFileSync(`${directory}/userinfo_token`, `${await access.save()}\n`);
  }
  provider.listen(Number(port), "127.0.0.1", () => {
    if (process.send) process.send("listening");
    else process.stdout.write("ready\n");
  });
}
