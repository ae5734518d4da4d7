// The peer for bench/peer.sh: oidc-provider (in-memory adapter) issuing
// EdDSA JWT access tokens by client_credentials, one process or a cluster.
//
//   node server.mjs <port> <workers> <client_id> <client_secret>
//
// Prints "ready" once every worker listens.
import cluster from "node:cluster";
import { generateKeyPairSync } from "node:crypto";

const [port, workers, clientId, clientSecret] = process.argv.slice(2);

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
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: "client_secret_basic",
        id_token_signed_response_alg: "EdDSA",
      },
    ],
    scopes: ["a", "b"],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => "https://api.example",
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: "a b",
          audience: "https://api.example",
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "EdDSA" } },
        }),
      },
    },
  });
  provider.listen(Number(port), "127.0.0.1", () => {
    if (process.send) process.send("listening");
    else process.stdout.write("ready\n");
  });
}
