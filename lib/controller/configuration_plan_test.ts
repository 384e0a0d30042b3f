import assert from "node:assert/strict";
import { PlanMemo } from "./plan_memo.ts";
import { READY_CONDITION } from "../rules/mod.ts";
import { planReconcile } from "./reconcile_plan.ts";
import {
  mergeDemands,
  planConfigurations,
  protectedTypesOf,
} from "./configuration_plan.ts";
import type { Resolution } from "./path_cache.ts";
import {
  desiredWebhookConfiguration,
  updatedWebhookConfiguration,
  type WebhookClientSettings,
} from "./webhook_config.ts";
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
  deleting,
  ENDPOINT,
  input,
  lockSource,
  NETWORK,
  NETWORK_PATH,
  networkInput,
  OTHER_ENDPOINT,
  providerConfiguration,
  resolved,
  rule,
  SETTINGS,
  statusOf,
  STORAGE_PATH,
  vmRule,
  VOLUMES,
} from "../../testing/plan_fixtures.ts";

Deno.test("protectedTypesOf() lists every group/version/resource of every rule, with its operations", () => {
  assert.deepEqual(
    protectedTypesOf(desiredWebhookConfiguration([VPCS, SUBNETS], SETTINGS)),
    deleting(SUBNETS, VPCS),
  );
  assert.deepEqual(
    protectedTypesOf({
      webhooks: [{
        rules: [{
          apiGroups: ["a.example.com", "b.example.com"],
          apiVersions: ["v1"],
          resources: ["xs", "ys"],
          operations: ["UPDATE", "CREATE", "DELETE"],
        }],
      }, { rules: [{ apiGroups: [""], apiVersions: ["v1"] }] }],
    }),
    [
      { group: "a.example.com", version: "v1", resource: "xs" },
      { group: "a.example.com", version: "v1", resource: "ys" },
      { group: "b.example.com", version: "v1", resource: "xs" },
      { group: "b.example.com", version: "v1", resource: "ys" },
    ].map((t) => ({ ...t, operations: ["DELETE", "UPDATE"] })),
  );
  assert.deepEqual(protectedTypesOf({ metadata: { name: "x" } }), []);
});

Deno.test("planReconcile() merges the types of rules that share a provider into one configuration", () => {
  const rules = [
    vmRule(),
    rule("loadbalancers-need-subnets", LOAD_BALANCERS, [
      dependency(SUBNETS, ".spec.subnetRef.name"),
    ]),
  ];
  const plan = planReconcile(networkInput(rules, []));
  assert.equal(plan.configurations.length, 1);
  assert.deepEqual(plan.configurations[0]!.action, "create");
  assert.deepEqual(
    plan.configurations[0]!.object,
    providerConfiguration(NETWORK, [SUBNETS, VPCS], SETTINGS),
  );
  assert.equal(plan.desiredClusters, 1);
});

Deno.test("planReconcile() protects a type named by several rules and dependencies once", () => {
  const rules = [
    vmRule(),
    rule("loadbalancers-need-vpcs", LOAD_BALANCERS, [
      dependency(VPCS, ".spec.vpcRef.name"),
      dependency(VPCS, ".spec.backupVpcRef.name"),
    ]),
  ];
  const plan = planReconcile(networkInput(rules, []));
  assert.equal(plan.configurations.length, 1);
  assert.deepEqual(
    protectedTypesOf(plan.configurations[0]!.object),
    deleting(VPCS),
  );

  const installed = planReconcile(networkInput(rules, [VPCS]));
  assert.deepEqual(installed.configurations, []);
  assert.equal(
    conditionOf(statusOf(installed, "loadbalancers-need-vpcs"), READY_CONDITION)
      .message,
    "deleting vpcs.network.example.com is denied while a LoadBalancer in the same workspace refers to it",
  );
});

Deno.test("planReconcile() deletes a configuration that no rule needs", () => {
  const current = configuration(NETWORK, [VPCS], { endpoint: OTHER_ENDPOINT });
  const plan = planReconcile(input({
    bindings: [binding(NETWORK)],
    configurations: [current],
  }));
  assert.deepEqual(plan.configurations, [{
    cluster: NETWORK,
    endpoint: OTHER_ENDPOINT,
    action: "delete",
    object: current.object,
  }]);
  assert.equal(plan.desiredClusters, 0);
});

