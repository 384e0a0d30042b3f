/**
 * The fast-path baseline for `webhook_bench.ts`: a bare Deno TLS server that
 * answers every POST with a fixed allowing AdmissionReview, doing nothing
 * else. Usage: deno run --allow-net --allow-read _echo_server.ts <certDir> <port>
 *
 * @module
 */
const [dir, port] = Deno.args;
const body = JSON.stringify({
  apiVersion: "admission.k8s.io/v1",
  kind: "AdmissionReview",
  response: { uid: "x", allowed: true },
});
Deno.serve({
  hostname: "127.0.0.1",
  port: Number(port),
  cert: await Deno.readTextFile(`${dir}/tls.crt`),
  key: await Deno.readTextFile(`${dir}/tls.key`),
  onListen: () => console.log("listening"),
}, async (request) => {
  await request.arrayBuffer();
  return new Response(body, {
    headers: { "content-type": "application/json" },
  });
});
