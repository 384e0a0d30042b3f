import assert from "node:assert/strict";
import {
  assertProcessMetricsCollected,
  dependency,
  LOAD_BALANCERS,
  sample,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";
import { allow, deny } from "./admission_review.ts";
import type { Outcome, Verdict } from "./deletion_validator.ts";
import { MetricsRegistry } from "../runtime/mod.ts";
import type { ClusterRule, RuleSnapshot } from "../rules/mod.ts";
import { createWebhookMetrics } from "./metrics.ts";

const REVIEWS = "dependency_webhook_admission_reviews_total";
const DURATION = "dependency_webhook_admission_review_duration_seconds";
const REJECTED = "dependency_webhook_admission_requests_rejected_total";
const LIST_ERRORS = "dependency_webhook_dependent_list_errors_total";
const RULES = "dependency_webhook_rules";
const PROTECTED_TYPES = "dependency_webhook_protected_types";
const SYNCED = "dependency_webhook_rules_synced";
const ENDPOINTS = "dependency_webhook_endpoints";

/** A verdict with `outcome`, allowing or denying as the outcome says. */
function verdict(outcome: Outcome): Verdict {
  const uid = "uid-1";
  switch (outcome) {
    case "allowed":
    case "allowed_skip":
    case "allowed_workspace_deleting":
      return { response: allow(uid), outcome };
    case "denied_referenced":
    case "denied_owned":
    case "denied_unconfirmed":
    case "denied_locked":
      return {
        response: deny(uid, {
          code: 409,
          reason: "Conflict",
          message: "still referenced",
        }),
        outcome,
        blockers: 2,
      };
    case "denied_invalid":
    case "denied_skip_unauthorized":
      return {
        response: deny(uid, { code: 400, reason: "BadRequest", message: "x" }),
        outcome,
      };
    case "denied_not_ready":
    case "denied_error":
    case "denied_busy":
      return {
        response: deny(uid, {
          code: 503,
          reason: "ServiceUnavailable",
          message: "retry later",
        }),
        outcome,
      };
  }
}

/** A valid rule in cluster `provider1` named `name`. */
function clusterRule(name: string): ClusterRule {
  return {
    cluster: "provider1",
    rule: validRule(name, VIRTUAL_MACHINES, [
      dependency(VPCS, ".spec.vpcRef.name"),
    ]),
  };
}

/** A snapshot with the given rules, invalid rules, sync state and endpoints. */
function snapshot(
  options: {
    rules?: number;
    invalid?: number;
    synced?: boolean;
    endpoints?: number;
  },
): RuleSnapshot {
  const { rules = 0, invalid = 0, synced = false, endpoints = 0 } = options;
  return {
    rules: Array.from({ length: rules }, (_, i) => clusterRule(`rule-${i}`)),
    invalid: Array.from({ length: invalid }, (_, i) => ({
      cluster: "provider2",
      name: `broken-${i}`,
      error: "spec.dependencies: must not be empty",
    })),
    synced,
    endpoints: Array.from(
      { length: endpoints },
      (_, i) => `https://kcp.example/services/apiexport/1root/dep-ctrl-${i}`,
    ),
  };
}

function setup() {
  const registry = new MetricsRegistry();
  const metrics = createWebhookMetrics(registry);
  return { registry, metrics };
}

Deno.test("createWebhookMetrics() registers every metric with HELP and TYPE and zero values", async () => {
  const { registry } = setup();
  const text = await registry.render();
  const metrics: [string, string][] = [
    [REVIEWS, "counter"],
    [DURATION, "histogram"],
    [REJECTED, "counter"],
    [LIST_ERRORS, "counter"],
    [RULES, "gauge"],
    [PROTECTED_TYPES, "gauge"],
    [SYNCED, "gauge"],
    [ENDPOINTS, "gauge"],
    ["dependency_webhook_watches_failing", "gauge"],
    ["process_resident_memory_bytes", "gauge"],
    ["deno_heap_bytes", "gauge"],
  ];
  for (const [name, type] of metrics) {
    assert.ok(text.includes(`\n# TYPE ${name} ${type}\n`), name);
    assert.ok(text.includes(`# HELP ${name} `), name);
  }
  assert.equal(sample(text, LIST_ERRORS), 0);
  assert.equal(sample(text, PROTECTED_TYPES), 0);
  assert.equal(sample(text, SYNCED), 0);
  assert.equal(sample(text, ENDPOINTS), 0);
  assert.equal(sample(text, `${REVIEWS}{outcome="allowed"}`), undefined);
  assert.equal(sample(text, `${DURATION}_count{outcome="allowed"}`), undefined);
  assert.equal(sample(text, `${REJECTED}{status="400"}`), undefined);
  assert.equal(sample(text, `${RULES}{state="valid"}`), undefined);
});

Deno.test("WebhookMetrics.reviewed() counts reviews by outcome", async () => {
  const { registry, metrics } = setup();
  metrics.reviewed(verdict("allowed"), 0.001);
  metrics.reviewed(verdict("allowed"), 0.002);
  metrics.reviewed(verdict("allowed"), 0.003);
  metrics.reviewed(verdict("allowed_skip"), 0.001);
  metrics.reviewed(verdict("denied_referenced"), 0.02);
  metrics.reviewed(verdict("denied_referenced"), 0.03);
  metrics.reviewed(verdict("denied_not_ready"), 0);
  metrics.reviewed(verdict("denied_invalid"), 0);
  metrics.reviewed(verdict("denied_error"), 7);
  const text = await registry.render();
  const reviews = (outcome: string) =>
    sample(text, `${REVIEWS}{outcome="${outcome}"}`);
  assert.equal(reviews("allowed"), 3);
  assert.equal(reviews("allowed_skip"), 1);
  assert.equal(reviews("denied_referenced"), 2);
  assert.equal(reviews("denied_not_ready"), 1);
  assert.equal(reviews("denied_invalid"), 1);
  assert.equal(reviews("denied_error"), 1);
});

Deno.test("WebhookMetrics.reviewed() observes the duration in a histogram series per outcome", async () => {
  const { registry, metrics } = setup();
  metrics.reviewed(verdict("allowed"), 0.004);
  metrics.reviewed(verdict("allowed"), 0.02);
  metrics.reviewed(verdict("allowed"), 0.3);
  metrics.reviewed(verdict("denied_referenced"), 0.05);
  metrics.reviewed(verdict("denied_error"), 7.5);
  metrics.reviewed(verdict("denied_error"), 12);
  const text = await registry.render();
  const count = (outcome: string) =>
    sample(text, `${DURATION}_count{outcome="${outcome}"}`);
  const sum = (outcome: string) =>
    sample(text, `${DURATION}_sum{outcome="${outcome}"}`);
  const bucket = (outcome: string, le: string) =>
    sample(text, `${DURATION}_bucket{le="${le}",outcome="${outcome}"}`);
  assert.equal(count("allowed"), 3);
  assert.equal(count("denied_referenced"), 1);
  assert.equal(count("denied_error"), 2);
  assert.equal(count("allowed_skip"), undefined);
  assert.equal(sum("allowed"), 0.004 + 0.02 + 0.3);
  assert.equal(sum("denied_referenced"), 0.05);
  assert.equal(sum("denied_error"), 19.5);
  assert.equal(bucket("allowed", "0.005"), 1);
  assert.equal(bucket("allowed", "0.025"), 2);
  assert.equal(bucket("allowed", "0.25"), 2);
  assert.equal(bucket("allowed", "0.5"), 3);
  assert.equal(bucket("allowed", "+Inf"), 3);
  assert.equal(bucket("denied_referenced", "0.025"), 0);
  assert.equal(bucket("denied_referenced", "0.05"), 1);
  assert.equal(bucket("denied_error", "5"), 0);
  assert.equal(bucket("denied_error", "10"), 1);
  assert.equal(bucket("denied_error", "+Inf"), 2);
});

Deno.test("WebhookMetrics.reviewed() counts a list error only for denied_error", async () => {
  const { registry, metrics } = setup();
  const others: Outcome[] = [
    "allowed",
    "allowed_skip",
    "denied_referenced",
    "denied_not_ready",
    "denied_invalid",
  ];
  for (const outcome of others) metrics.reviewed(verdict(outcome), 0.01);
  assert.equal(sample(await registry.render(), LIST_ERRORS), 0);

  metrics.reviewed(verdict("denied_error"), 0.01);
  assert.equal(sample(await registry.render(), LIST_ERRORS), 1);
  metrics.reviewed(verdict("denied_error"), 0.01);
  metrics.reviewed(verdict("denied_error"), 0.01);
  metrics.reviewed(verdict("allowed"), 0.01);
  const text = await registry.render();
  assert.equal(sample(text, LIST_ERRORS), 3);
  assert.equal(sample(text, `${REVIEWS}{outcome="denied_error"}`), 3);
});

Deno.test("WebhookMetrics.rejected() counts malformed requests by HTTP status", async () => {
  const { registry, metrics } = setup();
  metrics.rejected(400);
  metrics.rejected(400);
  metrics.rejected(413);
  const text = await registry.render();
  assert.equal(sample(text, `${REJECTED}{status="400"}`), 2);
  assert.equal(sample(text, `${REJECTED}{status="413"}`), 1);
  // A rejection is not a review and not a list error.
  assert.equal(sample(text, LIST_ERRORS), 0);
  assert.ok(!text.includes(`${REVIEWS}{`));
  assert.ok(!text.includes(`${DURATION}_count{`));
});

Deno.test("WebhookMetrics.rules() sets the rules, protected types, synced and endpoints gauges", async () => {
  const { registry, metrics } = setup();
  metrics.rules(
    snapshot({ rules: 3, invalid: 2, synced: false, endpoints: 2 }),
    4,
  );
  let text = await registry.render();
  assert.equal(sample(text, `${RULES}{state="valid"}`), 3);
  assert.equal(sample(text, `${RULES}{state="invalid"}`), 2);
  assert.equal(sample(text, PROTECTED_TYPES), 4);
  assert.equal(sample(text, SYNCED), 0);
  assert.equal(sample(text, ENDPOINTS), 2);

  metrics.rules(
    snapshot({ rules: 5, invalid: 0, synced: true, endpoints: 3 }),
    1,
  );
  text = await registry.render();
  assert.equal(sample(text, `${RULES}{state="valid"}`), 5);
  assert.equal(sample(text, `${RULES}{state="invalid"}`), 0);
  assert.equal(sample(text, PROTECTED_TYPES), 1);
  assert.equal(sample(text, SYNCED), 1);
  assert.equal(sample(text, ENDPOINTS), 3);

  // Losing sync and every rule brings the gauges back down.
  metrics.rules(snapshot({}), 0);
  text = await registry.render();
  assert.equal(sample(text, `${RULES}{state="valid"}`), 0);
  assert.equal(sample(text, `${RULES}{state="invalid"}`), 0);
  assert.equal(sample(text, PROTECTED_TYPES), 0);
  assert.equal(sample(text, SYNCED), 0);
  assert.equal(sample(text, ENDPOINTS), 0);
});

Deno.test("WebhookMetrics.rules() takes the protected-type count as given, not from the rules", async () => {
  const { registry, metrics } = setup();
  const rules = [
    clusterRule("vm-needs-vpc"),
    {
      cluster: "provider1",
      rule: validRule("lb-needs-vpc", LOAD_BALANCERS, [
        dependency(VPCS, ".spec.vpcRef.name"),
      ]),
    },
  ];
  metrics.rules({ rules, invalid: [], synced: true, endpoints: [] }, 1);
  const text = await registry.render();
  assert.equal(sample(text, `${RULES}{state="valid"}`), 2);
  assert.equal(sample(text, PROTECTED_TYPES), 1);
  assert.equal(sample(text, ENDPOINTS), 0);
});

Deno.test("WebhookMetrics.collectProcess() fills the process memory gauges", async () => {
  const { registry, metrics } = setup();
  await assertProcessMetricsCollected(
    registry,
    () => metrics.collectProcess(),
  );
});

Deno.test("WebhookMetrics.watchesFailing() sets the failing-watches gauge", async () => {
  const { registry, metrics } = setup();
  assert.equal(
    sample(await registry.render(), "dependency_webhook_watches_failing"),
    0,
  );
  metrics.watchesFailing(3);
  assert.equal(
    sample(await registry.render(), "dependency_webhook_watches_failing"),
    3,
  );
});

Deno.test("createWebhookMetrics() cannot register twice in one registry", () => {
  const { registry } = setup();
  assert.throws(
    () => createWebhookMetrics(registry),
    /dependency_webhook_admission_reviews_total has already been registered/,
  );
});

Deno.test("WebhookMetrics.reviewed() counts reads kcp refused by verb, group and resource", async () => {
  const { registry, metrics } = setup();
  const refused = (verb: "get" | "list", resource: string): Verdict => ({
    ...verdict("denied_error"),
    forbidden: { verb, group: "compute.example.com", resource },
  });
  metrics.reviewed(refused("list", "virtualmachines"), 0.01);
  metrics.reviewed(refused("list", "virtualmachines"), 0.01);
  metrics.reviewed(refused("get", "vpcs"), 0.01);
  metrics.reviewed(verdict("denied_error"), 0.01);
  const text = await registry.render();
  const name = "dependency_webhook_forbidden_total";
  assert.equal(
    sample(
      text,
      `${name}{verb="list",group="compute.example.com",resource="virtualmachines"}`,
    ),
    2,
  );
  assert.equal(
    sample(
      text,
      `${name}{verb="get",group="compute.example.com",resource="vpcs"}`,
    ),
    1,
  );
  assert.equal(sample(text, `${LIST_ERRORS}`), 4);
});

Deno.test("WebhookMetrics.admission() counts admitted, refused and pending rules", async () => {
  const { registry, metrics } = setup();
  metrics.admission({ admitted: 3, refused: 1, pending: 2 }, 2);
  const text = await registry.render();
  assert.equal(sample(text, `${RULES}{state="admitted"}`), 3);
  assert.equal(sample(text, `${RULES}{state="refused"}`), 1);
  assert.equal(sample(text, `${RULES}{state="pending"}`), 2);
  assert.equal(sample(text, PROTECTED_TYPES), 2);
});