Deno.test("planReconcile() deletes nothing while a path is unresolved or failed for now", async (t) => {
  const storageRule = rule("volumes", VIRTUAL_MACHINES, [
    at(dependency(VOLUMES, ".spec.volumeRef.name"), STORAGE_PATH),
  ]);
  const unsure: [string, Map<string, Resolution>][] = [
    ["no entry", new Map()],
    [
      "a failure that is not definitive",
      resolved({}, {
        [STORAGE_PATH]: {
          reason: "Forbidden",
          message: "cannot get workspace root:providers:storage: forbidden",
          definitive: false,
        },
      }),
    ],
  ];
  for (const [name, resolutions] of unsure) {
    await t.step(name, () => {
      const plan = planReconcile(input({
        rules: [storageRule],
        bindings: [binding(NETWORK)],
        configurations: [configuration(NETWORK, [VPCS])],
        resolutions,
      }));
      assert.deepEqual(plan.configurations, []);
    });
  }
  await t.step("a definitive failure (NotFound)", () => {
    const current = configuration(NETWORK, [VPCS]);
    const plan = planReconcile(input({
      rules: [storageRule],
      bindings: [binding(NETWORK)],
      configurations: [current],
      resolutions: resolved({}, {
        [STORAGE_PATH]: {
          reason: "NotFound",
          message: "workspace root:providers:storage not found",
          definitive: true,
        },
      }),
    }));
    assert.deepEqual(plan.configurations, [{
      cluster: NETWORK,
      endpoint: ENDPOINT,
      action: "delete",
      object: current.object,
    }]);
  });
});

Deno.test("planReconcile() keeps the types a configuration protects while a path is unknown", () => {
  const current = configuration(NETWORK, [SUBNETS]);
  const plan = planReconcile(input({
    rules: [
      vmRule(),
      rule("volumes", VIRTUAL_MACHINES, [
        at(dependency(VOLUMES, ".spec.volumeRef.name"), STORAGE_PATH),
      ]),
    ],
    bindings: [binding(NETWORK)],
    configurations: [current],
    resolutions: resolved({ [NETWORK_PATH]: NETWORK }),
  }));
  assert.deepEqual(plan.configurations, [{
    cluster: NETWORK,
    workspace: NETWORK_PATH,
    endpoint: ENDPOINT,
    action: "update",
    object: updatedWebhookConfiguration(
      current.object,
      providerConfiguration(NETWORK, [SUBNETS, VPCS], SETTINGS),
    ),
  }]);
  // Neither rule is settled: the update is pending and a path is unknown.
  assert.deepEqual(plan.statuses, []);
});

Deno.test("planReconcile() updates a configuration in place when a type is dropped", () => {
  const current = configuration(NETWORK, [SUBNETS, VPCS], {
    endpoint: OTHER_ENDPOINT,
  });
  const plan = planReconcile(input({
    rules: [vmRule()],
    bindings: [binding(NETWORK)],
    configurations: [current],
    resolutions: resolved({ [NETWORK_PATH]: NETWORK }),
  }));
  assert.equal(plan.configurations.length, 1);
  const action = plan.configurations[0]!;
  assert.deepEqual(
    [action.cluster, action.endpoint, action.action],
    [NETWORK, OTHER_ENDPOINT, "update"],
  );
  assert.deepEqual(protectedTypesOf(action.object), deleting(VPCS));
  assert.equal(action.object.metadata?.resourceVersion, "4711");
  assert.deepEqual(action.object.metadata?.annotations, {
    "kcp.io/cluster": NETWORK,
  });
  assert.deepEqual(plan.statuses, []);
});

Deno.test("planReconcile() updates a configuration when the client settings change", async (t) => {
  const changes: [string, WebhookClientSettings][] = [
    ["url", { ...SETTINGS, url: "https://webhook-2.example.com/validate" }],
    ["caBundle", { ...SETTINGS, caBundle: "bmV3IGNh" }],
    ["timeoutSeconds", { ...SETTINGS, timeoutSeconds: 5 }],
  ];
  for (const [name, settings] of changes) {
    await t.step(name, () => {
      const current = configuration(NETWORK, [VPCS]);
      const plan = planReconcile({
        ...networkInput([vmRule()], []),
        configurations: [current],
        settings,
      });
      assert.deepEqual(plan.configurations, [{
        cluster: NETWORK,
        workspace: NETWORK_PATH,
        endpoint: ENDPOINT,
        action: "update",
        object: updatedWebhookConfiguration(
          current.object,
          providerConfiguration(NETWORK, [VPCS], settings),
        ),
      }]);
    });
  }
});

