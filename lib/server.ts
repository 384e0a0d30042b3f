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
  type AdmissionRequest,
  isRecord,
  MAX_REVIEW_BYTES,
  objectOf,
  parseAdmissionReview,
  slimRequest,
  toReview,
} from "./admission_review.ts";
import { CLUSTER_ANNOTATION, SKIP_PROTECTION_ANNOTATION } from "./api.ts";
import {
  type ConnectionLimits,
  DEFAULT_CONNECTION_LIMITS,
  serveBoundedTls,
} from "./bounded_server.ts";
import type { DeletionValidator, Verdict } from "./deletion_validator.ts";
import type { BindAddress, ServiceBinds } from "./flags.ts";
import { createSampler, type Logger } from "./log.ts";
import { CONTENT_TYPE, type MetricsRegistry } from "./metrics.ts";
import type { Semaphore } from "./semaphore.ts";

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
  /**
   * Bounds the bytes of review bodies read and parsed at once (one permit a
   * byte; a body without a length takes {@linkcode MAX_REVIEW_BYTES}).
   * @default {no bound}
   */
  bodyBytes?: Semaphore;
  /** How long a body waits for `bodyBytes` before a 503. @default {2_000} */
  queueTimeoutMs?: number;
  /** Least time between two logged malformed requests. @default {10_000} */
  rejectLogIntervalMs?: number;
  /** Clock in milliseconds. @default {performance.now} */
  now?: () => number;
}

/** The annotations a decision reads; the rest of the object is dropped after parsing. */
const READ_ANNOTATIONS = [CLUSTER_ANNOTATION, SKIP_PROTECTION_ANNOTATION];

/**
 * The admission app: `POST /validate` takes an AdmissionReview v1 and
 * answers one. A malformed body gets a 4xx with a JSON `{"error": ...}`
 * naming the problem; a decision, allow or deny, is always HTTP 200. While
 * `bodyBytes` has no room for a body within `queueTimeoutMs`, the answer is
 * 503 with `Retry-After`, which kcp reports as a failed call (fail closed).
 */
