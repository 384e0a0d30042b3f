import assert from "node:assert/strict";
import {
  DependencyRuleStatusSchema,
  parseDependencyRule,
  READY_CONDITION,
  WEBHOOKS_INSTALLED_CONDITION,
} from "../rules/mod.ts";
import { type Plan, type PlanInput, planReconcile } from "./reconcile_plan.ts";
import {
  dependency,
  LOAD_BALANCERS,
  SUBNETS,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";
import {
  at,
  binding,
  conditionOf,
  configuration,
  CONSUMER,
  ENDPOINT,
  ENFORCED_VPCS,
  GONE_PATH,
  input,
  INSTALLED_NETWORK,
  NETWORK,
  NETWORK_PATH,
  networkInput,
  NOW,
  OTHER_ENDPOINT,
  providerConfiguration,
  resolved,
  rule,
  SETTINGS,
  statusOf,
  STORAGE,
  STORAGE_PATH,
  summary,
  VM_RULE,
  vmRule,
  VOLUMES,
} from "../../testing/plan_fixtures.ts";

/** Rules in every state, two providers, one of them still to be created. */
function mixedInput(): PlanInput {
  const invalid = rule("invalid", VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
  ]);
  (invalid.object.spec as { dependent: { kind: string } }).dependent.kind =
    "virtual-machine";
  return input({
    rules: [
      vmRule(),
      rule("loadbalancers-need-subnets", LOAD_BALANCERS, [
        dependency(SUBNETS, ".spec.subnetRef.name"),
      ]),
      invalid,
      rule("virtualmachines-need-volumes", VIRTUAL_MACHINES, [
        at(dependency(VOLUMES, ".spec.volumeRef.name"), STORAGE_PATH),
      ]),
      rule("loadbalancers-need-gone", LOAD_BALANCERS, [
        at(dependency(VOLUMES, ".spec.volumeRef.name"), GONE_PATH),
      ]),
      rule("other-workspace", VIRTUAL_MACHINES, [
        dependency(VPCS, ".spec.vpcRef.name"),
      ], { cluster: "4other2p" }),
    ],
    bindings: [
      binding(NETWORK),
      binding(STORAGE, { endpoint: OTHER_ENDPOINT }),
    ],
    configurations: [
      configuration(NETWORK, [SUBNETS, VPCS]),
      configuration("5orphan8q", [VPCS], { endpoint: OTHER_ENDPOINT }),
    ],
    resolutions: resolved(
      { [NETWORK_PATH]: NETWORK, [STORAGE_PATH]: STORAGE },
      {
        [GONE_PATH]: {
          reason: "NotFound",
          message: "workspace root:providers:gone not found",
          definitive: true,
        },
      },
    ),
  });
}

Deno.test("planReconcile() creates the configuration through the binding's endpoint and defers the status", () => {
  const plan = planReconcile(input({
    rules: [vmRule()],
    bindings: [binding(NETWORK, { endpoint: OTHER_ENDPOINT })],
    resolutions: resolved({ [NETWORK_PATH]: NETWORK }),
  }));
  assert.deepEqual(plan.configurations, [{
    cluster: NETWORK,
    workspace: NETWORK_PATH,
    endpoint: OTHER_ENDPOINT,
    action: "create",
    object: providerConfiguration(NETWORK, [VPCS], SETTINGS),
  }]);
  assert.deepEqual(plan.statuses, []);
  assert.deepEqual(plan.paths, [NETWORK_PATH]);
  assert.deepEqual(plan.stalePaths, []);
  assert.equal(plan.desiredClusters, 1);
  assert.deepEqual(plan.ready, new Map());
});

Deno.test("planReconcile() writes Installed and Enforced once the configuration is up to date", () => {
  const plan = planReconcile(networkInput([vmRule()], [VPCS]));
  assert.deepEqual(plan.configurations, []);
  assert.deepEqual(plan.statuses, [{
    cluster: CONSUMER,
    name: VM_RULE,
    endpoint: ENDPOINT,
    resourceVersion: "1001",
    status: {
      observedGeneration: 3,
      conditions: [
        {
          type: WEBHOOKS_INSTALLED_CONDITION,
          status: "True",
          reason: "Installed",
          message: INSTALLED_NETWORK,
          observedGeneration: 3,
          lastTransitionTime: NOW,
        },
        {
          type: READY_CONDITION,
          status: "True",
          reason: "Enforced",
          message: ENFORCED_VPCS,
          observedGeneration: 3,
          lastTransitionTime: NOW,
        },
      ],
    },
  }]);
  assert.deepEqual(plan.ready, new Map([["True/Enforced", 1]]));
  DependencyRuleStatusSchema.parse(plan.statuses[0]!.status);
});