// ---------------------------------------------------------------------------
// Locks in the configurations

Deno.test("planReconcile() merges a Lock's operations into the provider's configuration", () => {
  const plan = planReconcile({
    ...networkInput([vmRule()], []),
    locks: [lockSource({
      apiExportRef: { path: NETWORK_PATH, name: VPCS.group },
      ...VPCS,
      name: "core",
    }, ["Delete", "Update"])],
  });
  assert.deepEqual(plan.configurations.map((c) => [c.cluster, c.action]), [[
    NETWORK,
    "create",
  ]]);
  assert.deepEqual(
    protectedTypesOf(plan.configurations[0]!.object),
    [{ ...VPCS, operations: ["DELETE", "UPDATE"] }],
  );
});

Deno.test("planReconcile() gives a Lock on a type of the workspace's own a configuration there, named by its cluster", () => {
  const plan = planReconcile({
    ...input({
      rules: [],
      bindings: [binding(CONSUMER)],
      configurations: [],
      resolutions: new Map(),
    }),
    locks: [lockSource(
      { group: "", version: "v1", resource: "configmaps", name: "cfg" },
      ["Delete"],
    )],
  });
  assert.equal(plan.configurations.length, 1);
  const [action] = plan.configurations;
  assert.equal(action!.cluster, CONSUMER);
  const hooks = action!.object.webhooks as {
    clientConfig: { url: string };
  }[];
  assert.equal(hooks[0]!.clientConfig.url, `${SETTINGS.url}/${CONSUMER}`);
  assert.deepEqual(protectedTypesOf(action!.object), [{
    group: "",
    version: "v1",
    resource: "configmaps",
    operations: ["DELETE"],
  }]);
});

// ---------------------------------------------------------------------------
// The configurations' part on its own

Deno.test("mergeDemands() joins the Locks' types to the rules' by type and operations, and modifies neither", () => {
  const vpcs = {
    group: VPCS.group,
    version: VPCS.version,
    resource: VPCS.resource,
  };
  const rules = {
    desired: new Map([[NETWORK, new Map([["vpcs", vpcs]])]]),
    providerPaths: new Map([[NETWORK, NETWORK_PATH]]),
    unsure: false,
  };
  const updating = { ...vpcs, operations: ["DELETE", "UPDATE"] as const };
  const configmaps = {
    group: "",
    version: "v1",
    resource: "configmaps",
    operations: ["DELETE"] as const,
  };
  const locks = {
    desired: new Map([
      [NETWORK, [updating, updating]],
      [CONSUMER, [configmaps]],
    ]),
    providerPaths: new Map([[NETWORK, "root:elsewhere"]]),
    unsure: true,
  };
  const merged = mergeDemands(rules, locks);
  assert.deepEqual(
    [...merged.desired].map(([cluster, types]) => [cluster, [
      ...types.values(),
    ]]),
    [[NETWORK, [vpcs, updating]], [CONSUMER, [configmaps]]],
  );
  assert.deepEqual([...merged.providerPaths], [
    [NETWORK, NETWORK_PATH],
    [CONSUMER, CONSUMER],
  ]);
  assert.equal(merged.unsure, true);
  assert.equal(rules.desired.get(NETWORK)?.size, 1, "the rules' map is kept");
  assert.equal(rules.desired.has(CONSUMER), false);
});

Deno.test("planConfigurations() writes only deletes while the settings cannot be read, and counts the clusters it keeps", () => {
  const kept = configuration(NETWORK, [VPCS]);
  const orphan = configuration("5orphan8q", [VPCS]);
  const { actions, wanted } = planConfigurations([kept, orphan], {
    demand: {
      desired: new Map([[NETWORK, new Map([["subnets", SUBNETS]])]]),
      providerPaths: new Map([[NETWORK, NETWORK_PATH]]),
      unsure: false,
    },
    bindings: new Map(),
    settings: { error: "no ca.crt" },
    memo: new PlanMemo(),
  });
  assert.deepEqual(actions, [{
    cluster: "5orphan8q",
    endpoint: ENDPOINT,
    action: "delete",
    object: orphan.object,
  }]);
  assert.equal(wanted, 1);
});