export function createAdmissionApp(deps: AdmissionAppDeps): Hono {
  const {
    validator,
    log,
    observer,
    bodyBytes,
    queueTimeoutMs = 2_000,
    now = () => performance.now(),
  } = deps;
  const sampleRejects = createSampler(deps.rejectLogIntervalMs ?? 10_000, {
    now,
  });
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
      const length = Number(c.req.header("content-length"));
      const weight = Number.isInteger(length) && length >= 0
        ? length
        : MAX_REVIEW_BYTES;
      const release = bodyBytes === undefined
        ? () => {}
        : await bodyBytes.acquire(weight, { timeoutMs: queueTimeoutMs });
      if (release === undefined) {
        observer.rejected(503);
        return c.json(
          {
            error:
              "The dependency webhook is busy reading other reviews: retry the request",
          },
          503,
          { "retry-after": "1" },
        );
      }
      let parsed;
      try {
        parsed = parseAdmissionReview(
          new Uint8Array(await c.req.arrayBuffer()),
        );
        if (parsed.ok) {
          parsed = {
            ...parsed,
            request: slimRequest(parsed.request, {
              annotations: READ_ANNOTATIONS,
            }),
          };
        }
      } finally {
        release();
      }
      if (!parsed.ok) {
        observer.rejected(parsed.status);
        const { status, message } = parsed;
        sampleRejects((suppressed) =>
          log.warn("rejected malformed admission review", {
            status,
            error: message,
            suppressedSinceLast: suppressed,
          })
        );
        return c.json({ error: parsed.message }, parsed.status);
      }
      const { request } = parsed;
      const verdict = await validator.validate(request);
      const seconds = (now() - started) / 1000;
      observer.reviewed(verdict, seconds);
      if (request.operation === "DELETE") {
        logReview(log, request, verdict, seconds);
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

/**
 * One line per decided DELETE: denials and deletes let through by the
 * skip-protection annotation (the audit of break-glass) at info, with who
 * asked; other allowed deletes at debug.
 */
function logReview(
  log: Logger,
  request: AdmissionRequest,
  verdict: Verdict,
  seconds: number,
): void {
  const found = objectOf(request)?.metadata;
  const metadata = isRecord(found) ? found : {};
  const annotations = isRecord(metadata.annotations)
    ? metadata.annotations
    : undefined;
  const fields = {
    uid: request.uid,
    resource: `${request.resource.resource}.${request.resource.group}`,
    workspace: annotations?.[CLUSTER_ANNOTATION],
    namespace: request.namespace,
    name: request.name || metadata.name,
    dryRun: request.dryRun ?? false,
    user: request.userInfo?.username,
    groups: request.userInfo?.groups,
    outcome: verdict.outcome,
    durationMs: Math.round(seconds * 1000),
    ...(verdict.response.allowed
      ? {}
      : { message: verdict.response.status?.message }),
  };
  if (verdict.outcome === "allowed_skip") {
    log.info(
      `delete allowed by the ${SKIP_PROTECTION_ANNOTATION} annotation`,
      fields,
    );
  } else if (verdict.response.allowed) {
    log.debug("admission review", fields);
  } else {
    log.info("admission review denied", fields);
  }
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
  /**
   * Stops accepting at once, lets in-flight requests finish up to the
   * server's drain deadline, then closes what is left and resolves.
   */
  shutdown(): Promise<void>;
}

/** Options for {@linkcode servePlain}. */
export interface ServePlainOptions {
  /**
   * Time `shutdown()` lets in-flight requests finish.
   * @default {8_000}
   */
  drainTimeoutMs?: number;
}

/**
 * Serves plain HTTP (probes, metrics) with `Deno.serve`. Its `shutdown()`
 * closes idle and half-received connections at once; a request still running
 * at the drain deadline no longer holds the process (the server is unref'd)
 * and `shutdown()` resolves. This listener has no connection cap and no
 * timeouts: keep it on a port that only the cluster reaches.
 */
export function servePlain(
  bind: BindAddress,
  handler: Deno.ServeHandler,
  options: ServePlainOptions = {},
): RunningServer {
  const { drainTimeoutMs = DEFAULT_CONNECTION_LIMITS.drainTimeoutMs } = options;
  const server = Deno.serve({
    hostname: bind.hostname,
    port: bind.port,
    handler,
    onListen: () => {},
  });
  let stopped: Promise<void> | undefined;
  return {
    port: server.addr.port,
    shutdown: () => stopped ??= drainPlain(server, drainTimeoutMs),
  };
}

/** Shuts `server` down, waiting for it at most `deadlineMs`. */
async function drainPlain(
  server: Deno.HttpServer,
  deadlineMs: number,
): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const drained = await Promise.race([
    server.shutdown().then(() => true),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), deadlineMs);
    }),
  ]);
  clearTimeout(timer);
  // Deno.serve cannot close its connections once shutdown() runs (aborting
  // its signal then throws), so what is left stops holding the process.
  if (!drained) server.unref();
}

/** What {@linkcode serveServiceEndpoints} serves. */
export interface ServiceEndpoints {
  /** The readiness check behind `/readyz`. */
  ready: ReadinessCheck;
  /** The metrics behind `/metrics`. */
  registry: MetricsRegistry;
  /** Runs before each scrape (process gauges). */
  collect: () => void;
  /** How long `shutdown()` lets in-flight requests finish. @default {8_000} */
  drainTimeoutMs?: number;
}

/**
 * Serves the probes and the metrics on their listeners, leaving out one
 * that is disabled.
 */
export function serveServiceEndpoints(
  binds: ServiceBinds,
  endpoints: ServiceEndpoints,
): RunningServer[] {
  const drain = endpoints.drainTimeoutMs === undefined
    ? {}
    : { drainTimeoutMs: endpoints.drainTimeoutMs };
  const servers: RunningServer[] = [];
  if (binds.healthBind !== undefined) {
    servers.push(
      servePlain(
        binds.healthBind,
        createHealthApp(endpoints.ready).fetch,
        drain,
      ),
    );
  }
  if (binds.metricsBind !== undefined) {
    servers.push(
      servePlain(
        binds.metricsBind,
        createMetricsApp(endpoints.registry, endpoints.collect).fetch,
        drain,
      ),
    );
  }
  return servers;
}

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
 * @throws {Error} If the first certificate cannot be read or used.
 */
export async function serveTls(
  bind: BindAddress,
  handler: Deno.ServeHandler,
  options: ServeTlsOptions,
): Promise<RunningServer> {
  const { certFile, keyFile, log, reloadIntervalMs = 10_000, ...limits } =
    options;
  let pem = await readPair(certFile, keyFile);
  const server = await serveBoundedTls(bind, handler, {
    ...limits,
    pem,
    onError: (error) => log.error("request handler failed", { error }),
  });
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
