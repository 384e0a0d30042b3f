import assert from "node:assert/strict";
import { PlanMemo } from "./plan_memo.ts";
import {
  parseDependencyRule,
  READY_CONDITION,
  ruleKey,
  WEBHOOKS_INSTALLED_CONDITION,
} from "../rules/mod.ts";
import type { ExportReading } from "../exports/mod.ts";
import { planReconcile } from "./reconcile_plan.ts";
import { protectedTypesOf } from "./configuration_plan.ts";
import { accessNeededBy, parseRules, planRuleCoverage } from "./rule_plan.ts";
import {
  dependency,
  SUBNETS,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";
import {
  at,
  binding,
  COMPUTE_EXPORT,
  COMPUTE_WITH_SCHEMA,
  conditionOf,
  configuration,
  CONSUMER,
  deleting,
  ENDPOINT,
  ENFORCED_VPCS,
  EXPORT_REF,
  exportsRead,
  GONE_PATH,
  input,
  INSTALLED_NETWORK,
  NETWORK,
  NETWORK_EXPORT,
  NETWORK_PATH,
  networkInput,
  planWithSchema,
  resolved,
  rule,
  statusOf,
  STORAGE_PATH,
  summary,
  VM_RULE,
  VM_TYPE,
  vmRule,
  vmRuleAt,
  VOLUMES,
  VPCS_DEPENDENT,
  vwcClaim,
} from "../../testing/plan_fixtures.ts";

Deno.test("planReconcile() reports a path that cannot be resolved without affecting other rules", () => {
  const message = "workspace root:providers:gone not found";
  const plan = planReconcile(input({
    rules: [
      vmRule(),
      rule("volumes", VIRTUAL_MACHINES, [
        at(dependency(VOLUMES, ".spec.volumeRef.name"), GONE_PATH),
      ]),
    ],
    bindings: [binding(NETWORK)],
    configurations: [configuration(NETWORK, [VPCS])],
    resolutions: resolved({ [NETWORK_PATH]: NETWORK }, {
      [GONE_PATH]: { reason: "NotFound", message, definitive: true },
    }),
  }));
  assert.deepEqual(plan.configurations, []);
  assert.deepEqual(summary(statusOf(plan, "volumes")), [
    ["False", "PathNotResolved", message],
    ["False", "PathNotResolved", message],
  ]);
  assert.deepEqual(summary(statusOf(plan, VM_RULE)), [
    ["True", "Installed", INSTALLED_NETWORK],
    ["True", "Enforced", ENFORCED_VPCS],
  ]);
  assert.deepEqual(plan.paths, [GONE_PATH, NETWORK_PATH]);
  assert.deepEqual(plan.stalePaths, []);
});

Deno.test("planReconcile() reports a provider without binding and marks its path stale", () => {
  const plan = planReconcile(input({
    rules: [vmRule()],
    resolutions: resolved({ [NETWORK_PATH]: NETWORK }),
  }));
  assert.deepEqual(plan.configurations, []);
  assert.deepEqual(plan.stalePaths, [NETWORK_PATH]);
  assert.equal(plan.desiredClusters, 0);
  const action = statusOf(plan, VM_RULE);
  for (const type of [WEBHOOKS_INSTALLED_CONDITION, READY_CONDITION]) {
    const c = conditionOf(action, type);
    assert.deepEqual([c.status, c.reason], ["False", "ProviderNotBound"]);
    assert.ok(c.message.includes(NETWORK_PATH), c.message);
    assert.ok(c.message.includes(NETWORK), c.message);
    assert.ok(c.message.includes(EXPORT_REF), c.message);
  }
});

Deno.test("planReconcile() reports a binding that has not accepted the claim", async (t) => {
  const cases: [string, unknown[]][] = [
    ["claim pending", [vwcClaim("Pending")]],
    ["claim rejected", [vwcClaim("Rejected")]],
    ["another resource accepted", [
      vwcClaim("Accepted", "mutatingwebhookconfigurations"),
    ]],
    ["no claims", []],
  ];
  for (const [name, claims] of cases) {
    await t.step(name, () => {
      const plan = planReconcile({
        ...networkInput([vmRule()], []),
        bindings: [binding(NETWORK, { claims })],
      });
      assert.deepEqual(plan.configurations, []);
      assert.deepEqual(plan.stalePaths, []);
      const c = conditionOf(statusOf(plan, VM_RULE), READY_CONDITION);
      assert.deepEqual([c.status, c.reason], ["False", "ClaimNotAccepted"]);
      assert.ok(c.message.includes(EXPORT_REF), c.message);
    });
  }
  await t.step("any accepting binding in the workspace counts", () => {
    const plan = planReconcile({
      ...networkInput([vmRule()], [VPCS]),
      bindings: [
        binding(NETWORK, { name: "a", claims: [vwcClaim("Pending")] }),
        binding(NETWORK, { name: "b" }),
        binding(NETWORK, { name: "c", claims: [] }),
      ],
    });
    assert.equal(
      conditionOf(statusOf(plan, VM_RULE), READY_CONDITION).reason,
      "Enforced",
    );
  });
});

Deno.test("planReconcile() installs nothing for a rule that protects its own dependent type", () => {
  const selfRule = rule("vpcs-need-vpcs", VPCS_DEPENDENT, [
    dependency(VPCS, ".spec.parentRef.name"),
    dependency(SUBNETS, ".spec.subnetRef.name"),
  ]);
  const plan = planReconcile(networkInput([selfRule], []));
  assert.deepEqual(plan.configurations, []);
  assert.deepEqual(plan.paths, [NETWORK_PATH]);
  const action = statusOf(plan, "vpcs-need-vpcs");
  const installed = conditionOf(action, WEBHOOKS_INSTALLED_CONDITION);
  assert.deepEqual(
    [installed.status, installed.reason, installed.message],
    ["False", "SelfDependency", "nothing is installed for a rejected rule"],
  );
  const ready = conditionOf(action, READY_CONDITION);
  assert.deepEqual([ready.status, ready.reason], ["False", "SelfDependency"]);
  assert.ok(
    ready.message.startsWith(
      "nothing is installed for a rejected rule; spec.dependencies[0]",
    ),
    ready.message,
  );

  // Another rule's types are still installed, the rejected rule's are not.
  const both = planReconcile(networkInput([selfRule, vmRule()], []));
  assert.equal(both.configurations.length, 1);
  assert.deepEqual(
    protectedTypesOf(both.configurations[0]!.object),
    deleting(VPCS),
  );
});

// ---------------------------------------------------------------------------
// Rules checked against the APIExports they name

Deno.test("planReconcile() names every export its rules name, for reading", () => {
  const plan = planReconcile(networkInput([vmRule()], []));
  assert.deepEqual(plan.exports, [
    { workspace: CONSUMER, name: VIRTUAL_MACHINES.group },
    { workspace: NETWORK_PATH, name: VPCS.group },
  ]);
});

Deno.test("planReconcile() installs and enforces a rule whose types its exports serve", () => {
  const plan = planReconcile({
    ...networkInput([vmRule()], [VPCS]),
    exports: exportsRead({ answer: NETWORK_EXPORT }),
  });
  assert.deepEqual(plan.configurations, []);
  const ready = conditionOf(statusOf(plan, VM_RULE), READY_CONDITION);
  assert.equal(ready.reason, "Enforced");
  assert.equal(ready.message, ENFORCED_VPCS);
});

Deno.test("planReconcile() reports a protected type its export does not serve and installs nothing for it", () => {
  const typo = rule(VM_RULE, VIRTUAL_MACHINES, [
    dependency({ ...VPCS, resource: "vpcz" }, ".spec.vpcRef.name"),
  ]);
  const plan = planReconcile({
    ...networkInput([typo], []),
    exports: exportsRead({ answer: NETWORK_EXPORT }),
  });
  assert.deepEqual(plan.configurations, []);
  const status = statusOf(plan, VM_RULE);
  const ready = conditionOf(status, READY_CONDITION);
  assert.equal(ready.status, "False");
  assert.equal(ready.reason, "TypeNotExported");
  assert.equal(
    ready.message,
    "the APIExport network.example.com in root:providers:network does not export vpcz.network.example.com: it exports vpcs.network.example.com (v1alpha1)",
  );
  assert.equal(
    conditionOf(status, WEBHOOKS_INSTALLED_CONDITION).reason,
    "TypeNotExported",
  );
});

Deno.test("planReconcile() removes the configuration of a type found not exported", () => {
  const typo = rule(VM_RULE, VIRTUAL_MACHINES, [
    dependency({ ...VPCS, version: "v9" }, ".spec.vpcRef.name"),
  ]);
  const plan = planReconcile({
    ...networkInput([typo], [{ ...VPCS, version: "v9" }]),
    exports: exportsRead({ answer: NETWORK_EXPORT }),
  });
  assert.deepEqual(plan.configurations.map((c) => c.action), ["delete"]);
  assert.match(
    conditionOf(statusOf(plan, VM_RULE), READY_CONDITION).message,
    /serves vpcs\.network\.example\.com only in v1alpha1, not v9/,
  );
});

Deno.test("planReconcile() reports an APIExport that does not exist", () => {
  const plan = planReconcile({
    ...networkInput([vmRule()], []),
    exports: exportsRead({ answer: { found: false } }),
  });
  assert.deepEqual(plan.configurations, []);
  const ready = conditionOf(statusOf(plan, VM_RULE), READY_CONDITION);
  assert.equal(ready.reason, "APIExportNotFound");
  assert.match(
    ready.message,
    /there is no APIExport network\.example\.com in root:providers:network/,
  );
});

Deno.test("planReconcile() reports a dependent type the rule's own export does not serve, and protects nothing for it", () => {
  const typo = rule(VM_RULE, {
    ...VIRTUAL_MACHINES,
    resource: "virtualmachinez",
  }, [
    dependency(VPCS, ".spec.vpcRef.name"),
  ]);
  const plan = planReconcile({
    ...networkInput([typo], []),
    exports: exportsRead({ answer: NETWORK_EXPORT }),
  });
  assert.deepEqual(plan.configurations, []);
  const ready = conditionOf(statusOf(plan, VM_RULE), READY_CONDITION);
  assert.equal(ready.reason, "TypeNotExported");
  assert.equal(
    ready.message,
    "spec.dependent: the APIExport compute.example.com in the rule's workspace does not export virtualmachinez.compute.example.com: it exports virtualmachines.compute.example.com (v1alpha1)",
  );
});

Deno.test("planReconcile() protects what it cannot check, and says so in the status", () => {
  const plan = planReconcile({
    ...networkInput([vmRule()], []),
    exports: exportsRead({ error: "403 Forbidden" }),
  });
  // The configuration is written all the same: a failed read never weakens.
  assert.deepEqual(plan.configurations.map((c) => c.action), ["create"]);
  const installed = planReconcile({
    ...networkInput([vmRule()], [VPCS]),
    exports: exportsRead({ error: "403 Forbidden" }),
  });
  const ready = conditionOf(statusOf(installed, VM_RULE), READY_CONDITION);
  assert.equal(ready.reason, "Enforced");
  assert.equal(
    ready.message,
    `${ENFORCED_VPCS}; not checked against the APIExports: cannot read the APIExport network.example.com in root:providers:network to check vpcs.network.example.com: 403 Forbidden`,
  );
});

Deno.test("planReconcile() writes nothing for a type whose export is not read yet, and removes nothing installed", () => {
  const unread = new Map<string, ExportReading>();
  const fresh = planReconcile({
    ...networkInput([vmRule()], []),
    exports: unread,
  });
  assert.deepEqual(fresh.configurations, []);
  assert.deepEqual(fresh.statuses, []);
  // After a restart: the installed configuration stays until the export is read.
  const restarted = planReconcile({
    ...networkInput([], [VPCS]),
    rules: [
      rule("other", VIRTUAL_MACHINES, [
        dependency(SUBNETS, ".spec.subnetRef.name"),
      ]),
    ],
    exports: unread,
  });
  assert.deepEqual(restarted.configurations, []);
});

// ---------------------------------------------------------------------------
// Field paths checked against the dependent's schema

Deno.test("planReconcile() reports a field path the dependent's schema does not have, with the nearest one", () => {
  const plan = planWithSchema([vmRuleAt({ path: ".spec.vpc.name" })]);
  assert.deepEqual(summary(statusOf(plan, VM_RULE)), [
    ["True", "Installed", INSTALLED_NETWORK],
    [
      "False",
      "FieldNotInSchema",
      "spec.dependencies[0].fieldRef.path: .spec.vpc: no such field; did you mean .spec.vpcRef.name?",
    ],
  ]);
  assert.deepEqual(plan.ready, new Map([["False/FieldNotInSchema", 1]]));
});

Deno.test("planReconcile() keeps the type of a path not in the schema in the configuration", () => {
  // A path that cannot match denies nothing; dropping the type would
  // remove protection whenever the check is wrong. Status alone says it.
  const installed = planWithSchema([vmRuleAt({ path: ".spec.vpc.name" })]);
  assert.deepEqual(installed.configurations, []);
  const fresh = planReconcile({
    ...networkInput([vmRuleAt({ path: ".spec.vpc.name" })], []),
    exports: exportsRead({ answer: NETWORK_EXPORT }, {
      answer: COMPUTE_WITH_SCHEMA,
    }),
  });
  assert.deepEqual(fresh.configurations.map((c) => c.action), ["create"]);
  assert.deepEqual(
    protectedTypesOf(fresh.configurations[0]!.object),
    deleting(VPCS),
  );
});

Deno.test("planReconcile() checks namespacePath too, and every problem is in the message", () => {
  const plan = planWithSchema([vmRuleAt({
    path: ".spec.nics.subnetRef.name",
    namespacePath: ".spec.vpcRef.namespce",
  })]);
  const ready = conditionOf(statusOf(plan, VM_RULE), READY_CONDITION);
  assert.deepEqual([ready.status, ready.reason], ["False", "FieldNotInSchema"]);
  assert.equal(
    ready.message,
    "spec.dependencies[0].fieldRef.path: .spec.nics: is a list of objects, not an object; did you mean .spec.nics[*].subnetRef.name?; " +
      "spec.dependencies[0].fieldRef.namespacePath: .spec.vpcRef.namespce: no such field; did you mean .spec.vpcRef.namespace?",
  );
});

Deno.test("planReconcile() enforces paths the schema has, and names those it leaves open", () => {
  const good = planWithSchema([vmRuleAt({
    path: ".spec.nics[*].subnetRef.name",
    namespacePath: ".metadata.namespace",
  })]);
  const ready = conditionOf(statusOf(good, VM_RULE), READY_CONDITION);
  assert.deepEqual([ready.reason, ready.message], ["Enforced", ENFORCED_VPCS]);

  const open = planWithSchema([vmRuleAt({ path: ".spec.config.vpc.name" })]);
  assert.deepEqual(
    conditionOf(statusOf(open, VM_RULE), READY_CONDITION).message,
    `${ENFORCED_VPCS}; not checked against the schema: spec.dependencies[0].fieldRef.path below .spec.config`,
  );

  // A served version whose APIResourceSchema has no schema: nothing checked.
  const bare = planWithSchema([vmRuleAt({ path: ".spec.vpc.name" })], {
    answer: { found: true, types: [{ ...VM_TYPE, schemas: {} }] },
  });
  assert.deepEqual(
    conditionOf(statusOf(bare, VM_RULE), READY_CONDITION).message,
    `${ENFORCED_VPCS}; not checked against the schema: spec.dependencies[0].fieldRef.path (no schema for v1alpha1)`,
  );
});

Deno.test("planReconcile() fails no path on a schema it could not read, and keeps the last one read", () => {
  const typo = vmRuleAt({ path: ".spec.vpc.name" });
  const unread = planWithSchema([typo], { error: "403 Forbidden" });
  const ready = conditionOf(statusOf(unread, VM_RULE), READY_CONDITION);
  assert.equal(ready.reason, "Enforced");
  assert.match(ready.message, /not checked against the APIExports: .*403/);
  // Exports read without schemas (COMPUTE_EXPORT) check no path either.
  assert.equal(
    conditionOf(
      statusOf(planWithSchema([typo], { answer: COMPUTE_EXPORT }), VM_RULE),
      READY_CONDITION,
    ).reason,
    "Enforced",
  );
  const stale = planWithSchema([typo], {
    answer: COMPUTE_WITH_SCHEMA,
    error: "timeout",
  });
  assert.equal(
    conditionOf(statusOf(stale, VM_RULE), READY_CONDITION).message,
    "spec.dependencies[0].fieldRef.path: .spec.vpc: no such field; did you mean .spec.vpcRef.name? (as last read; reading it again failed: timeout)",
  );
});

Deno.test("planReconcile() checks a path read on the protected object or its Namespace against their metadata", () => {
  const field = "spec.dependencies[0].fieldRef.path";
  const label = '.metadata.labels["compute.example.com/owner"]';
  const cases: [
    string,
    "Target" | "TargetNamespace",
    string,
    [string, string, string | RegExp],
  ][] = [
    ["a label on the protected object", "Target", label, [
      "True",
      "Enforced",
      "deleting vpcs.network.example.com is denied while the VirtualMachine it names exists",
    ]],
    ["its ownerReferences", "Target", ".metadata.ownerReferences[*].name", [
      "True",
      "Enforced",
      "deleting vpcs.network.example.com is denied while the VirtualMachine it names exists",
    ]],
    ["a label on its Namespace", "TargetNamespace", label, [
      "True",
      "Enforced",
      "deleting vpcs.network.example.com is denied while the VirtualMachine its Namespace names exists",
    ]],
    // The dependent's schema has .spec.vpcRef.name: it is not what is read.
    ["the protected object's spec", "Target", ".spec.vpcRef.name", [
      "False",
      "FieldNotInSchema",
      `${field}: .spec: from: Target reads only the protected object's metadata, not .spec; use a path below .metadata, such as .metadata.labels["example.com/owner"] or .metadata.ownerReferences[*].name`,
    ]],
    ["the Namespace's spec", "TargetNamespace", ".spec.owner", [
      "False",
      "FieldNotInSchema",
      `${field}: .spec: from: TargetNamespace reads only the metadata of the protected object's Namespace, not .spec; use a path below .metadata, such as .metadata.labels["example.com/owner"]`,
    ]],
    [
      "a typo in the Namespace's metadata",
      "TargetNamespace",
      ".metadata.lables.owner",
      [
        "False",
        "FieldNotInSchema",
        /^spec\.dependencies\[0\]\.fieldRef\.path: \.metadata\.lables: no such field; did you mean \.metadata\.labels/,
      ],
    ],
  ];
  for (const [what, from, path, [status, reason, message]] of cases) {
    const source = vmRuleAt({ from, path });
    // Checked with the dependent's schema read, and with no export read at
    // all: metadata needs none.
    const plans = [
      planWithSchema([source]),
      planReconcile(networkInput([source], [VPCS])),
    ];
    for (const plan of plans) {
      const ready = conditionOf(statusOf(plan, VM_RULE), READY_CONDITION);
      assert.deepEqual([ready.status, ready.reason], [status, reason], what);
      if (typeof message === "string") {
        assert.equal(ready.message, message, what);
      } else assert.match(ready.message, message, what);
      // A wrong path denies nothing, so its type stays configured.
      assert.deepEqual(plan.configurations, [], what);
    }
  }
});

Deno.test("planReconcile() names each source of references in an enforced rule's message", () => {
  const label = ".metadata.labels.owner";
  const plan = planReconcile(networkInput([
    rule(VM_RULE, VIRTUAL_MACHINES, [
      dependency(VPCS, ".spec.vpcRef.name"),
      {
        ...dependency(SUBNETS, label),
        fieldRef: { from: "Target", path: label },
      },
      {
        ...dependency(VPCS, label),
        fieldRef: { from: "TargetNamespace", path: label },
      },
    ]),
  ], [VPCS, SUBNETS]));
  assert.equal(
    conditionOf(statusOf(plan, VM_RULE), READY_CONDITION).message,
    "deleting vpcs.network.example.com is denied while a VirtualMachine in the same workspace refers to it; " +
      "deleting subnets.network.example.com is denied while the VirtualMachine it names exists; " +
      "deleting vpcs.network.example.com is denied while the VirtualMachine its Namespace names exists",
  );
});

// ---------------------------------------------------------------------------
// The rules' part on its own

/** VPCs as a configuration protects them for a rule. */
const VPCS_GVR = {
  group: VPCS.group,
  version: VPCS.version,
  resource: VPCS.resource,
};

Deno.test("parseRules() keeps the valid rules with their cluster, the parse errors of the others, and the problems between the valid ones", () => {
  const bad = rule("bad", VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
  ]);
  (bad.object.spec as { dependent: { kind: string } }).dependent.kind =
    "virtual-machine";
  const self = rule("vpcs-need-vpcs", VPCS_DEPENDENT, [
    dependency(VPCS, ".spec.parentRef.name"),
  ]);
  const parsed = parseRules([vmRule(), bad, self], parseDependencyRule, {
    memo: new PlanMemo(),
  });
  assert.deepEqual(
    parsed.valid.map((v) => [v.cluster, v.rule.metadata.name]),
    [[CONSUMER, VM_RULE], [CONSUMER, "vpcs-need-vpcs"]],
  );
  assert.deepEqual(parsed.invalid.map((i) => i.source), [bad]);
  assert.match(parsed.invalid[0]!.error, /virtual-machine/);
  assert.deepEqual(
    parsed.problems.get(ruleKey(CONSUMER, "vpcs-need-vpcs"))?.map((p) =>
      p.reason
    ),
    ["SelfDependency"],
  );
  assert.equal(parsed.problems.has(ruleKey(CONSUMER, VM_RULE)), false);
});

