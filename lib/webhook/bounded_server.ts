/**
 * An HTTPS server whose connections are bounded: a TLS handshake timeout, a
 * timeout for reading a request head, an idle keep-alive timeout, a cap on
 * open connections, and a shutdown that closes idle and silent connections
 * at once, drains in-flight requests up to a deadline and then closes every
 * connection that is left.
 *
 * `Deno.serve` has none of these knobs (Deno 2.9): a client that connects
 * and sends nothing is held for ever, and `shutdown()` waits for it. So this
 * serves with `node:https`, whose server enforces them, and hands its
 * handler Node's request and response as they are: converting each to a
 * fetch `Request` and back cost more than the rest of a fast-path review
 * (`deno task bench`). It speaks HTTP/1.1 only.
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

/**
 * Answers one request on Node's request and response. It may leave the
 * body unread (the server discards it after the answer); a rejection is
 * reported to `onError` and answered 500, or ends the connection once an
 * answer has begun.
 */
export type NodeHandler = (
  req: IncomingMessage,
  res: ServerResponse,
) => Promise<void>;

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
  handler: NodeHandler,
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
    // How often the two timeouts above are checked (Node's default is 30 s):
    // a slow head or body is cut off within this much of its deadline.
    connectionsCheckingInterval: Math.min(
      1_000,
      Math.max(10, Math.floor(limits.headerTimeoutMs / 4)),
    ),
    keepAliveTimeout: limits.idleTimeoutMs,
    noDelay: true,
  }, (req, res) => {
    connections.answering(req.socket, res);
    respond(handler, req, res, { closing: () => closing }).catch((error) => {
      onError(error);
      if (res.headersSent || res.destroyed) return void res.destroy();
      res.writeHead(500, {
        "content-type": "text/plain",
        "content-length": "21",
      }).end("Internal Server Error");
    });
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
  /** The answers under way. */
  readonly #answers = new Set<ServerResponse>();

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
    this.#answers.add(res);
    res.once("close", () => {
      this.#answers.delete(res);
      const count = this.#secure.get(socket);
      if (count !== undefined) this.#secure.set(socket, count - 1);
    });
  }

  /**
   * Closes every socket that is not answering a request; one that is
   * closes after its answer.
   */
  closeIdle(): void {
    for (const res of this.#answers) {
      if (!res.headersSent) res.shouldKeepAlive = false;
    }
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

/**
 * Runs `handler` on one request: while draining, the connection closes
 * after this answer; a body the handler left unread is discarded once the
 * answer is out, so the connection can go on. (A body still arriving at
 * the request deadline is node:https's to cut off: Deno 2.9's applies
 * `requestTimeout` to the whole request.)
 */
async function respond(
  handler: NodeHandler,
  req: IncomingMessage,
  res: ServerResponse,
  context: { closing: () => boolean },
): Promise<void> {
  res.once("finish", () => {
    if (!req.complete) req.resume();
  });
  if (context.closing()) res.shouldKeepAlive = false;
  await handler(req, res);
}
