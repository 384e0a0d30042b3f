import assert from "node:assert/strict";
import { assertProcessMetricsCollected } from "../../testing/mod.ts";
import {
  CONTENT_TYPE,
  MetricsRegistry,
  registerProcessMetrics,
} from "./metrics.ts";

Deno.test("MetricsRegistry.render() renders counters, gauges and histograms exactly", () => {
  const registry = new MetricsRegistry();
  const requests = registry.counter("webhook_requests_total", {
    help: "Admission reviews answered.",
    labelNames: ["resource", "allowed"],
  });
  const inFlight = registry.gauge("reconcile_in_flight", {
    help: "Reconciles running now.",
  });
  const duration = registry.histogram("reconcile_duration_seconds", {
    help: "Time spent in one reconcile.",
    buckets: [0.1, 0.5, 1],
  });

  requests.inc({ resource: "deployments", allowed: "true" });
  requests.inc({ resource: "deployments", allowed: "true" }, 2);
  requests.inc({ resource: "configmaps", allowed: "false" });
  inFlight.inc();
  inFlight.inc(undefined, 4);
  inFlight.dec();
  for (const seconds of [0.05, 0.1, 0.3, 0.75, 2, 3]) duration.observe(seconds);

  assert.equal(
    registry.render(),
    [
      "# HELP webhook_requests_total Admission reviews answered.",
      "# TYPE webhook_requests_total counter",
      'webhook_requests_total{resource="configmaps",allowed="false"} 1',
      'webhook_requests_total{resource="deployments",allowed="true"} 3',
      "# HELP reconcile_in_flight Reconciles running now.",
      "# TYPE reconcile_in_flight gauge",
      "reconcile_in_flight 4",
      "# HELP reconcile_duration_seconds Time spent in one reconcile.",
      "# TYPE reconcile_duration_seconds histogram",
      'reconcile_duration_seconds_bucket{le="0.1"} 2',
      'reconcile_duration_seconds_bucket{le="0.5"} 3',
      'reconcile_duration_seconds_bucket{le="1"} 4',
      'reconcile_duration_seconds_bucket{le="+Inf"} 6',
      "reconcile_duration_seconds_sum 6.2",
      "reconcile_duration_seconds_count 6",
      "",
    ].join("\n"),
  );
});

Deno.test("MetricsRegistry.render() renders zero samples for unlabelled metrics never touched", () => {
  const registry = new MetricsRegistry();
  registry.counter("a_total", { help: "A." });
  registry.gauge("b", { help: "B." });
  registry.histogram("c_seconds", { help: "C.", buckets: [1] });
  registry.counter("d_total", { help: "D.", labelNames: ["kind"] });

  assert.equal(
    registry.render(),
    [
      "# HELP a_total A.",
      "# TYPE a_total counter",
      "a_total 0",
      "# HELP b B.",
      "# TYPE b gauge",
      "b 0",
      "# HELP c_seconds C.",
      "# TYPE c_seconds histogram",
      'c_seconds_bucket{le="1"} 0',
      'c_seconds_bucket{le="+Inf"} 0',
      "c_seconds_sum 0",
      "c_seconds_count 0",
      "# HELP d_total D.",
      "# TYPE d_total counter",
      "",
    ].join("\n"),
  );
});

Deno.test("MetricsRegistry.render() returns an empty string for an empty registry", () => {
  assert.equal(new MetricsRegistry().render(), "");
});

