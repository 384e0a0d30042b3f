import assert from "node:assert/strict";
import { assertProcessMetricsCollected, sample } from "../../testing/fakes.ts";
import { createControllerMetrics } from "./metrics.ts";
import { MetricsRegistry } from "../runtime/mod.ts";
import type { Plan } from "./reconcile_plan.ts";

/** A plan with `writes` configuration writes and the given Ready counts. */
function plan(
  ready: Record<string, number>,
  options: {
    desiredClusters?: number;
    writes?: number;
    statuses?: number;
    locks?: Record<string, number>;
  } = {},
): Plan {
  const configurations: Plan["configurations"] = [];
  for (let i = 0; i < (options.writes ?? 0); i++) {
    configurations.push({
      cluster: `cluster-${i}`,
      endpoint: "https://kcp.example.com/services/apiexport/1root/x",
      action: "create",
      object: {},
    });
  }
  const statuses: Plan["statuses"] = [];
  for (let i = 0; i < (options.statuses ?? 0); i++) {
    statuses.push({
      cluster: "1consumer",
      name: `rule-${i}`,
      endpoint: "https://kcp.example.com/services/apiexport/1root/x",
      resourceVersion: "1",
      status: {},
    });
  }
  return {
    paths: [],
    stalePaths: [],
    exports: [],
    lockTargets: [],
    webhookAccess: [],
    configurations,
    statuses,
    ready: new Map(Object.entries(ready)),
    lockReady: new Map(Object.entries(options.locks ?? {})),
    desiredClusters: options.desiredClusters ?? 0,
    boundClusters: [],
  };
}

function setup() {
  const registry = new MetricsRegistry();
  const metrics = createControllerMetrics(registry);
  return { registry, metrics };
}

Deno.test("createControllerMetrics() registers every metric with HELP and TYPE and zero values", async () => {
  const { registry } = setup();
  const text = await registry.render();
  const metrics: [string, string][] = [
    ["dependency_controller_reconciles_total", "counter"],
    ["dependency_controller_reconcile_duration_seconds", "histogram"],
    ["dependency_controller_writes_total", "counter"],
    ["dependency_controller_reconcile_errors_total", "counter"],
    ["dependency_controller_webhook_configurations", "gauge"],
    ["dependency_controller_pending_writes", "gauge"],
    ["dependency_controller_rules", "gauge"],
    ["dependency_controller_locks", "gauge"],
    ["dependency_controller_leader", "gauge"],
    ["dependency_controller_synced", "gauge"],
    ["dependency_controller_watches_failing", "gauge"],
    ["process_resident_memory_bytes", "gauge"],
    ["deno_heap_bytes", "gauge"],
  ];
  for (const [name, type] of metrics) {
    assert.ok(text.includes(`\n# TYPE ${name} ${type}\n`), name);
    assert.ok(text.includes(`# HELP ${name} `), name);
  }
  assert.equal(sample(text, "dependency_controller_leader"), 0);
  assert.equal(sample(text, "dependency_controller_synced"), 0);
  assert.equal(sample(text, "dependency_controller_pending_writes"), 0);
  assert.equal(
    sample(text, "dependency_controller_reconcile_duration_seconds_count"),
    0,
  );
  assert.equal(
    sample(text, 'dependency_controller_reconciles_total{result="synced"}'),
    undefined,
  );
});

Deno.test("ControllerMetrics.passed() counts waiting and synced passes and times only synced ones", async () => {
  const { registry, metrics } = setup();
  metrics.passed(undefined, 5);
  metrics.passed(undefined, 5);
  metrics.passed(plan({}), 0.25);
  metrics.passed(plan({}), 0.5);
  metrics.passed(plan({}), 20);
  const text = await registry.render();
  assert.equal(
    sample(text, 'dependency_controller_reconciles_total{result="waiting"}'),
    2,
  );
  assert.equal(
    sample(text, 'dependency_controller_reconciles_total{result="synced"}'),
    3,
  );
  const duration = "dependency_controller_reconcile_duration_seconds";
  assert.equal(sample(text, `${duration}_count`), 3);
  assert.equal(sample(text, `${duration}_sum`), 20.75);
  assert.equal(sample(text, `${duration}_bucket{le="0.25"}`), 1);
  assert.equal(sample(text, `${duration}_bucket{le="0.5"}`), 2);
  assert.equal(sample(text, `${duration}_bucket{le="10"}`), 2);
  assert.equal(sample(text, `${duration}_bucket{le="+Inf"}`), 3);
});

