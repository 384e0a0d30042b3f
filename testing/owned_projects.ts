/**
 * Projects that own what they create, for the ordered-teardown e2e tests:
 * the network provider also exports a namespaced owner type, Project
 * (`testing/fixtures/projects/`: its export replaces the shared one before
 * a consumer binds it, and its Subnets name their VPC in
 * `.spec.vpcRef.name`). A Project owns VPCs, Subnets and VirtualMachines
 * through `metadata.ownerReferences` (blockOwnerDeletion); rules of the
 * default kind order them (a VirtualMachine refers to its Subnet, a Subnet
 * to its VPC), and an owner rule (`from: Target`,
 * `.metadata.ownerReferences[*].name`) makes a Project protect what it
 * owns. Here: the types, the tree a Project owns, its objects, the rules,
 * the owner's denial, and the checks of a teardown's order.
 *
 * ```ts
 * import { ownedCount, ownedTree } from "./mod.ts";
 *
 * const tree = ownedTree("fg");
 * console.log(tree.vpcs[0], ownedCount(tree)); // fg-vpc-0 21
 * ```
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  applyFiles,
  applyObjects,
  bindExport,
  waitForExportIdentity,
} from "./apis.ts";
import {
  type ComponentProcess,
  grantWebhookReads,
  startController,
  startWebhook,
  type WebhookProcess,
} from "./components.ts";
import { waitForRuleEnforced } from "./rule_status.ts";
import {
  dependencyRule,
  RULE_DEPENDENTS,
  type RuleDependency,
} from "./rules.ts";
import {
  deletedAt,
  type DeletionOrder,
  type WatchedType,
} from "./deletion_order.ts";
import type { KcpApi } from "./kcp_server.ts";
import { buildTopology } from "./topology.ts";
import { waitFor } from "./wait.ts";
import { createWorkspace } from "./workspaces.ts";

const FIXTURES = new URL("./fixtures/projects/", import.meta.url).pathname;

/** The four types of a teardown: the Project and what it owns. */
export const TEARDOWN_TYPES = {
  projects: {
    group: "network.example.com",
    version: "v1alpha1",
    resource: "projects",
    kind: "Project",
  },
  vpcs: {
    group: "network.example.com",
    version: "v1alpha1",
    resource: "vpcs",
    kind: "VPC",
  },
  subnets: {
    group: "network.example.com",
    version: "v1alpha1",
    resource: "subnets",
    kind: "Subnet",
  },
  virtualmachines: {
    group: "compute.example.com",
    version: "v1alpha1",
    resource: "virtualmachines",
    kind: "VirtualMachine",
  },
} as const satisfies Record<string, WatchedType>;

/** One of {@linkcode TEARDOWN_TYPES}' resources. */
export type TeardownResource = keyof typeof TEARDOWN_TYPES;

/** The four resources, as kubectl takes a list of them. */
export const TEARDOWN_RESOURCES: string = Object.keys(TEARDOWN_TYPES).join(",");

/** VPCs per Project, Subnets per VPC, VirtualMachines per Subnet. */
export const OWNED_SHAPE = {
  vpcs: 3,
  subnetsPerVpc: 2,
  vmsPerSubnet: 2,
} as const;

/** What a Project owns, named with its key (`<key>-vpc-0`, ...). */
export interface OwnedTree {
  /** The VPCs. */
  vpcs: string[];
  /** Each Subnet and the VPC it names. */
  subnets: { name: string; vpc: string }[];
  /** Each VirtualMachine and the Subnet it names. */
  vms: { name: string; subnet: string }[];
}

/** What the Project `key` owns, in the shape of {@linkcode OWNED_SHAPE}. */
export function ownedTree(key: string): OwnedTree {
  const owned: OwnedTree = { vpcs: [], subnets: [], vms: [] };
  for (let v = 0; v < OWNED_SHAPE.vpcs; v++) {
    const vpc = `${key}-vpc-${v}`;
    owned.vpcs.push(vpc);
    for (let s = 0; s < OWNED_SHAPE.subnetsPerVpc; s++) {
      const subnet = `${key}-subnet-${v}-${s}`;
      owned.subnets.push({ name: subnet, vpc });
      for (let m = 0; m < OWNED_SHAPE.vmsPerSubnet; m++) {
        owned.vms.push({ name: `${key}-vm-${v}-${s}-${m}`, subnet });
      }
    }
  }
  return owned;
}

/** How many objects a Project owns. */
export function ownedCount(owned: OwnedTree): number {
  return owned.vpcs.length + owned.subnets.length + owned.vms.length;
}

/** Every owned object as `[resource, name]`. */
export function ownedList(owned: OwnedTree): [TeardownResource, string][] {
  return [
    ...owned.vpcs.map((n) => ["vpcs", n] as [TeardownResource, string]),
    ...owned.subnets.map((s) =>
      ["subnets", s.name] as [TeardownResource, string]
    ),
    ...owned.vms.map((m) =>
      ["virtualmachines", m.name] as [TeardownResource, string]
    ),
  ];
}

