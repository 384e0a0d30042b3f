import assert from "node:assert/strict";
import {
  type DependencyRule,
  READY_CONDITION,
  ruleKey,
  WEBHOOKS_INSTALLED_CONDITION,
} from "../rules/mod.ts";
import {
  dependency,
  SUBNETS,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";
import {
  condition,
  installationVerdict,
  type PlannedCondition,
  readyConditionFor,
  type RuleConditionsMemo,
} from "./rule_conditions.ts";
import type { DependencyState, ValidRule } from "./rule_plan.ts";
import { WhenEnvironment } from "../when/mod.ts";
import type { StatusContext } from "./status_tally.ts";

const NETWORK = "network-cluster";
const NETWORK_PATH = "root:providers:network";
const CONSUMER = "consumer-cluster";
const ENFORCED =
  "deleting vpcs.network.example.com is denied while a VirtualMachine in the same workspace refers to it";

/** The context of a pass with nothing pending and settings that read. */
function statusContext(over: Partial<StatusContext> = {}): StatusContext {
  return {
    settings: {
      url: "https://webhook.example.com/validate",
      caBundle: "",
      timeoutSeconds: 10,
    },
    installErrors: new Map(),
    pendingClusters: new Set(),
    now: "2025-06-01T12:00:00Z",
    memo: { shown: new WeakMap() },
    ...over,
  };
}

/** An installed dependency in the network provider. */
function ok(path = NETWORK_PATH, cluster = NETWORK): DependencyState {
  return { state: "ok", path, cluster, gvr: VPCS };
}

/** A rule protecting VPCs from VirtualMachines, in the consumer cluster. */
function valid(
  spec: Partial<DependencyRule["spec"]> = {},
  name = "vms-need-vpcs",
): ValidRule {
  const rule = validRule(name, VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
  ]);
  return {
    source: { endpoint: "https://shard-1.example.com", object: {} },
    rule: { ...rule, spec: { ...rule.spec, ...spec } },
    cluster: CONSUMER,
  };
}

function memo(): RuleConditionsMemo {
  return {
    whenProblems: new WeakMap(),
    denied: new WeakMap(),
    whenEnvironment: new WhenEnvironment(),
  };
}

/** Coverage with these notes for the rule `vms-need-vpcs` of {@linkcode valid}. */
function coverage(
  notes: {
    unverified?: string[];
    fieldProblems?: string[];
    uncheckedPaths?: string[];
  } = {},
) {
  const key = (values: string[] | undefined) =>
    new Map(
      values === undefined
        ? []
        : [[ruleKey(CONSUMER, "vms-need-vpcs"), values]],
    );
  return {
    unverified: key(notes.unverified),
    fieldProblems: key(notes.fieldProblems),
    uncheckedPaths: key(notes.uncheckedPaths),
  };
}

const INSTALLED: PlannedCondition = condition(WEBHOOKS_INSTALLED_CONDITION, {
  status: "True",
  reason: "Installed",
  message: `the webhook is installed in ${NETWORK_PATH}`,
});

const NOTHING_MISSING = { missing: [], unverified: [], unanswered: 0 };

function summary(c: PlannedCondition | undefined): string[] | undefined {
  return c === undefined ? undefined : [c.status, c.reason, c.message];
}

Deno.test("condition() leaves the transition time to the status write", () => {
  assert.deepEqual(
    condition(READY_CONDITION, {
      status: "True",
      reason: "Enforced",
      message: "m",
    }),
    {
      type: READY_CONDITION,
      status: "True",
      reason: "Enforced",
      message: "m",
      lastTransitionTime: "",
    },
  );
});

Deno.test("installationVerdict() names the workspaces installed in, sorted, once each", () => {
  assert.deepEqual(
    summary(installationVerdict(
      [ok("root:z", "z"), ok("root:a", "a"), ok("root:z", "z")],
      statusContext(),
    )),
    ["True", "Installed", "the webhook is installed in root:a, root:z"],
  );
});

Deno.test("installationVerdict() waits while a dependency or its configuration write is pending", () => {
  assert.equal(
    installationVerdict([ok(), { state: "pending" }], statusContext()),
    undefined,
  );
  assert.equal(
    installationVerdict(
      [ok()],
      statusContext({ pendingClusters: new Set([NETWORK]) }),
    ),
    undefined,
  );
});

Deno.test("installationVerdict() says the first failure's reason and every failure once, over anything pending", () => {
  const failed = (reason: "PathNotResolved" | "ProviderNotBound") => ({
    state: "failed" as const,
    reason,
    message: `${reason} message`,
  });
  assert.deepEqual(
    summary(installationVerdict(
      [
        { state: "pending" },
        failed("ProviderNotBound"),
        ok(),
        failed("PathNotResolved"),
        failed("ProviderNotBound"),
      ],
      statusContext({
        pendingClusters: new Set([NETWORK]),
        installErrors: new Map([[NETWORK, "forbidden"]]),
      }),
    )),
    [
      "False",
      "ProviderNotBound",
      `ProviderNotBound message; cannot write the webhook configuration in ${NETWORK_PATH}: forbidden; PathNotResolved message`,
    ],
  );
  assert.deepEqual(
    summary(installationVerdict(
      [ok()],
      statusContext({ settings: { error: "no CA bundle" } }),
    )),
    ["False", "InstallFailed", "no CA bundle"],
  );
});

