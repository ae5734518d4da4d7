// The peer for bench/peer.sh: oidc-provider (in-memory adapter) issuing
// EdDSA JWT access tokens by client_credentials and by refresh-token
// rotation, one process or a cluster.
//
//   node server.mjs <port> <workers> <client_id> <client_secret> [<refresh tokens file>]
//
// With a file (one process only: the in-memory adapter is per process), it
// first writes 16 refresh tokens there, one a line, each of its own grant
// as an authorization-code flow with offline_access would have left it.
// Prints "ready" once every worker listens.
import cluster from "node:cluster";
import { generateKeyPairSync } from "node:crypto";

const [port, workers, clientId, clientSecret, refreshTokensFile] = process.argv.slice(2);
const resource = "https://api.example";

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
        redirect_uris: ["https://client.example/callback"],
        token_endpoint_auth_method: "client_secret_basic",
        id_token_signed_response_alg: "EdDSA",
      },
    ],
    scopes: ["a", "b", "offline_access"],
    // Every refresh rotates, as Gatehouse's do.
    rotateRefreshToken: true,
    findAccount: (ctx, accountId) => ({ accountId, claims: () => ({ sub: accountId }) }),
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
  if (refreshTokensFile) {
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
    writeFileSync(refreshTokensFile, tokens.join("\n") + "\n");
  }
  provider.listen(Number(port), "127.0.0.1", () => {
    if (process.send) process.send("listening");
    else process.stdout.write("ready\n");
  });
}