Deno.test("ControllerMetrics.writing() publishes the writes in flight, and a replica that stops leading reports none", async () => {
  const { registry, metrics } = setup();
  metrics.writing(3);
  assert.equal(
    sample(await registry.render(), "dependency_controller_writes_in_flight"),
    3,
  );
  metrics.leading(false);
  assert.equal(
    sample(await registry.render(), "dependency_controller_writes_in_flight"),
    0,
  );
});

Deno.test("ControllerMetrics.passed() sets the configuration and pending-write gauges from the last plan", async () => {
  const { registry, metrics } = setup();
  metrics.passed(plan({}, { desiredClusters: 4, writes: 2, statuses: 3 }), 0);
  let text = await registry.render();
  assert.equal(sample(text, "dependency_controller_webhook_configurations"), 4);
  assert.equal(sample(text, "dependency_controller_pending_writes"), 5);

  // A waiting pass leaves them as they were.
  metrics.passed(undefined, 0);
  text = await registry.render();
  assert.equal(sample(text, "dependency_controller_webhook_configurations"), 4);
  assert.equal(sample(text, "dependency_controller_pending_writes"), 5);

  metrics.passed(plan({}, { desiredClusters: 3 }), 0);
  text = await registry.render();
  assert.equal(sample(text, "dependency_controller_webhook_configurations"), 3);
  assert.equal(sample(text, "dependency_controller_pending_writes"), 0);
});

Deno.test("ControllerMetrics.passed() sets the rules gauge by status and reason and zeroes reasons that disappear", async () => {
  const { registry, metrics } = setup();
  const rules = (status: string, reason: string) =>
    `dependency_controller_rules{status="${status}",reason="${reason}"}`;
  metrics.passed(
    plan({
      "True/Enforced": 3,
      "False/PathNotResolved": 1,
      "False/DependencyCycle": 2,
    }),
    0,
  );
  let text = await registry.render();
  assert.equal(sample(text, rules("True", "Enforced")), 3);
  assert.equal(sample(text, rules("False", "PathNotResolved")), 1);
  assert.equal(sample(text, rules("False", "DependencyCycle")), 2);

  metrics.passed(plan({ "True/Enforced": 5, "False/InvalidSpec": 1 }), 0);
  text = await registry.render();
  assert.equal(sample(text, rules("True", "Enforced")), 5);
  assert.equal(sample(text, rules("False", "InvalidSpec")), 1);
  assert.equal(sample(text, rules("False", "PathNotResolved")), 0);
  assert.equal(sample(text, rules("False", "DependencyCycle")), 0);

  // A waiting pass changes nothing; a later pass keeps zeroes at zero.
  metrics.passed(undefined, 0);
  metrics.passed(plan({ "False/PathNotResolved": 2 }), 0);
  text = await registry.render();
  assert.equal(sample(text, rules("True", "Enforced")), 0);
  assert.equal(sample(text, rules("False", "InvalidSpec")), 0);
  assert.equal(sample(text, rules("False", "PathNotResolved")), 2);
  assert.equal(sample(text, rules("False", "DependencyCycle")), 0);

  metrics.passed(plan({}), 0);
  text = await registry.render();
  assert.equal(sample(text, rules("False", "PathNotResolved")), 0);
});

Deno.test("ControllerMetrics.passed() sets the locks gauge apart from the rules, and a follower reports none", async () => {
  const { registry, metrics } = setup();
  const locks = (status: string, reason: string) =>
    `dependency_controller_locks{status="${status}",reason="${reason}"}`;
  metrics.passed(
    plan({ "True/Enforced": 1 }, {
      locks: { "True/Enforced": 2, "False/TargetTypeUnknown": 1 },
    }),
    0,
  );
  let text = await registry.render();
  assert.equal(sample(text, locks("True", "Enforced")), 2);
  assert.equal(sample(text, locks("False", "TargetTypeUnknown")), 1);
  assert.equal(
    sample(
      text,
      'dependency_controller_rules{status="True",reason="Enforced"}',
    ),
    1,
  );
  metrics.passed(plan({}, { locks: { "True/Enforced": 3 } }), 0);
  text = await registry.render();
  assert.equal(sample(text, locks("True", "Enforced")), 3);
  assert.equal(sample(text, locks("False", "TargetTypeUnknown")), 0);
  metrics.leading(false);
  text = await registry.render();
  assert.equal(sample(text, locks("True", "Enforced")), 0);
});