Deno.test("planReconcile() writes nothing but deletes when the settings cannot be read, and says why", () => {
  const error = "secret dependency-controller-serving has no ca.crt";
  const stale = configuration(STORAGE, [VOLUMES]);
  const plan = planReconcile(input({
    rules: [vmRule()],
    bindings: [binding(NETWORK), binding(STORAGE)],
    // Out of date: would be updated with settings.
    configurations: [configuration(NETWORK, [SUBNETS]), stale],
    resolutions: resolved({ [NETWORK_PATH]: NETWORK }),
    settings: { error },
  }));
  assert.deepEqual(plan.configurations, [{
    cluster: STORAGE,
    endpoint: ENDPOINT,
    action: "delete",
    object: stale.object,
  }]);
  assert.deepEqual(summary(statusOf(plan, VM_RULE)), [
    ["False", "InstallFailed", error],
    ["False", "InstallFailed", error],
  ]);

  const fresh = planReconcile({
    ...networkInput([vmRule()], []),
    settings: { error },
  });
  assert.deepEqual(fresh.configurations, []);
  assert.equal(statusOf(fresh, VM_RULE).status.conditions?.length, 2);
});

Deno.test("planReconcile() reports a dependency cycle but still installs its types", () => {
  const rules = [
    rule("virtualmachines-need-loadbalancers", VIRTUAL_MACHINES, [
      dependency(LOAD_BALANCERS, ".spec.lbRef.name"),
    ]),
    rule("loadbalancers-need-virtualmachines", LOAD_BALANCERS, [
      dependency(VIRTUAL_MACHINES, ".spec.backendRef.name"),
    ]),
  ];
  const types = [LOAD_BALANCERS, VIRTUAL_MACHINES].map((
    { group, version, resource },
  ) => ({ group, version, resource }));
  const creating = planReconcile(networkInput(rules, []));
  assert.deepEqual(creating.configurations.map((c) => c.action), ["create"]);
  assert.deepEqual(
    creating.configurations[0]!.object,
    providerConfiguration(NETWORK, types, SETTINGS),
  );

  const plan = planReconcile(networkInput(rules, types));
  assert.deepEqual(plan.configurations, []);
  assert.equal(plan.statuses.length, 2);
  for (const action of plan.statuses) {
    const installed = conditionOf(action, WEBHOOKS_INSTALLED_CONDITION);
    assert.deepEqual([installed.status, installed.reason], [
      "True",
      "Installed",
    ]);
    const ready = conditionOf(action, READY_CONDITION);
    assert.deepEqual([ready.status, ready.reason], [
      "False",
      "DependencyCycle",
    ]);
    assert.match(ready.message, /^dependency cycle: /);
  }
  assert.deepEqual(plan.ready, new Map([["False/DependencyCycle", 2]]));
});

Deno.test("planReconcile() lists every provider a rule's webhook is installed in, once all are settled", () => {
  const twoProviders = rule(
    "virtualmachines-need-vpcs-and-volumes",
    VIRTUAL_MACHINES,
    [
      dependency(VPCS, ".spec.vpcRef.name"),
      at(dependency(VOLUMES, ".spec.volumeRef.name"), STORAGE_PATH),
    ],
  );
  const base = input({
    rules: [twoProviders],
    bindings: [
      binding(NETWORK),
      binding(STORAGE, { endpoint: OTHER_ENDPOINT }),
    ],
    configurations: [configuration(NETWORK, [VPCS])],
    resolutions: resolved({ [NETWORK_PATH]: NETWORK, [STORAGE_PATH]: STORAGE }),
  });
  const pending = planReconcile(base);
  assert.deepEqual(pending.configurations, [{
    cluster: STORAGE,
    workspace: STORAGE_PATH,
    endpoint: OTHER_ENDPOINT,
    action: "create",
    object: providerConfiguration(STORAGE, [VOLUMES], SETTINGS),
  }]);
  assert.deepEqual(pending.statuses, []);
  assert.equal(pending.desiredClusters, 2);

  const done = planReconcile({
    ...base,
    configurations: [
      configuration(NETWORK, [VPCS]),
      configuration(STORAGE, [VOLUMES], { endpoint: OTHER_ENDPOINT }),
    ],
  });
  assert.deepEqual(done.configurations, []);
  const installed = conditionOf(
    statusOf(done, "virtualmachines-need-vpcs-and-volumes"),
    WEBHOOKS_INSTALLED_CONDITION,
  );
  assert.equal(
    installed.message,
    `the webhook is installed in ${NETWORK_PATH}, ${STORAGE_PATH}`,
  );
});

