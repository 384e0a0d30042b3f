/**
 * The webhook's TLS listener: the bounded TLS server, serving the admission
 * handler, that picks up a rotated certificate without a restart; graceful
 * shutdown.
 *
 * @module
 */
import {
  type ConnectionLimits,
  type NodeHandler,
  serveBoundedTls,
} from "./bounded_server.ts";
import {
  type BindAddress,
  listenError,
  type Logger,
  type RunningServer,
} from "../runtime/mod.ts";

/**
 * Options for {@linkcode serveTls}; the connection limits have the defaults
 * of {@linkcode ConnectionLimits}.
 */
export interface ServeTlsOptions extends ConnectionLimits {
  /** PEM certificate chain file. */
  certFile: string;
  /** PEM private key file. */
  keyFile: string;
  /** Where to log reloads and handler errors. */
  log: Logger;
  /** How often to look for a rotated certificate. @default {10_000} */
  reloadIntervalMs?: number;
}

/**
 * Serves HTTPS (HTTP/1.1) with the certificate in `certFile`/`keyFile`,
 * within the connection limits in `options`: a TLS handshake timeout, a
 * request-head timeout, an idle keep-alive timeout, a cap on open
 * connections, and a `shutdown()` that drains for at most `drainTimeoutMs`
 * and then closes every connection. Re-reads the files every
 * `reloadIntervalMs`: when they changed, new connections get the new
 * certificate while open ones keep theirs. A certificate that does not load
 * is logged and the old one kept.
 *
 * @throws {Error} If the first certificate cannot be read or used, or the
 * address cannot be listened on (in use: one sentence naming it and
 * `--webhook-bind-address`).
 */
export async function serveTls(
  bind: BindAddress,
  handler: NodeHandler,
  options: ServeTlsOptions,
): Promise<RunningServer> {
  const { certFile, keyFile, log, reloadIntervalMs = 10_000, ...limits } =
    options;
  let pem = await readPair(certFile, keyFile);
  let server;
  try {
    server = await serveBoundedTls(bind, handler, {
      ...limits,
      pem,
      onError: (error) => log.error("request handler failed", { error }),
    });
  } catch (error) {
    throw listenError(error, bind, {
      purpose: "admission reviews",
      flag: "webhook-bind-address",
    });
  }
  let rejected = "";
  let stopping = false;
  const timer = setInterval(async () => {
    let next;
    try {
      next = await readPair(certFile, keyFile);
    } catch (error) {
      log.warn("cannot read the TLS certificate, keeping the current one", {
        certFile,
        keyFile,
        error,
      });
      return;
    }
    const id = `${next.cert}\0${next.key}`;
    if (
      stopping || (next.cert === pem.cert && next.key === pem.key) ||
      id === rejected
    ) {
      return;
    }
    try {
      server.setCertificate(next);
      pem = next;
      log.info("reloaded the TLS certificate", { certFile });
    } catch (error) {
      // Logged once per content: a half-written pair is retried at the next tick.
      rejected = id;
      log.error("cannot use the new TLS certificate, keeping the current one", {
        certFile,
        error,
      });
    }
  }, reloadIntervalMs);
  return {
    port: server.port,
    async shutdown() {
      stopping = true;
      clearInterval(timer);
      await server.shutdown();
    },
  };
}

async function readPair(
  certFile: string,
  keyFile: string,
): Promise<{ cert: string; key: string }> {
  const [cert, key] = await Promise.all([
    Deno.readTextFile(certFile),
    Deno.readTextFile(keyFile),
  ]);
  return { cert, key };
}