Deno.test("ControllerMetrics.wrote() counts writes by kind and result and errors by kind", async () => {
  const { registry, metrics } = setup();
  metrics.wrote("configuration");
  metrics.wrote("configuration");
  metrics.wrote("configuration", new Error("409 conflict"));
  metrics.wrote("status");
  metrics.wrote("resolve", "workspace root:x not found");
  metrics.wrote("resolve", "workspace root:x not found");
  const text = await registry.render();
  const writes = (kind: string, result: string) =>
    `dependency_controller_writes_total{kind="${kind}",result="${result}"}`;
  const errors = (kind: string) =>
    `dependency_controller_reconcile_errors_total{kind="${kind}"}`;
  assert.equal(sample(text, writes("configuration", "success")), 2);
  assert.equal(sample(text, writes("configuration", "error")), 1);
  assert.equal(sample(text, writes("status", "success")), 1);
  assert.equal(sample(text, writes("status", "error")), undefined);
  assert.equal(sample(text, writes("resolve", "error")), 2);
  assert.equal(sample(text, writes("resolve", "success")), undefined);
  assert.equal(sample(text, errors("configuration")), 1);
  assert.equal(sample(text, errors("resolve")), 2);
  assert.equal(sample(text, errors("status")), undefined);
});

Deno.test("ControllerMetrics.leading() and synced() set their gauges to 1 or 0", async () => {
  const { registry, metrics } = setup();
  metrics.leading(true);
  metrics.synced(true);
  let text = await registry.render();
  assert.equal(sample(text, "dependency_controller_leader"), 1);
  assert.equal(sample(text, "dependency_controller_synced"), 1);
  metrics.leading(false);
  text = await registry.render();
  assert.equal(sample(text, "dependency_controller_leader"), 0);
  assert.equal(sample(text, "dependency_controller_synced"), 1);
  metrics.synced(false);
  text = await registry.render();
  assert.equal(sample(text, "dependency_controller_synced"), 0);
});

Deno.test("ControllerMetrics.leading(false) zeroes what only the leader reports: configurations, pending writes, rules", async () => {
  const { registry, metrics } = setup();
  metrics.leading(true);
  metrics.passed(
    plan({ "True/Enforced": 3, "False/PathNotResolved": 1 }, {
      desiredClusters: 2,
      writes: 1,
    }),
    0,
  );
  let text = await registry.render();
  assert.equal(sample(text, "dependency_controller_webhook_configurations"), 2);
  assert.equal(
    sample(
      text,
      'dependency_controller_rules{status="True",reason="Enforced"}',
    ),
    3,
  );
  metrics.leading(false);
  text = await registry.render();
  assert.equal(sample(text, "dependency_controller_leader"), 0);
  assert.equal(sample(text, "dependency_controller_webhook_configurations"), 0);
  assert.equal(sample(text, "dependency_controller_pending_writes"), 0);
  assert.equal(
    sample(
      text,
      'dependency_controller_rules{status="True",reason="Enforced"}',
    ),
    0,
  );
  assert.equal(
    sample(
      text,
      'dependency_controller_rules{status="False",reason="PathNotResolved"}',
    ),
    0,
  );
});

Deno.test("ControllerMetrics.watchesFailing() sets the failing-watches gauge", async () => {
  const { registry, metrics } = setup();
  metrics.watchesFailing(2);
  assert.equal(
    sample(await registry.render(), "dependency_controller_watches_failing"),
    2,
  );
  metrics.watchesFailing(0);
  assert.equal(
    sample(await registry.render(), "dependency_controller_watches_failing"),
    0,
  );
});

Deno.test("ControllerMetrics.collectProcess() fills the process memory gauges", async () => {
  const { registry, metrics } = setup();
  await assertProcessMetricsCollected(
    registry,
    () => metrics.collectProcess(),
  );
});

Deno.test("createControllerMetrics() cannot register twice in one registry", () => {
  const { registry } = setup();
  assert.throws(
    () => createControllerMetrics(registry),
    /dependency_controller_reconciles_total has already been registered/,
  );
});
