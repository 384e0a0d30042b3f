/**
 * Calling a handler written on Node's request and response (as the
 * webhook's admission handler is) from a test, the way a client does: over
 * loopback HTTP, one server per request, and the answer read whole.
 *
 * ```ts
 * import { requestNodeHandler } from "./mod.ts";
 *
 * const response = await requestNodeHandler(async (_req, res) => {
 *   res.end("hello");
 * }, "/");
 * console.log(await response.text()); // hello
 * ```
 *
 * @module
 */
import {
  createServer,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Sends one request (`init` as for `fetch`, POST unless it says otherwise)
 * for `path` to `handler`, served on 127.0.0.1 for this request alone, and
 * returns the answer with its body read. A handler that rejects gets a 500,
 * as the bounded TLS server gives; a body it left unread is discarded.
 */
export async function requestNodeHandler(
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  path: string,
  init: RequestInit = {},
): Promise<Response> {
  const server = createServer((req, res) => {
    res.once("finish", () => {
      if (!req.complete) req.resume();
    });
    handler(req, res).catch(() => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(500).end("Internal Server Error");
    });
  });
  await new Promise<void>((resolve) =>
    server.listen({ host: "127.0.0.1", port: 0 }, resolve)
  );
  const { port } = server.address() as AddressInfo;
  const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
  try {
    const answer = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: "POST",
      ...init,
      client,
    });
    const body = await answer.arrayBuffer();
    return new Response(answer.status === 204 ? null : body, {
      status: answer.status,
      headers: answer.headers,
    });
  } finally {
    client.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
