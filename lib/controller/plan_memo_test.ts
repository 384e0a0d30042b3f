import assert from "node:assert/strict";
import {
  type DependencyRuleParseResult,
  parseDependencyRule,
} from "../rules/mod.ts";
import type { KubeObject } from "../kcp/mod.ts";
import { PlanMemo } from "./plan_memo.ts";
import { type PlanInput, planReconcile } from "./reconcile_plan.ts";
import {
  dependency,
  SUBNETS,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";
import {
  at,
  BAD_WHEN,
  binding,
  configuration,
  input,
  NETWORK,
  NETWORK_PATH,
  resolved,
  rule,
  STORAGE,
  STORAGE_PATH,
  vmRule,
  VOLUMES,
  withSpec,
} from "../../testing/plan_fixtures.ts";

/** A parse that keeps each object's result, as the reconciler's does. */
function keptParse(): (object: KubeObject) => DependencyRuleParseResult {
  const kept = new WeakMap<KubeObject, DependencyRuleParseResult>();
  return (object) => {
    let parsed = kept.get(object);
    if (parsed === undefined) {
      parsed = parseDependencyRule(object);
      kept.set(object, parsed);
    }
    return parsed;
  };
}

/**
 * The inputs of passes over the same watched objects: paths being
 * resolved, then resolved, then a write failing, then the webhook's reads
 * answered, then a rule's spec.when that does not compile, then back.
 */
function passes(): PlanInput[] {
  const parse = keptParse();
  const rules = [
    vmRule(),
    rule("volumes", VIRTUAL_MACHINES, [
      at(dependency(VOLUMES, ".spec.volumeRef.name"), STORAGE_PATH),
    ]),
    withSpec(
      rule("subnets", VIRTUAL_MACHINES, [
        dependency(SUBNETS, ".spec.subnetRef.name"),
      ]),
      { when: BAD_WHEN },
    ),
  ];
  const base = input({
    rules,
    bindings: [binding(NETWORK), binding(STORAGE)],
    configurations: [configuration(NETWORK, [VPCS])],
    parse,
  });
  const paths = resolved({ [NETWORK_PATH]: NETWORK, [STORAGE_PATH]: STORAGE });
  const allowed = new Map([["", { answer: true }]]);
  const resolvedPass = { ...base, resolutions: paths };
  const failingPass = {
    ...resolvedPass,
    installErrors: new Map([[STORAGE, "409 Conflict"]]),
  };
  const accessPass: PlanInput = {
    ...resolvedPass,
    webhookAccess: { readings: allowed, user: "dependency-webhook" },
  };
  return [base, resolvedPass, failingPass, accessPass, base, resolvedPass];
}

Deno.test("planReconcile() with a warm memo plans what it plans with a fresh one, pass after pass", () => {
  const memo = new PlanMemo();
  for (const [i, pass] of passes().entries()) {
    const warm = planReconcile(pass, memo);
    assert.deepEqual(warm, planReconcile(pass, new PlanMemo()), `pass ${i}`);
    assert.deepEqual(warm, planReconcile(pass), `pass ${i} without a memo`);
    assert.deepEqual(planReconcile(pass, memo), warm, `pass ${i} again`);
  }
});

Deno.test("planReconcile() reuses what its memo kept for the same objects", () => {
  const [, pass] = passes();
  const memo = new PlanMemo();
  const first = planReconcile(pass!, memo);
  const second = planReconcile(pass!, memo);
  assert.equal(second.webhookAccess, first.webhookAccess, "the same list");
  assert.notEqual(
    planReconcile(pass!, new PlanMemo()).webhookAccess,
    first.webhookAccess,
    "another memo computes its own",
  );
});

Deno.test("two memos share nothing: what one pass keeps is in its memo only", () => {
  const [, pass] = passes();
  const parse = pass!.parse!;
  const rules = pass!.rules.map(({ object }) => parse(object));
  const first = new PlanMemo();
  const second = new PlanMemo();
  planReconcile(pass!, first);
  assert.notEqual(first.analysis, undefined);
  assert.notEqual(first.accessNeeds, undefined);
  for (const parsed of rules) {
    assert.ok(parsed.ok);
    assert.ok(first.covers.has(parsed.rule));
    assert.ok(first.settled.has(parsed.rule));
  }
  assert.ok(first.providerUrls.size > 0);
  assert.equal(second.analysis, undefined);
  assert.equal(second.accessNeeds, undefined);
  assert.equal(second.providerUrls.size, 0);
  for (const parsed of rules) {
    assert.ok(parsed.ok);
    assert.equal(second.covers.has(parsed.rule), false);
    assert.equal(second.settled.has(parsed.rule), false);
    assert.equal(second.whenProblems.has(parsed.rule), false);
  }
  for (const source of pass!.configurations) {
    assert.equal(second.upToDate.has(source.object), false);
    assert.equal(second.normalisedWebhooks.has(source.object), false);
  }
  planReconcile(pass!, second);
  const [parsed] = rules;
  assert.ok(parsed?.ok);
  assert.notEqual(
    second.covers.get(parsed.rule),
    first.covers.get(parsed.rule),
    "each memo keeps its own cover",
  );
});