/** `metadata.ownerReferences` naming the Project, as a controller writes them. */
export function projectOwnerReferences(
  project: { name: string; uid: string },
): Record<string, unknown>[] {
  return [{
    apiVersion: "network.example.com/v1alpha1",
    kind: "Project",
    name: project.name,
    uid: project.uid,
    blockOwnerDeletion: true,
  }];
}

/** The objects a Project owns in `options.namespace`, each with its owner reference. */
export function ownedObjects(
  owned: OwnedTree,
  options: { namespace: string; project: { name: string; uid: string } },
): Record<string, unknown>[] {
  const metadata = (name: string) => ({
    name,
    namespace: options.namespace,
    ownerReferences: projectOwnerReferences(options.project),
  });
  return [
    ...owned.vpcs.map((name) => ({
      apiVersion: "network.example.com/v1alpha1",
      kind: "VPC",
      metadata: metadata(name),
      spec: { cidr: "10.0.0.0/16" },
    })),
    ...owned.subnets.map((s) => ({
      apiVersion: "network.example.com/v1alpha1",
      kind: "Subnet",
      metadata: metadata(s.name),
      spec: { cidr: "10.0.1.0/24", vpcRef: { name: s.vpc } },
    })),
    ...owned.vms.map((m) => ({
      apiVersion: "compute.example.com/v1alpha1",
      kind: "VirtualMachine",
      metadata: metadata(m.name),
      spec: { subnetRef: { name: m.subnet } },
    })),
  ];
}

/**
 * Applies the projects fixtures to the network provider at `networkPath`
 * (before any consumer binds it: its Subnets take the fixtures' schema, and
 * Projects join the export), and waits for the export's identity.
 */
export async function applyProjectsExport(
  kcp: KcpApi,
  networkPath: string,
): Promise<void> {
  await applyFiles(kcp, networkPath, [
    `${FIXTURES}apiresourceschema-projects.yaml`,
    `${FIXTURES}apiresourceschema-subnets.yaml`,
    `${FIXTURES}apiexport.yaml`,
  ]);
  await waitForExportIdentity(kcp, networkPath, "network.example.com");
}

/** Options for {@linkcode buildProjectsTopology}. */
export interface ProjectsTopologyOptions {
  /** The network provider's workspace. */
  networkPath: string;
  /** The compute provider's workspace. */
  computePath: string;
  /** The consumer's workspace. */
  consumer: string;
}

/**
 * The topology of the ordered-teardown tests: dep-ctrl and the two
 * providers (no consumer yet), the projects export applied to the network
 * provider ({@linkcode applyProjectsExport}) before any consumer binds it,
 * then `options.consumer` binding both providers, until the four types are
 * served there.
 */
export async function buildProjectsTopology(
  kcp: KcpApi,
  options: ProjectsTopologyOptions,
): Promise<void> {
  const { networkPath, computePath, consumer } = options;
  // The consumer is made meanwhile and binds both providers at once, as in
  // buildTopology.
  await Promise.all([
    buildTopology(kcp, { networkPath, computePath, consumerPaths: [] })
      .then(() => applyProjectsExport(kcp, networkPath)),
    createWorkspace(kcp, consumer),
  ]);
  await Promise.all([
    bindExport(kcp, consumer, {
      exportPath: networkPath,
      exportName: "network.example.com",
    }),
    bindExport(kcp, consumer, {
      exportPath: computePath,
      exportName: "compute.example.com",
    }),
  ]);
  await waitFor(`the four types to be served in ${consumer}`, async () => {
    const r = await kcp.kubectl(
      ["get", TEARDOWN_RESOURCES, "-A"],
      { workspace: consumer },
    );
    return r.code === 0 || undefined;
  });
}

/** The Subnet -> VPC rule `subnet-vpc` for the network provider (dependent Subnet). */
export function subnetVpcRule(networkPath: string): Record<string, unknown> {
  return dependencyRule("subnet-vpc", {
    dependent: "Subnet",
    dependencies: [{
      path: networkPath,
      resource: "vpcs",
      field: ".spec.vpcRef.name",
    }],
  });
}

/** The name of {@linkcode projectOwnerRule}'s rule. */
export const PROJECT_OWNER_RULE = "project-owns";

/** Options for {@linkcode projectOwnerRule}. */
export interface ProjectOwnerRuleOptions {
  /** The network provider's workspace, where the rule goes. */
  networkPath: string;
  /** The compute provider's workspace. */
  computePath: string;
  /** `spec.protectWhile`. */
  protectWhile: "Active" | "Exists";
}

/**
 * The owner rule of issue 23 for the network provider: a Project protects
 * the VPCs, Subnets and VirtualMachines whose ownerReferences name it.
 */