Deno.test("planReconcile() counts rules by Ready status and reason and provider clusters by desire", () => {
  const plan = planReconcile(mixedInput());
  assert.deepEqual(
    plan.ready,
    new Map([
      ["True/Enforced", 3],
      ["False/InvalidSpec", 1],
      ["False/PathNotResolved", 1],
    ]),
  );
  assert.equal(plan.desiredClusters, 2);
  assert.deepEqual(
    plan.configurations.map((c) => [c.action, c.cluster]),
    [["create", STORAGE], ["delete", "5orphan8q"]],
  );
  assert.deepEqual(plan.paths, [GONE_PATH, NETWORK_PATH, STORAGE_PATH]);
  assert.deepEqual(
    plan.statuses.map((s) => `${s.cluster}/${s.name}`).sort(),
    [
      `${CONSUMER}/invalid`,
      `${CONSUMER}/loadbalancers-need-gone`,
      `${CONSUMER}/loadbalancers-need-subnets`,
      `${CONSUMER}/${VM_RULE}`,
      "4other2p/other-workspace",
    ],
  );
  for (const action of plan.statuses) {
    DependencyRuleStatusSchema.parse(action.status);
  }
});

Deno.test("planReconcile() gives the same plan for any input order", () => {
  const forward = mixedInput();
  const backward: PlanInput = {
    ...forward,
    rules: [...forward.rules].reverse(),
    bindings: [...forward.bindings].reverse(),
    configurations: [...forward.configurations].reverse(),
    resolutions: new Map([...forward.resolutions].reverse()),
  };
  const byRule = (plan: Plan) =>
    [...plan.statuses].sort((a, b) =>
      `${a.cluster}/${a.name}` < `${b.cluster}/${b.name}` ? -1 : 1
    );
  const a = planReconcile(forward);
  const b = planReconcile(backward);
  assert.deepEqual(b.configurations, a.configurations);
  assert.deepEqual(b.paths, a.paths);
  assert.deepEqual(b.stalePaths, a.stalePaths);
  assert.deepEqual(b.ready, a.ready);
  assert.equal(b.desiredClusters, a.desiredClusters);
  assert.deepEqual(byRule(b), byRule(a));
});

Deno.test("planReconcile() does not modify its input", () => {
  const forward = mixedInput();
  const copy = structuredClone({
    rules: forward.rules,
    bindings: forward.bindings,
    configurations: forward.configurations,
  });
  const plan = planReconcile(forward);
  assert.deepEqual(
    {
      rules: forward.rules,
      bindings: forward.bindings,
      configurations: forward.configurations,
    },
    copy,
  );
  assert.ok(plan.configurations.length > 0);
});

Deno.test("planReconcile() counts rules and provider clusters while paths are resolved again", () => {
  const enforced =
    planReconcile(networkInput([vmRule()], [VPCS])).statuses[0]!.status;
  const plan = planReconcile({
    ...networkInput([vmRule(enforced)], [VPCS]),
    resolutions: new Map(),
  });
  assert.deepEqual(plan.configurations, []);
  assert.deepEqual(plan.ready, new Map([["True/Enforced", 1]]));
  assert.equal(plan.desiredClusters, 1);
});

Deno.test("planReconcile() validates rules with the given parse function", () => {
  const input = networkInput([vmRule()], [VPCS]);
  const seen: unknown[] = [];
  const plan = planReconcile({
    ...input,
    parse(object) {
      seen.push(object);
      return parseDependencyRule(object);
    },
  });
  assert.deepEqual(seen, input.rules.map((r) => r.object));
  assert.deepEqual(plan, planReconcile(input));
});
