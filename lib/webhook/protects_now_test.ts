import assert from "node:assert/strict";
import { protectsNow, REVIEW_WHEN_BUDGET } from "./protects_now.ts";
import { RuleRegistry } from "./rule_registry.ts";
import type { Protection } from "./rule_registry.ts";
import { WHEN_COST_LIMIT, WhenBudget } from "../when/mod.ts";
import {
  dependency,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";

/** The one protection of a rule VM -> VPC with `spec` (when, protectWhile) added. */
function protection(spec: Record<string, unknown> = {}): Protection {
  const rule = validRule("vm-vpc", VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
  ]);
  const registry = new RuleRegistry();
  registry.replace([{
    cluster: "p1",
    rule: { ...rule, spec: { ...rule.spec, ...spec } },
  }]);
  const [p] = registry.find(VPCS);
  assert.ok(p !== undefined);
  return p;
}

/** A VirtualMachine with `spec`, being deleted when `deleting`. */
function vm(spec: Record<string, unknown>, deleting = false) {
  return {
    metadata: {
      name: "vm-1",
      namespace: "default",
      ...(deleting ? { deletionTimestamp: "2026-11-26T07:00:00Z" } : {}),
    },
    spec,
  };
}

Deno.test("protectsNow() without a when: always, and with protectWhile Active not while being deleted", () => {
  assert.deepEqual(protectsNow(vm({}), protection()), { protects: true });
  assert.deepEqual(protectsNow(vm({}, true), protection()), {
    protects: true,
  });
  const active = protection({ protectWhile: "Active" });
  assert.deepEqual(protectsNow(vm({}), active), { protects: true });
  assert.deepEqual(protectsNow(vm({}, true), active), { protects: false });
  // An empty deletionTimestamp is no deletion.
  const empty = { metadata: { deletionTimestamp: "" }, spec: {} };
  assert.deepEqual(protectsNow(empty, active), { protects: true });
});

Deno.test("protectsNow() with a when: where true, naming it; where false, not", () => {
  const when = "object.spec.keep == true";
  const p = protection({ when });
  assert.deepEqual(protectsNow(vm({ keep: true }), p), {
    protects: true,
    when,
  });
  assert.deepEqual(protectsNow(vm({ keep: false }), p), { protects: false });
});

Deno.test("protectsNow() fails closed: a when that cannot be evaluated or does not compile protects, saying why", () => {
  const failed = protectsNow(
    vm({}),
    protection({ when: "object.spec.keep == true" }),
  );
  assert.equal(failed.protects, true);
  assert.match(
    failed.protects ? failed.note ?? "" : "",
    /^the rule's condition object\.spec\.keep == true could not be evaluated \(.+\), so it protects$/,
  );
  const broken = protectsNow(vm({}), protection({ when: "spec.keep" }));
  assert.equal(broken.protects, true);
  assert.match(
    broken.protects ? broken.note ?? "" : "",
    /^the rule's condition does not compile \(.+\), so it protects$/,
  );
});

Deno.test("protectsNow() takes its evaluation from the review's budget: spent, it protects unevaluated", () => {
  assert.equal(REVIEW_WHEN_BUDGET, 2 * WHEN_COST_LIMIT);
  const p = protection({ when: "object.spec.keep == true" });
  const spent = new WhenBudget(0);
  const result = protectsNow(vm({ keep: false }), p, spent);
  assert.equal(result.protects, true);
  assert.match(
    result.protects ? result.note ?? "" : "",
    /the review's budget for conditions is spent/,
  );
  const roomy = new WhenBudget(REVIEW_WHEN_BUDGET);
  assert.deepEqual(protectsNow(vm({ keep: false }), p, roomy), {
    protects: false,
  });
  assert.ok(roomy.remaining < REVIEW_WHEN_BUDGET, "the evaluation was paid");
});
