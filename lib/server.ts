/**
 * The webhook's HTTP side: Hono apps for admission (`POST /validate`),
 * probes (`/healthz`, `/readyz`) and metrics (`/metrics`); a TLS server that
 * picks up a rotated certificate without a restart; graceful shutdown.
 *
 * @module
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import {
  MAX_REVIEW_BYTES,
  parseAdmissionReview,
  toReview,
} from "./admission_review.ts";
import type { DeletionValidator, Verdict } from "./deletion_validator.ts";
import type { BindAddress, ServiceBinds } from "./flags.ts";
import type { Logger } from "./log.ts";
import { CONTENT_TYPE, type MetricsRegistry } from "./metrics.ts";

/** What the admission app reports per review. */
export interface AdmissionObserver {
  /** Called once per well-formed review with its verdict and duration. */
  reviewed(verdict: Verdict, seconds: number): void;
  /** Called once per malformed request. */
  rejected(status: number): void;
}

/** Dependencies of {@linkcode createAdmissionApp}. */
export interface AdmissionAppDeps {
  /** Decides reviews. */
  validator: DeletionValidator;
  /** Where to log. */
  log: Logger;
  /** Metrics hooks. */
  observer: AdmissionObserver;
  /** Clock in milliseconds. @default {performance.now} */
  now?: () => number;
}

/**
 * The admission app: `POST /validate` takes an AdmissionReview v1 and
 * answers one. A malformed body gets a 4xx with a JSON `{"error": ...}`
 * naming the problem; a decision, allow or deny, is always HTTP 200.
 */
export function createAdmissionApp(deps: AdmissionAppDeps): Hono {
  const { validator, log, observer, now = () => performance.now() } = deps;
  const app = new Hono();
  app.post(
    "/validate",
    bodyLimit({
      maxSize: MAX_REVIEW_BYTES,
      onError: (c) => {
        observer.rejected(413);
        return c.json({
          error:
            `Cannot parse AdmissionReview: body is larger than ${MAX_REVIEW_BYTES} bytes`,
        }, 413);
      },
    }),
    async (c) => {
      const started = now();
      const parsed = parseAdmissionReview(
        new Uint8Array(await c.req.arrayBuffer()),
      );
      if (!parsed.ok) {
        observer.rejected(parsed.status);
        log.warn("rejected malformed admission review", {
          status: parsed.status,
          error: parsed.message,
        });
        return c.json({ error: parsed.message }, parsed.status);
      }
      const { request } = parsed;
      const verdict = await validator.validate(request);
      const seconds = (now() - started) / 1000;
      observer.reviewed(verdict, seconds);
      if (request.operation === "DELETE") {
        const fields = {
          uid: request.uid,
          resource: `${request.resource.resource}.${request.resource.group}`,
          namespace: request.namespace,
          name: request.name,
          dryRun: request.dryRun ?? false,
          user: request.userInfo?.username,
          outcome: verdict.outcome,
          durationMs: Math.round(seconds * 1000),
          ...(verdict.response.allowed
            ? {}
            : { message: verdict.response.status?.message }),
        };
        if (verdict.response.allowed) log.debug("admission review", fields);
        else log.info("admission review denied", fields);
      }
      return c.json(toReview(verdict.response));
    },
  );
  app.notFound((c) =>
    c.json({ error: `No such endpoint: ${c.req.method} ${c.req.path}` }, 404)
  );
  app.onError((error, c) => {
    log.error("admission request failed", { error });
    return c.json({
      error: "Internal error while reviewing: see the webhook's log",
    }, 500);
  });
  return app;
}

/** Readiness: `true`, or the reason it is not ready yet. */
export type ReadinessCheck = () => true | string;

/** Probes: `/healthz` answers while the process serves; `/readyz` runs `ready`. */
export function createHealthApp(ready: ReadinessCheck): Hono {
  const app = new Hono();
  app.get("/healthz", (c) => c.text("ok\n"));
  app.get("/readyz", (c) => {
    const state = ready();
    return state === true
      ? c.text("ok\n")
      : c.text(`not ready: ${state}\n`, 503);
  });
  return app;
}

