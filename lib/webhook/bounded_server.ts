/**
 * An HTTPS server whose connections are bounded: a TLS handshake timeout, a
 * timeout for reading a request head, an idle keep-alive timeout, a cap on
 * open connections, and a shutdown that closes idle and silent connections
 * at once, drains in-flight requests up to a deadline and then closes every
 * connection that is left.
 *
 * `Deno.serve` has none of these knobs (Deno 2.9): a client that connects
 * and sends nothing is held for ever, and `shutdown()` waits for it. So this
 * serves with `node:https`, whose server enforces them, and adapts its
 * requests and responses to a `Deno.ServeHandler`. It speaks HTTP/1.1 only.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo, Socket } from "node:net";

/** Limits on a server's connections; every field has a default. */
export interface ConnectionLimits {
  /**
   * Time a new connection has to complete its TLS handshake.
   * @default {5_000}
   */
  handshakeTimeoutMs?: number;
  /**
   * Time from a connection's handshake, or from the first byte of a later
   * request on it, to a complete request head; a slower client gets a 408
   * and is closed.
   * @default {5_000}
   */
  headerTimeoutMs?: number;
  /**
   * Time a whole request, head and body, has to arrive: a body trickled in
   * slower is cut off (a review holds memory permits while its body arrives).
   * @default {10_000}
   */
  requestTimeoutMs?: number;
  /**
   * Time a keep-alive connection may stay idle between requests; it is
   * announced to clients (`Keep-Alive: timeout=`), and the server closes the
   * connection about a second after it.
   * @default {60_000}
   */
  idleTimeoutMs?: number;
  /**
   * Open connections beyond which a new connection is closed at once.
   * @default {1_000}
   */
  maxConnections?: number;
  /**
   * Time `shutdown()` lets in-flight requests finish before it closes every
   * connection.
   * @default {8_000}
   */
  drainTimeoutMs?: number;
}

/** The defaults of {@linkcode ConnectionLimits}. */
export const DEFAULT_CONNECTION_LIMITS: Readonly<Required<ConnectionLimits>> =
  Object.freeze({
    handshakeTimeoutMs: 5_000,
    headerTimeoutMs: 5_000,
    requestTimeoutMs: 10_000,
    idleTimeoutMs: 60_000,
    maxConnections: 1_000,
    drainTimeoutMs: 8_000,
  });

/** A PEM certificate chain and its private key. */
export interface CertificatePair {
  /** PEM certificate chain. */
  cert: string;
  /** PEM private key. */
  key: string;
}

/** Options for {@linkcode serveBoundedTls}. */
export interface BoundedTlsOptions extends ConnectionLimits {
  /** The certificate to serve. */
  pem: CertificatePair;
  /**
   * Called with an error the handler threw (the client gets a 500), or one
   * the listening socket reported.
   */
  onError?: (error: unknown) => void;
}

/** A running {@linkcode serveBoundedTls} server. */
export interface BoundedTlsServer {
  /** The port it listens on (useful when bound to port 0). */
  readonly port: number;
  /**
   * Serves new connections with `pem`; open ones keep the certificate they
   * were accepted with.
   *
   * @throws {Error} If `pem` is not a usable certificate and key.
   */
  setCertificate(pem: CertificatePair): void;
  /**
   * Stops accepting and closes every connection that is not answering a
   * request at once, lets in-flight requests finish for up to
   * `drainTimeoutMs`, then closes every connection left and resolves.
   */
  shutdown(): Promise<void>;
}

/**
 * Serves HTTPS on `bind` with `handler`, within the limits in `options`
 * (see {@linkcode ConnectionLimits}).
 *
 * @throws {Error} If the certificate is not usable or the address cannot be
 * bound.
 */
