import assert from "node:assert/strict";
import {
  type Condition,
  type Dependency,
  DependencyRuleStatusSchema,
  type GroupVersionResource,
  parseDependencyRule,
  pruneSchema,
  READY_CONDITION,
  WEBHOOKS_INSTALLED_CONDITION,
} from "../rules/mod.ts";
import type { EndpointObject, KubeObject } from "../kcp/mod.ts";
import {
  type ExportAnswer,
  type ExportedType,
  exportKey,
  type ExportReading,
} from "../exports/mod.ts";
import {
  type Plan,
  type PlanInput,
  planReconcile,
  protectedTypesOf,
  type Resolution,
  type StatusAction,
  statusUpToDate,
} from "./reconcile_plan.ts";
import { accessKey } from "./webhook_access.ts";
import {
  desiredWebhookConfiguration,
  type ProtectedType,
  providerUrl,
  updatedWebhookConfiguration,
  type WebhookClientSettings,
} from "./webhook_config.ts";
import {
  dependency,
  type DependentType,
  LOAD_BALANCERS,
  SUBNETS,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/mod.ts";

const NOW = "2025-06-01T12:00:00Z";
const EARLIER = "2025-05-01T08:30:00Z";
/** Virtual-workspace URL of the dep-ctrl export on the first shard. */
const ENDPOINT =
  "https://shard-1.kcp.example.com:6443/services/apiexport/1root/dependencies.opendefense.cloud";
/** Virtual-workspace URL of the dep-ctrl export on the second shard. */
const OTHER_ENDPOINT =
  "https://shard-2.kcp.example.com:6443/services/apiexport/1root/dependencies.opendefense.cloud";
const EXPORT_REF = "root:dep-ctrl:dependencies.opendefense.cloud";
/** Logical cluster of the consumer workspace that holds the rules. */
const CONSUMER = "1consumer7x";
const NETWORK_PATH = "root:providers:network";
const NETWORK = "2network9k";
const STORAGE_PATH = "root:providers:storage";
const STORAGE = "3storage4m";
const GONE_PATH = "root:providers:gone";

const SETTINGS: WebhookClientSettings = {
  url: "https://webhook.example.com:9443/validate",
  caBundle: "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
  timeoutSeconds: 10,
};

const VOLUMES: GroupVersionResource = {
  group: "storage.example.com",
  version: "v1",
  resource: "volumes",
};
/** VPCs as a dependent type, for a rule that protects its own type. */
const VPCS_DEPENDENT: DependentType = { ...VPCS, kind: "VPC" };

const VM_RULE = "virtualmachines-need-vpcs";
const ENFORCED_VPCS =
  "deleting vpcs.network.example.com is denied while a VirtualMachine in the same workspace refers to it";
const INSTALLED_NETWORK = `the webhook is installed in ${NETWORK_PATH}`;

/** `dep` with its APIExport in the workspace at `path`. */
function at(dep: Dependency, path: string): Dependency {
  return { ...dep, apiExportRef: { ...dep.apiExportRef, path } };
}

/** A DependencyRule as kcp returns it from the virtual workspace. */
function ruleObject(
  name: string,
  dependent: DependentType,
  dependencies: readonly Dependency[],
  options: { generation?: number; status?: unknown; cluster?: string } = {},
): KubeObject {
  const object: KubeObject = {
    apiVersion: "dependencies.opendefense.cloud/v1alpha1",
    kind: "DependencyRule",
    metadata: {
      name,
      uid: `uid-${name}`,
      generation: options.generation ?? 1,
      resourceVersion: "1001",
      creationTimestamp: "2025-01-01T00:00:00Z",
      annotations: { "kcp.io/cluster": options.cluster ?? CONSUMER },
    },
    spec: {
      dependent: { apiExportName: dependent.group, ...dependent },
      dependencies: structuredClone(dependencies),
    },
  };
  if (options.status !== undefined) object.status = options.status;
  return object;
}

/** The rule object as read through {@linkcode ENDPOINT}. */
function rule(
  name: string,
  dependent: DependentType,
  dependencies: readonly Dependency[],
  options: { generation?: number; status?: unknown; cluster?: string } = {},
): EndpointObject {
  return {
    endpoint: ENDPOINT,
    object: ruleObject(name, dependent, dependencies, options),
  };
}

/** VirtualMachines refer to VPCs in the network provider; generation 3. */
function vmRule(status?: unknown): EndpointObject {
  return rule(
    VM_RULE,
    VIRTUAL_MACHINES,
    [dependency(VPCS, ".spec.vpcRef.name")],
    status === undefined ? { generation: 3 } : { generation: 3, status },
  );
}

/** A permission claim on ValidatingWebhookConfigurations in `state`. */
function vwcClaim(state: string, resource = "validatingwebhookconfigurations") {
  return {
    group: "admissionregistration.k8s.io",
    resource,
    selector: { matchAll: true },
    verbs: ["get", "list", "watch", "create", "update", "delete"],
    state,
  };
}

/** An APIBinding to the dep-ctrl export in `cluster`. */
function binding(
  cluster: string,
  options: { endpoint?: string; claims?: unknown[]; name?: string } = {},
): EndpointObject {
  return {
    endpoint: options.endpoint ?? ENDPOINT,
    object: {
      apiVersion: "apis.kcp.io/v1alpha2",
      kind: "APIBinding",
      metadata: {
        name: options.name ?? "dependencies.opendefense.cloud",
        resourceVersion: "501",
        annotations: { "kcp.io/cluster": cluster },
      },
      spec: {
        reference: {
          export: {
            path: "root:dep-ctrl",
            name: "dependencies.opendefense.cloud",
          },
        },
        permissionClaims: options.claims ?? [vwcClaim("Accepted")],
      },
      status: { phase: "Bound" },
    },
  };
}

/** The configuration the plan wants in `cluster`: it calls the webhook for its path. */
function providerConfiguration(
  cluster: string,
  types: readonly ProtectedType[],
  settings: WebhookClientSettings = SETTINGS,
): KubeObject {
  const path = cluster === STORAGE ? STORAGE_PATH : NETWORK_PATH;
  return desiredWebhookConfiguration(types, {
    ...settings,
    url: providerUrl(settings.url, path),
  });
}

/** Our configuration in `cluster` as the API server returns it. */
function configuration(
  cluster: string,
  types: readonly ProtectedType[],
  options: { settings?: WebhookClientSettings; endpoint?: string } = {},
): EndpointObject {
  const object: KubeObject = JSON.parse(JSON.stringify(
    providerConfiguration(cluster, types, options.settings ?? SETTINGS),
  ));
  object.metadata = {
    ...object.metadata,
    uid: `uid-vwc-${cluster}`,
    resourceVersion: "4711",
    generation: 1,
    annotations: { "kcp.io/cluster": cluster },
  };
  return { endpoint: options.endpoint ?? ENDPOINT, object };
}

/** Paths resolved to clusters. */
function resolved(
  entries: Record<string, string>,
  failures: Record<string, Resolution> = {},
): Map<string, Resolution> {
  const map = new Map<string, Resolution>();
  for (const [path, cluster] of Object.entries(entries)) {
    map.set(path, { cluster });
  }
  for (const [path, failure] of Object.entries(failures)) {
    map.set(path, failure);
  }
  return map;
}

function input(overrides: Partial<PlanInput>): PlanInput {
  return {
    rules: [],
    bindings: [],
    configurations: [],
    resolutions: new Map(),
    settings: SETTINGS,
    installErrors: new Map(),
    exportRef: EXPORT_REF,
    now: NOW,
    ...overrides,
  };
}

/** The network provider bound, resolved and holding `types`. */
function networkInput(
  rules: readonly EndpointObject[],
  types: readonly GroupVersionResource[],
): PlanInput {
  return input({
    rules,
    bindings: [binding(NETWORK)],
    configurations: types.length === 0 ? [] : [configuration(NETWORK, types)],
    resolutions: resolved({ [NETWORK_PATH]: NETWORK }),
  });
}

/** The status write for rule `name`. */
function statusOf(plan: Plan, name: string): StatusAction {
  const found = plan.statuses.filter((s) => s.name === name);
  assert.equal(found.length, 1, `one status write for ${name}`);
  return found[0]!;
}

/** Condition `type` of a status write. */
function conditionOf(action: StatusAction, type: string): Condition {
  const found = action.status.conditions?.find((c) => c.type === type);
  assert.ok(found !== undefined, `condition ${type} of ${action.name}`);
  return found;
}

/** `[status, reason, message]` of both conditions of a status write. */
function summary(action: StatusAction): string[][] {
  return [WEBHOOKS_INSTALLED_CONDITION, READY_CONDITION].map((type) => {
    const c = conditionOf(action, type);
    return [c.status, c.reason, c.message];
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

Deno.test("planReconcile() writes no status that the rule already shows, whatever the transition times", () => {
  const first = planReconcile(networkInput([vmRule()], [VPCS]));
  const shown = structuredClone(first.statuses[0]!.status);
  for (const c of shown.conditions ?? []) c.lastTransitionTime = EARLIER;
  const plan = planReconcile(networkInput([vmRule(shown)], [VPCS]));
  assert.deepEqual(plan.statuses, []);
  assert.deepEqual(plan.configurations, []);
  assert.deepEqual(plan.ready, new Map([["True/Enforced", 1]]));
});

Deno.test("planReconcile() keeps a condition's transition time while its status stays, even when the reason changes", () => {
  const shown = {
    observedGeneration: 3,
    conditions: [
      {
        type: WEBHOOKS_INSTALLED_CONDITION,
        status: "False",
        reason: "PathNotResolved",
        message: "workspace root:providers:network not found",
        observedGeneration: 3,
        lastTransitionTime: EARLIER,
      },
      {
        type: READY_CONDITION,
        status: "True",
        reason: "Enforced",
        message: ENFORCED_VPCS,
        observedGeneration: 3,
        lastTransitionTime: EARLIER,
      },
    ],
  };
  // Resolved, but the provider has no binding: ProviderNotBound.
  const plan = planReconcile(input({
    rules: [vmRule(shown)],
    resolutions: resolved({ [NETWORK_PATH]: NETWORK }),
  }));
  const action = statusOf(plan, VM_RULE);
  const installed = conditionOf(action, WEBHOOKS_INSTALLED_CONDITION);
  assert.equal(installed.reason, "ProviderNotBound");
  assert.equal(installed.lastTransitionTime, EARLIER);
  const ready = conditionOf(action, READY_CONDITION);
  assert.deepEqual([ready.status, ready.reason], ["False", "ProviderNotBound"]);
  assert.equal(ready.lastTransitionTime, NOW);
});

Deno.test("planReconcile() writes the status again for a new generation, keeping transition times", () => {
  const first = planReconcile(networkInput([vmRule()], [VPCS]));
  const shown = structuredClone(first.statuses[0]!.status);
  for (const c of shown.conditions ?? []) c.lastTransitionTime = EARLIER;
  const object = ruleObject(
    VM_RULE,
    VIRTUAL_MACHINES,
    [dependency(VPCS, ".spec.vpcRef.name")],
    { generation: 4, status: shown },
  );
  const plan = planReconcile(
    networkInput([{ endpoint: ENDPOINT, object }], [VPCS]),
  );
  const action = statusOf(plan, VM_RULE);
  assert.equal(action.status.observedGeneration, 4);
  for (const c of action.status.conditions ?? []) {
    assert.equal(c.observedGeneration, 4);
    assert.equal(c.lastTransitionTime, EARLIER);
  }
});

Deno.test("statusUpToDate() compares generation, types, statuses, reasons and messages but not times", () => {
  const status = planReconcile(networkInput([vmRule()], [VPCS])).statuses[0]!
    .status;
  const shown = (change: (s: typeof status) => void): KubeObject => {
    const copy = structuredClone(status);
    change(copy);
    return vmRule(copy).object;
  };
  assert.equal(statusUpToDate(shown(() => {}), status), true);
  assert.equal(
    statusUpToDate(
      shown((s) => {
        for (const c of s.conditions ?? []) c.lastTransitionTime = EARLIER;
        s.conditions?.reverse();
      }),
      status,
    ),
    true,
  );
  const different: [string, (s: typeof status) => void][] = [
    ["observedGeneration", (s) => s.observedGeneration = 2],
    [
      "a condition's generation",
      (s) => s.conditions![0]!.observedGeneration = 2,
    ],
    ["a status", (s) => s.conditions![0]!.status = "Unknown"],
    ["a reason", (s) => s.conditions![1]!.reason = "DependencyCycle"],
    ["a message", (s) => s.conditions![1]!.message = "old"],
    ["a missing condition", (s) => s.conditions!.pop()],
    [
      "an extra condition",
      (s) => s.conditions!.push({ ...s.conditions![0]!, type: "Other" }),
    ],
  ];
  for (const [what, change] of different) {
    assert.equal(statusUpToDate(shown(change), status), false, what);
  }
  assert.equal(statusUpToDate(vmRule().object, status), false, "no status");
});

/** `types` as protectedTypesOf() reads them back: with their operations. */
function deleting(
  ...types: GroupVersionResource[]
): (GroupVersionResource & { operations: string[] })[] {
  return types.map((t) => ({ ...t, operations: ["DELETE"] }));
}

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

Deno.test("planReconcile() reports the last write error of a cluster with a pending write", () => {
  const error = "admission webhook denied the request: forbidden";
  const plan = planReconcile({
    ...networkInput([vmRule()], []),
    installErrors: new Map([[NETWORK, error]]),
  });
  assert.equal(plan.configurations.length, 1);
  assert.equal(plan.configurations[0]!.action, "create");
  const message =
    `cannot write the webhook configuration in ${NETWORK_PATH}: ${error}`;
  assert.deepEqual(summary(statusOf(plan, VM_RULE)), [
    ["False", "InstallFailed", message],
    ["False", "InstallFailed", message],
  ]);
});

Deno.test("planReconcile() ignores an old write error of a cluster whose configuration is up to date", () => {
  const plan = planReconcile({
    ...networkInput([vmRule()], [VPCS]),
    installErrors: new Map([[NETWORK, "connection reset"]]),
  });
  assert.deepEqual(plan.configurations, []);
  assert.deepEqual(summary(statusOf(plan, VM_RULE)), [
    ["True", "Installed", INSTALLED_NETWORK],
    ["True", "Enforced", ENFORCED_VPCS],
  ]);
});

Deno.test("planReconcile() reports an invalid rule with the parse error and installs nothing for it", () => {
  const bad = vmRule();
  const spec = bad.object.spec as { dependencies: { version: string }[] };
  spec.dependencies[0]!.version = "v0";
  const parsed = parseDependencyRule(bad.object);
  assert.ok(!parsed.ok);
  const plan = planReconcile(networkInput([bad], []));
  assert.deepEqual(plan.configurations, []);
  assert.deepEqual(plan.paths, []);
  assert.equal(plan.desiredClusters, 0);
  const action = statusOf(plan, VM_RULE);
  assert.equal(action.status.observedGeneration, 3);
  assert.deepEqual(summary(action), [
    ["False", "InvalidSpec", "nothing is installed for an invalid rule"],
    ["False", "InvalidSpec", parsed.error],
  ]);
  assert.deepEqual(plan.ready, new Map([["False/InvalidSpec", 1]]));
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

Deno.test("planReconcile() counts a rule whose configuration is being updated by the Ready condition it shows", () => {
  const enforced =
    planReconcile(networkInput([vmRule()], [VPCS])).statuses[0]!.status;
  const plan = planReconcile(networkInput([
    vmRule(enforced),
    rule("loadbalancers-need-subnets", LOAD_BALANCERS, [
      dependency(SUBNETS, ".spec.subnetRef.name"),
    ]),
  ], [VPCS]));
  assert.deepEqual(plan.configurations.map((c) => c.action), ["update"]);
  assert.deepEqual(plan.statuses, []);
  assert.deepEqual(plan.ready, new Map([["True/Enforced", 1]]));
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

// ---------------------------------------------------------------------------
// Rules checked against the APIExports they name

/** The network export serving VPCs; the compute export serving VMs (the dependent). */
const NETWORK_EXPORT: ExportAnswer = {
  found: true,
  types: [{
    group: VPCS.group,
    resource: VPCS.resource,
    versions: [VPCS.version],
    kind: "VPC",
  }],
};
const COMPUTE_EXPORT: ExportAnswer = {
  found: true,
  types: [{
    group: VIRTUAL_MACHINES.group,
    resource: VIRTUAL_MACHINES.resource,
    versions: [VIRTUAL_MACHINES.version],
    kind: "VirtualMachine",
  }],
};

/** Readings for the network export (by path) and the rule's own (by cluster). */
function exportsRead(
  network: ExportReading,
  compute: ExportReading = { answer: COMPUTE_EXPORT },
): Map<string, ExportReading> {
  return new Map([
    [exportKey({ workspace: NETWORK_PATH, name: VPCS.group }), network],
    [
      exportKey({ workspace: CONSUMER, name: VIRTUAL_MACHINES.group }),
      compute,
    ],
  ]);
}

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

/** VirtualMachines as the compute export serves them, without schemas. */
const VM_TYPE: ExportedType = {
  group: VIRTUAL_MACHINES.group,
  resource: VIRTUAL_MACHINES.resource,
  versions: [VIRTUAL_MACHINES.version],
  kind: "VirtualMachine",
};
/** The compute export serving VMs with their schema: vpcRef, nics[*].subnetRef, an open config. */
const COMPUTE_WITH_SCHEMA: ExportAnswer = {
  found: true,
  types: [{
    ...VM_TYPE,
    schemas: {
      [VIRTUAL_MACHINES.version]: pruneSchema({
        type: "object",
        properties: {
          metadata: { type: "object" },
          spec: {
            type: "object",
            properties: {
              vpcRef: {
                type: "object",
                properties: {
                  name: { type: "string" },
                  namespace: { type: "string" },
                },
              },
              nics: {
                type: "array",
                items: {
                  type: "object",
                  properties: {
                    subnetRef: {
                      type: "object",
                      properties: { name: { type: "string" } },
                    },
                  },
                },
              },
              config: {
                type: "object",
                "x-kubernetes-preserve-unknown-fields": true,
              },
            },
          },
        },
      }),
    },
  }],
};

/** A VM rule protecting VPCs through `fieldRef`, in the network provider. */
function vmRuleAt(fieldRef: Dependency["fieldRef"]): EndpointObject {
  return rule(VM_RULE, VIRTUAL_MACHINES, [{
    ...dependency(VPCS, fieldRef.path),
    fieldRef,
  }], { generation: 3 });
}

/** Plans `rules` with VPCs installed and both exports read, the compute one with its schema. */
function planWithSchema(
  rules: readonly EndpointObject[],
  compute: ExportReading = { answer: COMPUTE_WITH_SCHEMA },
): Plan {
  return planReconcile({
    ...networkInput(rules, [VPCS]),
    exports: exportsRead({ answer: NETWORK_EXPORT }, compute),
  });
}

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

Deno.test("planReconcile() reports a cycle before a path, and a failed installation before both", () => {
  const rules = [
    rule("virtualmachines-need-vpcs", VIRTUAL_MACHINES, [
      dependency(VPCS, ".spec.vpc.name"),
    ]),
    rule("vpcs-need-virtualmachines", VPCS_DEPENDENT, [
      dependency(VIRTUAL_MACHINES, ".spec.vmRef.name"),
    ]),
  ];
  const types = [VPCS, VIRTUAL_MACHINES].map((
    { group, version, resource },
  ) => ({ group, version, resource }));
  const plan = planReconcile({
    ...networkInput(rules, types),
    exports: new Map([
      [
        exportKey({ workspace: NETWORK_PATH, name: VPCS.group }),
        { answer: NETWORK_EXPORT },
      ],
      [
        exportKey({ workspace: NETWORK_PATH, name: VIRTUAL_MACHINES.group }),
        { answer: COMPUTE_WITH_SCHEMA },
      ],
      [
        exportKey({ workspace: CONSUMER, name: VIRTUAL_MACHINES.group }),
        { answer: COMPUTE_WITH_SCHEMA },
      ],
      [
        exportKey({ workspace: CONSUMER, name: VPCS.group }),
        { answer: NETWORK_EXPORT },
      ],
    ]),
  });
  const ready = conditionOf(
    statusOf(plan, "virtualmachines-need-vpcs"),
    READY_CONDITION,
  );
  assert.equal(ready.reason, "DependencyCycle");
  assert.match(ready.message, /^dependency cycle: /);
  assert.match(
    ready.message,
    /; spec\.dependencies\[0\]\.fieldRef\.path: \.spec\.vpc: no such field; did you mean \.spec\.vpcRef\.name\?$/,
  );

  const unresolved = planReconcile({
    ...input({
      rules: [vmRuleAt({ path: ".spec.vpc.name" })],
      bindings: [binding(NETWORK)],
      configurations: [],
      resolutions: new Map([[NETWORK_PATH, {
        reason: "NotFound",
        message: "workspace root:providers:network does not exist",
        definitive: true,
      }]]),
    }),
    exports: exportsRead({ answer: NETWORK_EXPORT }, {
      answer: COMPUTE_WITH_SCHEMA,
    }),
  });
  const failed = conditionOf(statusOf(unresolved, VM_RULE), READY_CONDITION);
  assert.deepEqual([failed.status, failed.reason, failed.message], [
    "False",
    "PathNotResolved",
    "workspace root:providers:network does not exist; spec.dependencies[0].fieldRef.path: .spec.vpc: no such field; did you mean .spec.vpcRef.name?",
  ]);
});

// ---------------------------------------------------------------------------
// Locks in the configurations

function lockSource(
  target: Record<string, unknown>,
  operations: string[],
): EndpointObject {
  return {
    endpoint: ENDPOINT,
    object: {
      apiVersion: "dependencies.opendefense.cloud/v1alpha1",
      kind: "Lock",
      metadata: {
        name: "prod",
        namespace: "team-a",
        annotations: { "kcp.io/cluster": CONSUMER },
      },
      spec: { target, reason: "production", operations },
    },
  };
}

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

Deno.test("planReconcile() writes a Lock's Ready once its configuration is in place, and why not otherwise", () => {
  const vpcLock = lockSource({
    apiExportRef: { path: NETWORK_PATH, name: VPCS.group },
    ...VPCS,
    name: "core",
  }, ["Delete", "Update"]);
  // While the configuration is written, nothing is said yet.
  const creating = planReconcile({ ...networkInput([], []), locks: [vpcLock] });
  assert.deepEqual(creating.statuses, []);
  assert.deepEqual([...creating.lockReady], []);
  const installed = planReconcile({
    ...networkInput([], []),
    configurations: [
      configuration(NETWORK, [{ ...VPCS, operations: ["DELETE", "UPDATE"] }]),
    ],
    locks: [vpcLock],
  });
  assert.deepEqual(installed.configurations, []);
  const [status] = installed.statuses;
  assert.equal(status?.namespace, "team-a");
  assert.equal(status?.name, "prod");
  const ready = status?.status.conditions?.[0];
  assert.equal(ready?.type, "Ready");
  assert.equal(ready?.status, "True");
  assert.equal(ready?.reason, "Enforced");
  assert.equal(
    ready?.message,
    `deleting and updating vpcs/core is denied while this Lock exists (webhook installed in ${NETWORK_PATH})`,
  );
  assert.deepEqual([...installed.lockReady], [["True/Enforced", 1]]);
  assert.deepEqual([...installed.ready], []);
  const typo = planReconcile({
    ...networkInput([], []),
    exports: new Map([[
      exportKey({ workspace: NETWORK_PATH, name: VPCS.group }),
      { answer: NETWORK_EXPORT },
    ]]),
    locks: [lockSource({
      apiExportRef: { path: NETWORK_PATH, name: VPCS.group },
      ...VPCS,
      resource: "vpcz",
      name: "core",
    }, ["Delete"])],
  });
  const failed = typo.statuses[0]?.status.conditions?.[0];
  assert.equal(failed?.status, "False");
  assert.equal(failed?.reason, "TargetTypeUnknown");
  assert.deepEqual([...typo.lockReady], [["False/TargetTypeUnknown", 1]]);
});

Deno.test("planReconcile() says WebhookCannotRead while kcp says the webhook may not read what a rule names, and asks about each read", () => {
  const base = networkInput([vmRule()], [VPCS]);
  const asked = planReconcile(base);
  assert.deepEqual(
    asked.webhookAccess.map((r) => `${r.verb} ${r.resource}`),
    ["list virtualmachines", "get virtualmachines", "get vpcs"],
  );
  const readings = new Map(
    asked.webhookAccess.map((ref) => [
      accessKey(ref),
      { answer: !(ref.verb === "list" && ref.resource === "virtualmachines") },
    ]),
  );
  const plan = planReconcile({
    ...base,
    webhookAccess: { readings, user: "dependency-webhook" },
  });
  const ready = conditionOf(statusOf(plan, VM_RULE), READY_CONDITION);
  assert.equal(ready.status, "False");
  assert.equal(ready.reason, "WebhookCannotRead");
  assert.match(
    ready.message,
    /dependency-webhook may not list virtualmachines\.compute\.example\.com.*controller grants/,
  );
  // The configuration stays: the webhook denies (503) rather than allows.
  assert.deepEqual(plan.configurations, []);
  // Granted, it is Enforced; not asked yet, too (nothing known against it);
  // not answered, Enforced with a note.
  const granted = new Map(
    asked.webhookAccess.map((ref) => [accessKey(ref), { answer: true }]),
  );
  assert.equal(
    conditionOf(
      statusOf(
        planReconcile({
          ...base,
          webhookAccess: { readings: granted, user: "dependency-webhook" },
        }),
        VM_RULE,
      ),
      READY_CONDITION,
    ).reason,
    "Enforced",
  );
  const failed = new Map(
    asked.webhookAccess.map((ref) => [accessKey(ref), { error: "403" }]),
  );
  const noted = conditionOf(
    statusOf(
      planReconcile({
        ...base,
        webhookAccess: { readings: failed, user: "dependency-webhook" },
      }),
      VM_RULE,
    ),
    READY_CONDITION,
  );
  assert.equal(noted.reason, "Enforced");
  assert.match(
    noted.message,
    /not checked whether the webhook may read: whether dependency-webhook may list virtualmachines/,
  );
});
