/**
 * The fast-path baselines for `webhook_bench.ts`: a bare TLS server that
 * answers every POST with a fixed allowing AdmissionReview, doing nothing
 * else: `Deno.serve`, or with `--node` Deno's `node:https` (the server the
 * webhook's bounded listener is built on, without its bounds).
 * Usage: deno run --allow-net --allow-read _echo_server.ts <certDir> <port> [--node]
 *
 * @module
 */
import { createServer } from "node:https";

const [dir, port, mode] = Deno.args;
const body = JSON.stringify({
  apiVersion: "admission.k8s.io/v1",
  kind: "AdmissionReview",
  response: { uid: "x", allowed: true },
});
const cert = await Deno.readTextFile(`${dir}/tls.crt`);
const key = await Deno.readTextFile(`${dir}/tls.key`);
if (mode === "--node") {
  const server = createServer({ cert, key }, (req, res) => {
    req.resume();
    req.once("end", () => {
      res.writeHead(200, {
        "content-type": "application/json",
        "content-length": String(body.length),
      });
      res.end(body);
    });
  });
  server.listen(
    { host: "127.0.0.1", port: Number(port) },
    () => console.log("listening"),
  );
} else {
  Deno.serve({
    hostname: "127.0.0.1",
    port: Number(port),
    cert,
    key,
    onListen: () => console.log("listening"),
  }, async (request) => {
    await request.arrayBuffer();
    return new Response(body, {
      headers: { "content-type": "application/json" },
    });
  });
}