export async function serveBoundedTls(
  bind: { hostname: string; port: number },
  handler: Deno.ServeHandler,
  options: BoundedTlsOptions,
): Promise<BoundedTlsServer> {
  const limits = { ...DEFAULT_CONNECTION_LIMITS, ...definedOnly(options) };
  const { pem, onError = () => {} } = options;
  checkCertificate(pem, bind.hostname);
  let closing = false;
  const connections = new Connections();
  const server: Server = createServer({
    cert: pem.cert,
    key: pem.key,
    handshakeTimeout: limits.handshakeTimeoutMs,
    headersTimeout: limits.headerTimeoutMs,
    requestTimeout: Math.max(limits.requestTimeoutMs, limits.headerTimeoutMs),
    // How often the two timeouts above are checked (Node's default is 30 s).
    connectionsCheckingInterval: Math.min(
      1_000,
      Math.max(10, Math.floor(limits.headerTimeoutMs / 4)),
    ),
    keepAliveTimeout: limits.idleTimeoutMs,
    noDelay: true,
  }, (req, res) => {
    connections.answering(req.socket, res);
    respond(handler, req, res, {
      closing: () => closing,
      onError,
      requestTimeoutMs: limits.requestTimeoutMs,
    }).catch(
      (error) => {
        onError(error);
        res.destroy();
      },
    );
  });
  server.maxConnections = limits.maxConnections;
  server.on("connection", (socket: Socket) => connections.accepted(socket));
  server.on("secureConnection", (socket) => connections.secured(socket));
  // A client that fails or abandons its handshake is not the server's error.
  server.on("tlsClientError", () => {});
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) => {
      server.close();
      reject(error);
    });
    server.listen({ host: bind.hostname, port: bind.port }, () => {
      server.removeAllListeners("error");
      resolve();
    });
  });
  server.on("error", onError);
  const port = (server.address() as AddressInfo).port;
  let stopped: Promise<void> | undefined;
  return {
    port,
    setCertificate(next) {
      checkCertificate(next, bind.hostname);
      server.setSecureContext({ cert: next.cert, key: next.key });
    },
    shutdown() {
      stopped ??= (async () => {
        closing = true;
        const closed = new Promise<void>((resolve) =>
          server.close(() => resolve())
        );
        connections.closeIdle();
        let timer: ReturnType<typeof setTimeout> | undefined;
        const drained = await Promise.race([
          closed.then(() => true),
          new Promise<false>((resolve) => {
            timer = setTimeout(() => resolve(false), limits.drainTimeoutMs);
          }),
        ]);
        clearTimeout(timer);
        if (drained) return;
        connections.closeAll();
        await closed;
      })();
      return stopped;
    },
  };
}

/**
 * A server's sockets from accept on, and which are answering a request: the
 * HTTP side only knows those past the TLS handshake, and a shutdown must
 * close the others too.
 */
class Connections {
  /** Every socket, TCP and TLS, until it closes. */
  readonly #all = new Set<Socket>();
  /** TCP sockets still in their TLS handshake, by peer address. */
  readonly #handshaking = new Map<string, Socket>();
  /** TLS sockets, with how many requests each is answering. */
  readonly #secure = new Map<Socket, number>();

  /** Tracks a new TCP socket. */
  accepted(socket: Socket): void {
    this.#track(socket);
    const peer = peerOf(socket);
    if (peer === undefined) return;
    this.#handshaking.set(peer, socket);
    socket.once("close", () => {
      if (this.#handshaking.get(peer) === socket) {
        this.#handshaking.delete(peer);
      }
    });
  }