Deno.test("MetricsRegistry.histogram() uses the default buckets in seconds", () => {
  const registry = new MetricsRegistry();
  registry.histogram("h_seconds", { help: "H." }).observe(0.3);
  const les = [...registry.render().matchAll(/le="([^"]+)"\} (\d+)/g)]
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

Deno.test("MetricsRegistry.render() renders labelled histogram series with le last", () => {
  const registry = new MetricsRegistry();
  const h = registry.histogram("h_seconds", {
    help: "H.",
    labelNames: ["verb"],
    buckets: [1],
  });
  h.observe(0.5, { verb: "list" });
  h.observe(1.5, { verb: "get" });

  assert.deepEqual(registry.render().split("\n").slice(2), [
    'h_seconds_bucket{verb="get",le="1"} 0',
    'h_seconds_bucket{verb="get",le="+Inf"} 1',
    'h_seconds_sum{verb="get"} 1.5',
    'h_seconds_count{verb="get"} 1',
    'h_seconds_bucket{verb="list",le="1"} 1',
    'h_seconds_bucket{verb="list",le="+Inf"} 1',
    'h_seconds_sum{verb="list"} 0.5',
    'h_seconds_count{verb="list"} 1',
    "",
  ]);
});

Deno.test("MetricsRegistry.render() escapes label values and HELP text", () => {
  const registry = new MetricsRegistry();
  const c = registry.counter("escaped_total", {
    help: 'Back\\slash and\nnewline, "quotes" kept',
    labelNames: ["v"],
  });
  c.inc({ v: 'a\\b"c"\nd' });

  assert.equal(
    registry.render(),
    [
      '# HELP escaped_total Back\\\\slash and\\nnewline, "quotes" kept',
      "# TYPE escaped_total counter",
      'escaped_total{v="a\\\\b\\"c\\"\\nd"} 1',
      "",
    ].join("\n"),
  );
});

Deno.test("MetricsRegistry.render() formats special and fractional numbers", () => {
  const registry = new MetricsRegistry();
  const g = registry.gauge("g", { help: "G.", labelNames: ["case"] });
  g.set(Infinity, { case: "a" });
  g.set(-Infinity, { case: "b" });
  g.set(NaN, { case: "c" });
  g.set(-0, { case: "d" });
  g.set(42, { case: "e" });
  g.set(0.25, { case: "f" });
  g.set(-3, { case: "g" });

  assert.deepEqual(registry.render().split("\n").slice(2), [
    'g{case="a"} +Inf',
    'g{case="b"} -Inf',
    'g{case="c"} NaN',
    'g{case="d"} 0',
    'g{case="e"} 42',
    'g{case="f"} 0.25',
    'g{case="g"} -3',
    "",
  ]);
});

Deno.test("MetricsRegistry.render() sorts series by label values, not insertion order", () => {
  const render = (order: string[][]): string => {
    const registry = new MetricsRegistry();
    const c = registry.counter("c_total", {
      help: "C.",
      labelNames: ["a", "b"],
    });
    for (const [a = "", b = ""] of order) c.inc({ a, b });
    return registry.render();
  };
  const pairs = [["y", "1"], ["x", "2"], ["x", "10"], ["B", "1"]];
  const forward = render(pairs);
  assert.equal(forward, render([...pairs].reverse()));
  assert.deepEqual(forward.split("\n").slice(2), [
    'c_total{a="B",b="1"} 1',
    'c_total{a="x",b="10"} 1',
    'c_total{a="x",b="2"} 1',
    'c_total{a="y",b="1"} 1',
    "",
  ]);
});

Deno.test("MetricsRegistry.render() keeps registration order across metrics", () => {
  const registry = new MetricsRegistry();
  registry.gauge("zzz", { help: "Z." });
  registry.gauge("aaa", { help: "A." });
  const names = registry.render().split("\n")
    .filter((line) => line.startsWith("# TYPE"));
  assert.deepEqual(names, ["# TYPE zzz gauge", "# TYPE aaa gauge"]);
});

Deno.test("Gauge.set() replaces the value and inc()/dec() adjust it", () => {
  const registry = new MetricsRegistry();
  const g = registry.gauge("queue_depth", {
    help: "Keys queued.",
    labelNames: ["queue"],
  });
  g.set(10, { queue: "q" });
  g.dec({ queue: "q" }, 3);
  g.inc({ queue: "q" }, 0.5);
  g.dec({ queue: "q" });
  assert.match(registry.render(), /^queue_depth\{queue="q"\} 6\.5$/m);
});

Deno.test("Counter.inc() rejects negative and NaN values", () => {
  const registry = new MetricsRegistry();
  const c = registry.counter("c_total", { help: "C." });
  assert.throws(
    () => c.inc(undefined, -1),
    (e: unknown) =>
      e instanceof RangeError &&
      e.message ===
        "Cannot increment counter 'c_total' as the value must be a non-negative number: current value is -1",
  );
  assert.throws(() => c.inc(undefined, NaN), RangeError);
  c.inc(undefined, 0);
  assert.match(registry.render(), /^c_total 0$/m);
});

Deno.test("Counter.inc() rejects missing, extra and non-string labels, naming them", () => {
  const registry = new MetricsRegistry();
  const c = registry.counter("req_total", {
    help: "R.",
    labelNames: ["method", "code"],
  });
  assert.throws(
    () => c.inc({ method: "GET", path: "/" }),
    (e: unknown) =>
      e instanceof TypeError &&
      e.message ===
        `Cannot record metric 'req_total' as label 'code' is missing and label 'path' is unexpected (label names: [method, code]): current value is {"method":"GET","path":"/"}`,
  );
  assert.throws(() => c.inc(), /label 'method' is missing/);
  assert.throws(
    () => c.inc({ method: "GET", code: 200 as unknown as string }),
    /label 'code' must be a string: current value is 200/,
  );
  const plain = registry.counter("plain_total", { help: "P." });
  assert.throws(() => plain.inc({ x: "1" }), /label 'x' is unexpected/);
  // Nothing was recorded by the failed calls.
  assert.doesNotMatch(registry.render(), /^req_total\{/m);
});

Deno.test("MetricsRegistry rejects invalid metric and label names", () => {
  const registry = new MetricsRegistry();
  for (const name of ["", "1abc", "a-b", "a b", "\u00e4"]) {
    assert.throws(
      () => registry.counter(name, { help: "X." }),
      (e: unknown) =>
        e instanceof TypeError &&
        e.message.endsWith(`current value is '${name}'`),
      name,
    );
  }
  for (const name of ["a", "_a", "a:b_c1", ":x"]) {
    registry.gauge(name, { help: "Ok." });
  }
  for (const label of ["", "1a", "a:b", "__name__", "a-b"]) {
    assert.throws(
      () => registry.counter("l_total", { help: "L.", labelNames: [label] }),
      (e: unknown) =>
        e instanceof TypeError &&
        e.message.endsWith(`current value is '${label}'`),
      label,
    );
  }
  assert.throws(
    () => registry.counter("dup_total", { help: "D.", labelNames: ["a", "a"] }),
    /label names must be unique: current value is \[a, a\]/,
  );
  assert.throws(
    () => registry.histogram("h", { help: "H.", labelNames: ["le"] }),
    /label name 'le' is reserved/,
  );
});

Deno.test("MetricsRegistry rejects a name registered twice, including histogram series", () => {
  const registry = new MetricsRegistry();
  registry.counter("x_total", { help: "X." });
  assert.throws(
    () => registry.gauge("x_total", { help: "X." }),
    (e: unknown) =>
      e instanceof TypeError &&
      e.message ===
        "Cannot register gauge 'x_total' as a metric with this name is already registered",
  );
  registry.histogram("h_seconds", { help: "H." });
  assert.throws(
    () => registry.counter("h_seconds_count", { help: "C." }),
    /series 'h_seconds_count' clashes with metric 'h_seconds'/,
  );
  registry.counter("y_sum", { help: "Y." });
  assert.throws(
    () => registry.histogram("y", { help: "Y." }),
    /series 'y_sum' clashes with metric 'y_sum'/,
  );
  // A failed registration leaves no trace.
  registry.gauge("y", { help: "Now free." });
  assert.equal(registry.render().match(/^# TYPE/gm)?.length, 4);
});

Deno.test("MetricsRegistry.histogram() rejects buckets that are not strictly increasing finite numbers", () => {
  const registry = new MetricsRegistry();
  const cases: number[][] = [
    [1, 1],
    [2, 1],
    [0.1, Infinity],
    [NaN],
    [-Infinity, 0],
  ];
  for (const buckets of cases) {
    assert.throws(
      () => registry.histogram("h", { help: "H.", buckets }),
      (e: unknown) =>
        e instanceof RangeError &&
        e.message.endsWith(`current value is [${buckets.join(", ")}]`),
      String(buckets),
    );
  }
  registry.histogram("h", { help: "H.", buckets: [-1, 0, 1e-3] });
  assert.match(registry.render(), /^h_bucket\{le="0\.001"\} 0$/m);
});

Deno.test("Histogram.observe() rejects NaN and counts +/-Infinity", () => {
  const registry = new MetricsRegistry();
  const h = registry.histogram("h", { help: "H.", buckets: [0] });
  assert.throws(() => h.observe(NaN), RangeError);
  h.observe(-Infinity);
  h.observe(Infinity);
  assert.deepEqual(registry.render().split("\n").slice(2), [
    'h_bucket{le="0"} 1',
    'h_bucket{le="+Inf"} 2',
    "h_sum NaN",
    "h_count 2",
    "",
  ]);
});

Deno.test("Histogram.startTimer() observes elapsed seconds from the injected clock", () => {
  let nowMs = 1_000;
  const registry = new MetricsRegistry({ now: () => nowMs });
  const h = registry.histogram("op_seconds", {
    help: "Op.",
    labelNames: ["op"],
    buckets: [0.1, 1],
  });

  const stop = h.startTimer({ op: "sync" });
  // Nothing is recorded until the timer stops.
  assert.doesNotMatch(registry.render(), /op_seconds_count/);
  nowMs += 250;
  assert.equal(stop(), 0.25);

  const backwards = h.startTimer({ op: "sync" });
  nowMs -= 500;
  assert.equal(backwards(), 0);

  assert.deepEqual(registry.render().split("\n").slice(2), [
    'op_seconds_bucket{op="sync",le="0.1"} 1',
    'op_seconds_bucket{op="sync",le="1"} 2',
    'op_seconds_bucket{op="sync",le="+Inf"} 2',
    'op_seconds_sum{op="sync"} 0.25',
    'op_seconds_count{op="sync"} 2',
    "",
  ]);
});

Deno.test("Histogram.startTimer() checks labels when it starts", () => {
  const registry = new MetricsRegistry({ now: () => 0 });
  const h = registry.histogram("h", { help: "H.", labelNames: ["op"] });
  assert.throws(() => h.startTimer({ verb: "x" }), TypeError);
});

Deno.test("CONTENT_TYPE is the Prometheus text format 0.0.4", () => {
  assert.equal(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
});

Deno.test("registerProcessMetrics() registers the memory gauges and fills them on collect", () => {
  const registry = new MetricsRegistry();
  const collect = registerProcessMetrics(registry);
  assertProcessMetricsCollected(registry, collect);
});
