import assert from "node:assert/strict";
import { register as globalRegistry } from "prom-client";
import { assertProcessMetricsCollected } from "../../testing/fakes.ts";
import {
  CONTENT_TYPE,
  MetricsRegistry,
  registerProcessMetrics,
} from "./metrics.ts";

Deno.test("MetricsRegistry.render() renders counters, gauges and histograms exactly", async () => {
  const registry = new MetricsRegistry();
  const requests = registry.counter({
    name: "webhook_requests_total",
    help: "Admission reviews answered.",
    labelNames: ["resource", "allowed"],
  });
  const inFlight = registry.gauge({
    name: "reconcile_in_flight",
    help: "Reconciles running now.",
  });
  const duration = registry.histogram({
    name: "reconcile_duration_seconds",
    help: "Time spent in one reconcile.",
    labelNames: ["verb"],
    buckets: [0.1, 0.5, 1],
  });

  requests.inc({ resource: "deployments", allowed: "true" });
  requests.inc({ resource: "deployments", allowed: "true" }, 2);
  requests.inc({ resource: "configmaps", allowed: "false" });
  inFlight.inc();
  inFlight.inc(4);
  inFlight.dec();
  for (const seconds of [0.05, 0.1, 0.3, 0.75, 2, 3]) {
    duration.observe({ verb: "list" }, seconds);
  }
  duration.observe({ verb: "get" }, 0.2);

  assert.equal(
    await registry.render(),
    [
      "# HELP webhook_requests_total Admission reviews answered.",
      "# TYPE webhook_requests_total counter",
      'webhook_requests_total{resource="deployments",allowed="true"} 3',
      'webhook_requests_total{resource="configmaps",allowed="false"} 1',
      "",
      "# HELP reconcile_in_flight Reconciles running now.",
      "# TYPE reconcile_in_flight gauge",
      "reconcile_in_flight 4",
      "",
      "# HELP reconcile_duration_seconds Time spent in one reconcile.",
      "# TYPE reconcile_duration_seconds histogram",
      'reconcile_duration_seconds_bucket{le="0.1",verb="list"} 2',
      'reconcile_duration_seconds_bucket{le="0.5",verb="list"} 3',
      'reconcile_duration_seconds_bucket{le="1",verb="list"} 4',
      'reconcile_duration_seconds_bucket{le="+Inf",verb="list"} 6',
      'reconcile_duration_seconds_sum{verb="list"} 6.2',
      'reconcile_duration_seconds_count{verb="list"} 6',
      'reconcile_duration_seconds_bucket{le="0.1",verb="get"} 0',
      'reconcile_duration_seconds_bucket{le="0.5",verb="get"} 1',
      'reconcile_duration_seconds_bucket{le="1",verb="get"} 1',
      'reconcile_duration_seconds_bucket{le="+Inf",verb="get"} 1',
      'reconcile_duration_seconds_sum{verb="get"} 0.2',
      'reconcile_duration_seconds_count{verb="get"} 1',
      "",
    ].join("\n"),
  );
});

Deno.test("MetricsRegistry.render() renders zero samples for unlabelled metrics never touched, none for labelled ones", async () => {
  const registry = new MetricsRegistry();
  registry.counter({ name: "a_total", help: "A." });
  registry.gauge({ name: "b", help: "B." });
  registry.histogram({ name: "c_seconds", help: "C.", buckets: [1] });
  registry.counter({ name: "d_total", help: "D.", labelNames: ["kind"] });

  assert.equal(
    await registry.render(),
    [
      "# HELP a_total A.",
      "# TYPE a_total counter",
      "a_total 0",
      "",
      "# HELP b B.",
      "# TYPE b gauge",
      "b 0",
      "",
      "# HELP c_seconds C.",
      "# TYPE c_seconds histogram",
      'c_seconds_bucket{le="1"} 0',
      'c_seconds_bucket{le="+Inf"} 0',
      "c_seconds_sum 0",
      "c_seconds_count 0",
      "",
      "# HELP d_total D.",
      "# TYPE d_total counter",
      "",
    ].join("\n"),
  );
});

Deno.test("MetricsRegistry.render() renders no family for an empty registry", async () => {
  assert.equal(await new MetricsRegistry().render(), "\n");
});

