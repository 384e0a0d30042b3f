/**
 * What the controller plan's tests share: a consumer with rules, two providers
 * (network, storage) and a workspace that does not resolve, their bindings
 * and configurations, the exports they serve, and readers of a plan's
 * status writes. Test code only.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type Condition,
  type Dependency,
  type GroupVersionResource,
  pruneSchema,
  READY_CONDITION,
  WEBHOOKS_INSTALLED_CONDITION,
} from "../lib/rules/mod.ts";
import type { EndpointObject, KubeObject } from "../lib/kcp/mod.ts";
import {
  type ExportAnswer,
  type ExportedType,
  exportKey,
  type ExportReading,
} from "../lib/exports/mod.ts";
import {
  desiredWebhookConfiguration,
  type Plan,
  type PlanInput,
  planReconcile,
  type ProtectedType,
  providerUrl,
  type Resolution,
  type StatusAction,
  type WebhookClientSettings,
} from "../lib/controller/mod.ts";
import {
  dependency,
  type DependentType,
  VIRTUAL_MACHINES,
  VPCS,
} from "./fakes.ts";

/** The time the plans are computed at. */
export const NOW = "2025-06-01T12:00:00Z";
/** A transition time before {@linkcode NOW}. */
export const EARLIER = "2025-05-01T08:30:00Z";
/** Virtual-workspace URL of the dep-ctrl export on the first shard. */
export const ENDPOINT =
  "https://shard-1.kcp.example.com:6443/services/apiexport/1root/dependencies.opendefense.cloud";
/** Virtual-workspace URL of the dep-ctrl export on the second shard. */
export const OTHER_ENDPOINT =
  "https://shard-2.kcp.example.com:6443/services/apiexport/1root/dependencies.opendefense.cloud";
/** The dep-ctrl export as messages name it. */
export const EXPORT_REF = "root:dep-ctrl:dependencies.opendefense.cloud";
/** Logical cluster of the consumer workspace that holds the rules. */
export const CONSUMER = "1consumer7x";
/** The network provider's workspace path. */
export const NETWORK_PATH = "root:providers:network";
/** The network provider's logical cluster. */
export const NETWORK = "2network9k";
/** The storage provider's workspace path. */
export const STORAGE_PATH = "root:providers:storage";
/** The storage provider's logical cluster. */
export const STORAGE = "3storage4m";
/** A workspace path that does not resolve. */
export const GONE_PATH = "root:providers:gone";

/** How kcp reaches the webhook. */
export const SETTINGS: WebhookClientSettings = {
  url: "https://webhook.example.com:9443/validate",
  caBundle: "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
  timeoutSeconds: 10,
};

/** Volumes of the storage provider. */
export const VOLUMES: GroupVersionResource = {
  group: "storage.example.com",
  version: "v1",
  resource: "volumes",
};
/** VPCs as a dependent type, for a rule that protects its own type. */
export const VPCS_DEPENDENT: DependentType = { ...VPCS, kind: "VPC" };

/** The name of {@linkcode vmRule}. */
export const VM_RULE = "virtualmachines-need-vpcs";
/** {@linkcode vmRule}'s Ready message once enforced. */
export const ENFORCED_VPCS =
  "deleting vpcs.network.example.com is denied while a VirtualMachine in the same workspace refers to it";
/** The WebhooksInstalled message of a rule installed in the network provider. */
export const INSTALLED_NETWORK = `the webhook is installed in ${NETWORK_PATH}`;

/** `dep` with its APIExport in the workspace at `path`. */
export function at(dep: Dependency, path: string): Dependency {
  return { ...dep, apiExportRef: { ...dep.apiExportRef, path } };
}

