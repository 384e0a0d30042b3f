/**
 * Run by `server_test.ts` as a child process with the webhook's permissions
 * and flags (`--allow-net --allow-read --allow-env`, nothing unstable):
 * serves HTTPS with `serveTls`, fetches `/` from itself, prints the answer
 * and shuts down.
 *
 *   deno run --allow-net --allow-read --allow-env lib/_test_serve_tls_child.ts <certFile> <keyFile>
 *
 * @module
 */
import { createLogger } from "./log.ts";
import { serveTls } from "./server.ts";

const [certFile, keyFile] = Deno.args;
if (certFile === undefined || keyFile === undefined) {
  throw new TypeError("usage: _test_serve_tls_child.ts <certFile> <keyFile>");
}
const server = await serveTls(
  { hostname: "127.0.0.1", port: 0 },
  () => new Response("hello from serveTls"),
  { certFile, keyFile, log: createLogger(), reloadIntervalMs: 60_000 },
);
const client = Deno.createHttpClient({
  caCerts: [await Deno.readTextFile(certFile)],
});
try {
  const response = await fetch(`https://127.0.0.1:${server.port}/`, {
    client,
  });
  console.log(await response.text());
} finally {
  client.close();
  await server.shutdown();
}