Deno.test("planRuleCoverage() protects each dependency's type in its provider's cluster, and is unsure while a path is not resolved", () => {
  const rules = parseRules(
    [
      vmRule(),
      rule("volumes", VIRTUAL_MACHINES, [
        at(dependency(VOLUMES, ".spec.volumeRef.name"), STORAGE_PATH),
      ]),
    ],
    parseDependencyRule,
    {
      memo: new PlanMemo(),
    },
  );
  const context = {
    resolutions: resolved({ [NETWORK_PATH]: NETWORK }),
    bindings: new Map([[NETWORK, { endpoint: ENDPOINT, claimAccepted: true }]]),
    exportRef: EXPORT_REF,
    problems: rules.problems,
    memo: new PlanMemo(),
  };
  const coverage = planRuleCoverage(rules.valid, context);
  assert.deepEqual(
    [...coverage.desired].map(([cluster, types]) => [cluster, [
      ...types.values(),
    ]]),
    [[NETWORK, [VPCS_GVR]]],
  );
  assert.deepEqual([...coverage.providerPaths], [[NETWORK, NETWORK_PATH]]);
  assert.deepEqual([...coverage.paths].sort(), [NETWORK_PATH, STORAGE_PATH]);
  assert.equal(coverage.unsure, true, "the storage path is being resolved");
  assert.deepEqual(coverage.states.get(ruleKey(CONSUMER, VM_RULE)), [{
    state: "ok",
    path: NETWORK_PATH,
    cluster: NETWORK,
    gvr: VPCS_GVR,
  }]);
  assert.deepEqual(coverage.states.get(ruleKey(CONSUMER, "volumes")), [{
    state: "pending",
  }]);

  const resolvedAll = planRuleCoverage(rules.valid, {
    ...context,
    resolutions: resolved({ [NETWORK_PATH]: NETWORK }, {
      [STORAGE_PATH]: {
        reason: "NotFound",
        message: "workspace root:providers:storage not found",
        definitive: true,
      },
    }),
  });
  assert.equal(resolvedAll.unsure, false, "a definitive failure is known");
});