  /** Tracks a TLS socket whose handshake is done. */
  secured(socket: Socket): void {
    this.#track(socket);
    const peer = peerOf(socket);
    if (peer !== undefined) this.#handshaking.delete(peer);
    this.#secure.set(socket, 0);
    socket.once("close", () => this.#secure.delete(socket));
  }

  /** Counts `socket` as answering a request until `res` closes. */
  answering(socket: Socket, res: ServerResponse): void {
    this.#secure.set(socket, (this.#secure.get(socket) ?? 0) + 1);
    res.once("close", () => {
      const count = this.#secure.get(socket);
      if (count !== undefined) this.#secure.set(socket, count - 1);
    });
  }

  /** Closes every socket that is not answering a request. */
  closeIdle(): void {
    for (const socket of this.#handshaking.values()) socket.destroy();
    for (const [socket, count] of this.#secure) {
      if (count === 0) socket.destroy();
    }
  }

  /** Closes every socket. */
  closeAll(): void {
    for (const socket of this.#all) socket.destroy();
  }

  #track(socket: Socket): void {
    this.#all.add(socket);
    socket.once("close", () => this.#all.delete(socket));
  }
}

/** A socket's peer as `address:port`, or `undefined` once it is gone. */
function peerOf(socket: Socket): string | undefined {
  return socket.remotePort === undefined
    ? undefined
    : `${socket.remoteAddress}:${socket.remotePort}`;
}

/** `options` without its `undefined` fields, so they take the defaults. */
function definedOnly(options: ConnectionLimits): ConnectionLimits {
  return Object.fromEntries(
    Object.entries({
      handshakeTimeoutMs: options.handshakeTimeoutMs,
      headerTimeoutMs: options.headerTimeoutMs,
      requestTimeoutMs: options.requestTimeoutMs,
      idleTimeoutMs: options.idleTimeoutMs,
      maxConnections: options.maxConnections,
      drainTimeoutMs: options.drainTimeoutMs,
    }).filter(([, value]) => value !== undefined),
  );
}

/**
 * Throws if `pem` is not a certificate and matching key that TLS can serve:
 * `setSecureContext` takes anything and fails only at the next handshake.
 */
function checkCertificate(pem: CertificatePair, hostname: string): void {
  Deno.listenTls({ hostname, port: 0, cert: pem.cert, key: pem.key }).close();
}

/** Runs `handler` on a Node request and writes its answer to `res`. */
async function respond(
  handler: Deno.ServeHandler,
  req: IncomingMessage,
  res: ServerResponse,
  context: {
    closing: () => boolean;
    onError: (error: unknown) => void;
    requestTimeoutMs: number;
  },
): Promise<void> {
  // A body still arriving at the request deadline ends the connection: the
  // handler's read fails and no answer is sent (Deno's node:http applies its
  // requestTimeout only until the head is in).
  const cutOff = setTimeout(() => {
    if (!req.complete) req.socket.destroy();
  }, context.requestTimeoutMs);
  req.once("end", () => clearTimeout(cutOff));
  res.once("close", () => clearTimeout(cutOff));
  const aborted = new AbortController();
  const completed = Promise.withResolvers<void>();
  // Marked handled: a handler that ignores `completed` must not crash us.
  completed.promise.catch(() => {});
  res.once("close", () => {
    if (res.writableFinished) return completed.resolve();
    aborted.abort();
    completed.reject(new Deno.errors.Interrupted("the client went away"));
  });
  const body = req.method === "GET" || req.method === "HEAD"
    ? null
    : bodyStream(req, res);
  const request = toRequest(req, body, aborted.signal);
  if (request === undefined) {
    res.writeHead(400, { connection: "close" }).end();
    return;
  }
  let response: Response;
  try {
    response = await handler(request, {
      remoteAddr: {
        transport: "tcp",
        hostname: req.socket.remoteAddress ?? "",
        port: req.socket.remotePort ?? 0,
      },
      completed: completed.promise,
    });
  } catch (error) {
    context.onError(error);
    response = new Response("Internal Server Error", { status: 500 });
  }
  if (res.destroyed) {
    await response.body?.cancel();
    return;
  }
  // While draining, each connection closes after its current answer.
  if (context.closing()) res.shouldKeepAlive = false;
  await writeResponse(response, res);
  // A body the handler left unread is discarded so the connection can go on.
  if (!req.complete) req.removeAllListeners("data").resume();
}

/** The fetch `Request` for a Node request, or `undefined` if it is not valid. */
function toRequest(
  req: IncomingMessage,
  body: ReadableStream<Uint8Array> | null,
  signal: AbortSignal,
): Request | undefined {
  const target = req.url ?? "/";
  try {
    const url = target.startsWith("/")
      ? new URL(`https://${req.headers.host ?? "localhost"}${target}`)
      : new URL(target);
    const raw = req.rawHeaders;
    const headers: [string, string][] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) {
      headers.push([raw[i]!, raw[i + 1]!]);
    }
    return new Request(url, {
      method: req.method ?? "GET",
      headers,
      body,
      signal,
    });
  } catch {
    return undefined;
  }
}

/**
 * The request body as a stream that pauses the socket while the reader is
 * behind. Cancelling it (a body too large) discards the rest and closes the
 * connection after the answer.
 */
function bodyStream(
  req: IncomingMessage,
  res: ServerResponse,
): ReadableStream<Uint8Array> {
  let settled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      req.on("data", (chunk: Uint8Array) => {
        if (settled) return;
        controller.enqueue(
          new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength),
        );
        if ((controller.desiredSize ?? 0) <= 0) req.pause();
      });
      req.once("end", () => {
        if (settled) return;
        settled = true;
        controller.close();
      });
      req.once("close", () => {
        if (settled) return;
        settled = true;
        controller.error(
          new Deno.errors.Interrupted("the client went away mid-body"),
        );
      });
    },
    pull() {
      req.resume();
    },
    cancel() {
      settled = true;
      res.shouldKeepAlive = false;
      req.resume();
    },
  });
}

/** Writes `response` to `res`, honouring backpressure, and ends it. */
async function writeResponse(
  response: Response,
  res: ServerResponse,
): Promise<void> {
  res.statusCode = response.status;
  if (response.statusText !== "") res.statusMessage = response.statusText;
  for (const [name, value] of response.headers) {
    if (name !== "set-cookie") res.setHeader(name, value);
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) res.setHeader("set-cookie", cookies);
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  try {
    const first = await reader.read();
    if (first.done) return void res.end();
    let next = await reader.read();
    // A body of one chunk goes out whole, with a content-length.
    if (next.done) return void res.end(first.value);
    if (!res.write(first.value)) await drainedOrClosed(res);
    while (!next.done && !res.destroyed) {
      if (!res.write(next.value)) await drainedOrClosed(res);
      next = await reader.read();
    }
    res.end();
  } catch {
    res.destroy();
  } finally {
    if (res.destroyed) await reader.cancel().catch(() => {});
  }
}

/** Resolves when `res` can take more data or is closed. */
function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}
