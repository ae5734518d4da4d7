// Posts signed `account.updated` events (Stripe's format; HMAC-SHA256 of
// "{t}.{body}" with the endpoint secret) to /v1/billing/processor-webhooks
// from CONCURRENCY loops for SECONDS, each event new (its own id, a later
// `created`), and prints how many were applied per second. Each account
// carries `metadata.gatehouse_application_id` = APPLICATION (which has
// claimed ACCOUNT): without it an event is only recorded as unmatched.
//   node bench/processor_events.mjs BASE SECRET ACCOUNT APPLICATION [CONCURRENCY=16] [SECONDS=10]
import { createHmac } from "node:crypto";

const [base, secret, account, application, concurrency = "16", seconds = "10"] = process.argv.slice(2);
if (!application) throw new Error("usage: processor_events.mjs BASE SECRET ACCOUNT APPLICATION [CONCURRENCY] [SECONDS]");
const until = Date.now() + Number(seconds) * 1000;
let next = 0;
let applied = 0;
let refused = 0;

function signed(n) {
  const body = JSON.stringify({
    id: `evt_bench_${n}`,
    type: "account.updated",
    created: 1_800_000_000 + n,
    data: {
      object: {
        id: account,
        charges_enabled: n % 2 === 0,
        payouts_enabled: true,
        details_submitted: true,
        metadata: { gatehouse_application_id: application },
      },
    },
  });
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac("sha256", secret).update(`${t}.${body}`).digest("hex");
  return { body, header: `t=${t},v1=${v1}` };
}

async function loop() {
  while (Date.now() < until) {
    const { body, header } = signed(next++);
    const answer = await fetch(`${base}/v1/billing/processor-webhooks`, {
      method: "POST",
      headers: { "content-type": "application/json", "stripe-signature": header },
      body,
    });
    await answer.arrayBuffer();
    if (answer.status === 200) applied++;
    else refused++;
  }
}

const started = Date.now();
await Promise.all(Array.from({ length: Number(concurrency) }, loop));
const elapsed = (Date.now() - started) / 1000;
console.log(`RESULT events_per_second=${Math.round(applied / elapsed)} applied=${applied} refused=${refused} concurrency=${concurrency}`);
