// A webhook receiver for benchmarks: answers 204 on keep-alive connections
// and reports how many deliveries arrived between the first and the last.
import { createServer } from "node:http";

let count = 0;
let first = 0;
let last = 0;
const server = createServer((req, res) => {
  if (req.url === "/reset") {
    count = 0;
    res.writeHead(204);
    return res.end();
  }
  if (req.url === "/stats") {
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify({ count, seconds: (last - first) / 1000 }));
  }
  req.resume();
  req.on("end", () => {
    const now = performance.now();
    if (count === 0) first = now;
    last = now;
    count += 1;
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => console.log(server.address().port));
