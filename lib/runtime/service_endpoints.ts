/**
 * The probe and metrics listeners every component serves: Hono apps for
 * `/healthz`, `/readyz` and `/metrics` on plain HTTP, each with a shutdown
 * that no client can hold past its deadline.
 *
 * @module
 */
import { Hono } from "hono";
import type { BindAddress, ServiceBinds } from "./flags.ts";
import { CONTENT_TYPE, type MetricsRegistry } from "./metrics.ts";

/** How long a shutdown lets in-flight requests finish, by default. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 8_000;

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
  app.get("/metrics", async (c) => {
    collect();
    const text = await registry.render();
    return c.body(text, 200, { "content-type": CONTENT_TYPE });
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
  /**
   * What the listener is for and the flag that moves it, named when the
   * address is in use (see {@linkcode listenError}).
   */
  listener?: ListenerName;
}

/** What a listener serves and which flag sets its address. */
export interface ListenerName {
  /** What it serves, such as `metrics`. */
  purpose: string;
  /** The flag without dashes, such as `metrics-bind-address`. */
  flag: string;
}

/**
 * The error to stop on when a listener cannot start: for an address in use
 * (Deno's `AddrInUse`, or node's `EADDRINUSE`) one sentence naming the
 * address, what it is for and the flag that moves it; any other error as it
 * is.
 *
 * @example Usage
 * ```ts
 * import { listenError } from "./service_endpoints.ts";
 *
 * const error = listenError(new Deno.errors.AddrInUse("in use"), {
 *   hostname: "0.0.0.0",
 *   port: 8080,
 * }, { purpose: "metrics", flag: "metrics-bind-address" });
 * (error as Error).message;
 * // "cannot listen on 0.0.0.0:8080 for metrics: the address is in use; pass --metrics-bind-address=<host>:<port> to use another"
 * ```
 */
export function listenError(
  error: unknown,
  bind: BindAddress,
  listener: ListenerName,
): unknown {
  const inUse = error instanceof Deno.errors.AddrInUse ||
    (error as { code?: unknown } | null)?.code === "EADDRINUSE";
  if (!inUse) return error;
  const host = bind.hostname.includes(":")
    ? `[${bind.hostname}]`
    : bind.hostname;
  return new Error(
    `cannot listen on ${host}:${bind.port} for ${listener.purpose}: the address is in use; pass --${listener.flag}=<host>:<port> to use another`,
    { cause: error },
  );
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
  const { drainTimeoutMs = DEFAULT_DRAIN_TIMEOUT_MS, listener } = options;
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({
      hostname: bind.hostname,
      port: bind.port,
      handler,
      onListen: () => {},
    });
  } catch (error) {
    throw listener === undefined ? error : listenError(error, bind, listener);
  }
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
  /**
   * More routes on the metrics listener (such as the controller's `/graph`
   * or the webhook's `/holds.json`), tried after `/metrics`.
   */
  metricsRoutes?: Hono | undefined;
}

/**
 * Serves the probes and the metrics on their listeners, leaving out one
 * that is disabled.
 *
 * @throws {Error} If a listener cannot start; for an address in use, one
 * sentence naming it and its flag (see {@linkcode listenError}).
 */
export function serveServiceEndpoints(
  binds: ServiceBinds,
  endpoints: ServiceEndpoints,
): RunningServer[] {
  const drain = endpoints.drainTimeoutMs === undefined
    ? {}
    : { drainTimeoutMs: endpoints.drainTimeoutMs };
  const servers: RunningServer[] = [];
  try {
    if (binds.healthBind !== undefined) {
      servers.push(
        servePlain(binds.healthBind, createHealthApp(endpoints.ready).fetch, {
          ...drain,
          listener: { purpose: "probes", flag: "health-probe-bind-address" },
        }),
      );
    }
    if (binds.metricsBind !== undefined) {
      const app = createMetricsApp(endpoints.registry, endpoints.collect);
      if (endpoints.metricsRoutes !== undefined) {
        app.route("/", endpoints.metricsRoutes);
      }
      servers.push(
        servePlain(binds.metricsBind, app.fetch, {
          ...drain,
          listener: { purpose: "metrics", flag: "metrics-bind-address" },
        }),
      );
    }
  } catch (error) {
    // The one that started stops: the caller gets the error, not a listener.
    for (const server of servers) void server.shutdown();
    throw error;
  }
  return servers;
}