Deno.test("MetricsRegistry.histogram() uses the documented buckets in seconds by default", async () => {
  const registry = new MetricsRegistry();
  registry.histogram({ name: "h_seconds", help: "H." }).observe(0.3);
  const les = [...(await registry.render()).matchAll(/le="([^"]+)"\} (\d+)/g)]
    .map(([, le, count]) => `${le}:${count}`);
  assert.deepEqual(les, [
    "0.005:0",
    "0.01:0",
    "0.025:0",
    "0.05:0",
    "0.1:0",
    "0.25:0",
    "0.5:1",
    "1:1",
    "2.5:1",
    "5:1",
    "10:1",
    "+Inf:1",
  ]);
});

Deno.test("MetricsRegistry.render() escapes label values and HELP text", async () => {
  const registry = new MetricsRegistry();
  const c = registry.counter({
    name: "escaped_total",
    help: 'Back\\slash and\nnewline, "quotes" kept',
    labelNames: ["v"],
  });
  c.inc({ v: 'a\\b"c"\nd' });

  assert.equal(
    await registry.render(),
    [
      '# HELP escaped_total Back\\\\slash and\\nnewline, "quotes" kept',
      "# TYPE escaped_total counter",
      'escaped_total{v="a\\\\b\\"c\\"\\nd"} 1',
      "",
    ].join("\n"),
  );
});

Deno.test("MetricsRegistry.render() formats special and fractional numbers", async () => {
  const registry = new MetricsRegistry();
  const g = registry.gauge({ name: "g", help: "G.", labelNames: ["case"] });
  g.set({ case: "a" }, Infinity);
  g.set({ case: "b" }, -Infinity);
  g.set({ case: "c" }, NaN);
  g.set({ case: "d" }, -0);
  g.set({ case: "e" }, 42);
  g.set({ case: "f" }, 0.25);
  g.set({ case: "g" }, -3);

  assert.deepEqual((await registry.render()).split("\n").slice(2), [
    'g{case="a"} +Inf',
    'g{case="b"} -Inf',
    // prom-client's spelling; Prometheus parses NaN case-insensitively.
    'g{case="c"} Nan',
    'g{case="d"} 0',
    'g{case="e"} 42',
    'g{case="f"} 0.25',
    'g{case="g"} -3',
    "",
  ]);
});

Deno.test("MetricsRegistry.render() keeps registration order across metrics", async () => {
  const registry = new MetricsRegistry();
  registry.gauge({ name: "zzz", help: "Z." });
  registry.gauge({ name: "aaa", help: "A." });
  const types = (await registry.render()).split("\n")
    .filter((line) => line.startsWith("# TYPE"));
  assert.deepEqual(types, ["# TYPE zzz gauge", "# TYPE aaa gauge"]);
});

Deno.test("MetricsRegistry keeps its metrics to itself, out of prom-client's global registry", async () => {
  const first = new MetricsRegistry();
  const second = new MetricsRegistry();
  first.gauge({ name: "own_registry_probe", help: "P." }).set(1);
  second.gauge({ name: "own_registry_probe", help: "P." }).set(2);

  assert.match(await first.render(), /^own_registry_probe 1$/m);
  assert.match(await second.render(), /^own_registry_probe 2$/m);
  assert.equal(globalRegistry.getSingleMetric("own_registry_probe"), undefined);
});

Deno.test("MetricsRegistry rejects a name registered twice, invalid names and values", () => {
  const registry = new MetricsRegistry();
  registry.counter({ name: "x_total", help: "X.", labelNames: ["kind"] });
  assert.throws(
    () => registry.gauge({ name: "x_total", help: "X." }),
    /A metric with the name x_total has already been registered/,
  );
  assert.throws(
    () => registry.counter({ name: "a-b", help: "A." }),
    /Invalid metric name/,
  );
  assert.throws(
    () =>
      registry.counter({ name: "l_total", help: "L.", labelNames: ["a-b"] }),
    /Invalid label name/,
  );
  assert.throws(
    () => registry.histogram({ name: "h", help: "H.", labelNames: ["le"] }),
    /le is a reserved label keyword/,
  );
  const counter = registry.counter({ name: "c_total", help: "C." });
  assert.throws(() => counter.inc(-1), /not possible to decrease a counter/);
  const labelled = registry.counter({
    name: "req_total",
    help: "R.",
    labelNames: ["method"],
  });
  assert.throws(
    () => labelled.inc({ path: "/" } as unknown as { method: string }),
    /Added label "path" is not included in initial labelset/,
  );
});

Deno.test("CONTENT_TYPE is the Prometheus text format 0.0.4", () => {
  assert.equal(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
});

Deno.test("registerProcessMetrics() registers the memory gauges and fills them on collect", async () => {
  const registry = new MetricsRegistry();
  const collect = registerProcessMetrics(registry);
  await assertProcessMetricsCollected(registry, collect);
});
