import { Hono } from "hono";
import assert from "node:assert/strict";
import {
  assertRefused,
  BEFORE_DEFAULTS_MS,
  beforeWatchdog,
  closeQuietly,
  silentTcp,
  untilClosed,
} from "../../testing/fakes.ts";
import { CONTENT_TYPE, MetricsRegistry } from "./metrics.ts";
import {
  createHealthApp,
  createMetricsApp,
  listenError,
  servePlain,
  serveServiceEndpoints,
} from "./service_endpoints.ts";

const BIND = { hostname: "127.0.0.1", port: 0 };

Deno.test("createHealthApp() answers /healthz, and /readyz with 503 and the reason until ready", async () => {
  let state: true | string = "DependencyRules not loaded yet";
  const app = createHealthApp(() => state);
  const healthz = await app.request("/healthz");
  assert.equal(healthz.status, 200);
  assert.equal(await healthz.text(), "ok\n");
  const notReady = await app.request("/readyz");
  assert.equal(notReady.status, 503);
  assert.equal(
    await notReady.text(),
    "not ready: DependencyRules not loaded yet\n",
  );
  state = true;
  const ready = await app.request("/readyz");
  assert.equal(ready.status, 200);
  assert.equal(await ready.text(), "ok\n");
  assert.equal((await app.request("/nope")).status, 404);
});

Deno.test("createMetricsApp() serves /metrics in the Prometheus text format", async () => {
  const registry = new MetricsRegistry();
  registry.counter({
    name: "test_things_total",
    help: "Things.",
    labelNames: ["kind"],
  }).inc({ kind: "a" }, 3);
  const app = createMetricsApp(registry);
  const response = await app.request("/metrics");
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), CONTENT_TYPE);
  const text = await response.text();
  assert.match(text, /^# HELP test_things_total Things\.$/m);
  assert.match(text, /^# TYPE test_things_total counter$/m);
  assert.match(text, /^test_things_total\{kind="a"\} 3$/m);
});

Deno.test("serveServiceEndpoints() serves probes and metrics on their own ports, and leaves out a disabled one", async () => {
  const registry = new MetricsRegistry();
  registry.gauge({ name: "things", help: "Things" }).set(3);
  let collected = 0;
  const endpoints = {
    ready: () => "not yet" as const,
    registry,
    collect: () => {
      collected++;
    },
  };
  const both = serveServiceEndpoints({
    healthBind: { hostname: "127.0.0.1", port: 0 },
    metricsBind: { hostname: "127.0.0.1", port: 0 },
  }, endpoints);
  try {
    assert.equal(both.length, 2);
    const health = both[0]!;
    const metrics = both[1]!;
    const ready = await fetch(`http://127.0.0.1:${health.port}/readyz`);
    assert.equal(ready.status, 503);
    assert.equal(await ready.text(), "not ready: not yet\n");
    const scrape = await fetch(`http://127.0.0.1:${metrics.port}/metrics`);
    assert.match(await scrape.text(), /^things 3$/m);
    assert.equal(collected, 1);
  } finally {
    await Promise.all(both.map((s) => s.shutdown()));
  }
  const none = serveServiceEndpoints({}, endpoints);
  assert.deepEqual(none, []);
});

Deno.test("serveServiceEndpoints() serves metricsRoutes on the metrics listener only, after /metrics", async () => {
  const registry = new MetricsRegistry();
  const extra = new Hono();
  extra.get("/extra.json", (c) => c.json({ extra: true }));
  extra.get("/metrics", (c) => c.text("shadowed"));
  const servers = serveServiceEndpoints({
    healthBind: { hostname: "127.0.0.1", port: 0 },
    metricsBind: { hostname: "127.0.0.1", port: 0 },
  }, { ready: () => true, registry, collect: () => {}, metricsRoutes: extra });
  try {
    const [health, metrics] = servers;
    const got = await fetch(`http://127.0.0.1:${metrics!.port}/extra.json`);
    assert.deepEqual(await got.json(), { extra: true });
    const scrape = await fetch(`http://127.0.0.1:${metrics!.port}/metrics`);
    assert.notEqual(await scrape.text(), "shadowed");
    const elsewhere = await fetch(
      `http://127.0.0.1:${health!.port}/extra.json`,
    );
    assert.equal(elsewhere.status, 404);
    await elsewhere.body?.cancel();
  } finally {
    await Promise.all(servers.map((s) => s.shutdown()));
  }
});

Deno.test("servePlain().shutdown() closes a silent client at once and resolves by drainTimeoutMs while a request still runs", async () => {
  const { promise: inHandler, resolve: entered } = Promise.withResolvers<
    void
  >();
  const { promise: released, resolve: release } = Promise.withResolvers<
    void
  >();
  const server = servePlain(BIND, async () => {
    entered();
    await released;
    return new Response("late");
  }, { drainTimeoutMs: 300 });
  const silent = await silentTcp(server.port);
  const answer = fetch(`http://127.0.0.1:${server.port}/`)
    .then((r) => r.text(), () => "failed");
  try {
    await inHandler;
    let resolved = false;
    await beforeWatchdog(
      "shutdown() to resolve",
      server.shutdown().then(() => resolved = true),
      { ms: BEFORE_DEFAULTS_MS },
    );
    assert.equal(resolved, true);
    assert.equal(
      await beforeWatchdog(
        "the silent client to be closed",
        untilClosed(silent),
      ),
      "",
    );
    await assertRefused(server.port);
  } finally {
    release();
    await answer;
    closeQuietly(silent);
  }
});

Deno.test("serveServiceEndpoints() stops on an address in use with one sentence naming it and its flag", async () => {
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (taken.addr as Deno.NetAddr).port;
  const endpoints = {
    ready: () => true as const,
    registry: new MetricsRegistry(),
    collect: () => {},
  };
  try {
    assert.throws(
      () =>
        serveServiceEndpoints({
          healthBind: { hostname: "127.0.0.1", port: 0 },
          metricsBind: { hostname: "127.0.0.1", port },
        }, endpoints),
      new Error(
        `cannot listen on 127.0.0.1:${port} for metrics: the address is in use; pass --metrics-bind-address=<host>:<port> to use another`,
      ),
    );
    assert.throws(
      () =>
        serveServiceEndpoints({ healthBind: { hostname: "127.0.0.1", port } }, {
          ...endpoints,
        }),
      /^Error: cannot listen on 127\.0\.0\.1:\d+ for probes: the address is in use; pass --health-probe-bind-address=/,
    );
    // Lets the probe listener that had started finish stopping.
    await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    taken.close();
  }
});

Deno.test("listenError() names the address for Deno's and node's address in use, and passes anything else on", () => {
  const listener = {
    purpose: "admission reviews",
    flag: "webhook-bind-address",
  };
  const node = Object.assign(new Error("listen EADDRINUSE"), {
    code: "EADDRINUSE",
  });
  assert.equal(
    (listenError(node, { hostname: "::1", port: 9443 }, listener) as Error)
      .message,
    "cannot listen on [::1]:9443 for admission reviews: the address is in use; pass --webhook-bind-address=<host>:<port> to use another",
  );
  const other = new Deno.errors.PermissionDenied("no");
  assert.equal(
    listenError(other, { hostname: "0.0.0.0", port: 80 }, listener),
    other,
  );
});