export function projectOwnerRule(
  options: ProjectOwnerRuleOptions,
): Record<string, unknown> {
  const owned = (
    path: string,
    resource: RuleDependency["resource"],
  ): RuleDependency => ({
    path,
    resource,
    from: "Target",
    field: ".metadata.ownerReferences[*].name",
  });
  return dependencyRule(PROJECT_OWNER_RULE, {
    dependent: {
      ...RULE_DEPENDENTS.Subnet,
      kind: "Project",
      resource: "projects",
    },
    protectWhile: options.protectWhile,
    dependencies: [
      owned(options.networkPath, "vpcs"),
      owned(options.networkPath, "subnets"),
      owned(options.computePath, "virtualmachines"),
    ],
  });
}

/**
 * `cannot delete <resource>/<name>: it belongs to Project/<project>
 * (.metadata.ownerReferences[0].name), which still exists`.
 */
export function projectDenial(
  object: { resource: TeardownResource; name: string },
  project: string,
): RegExp {
  return new RegExp(
    `cannot delete ${object.resource}/${object.name}: it belongs to Project/${project} \\(\\.metadata\\.ownerReferences\\[0\\]\\.name\\), which still exists`,
  );
}

/**
 * Asserts that every owned object was deleted once, each VirtualMachine
 * before its Subnet and each Subnet before its VPC.
 */
export function assertDependencyOrder(
  order: DeletionOrder,
  owned: OwnedTree,
): void {
  assert.equal(
    order.deleted.filter((s) => s.resource !== "projects").length,
    ownedCount(owned),
    "every owned object was deleted once",
  );
  for (const vm of owned.vms) {
    const v = deletedAt(order, { resource: "virtualmachines", name: vm.name });
    const s = deletedAt(order, { resource: "subnets", name: vm.subnet });
    assert.ok(
      v.revision < s.revision,
      `VirtualMachine ${vm.name} (${v.revision}) went before Subnet ${vm.subnet} (${s.revision})`,
    );
  }
  for (const subnet of owned.subnets) {
    const s = deletedAt(order, { resource: "subnets", name: subnet.name });
    const v = deletedAt(order, { resource: "vpcs", name: subnet.vpc });
    assert.ok(
      s.revision < v.revision,
      `Subnet ${subnet.name} (${s.revision}) went before VPC ${subnet.vpc} (${v.revision})`,
    );
  }
}

/** Where the Project's DELETED event is among the others: first or last. */
export function projectPlace(
  order: DeletionOrder,
  key: string,
): "first" | "last" | "middle" {
  const index = order.deleted.findIndex((s) =>
    s.resource === "projects" && s.name === key
  );
  assert.ok(index >= 0, `the watch saw Project ${key} deleted`);
  return index === 0
    ? "first"
    : index === order.deleted.length - 1
    ? "last"
    : "middle";
}

/** The components a teardown test starts over the projects topology. */
export interface ProjectsComponents {
  /** The webhook, its own process and identity. */
  webhook: WebhookProcess;
  /** The controller, its own process and identity. */
  controller: ComponentProcess;
}

/**
 * The first step of each teardown test: the projects topology
 * ({@linkcode buildProjectsTopology}), the network provider's export checked
 * to serve VPCs, the test's Subnets and Projects, then the webhook and the
 * controller started.
 */
export async function startProjects(
  kcp: KcpApi,
  options: ProjectsTopologyOptions,
): Promise<ProjectsComponents> {
  await buildProjectsTopology(kcp, options);
  const schemas = await kcp.kubectlOk([
    "get",
    "apiexport",
    "network.example.com",
    "-o",
    "jsonpath={.spec.resources[*].schema}",
  ], { workspace: options.networkPath });
  assert.equal(
    schemas,
    "v1alpha1.vpcs.network.example.com owned.subnets.network.example.com v1alpha1.projects.network.example.com",
  );
  const webhook = await startWebhook(kcp);
  const controller = await startController(kcp, { webhook });
  return { webhook, controller };
}

/**
 * The rules of the default kind that order a teardown: a VirtualMachine
 * refers to its Subnet (in the compute provider), a Subnet to its VPC (in
 * the network provider); the webhook's reads granted, both Enforced.
 */
export async function applyOrderRules(
  kcp: KcpApi,
  options: { networkPath: string; computePath: string },
): Promise<void> {
  const { networkPath, computePath } = options;
  await applyObjects(kcp, computePath, [
    dependencyRule("vm-subnet", {
      dependencies: [{
        path: networkPath,
        resource: "subnets",
        field: ".spec.subnetRef.name",
      }],
    }),
  ]);
  await applyObjects(kcp, networkPath, [subnetVpcRule(networkPath)]);
  await grantWebhookReads(kcp);
  await waitForRuleEnforced(
    kcp,
    { workspace: computePath, name: "vm-subnet" },
    {
      intervalMs: 200,
    },
  );
  await waitForRuleEnforced(
    kcp,
    { workspace: networkPath, name: "subnet-vpc" },
    {
      intervalMs: 200,
    },
  );
}