Deno.test("accessNeededBy() names each read the valid rules need once", () => {
  const rules = parseRules([vmRule(), vmRule()], parseDependencyRule, {
    memo: new PlanMemo(),
  });
  assert.deepEqual(
    accessNeededBy(rules.valid, new PlanMemo()).map((r) =>
      `${r.verb} ${r.resource}`
    ),
    ["list virtualmachines", "get virtualmachines", "get vpcs"],
  );
  // Owners are read by name, and a Namespace that names one is read too.
  const label = ".metadata.labels.owner";
  const owners = parseRules(
    [
      rule("by-namespace", VIRTUAL_MACHINES, [{
        ...dependency(SUBNETS, label),
        fieldRef: { from: "TargetNamespace", path: label },
      }]),
      vmRuleAt({ from: "Target", path: label }),
    ],
    parseDependencyRule,
    {
      memo: new PlanMemo(),
    },
  );
  assert.deepEqual(
    accessNeededBy(owners.valid, new PlanMemo()).map((r) =>
      `${r.verb} ${r.resource}.${r.group}`
    ),
    [
      "get virtualmachines.compute.example.com",
      "get subnets.network.example.com",
      "get namespaces.",
      "get vpcs.network.example.com",
    ],
  );
});

Deno.test("accessNeededBy() with dependentsIndex adds the reads that feed the index, once each, and remembers per setting", () => {
  const memo = new PlanMemo();
  const rules = parseRules([vmRule(), vmRule()], parseDependencyRule, {
    memo,
  });
  const plain = accessNeededBy(rules.valid, memo);
  const indexed = accessNeededBy(rules.valid, memo, { dependentsIndex: true });
  assert.notEqual(indexed, plain);
  assert.deepEqual(
    indexed.map((r) =>
      `${r.verb} ${r.resource}${r.subresource ? `/${r.subresource}` : ""}`
    ),
    [
      "list virtualmachines",
      "get virtualmachines",
      "get vpcs",
      "watch virtualmachines",
      "list apiexports/content",
      "watch apiexports/content",
      "list apiexportendpointslices",
      "watch apiexportendpointslices",
    ],
  );
  // The same rules and setting: the same list.
  assert.equal(
    accessNeededBy(rules.valid, memo, { dependentsIndex: true }),
    indexed,
  );
  assert.deepEqual(accessNeededBy(rules.valid, memo), plain);
});