/** `/metrics` in the Prometheus text format; `collect` runs before each render. */
export function createMetricsApp(
  registry: MetricsRegistry,
  collect: () => void = () => {},
): Hono {
  const app = new Hono();
  app.get("/metrics", (c) => {
    collect();
    return c.body(registry.render(), 200, { "content-type": CONTENT_TYPE });
  });
  return app;
}

/** A running server. */
export interface RunningServer {
  /** The port it listens on (useful when bound to port 0). */
  port: number;
  /** Stops accepting, lets in-flight requests finish, then resolves. */
  shutdown(): Promise<void>;
}

/** Serves plain HTTP (probes, metrics). */
export function servePlain(
  bind: BindAddress,
  handler: Deno.ServeHandler,
): RunningServer {
  const server = Deno.serve({
    hostname: bind.hostname,
    port: bind.port,
    handler,
    onListen: () => {},
  });
  return { port: server.addr.port, shutdown: () => server.shutdown() };
}

/** What {@linkcode serveServiceEndpoints} serves. */
export interface ServiceEndpoints {
  /** The readiness check behind `/readyz`. */
  ready: ReadinessCheck;
  /** The metrics behind `/metrics`. */
  registry: MetricsRegistry;
  /** Runs before each scrape (process gauges). */
  collect: () => void;
}

/**
 * Serves the probes and the metrics on their listeners, leaving out one
 * that is disabled.
 */
export function serveServiceEndpoints(
  binds: ServiceBinds,
  endpoints: ServiceEndpoints,
): RunningServer[] {
  const servers: RunningServer[] = [];
  if (binds.healthBind !== undefined) {
    servers.push(
      servePlain(binds.healthBind, createHealthApp(endpoints.ready).fetch),
    );
  }
  if (binds.metricsBind !== undefined) {
    servers.push(
      servePlain(
        binds.metricsBind,
        createMetricsApp(endpoints.registry, endpoints.collect).fetch,
      ),
    );
  }
  return servers;
}

/** Options for {@linkcode serveTls}. */
export interface ServeTlsOptions {
  /** PEM certificate chain file. */
  certFile: string;
  /** PEM private key file. */
  keyFile: string;
  /** Where to log reloads. */
  log: Logger;
  /** How often to look for a rotated certificate. @default {10_000} */
  reloadIntervalMs?: number;
}

/**
 * Serves HTTPS with the certificate in `certFile`/`keyFile`, and re-reads
 * them every `reloadIntervalMs`: when they changed, a new listener with the
 * new certificate starts on the same port (`SO_REUSEPORT`) and the old one
 * drains. A certificate that does not load is logged and the old one kept.
 *
 * @throws {Error} If the first certificate cannot be read or used.
 */
export async function serveTls(
  bind: BindAddress,
  handler: Deno.ServeHandler,
  options: ServeTlsOptions,
): Promise<RunningServer> {
  const { certFile, keyFile, log, reloadIntervalMs = 10_000 } = options;
  let pem = await readPair(certFile, keyFile);
  // Rotation starts the new listener beside the old one (SO_REUSEPORT), which
  // Deno 2 keeps behind --unstable-net: run with that flag.
  let server = listen(bind, handler, pem);
  const port = server.addr.port;
  let draining: Promise<void>[] = [];
  let rejected = "";
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
    if ((next.cert === pem.cert && next.key === pem.key) || id === rejected) {
      return;
    }
    try {
      const replacement = listen(
        { hostname: bind.hostname, port },
        handler,
        next,
      );
      const old = server;
      server = replacement;
      pem = next;
      draining.push(old.shutdown());
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
    port,
    async shutdown() {
      clearInterval(timer);
      await Promise.all([server.shutdown(), ...draining]);
      draining = [];
    },
  };
}

function listen(
  bind: BindAddress,
  handler: Deno.ServeHandler,
  pem: { cert: string; key: string },
): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({
    hostname: bind.hostname,
    port: bind.port,
    cert: pem.cert,
    key: pem.key,
    reusePort: true,
    handler,
    onListen: () => {},
  });
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