Deno.test("readyConditionFor() says what an enforced rule denies, and what could not be checked", () => {
  assert.deepEqual(
    summary(readyConditionFor(valid(), {
      installed: INSTALLED,
      problems: [],
      access: NOTHING_MISSING,
      coverage: coverage(),
      memo: memo(),
    })),
    ["True", "Enforced", ENFORCED],
  );
  assert.deepEqual(
    summary(readyConditionFor(valid(), {
      installed: INSTALLED,
      problems: [],
      access: { missing: [], unverified: ["r1", "r1"], unanswered: 0 },
      coverage: coverage({
        unverified: ["u1", "u2", "u1"],
        uncheckedPaths: ["p1"],
      }),
      memo: memo(),
    })),
    [
      "True",
      "Enforced",
      `${ENFORCED}; not checked against the APIExports: u1; u2; not checked against the schema: p1; not checked whether the webhook may read: r1`,
    ],
  );
});

Deno.test("readyConditionFor() words what is denied per where the reference is read, with when and protectWhile", () => {
  const rule = validRule("vms-need-vpcs", VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
    dependency(SUBNETS, ".spec.subnetRef.name"),
  ]);
  const [vpcs, subnets] = rule.spec.dependencies;
  const ready = readyConditionFor(
    valid({
      dependencies: [
        { ...vpcs!, fieldRef: { ...vpcs!.fieldRef, from: "Target" } },
        {
          ...subnets!,
          fieldRef: { ...subnets!.fieldRef, from: "TargetNamespace" },
        },
      ],
      when: "object.spec.deletionProtection == true",
      protectWhile: "Active",
    }),
    {
      installed: INSTALLED,
      problems: [],
      access: NOTHING_MISSING,
      coverage: coverage(),
      memo: memo(),
    },
  );
  const only =
    " (counting only one for which spec.when is true and that is not being deleted)";
  assert.equal(
    ready.message,
    `deleting vpcs.network.example.com is denied while the VirtualMachine it names exists${only}; ` +
      `deleting subnets.network.example.com is denied while the VirtualMachine its Namespace names exists${only}`,
  );
});

Deno.test("readyConditionFor() ranks a rule's problems, then spec.when, then paths, then reads, naming each", () => {
  const ready = readyConditionFor(valid({ when: "object.spec.x ==" }), {
    installed: INSTALLED,
    problems: [{ reason: "DependencyCycle", message: "a cycle" }],
    access: {
      missing: ["cannot read", "cannot read"],
      unverified: [],
      unanswered: 0,
    },
    coverage: coverage({
      fieldProblems: ["no .spec.vpcRef", "no .spec.vpcRef"],
    }),
    memo: memo(),
  });
  assert.equal(ready.status, "False");
  assert.equal(ready.reason, "DependencyCycle");
  const parts = ready.message.split("; ");
  assert.equal(parts[0], "a cycle");
  assert.match(parts[1]!, /^spec\.when: /);
  assert.deepEqual(parts.slice(-3), [
    "until it compiles, the webhook counts it as true for every VirtualMachine",
    "no .spec.vpcRef",
    "cannot read",
  ]);
  const options = {
    installed: INSTALLED,
    problems: [],
    access: { missing: ["cannot read"], unverified: [], unanswered: 0 },
    coverage: coverage({ fieldProblems: ["no .spec.vpcRef"] }),
    memo: memo(),
  };
  assert.equal(
    readyConditionFor(valid({ when: "object.spec.x ==" }), options).reason,
    "InvalidCondition",
  );
  assert.equal(
    readyConditionFor(valid(), options).reason,
    "FieldNotInSchema",
  );
  assert.equal(
    readyConditionFor(valid(), { ...options, coverage: coverage() }).reason,
    "WebhookCannotRead",
  );
});

Deno.test("readyConditionFor() takes WebhooksInstalled's reason while it is False, adding the rule's problems", () => {
  const installed = condition(WEBHOOKS_INSTALLED_CONDITION, {
    status: "False",
    reason: "ProviderNotBound",
    message: "not bound",
  });
  const ready = readyConditionFor(valid({ when: "object.spec.x ==" }), {
    installed,
    problems: [
      { reason: "DependencyCycle", message: "a cycle" },
      { reason: "DependencyCycle", message: "another cycle" },
    ],
    access: { missing: ["cannot read"], unverified: [], unanswered: 0 },
    coverage: coverage({ fieldProblems: ["no .spec.vpcRef"] }),
    memo: memo(),
  });
  assert.equal(ready.status, "False");
  assert.equal(ready.reason, "ProviderNotBound");
  const parts = ready.message.split("; ");
  assert.deepEqual(parts.slice(0, 2), ["not bound", "a cycle"]);
  assert.match(parts[2]!, /^spec\.when: /);
  assert.equal(parts.at(-1), "no .spec.vpcRef");
  assert.ok(!ready.message.includes("another cycle"));
  assert.ok(!ready.message.includes("cannot read"));
});

Deno.test("readyConditionFor() compiles a rule's spec.when and words what it denies once per rule object and memo", () => {
  const rule = valid({ when: "object.spec.x ==" });
  const kept = memo();
  const options = {
    installed: INSTALLED,
    problems: [],
    access: NOTHING_MISSING,
    coverage: coverage(),
    memo: kept,
  };
  const first = readyConditionFor(rule, options);
  assert.equal(first.reason, "InvalidCondition");
  assert.match(kept.whenProblems.get(rule.rule) ?? "", /^spec\.when: /);
  // What the memo holds is taken as it is, not computed again.
  kept.whenProblems.set(rule.rule, null);
  kept.denied.set(rule.rule, "as remembered");
  assert.deepEqual(
    summary(readyConditionFor(rule, options)),
    ["True", "Enforced", "as remembered"],
  );
  const compiles = valid({ when: "object.spec.deletionProtection == true" });
  readyConditionFor(compiles, options);
  assert.equal(kept.whenProblems.get(compiles.rule), null);
  assert.equal(
    kept.denied.get(compiles.rule),
    `${ENFORCED} (counting only one for which spec.when is true)`,
  );
});
