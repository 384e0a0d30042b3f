import assert from "node:assert/strict";
import { PlanMemo } from "./plan_memo.ts";
import { parseDependencyRule, ruleKey } from "../rules/mod.ts";
import type { ExportReading } from "../exports/mod.ts";
import { addCover, coverOf, emptyCoverage } from "./rule_cover.ts";
import type { RuleCoverageContext } from "./rule_plan.ts";
import {
  COMPUTE_EXPORT,
  CONSUMER,
  ENDPOINT,
  EXPORT_REF,
  exportsRead,
  NETWORK,
  NETWORK_EXPORT,
  NETWORK_PATH,
  resolved,
  VM_RULE,
  vmRule,
  vmRuleAt,
} from "../../testing/plan_fixtures.ts";

/** {@linkcode vmRule}, parsed. */
function parsedVmRule() {
  const parsed = parseDependencyRule(vmRule().object);
  assert.ok(parsed.ok);
  return parsed.rule;
}

/** The network provider resolved and bound, both exports read. */
function context(): RuleCoverageContext {
  return {
    resolutions: resolved({ [NETWORK_PATH]: NETWORK }),
    bindings: new Map([[NETWORK, { endpoint: ENDPOINT, claimAccepted: true }]]),
    exports: exportsRead({ answer: NETWORK_EXPORT }),
    exportRef: EXPORT_REF,
    problems: new Map(),
    memo: new PlanMemo(),
  };
}

Deno.test("coverOf() keeps a rule's cover while every lookup it made answers the same, bindings compared by what is read of them", () => {
  const rule = parsedVmRule();
  const base = context();
  const first = coverOf(rule, CONSUMER, base);
  assert.deepEqual(first.states, [{
    state: "ok",
    path: NETWORK_PATH,
    cluster: NETWORK,
    gvr: {
      group: "network.example.com",
      version: "v1alpha1",
      resource: "vpcs",
    },
  }]);
  // The same answers in new maps, and the bindings read anew.
  const again = coverOf(rule, CONSUMER, {
    ...base,
    resolutions: new Map(base.resolutions),
    bindings: new Map([[NETWORK, { endpoint: ENDPOINT, claimAccepted: true }]]),
    exports: new Map(base.exports),
  });
  assert.equal(again, first);
});

Deno.test("coverOf() computes a rule's cover again when a lookup it made answers otherwise", () => {
  const rule = parsedVmRule();
  const base = context();
  const first = coverOf(rule, CONSUMER, base);
  const changes: [string, Partial<RuleCoverageContext>, string | undefined][] =
    [
      ["a path resolved again", {
        resolutions: resolved({ [NETWORK_PATH]: NETWORK }),
      }, "ok"],
      ["a binding whose claim is not accepted", {
        bindings: new Map([[NETWORK, {
          endpoint: ENDPOINT,
          claimAccepted: false,
        }]]),
      }, "failed"],
      ["an export read again", {
        exports: exportsRead(
          { answer: { found: true, types: [] } } satisfies ExportReading,
          { answer: COMPUTE_EXPORT },
        ),
      }, "failed"],
      ["exports not checked", { exports: undefined }, "ok"],
      ["a problem found", {
        problems: new Map([[ruleKey(CONSUMER, VM_RULE), [{
          reason: "SelfDependency" as const,
          message: "rejected",
        }]]]),
        // Rejected: its dependencies have no state, and it protects nothing.
      }, undefined],
    ];
  for (const [what, change, state] of changes) {
    const cover = coverOf(rule, CONSUMER, { ...base, ...change });
    assert.notEqual(cover, first, what);
    assert.equal(cover.states[0]?.state, state, what);
    // Back to the first answers: computed again, the same as the first.
    const back = coverOf(rule, CONSUMER, base);
    assert.deepEqual(back, first, what);
  }
  // A rejected rule protects nothing.
  const rejected = coverOf(rule, CONSUMER, {
    ...base,
    problems: new Map([[ruleKey(CONSUMER, VM_RULE), [{
      reason: "SelfDependency" as const,
      message: "rejected",
    }]]]),
  });
  assert.deepEqual(rejected.protects, []);
});

Deno.test("addCover() adds a rule's paths, exports, states, notes and protected types to the coverage", () => {
  const rule = parsedVmRule();
  const coverage = emptyCoverage();
  const cover = coverOf(rule, CONSUMER, {
    ...context(),
    exports: exportsRead({ error: "403" }),
    resolutions: new Map(),
  });
  addCover(coverage, cover);
  addCover(coverage, coverOf(rule, CONSUMER, context()));
  assert.deepEqual([...coverage.paths], [NETWORK_PATH]);
  assert.equal(coverage.unsure, true);
  assert.deepEqual([...coverage.desired.keys()], [NETWORK]);
  assert.deepEqual([...coverage.providerPaths], [[NETWORK, NETWORK_PATH]]);
  assert.deepEqual(
    [...coverage.exports.keys()].map((k) => k.split("\n")[0]),
    [CONSUMER, NETWORK_PATH],
  );
  assert.equal(
    coverage.states.get(ruleKey(CONSUMER, VM_RULE))?.[0]?.state,
    "ok",
  );
});

Deno.test("coverOf() checks a path read on the protected object or its Namespace without any export, and the dependent's schema for the rest", () => {
  const cases: [string, Parameters<typeof vmRuleAt>[0], RegExp[]][] = [
    ["on the protected object, outside metadata", {
      from: "Target",
      path: ".spec.owner",
    }, [
      /^spec\.dependencies\[0\]\.fieldRef\.path: \.spec: from: Target reads only/,
    ]],
    ["on the Namespace, in metadata", {
      from: "TargetNamespace",
      path: ".metadata.labels.owner",
    }, []],
    // No schema read for the dependent: a Dependent path is not checked.
    ["on the dependent", { path: ".spec.nope" }, []],
  ];
  for (const [what, fieldRef, problems] of cases) {
    const parsed = parseDependencyRule(vmRuleAt(fieldRef).object);
    assert.ok(parsed.ok, what);
    // The exports are not read yet: the dependencies are pending.
    const cover = coverOf(parsed.rule, CONSUMER, {
      ...context(),
      exports: new Map(),
    });
    assert.deepEqual(cover.states.map((s) => s.state), ["pending"], what);
    assert.equal(cover.fieldProblems.length, problems.length, what);
    for (const [i, problem] of problems.entries()) {
      assert.match(cover.fieldProblems[i]!, problem, what);
    }
  }
});