/** A DependencyRule as kcp returns it from the virtual workspace. */
export function ruleObject(
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
export function rule(
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
export function vmRule(status?: unknown): EndpointObject {
  return rule(
    VM_RULE,
    VIRTUAL_MACHINES,
    [dependency(VPCS, ".spec.vpcRef.name")],
    status === undefined ? { generation: 3 } : { generation: 3, status },
  );
}

/** `source` (a rule) with `fields` set in its spec, such as `when` or `protectWhile`. */
export function withSpec(
  source: EndpointObject,
  fields: Record<string, unknown>,
): EndpointObject {
  const object = structuredClone(source.object);
  object.spec = { ...(object.spec as Record<string, unknown>), ...fields };
  return { endpoint: source.endpoint, object };
}

/** A `spec.when` that compiles. */
export const GOOD_WHEN = "object.spec.deletionProtection == true";
/** A `spec.when` that does not compile (it ends in an operator). */
export const BAD_WHEN = "object.spec.deletionProtection ==";

/** A permission claim on ValidatingWebhookConfigurations in `state`. */
export function vwcClaim(
  state: string,
  resource = "validatingwebhookconfigurations",
): Record<string, unknown> {
  return {
    group: "admissionregistration.k8s.io",
    resource,
    selector: { matchAll: true },
    verbs: ["get", "list", "watch", "create", "update", "delete"],
    state,
  };
}

/** An APIBinding to the dep-ctrl export in `cluster`. */
export function binding(
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
export function providerConfiguration(
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
export function configuration(
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
export function resolved(
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

/** A plan input with nothing in it but `overrides`. */
export function input(overrides: Partial<PlanInput>): PlanInput {
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
export function networkInput(
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
export function statusOf(plan: Plan, name: string): StatusAction {
  const found = plan.statuses.filter((s) => s.name === name);
  assert.equal(found.length, 1, `one status write for ${name}`);
  return found[0]!;
}

/** Condition `type` of a status write. */
export function conditionOf(action: StatusAction, type: string): Condition {
  const found = action.status.conditions?.find((c) => c.type === type);
  assert.ok(found !== undefined, `condition ${type} of ${action.name}`);
  return found;
}

/** `[status, reason, message]` of both conditions of a status write. */
export function summary(action: StatusAction): string[][] {
  return [WEBHOOKS_INSTALLED_CONDITION, READY_CONDITION].map((type) => {
    const c = conditionOf(action, type);
    return [c.status, c.reason, c.message];
  });
}

/** `types` as protectedTypesOf() reads them back: with their operations. */
export function deleting(
  ...types: GroupVersionResource[]
): (GroupVersionResource & { operations: string[] })[] {
  return types.map((t) => ({ ...t, operations: ["DELETE"] }));
}

// ---------------------------------------------------------------------------
// Rules checked against the APIExports they name

/** The network export serving VPCs; the compute export serving VMs (the dependent). */
export const NETWORK_EXPORT: ExportAnswer = {
  found: true,
  types: [{
    group: VPCS.group,
    resource: VPCS.resource,
    versions: [VPCS.version],
    kind: "VPC",
  }],
};
/** The compute export serving VMs, without schemas. */
export const COMPUTE_EXPORT: ExportAnswer = {
  found: true,
  types: [{
    group: VIRTUAL_MACHINES.group,
    resource: VIRTUAL_MACHINES.resource,
    versions: [VIRTUAL_MACHINES.version],
    kind: "VirtualMachine",
  }],
};

/** Readings for the network export (by path) and the rule's own (by cluster). */
export function exportsRead(
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

// ---------------------------------------------------------------------------
// Field paths checked against the dependent's schema

/** VirtualMachines as the compute export serves them, without schemas. */
export const VM_TYPE: ExportedType = {
  group: VIRTUAL_MACHINES.group,
  resource: VIRTUAL_MACHINES.resource,
  versions: [VIRTUAL_MACHINES.version],
  kind: "VirtualMachine",
};
/** The compute export serving VMs with their schema: vpcRef, nics[*].subnetRef, an open config. */
export const COMPUTE_WITH_SCHEMA: ExportAnswer = {
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
export function vmRuleAt(fieldRef: Dependency["fieldRef"]): EndpointObject {
  return rule(VM_RULE, VIRTUAL_MACHINES, [{
    ...dependency(VPCS, fieldRef.path),
    fieldRef,
  }], { generation: 3 });
}

/** Plans `rules` with VPCs installed and both exports read, the compute one with its schema. */
export function planWithSchema(
  rules: readonly EndpointObject[],
  compute: ExportReading = { answer: COMPUTE_WITH_SCHEMA },
): Plan {
  return planReconcile({
    ...networkInput(rules, [VPCS]),
    exports: exportsRead({ answer: NETWORK_EXPORT }, compute),
  });
}

// ---------------------------------------------------------------------------
// Locks

/** A Lock `prod` in namespace `team-a` of the consumer on `target`. */
export function lockSource(
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
