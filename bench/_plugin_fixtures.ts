/**
 * The kcp of `plugin_bench.ts`, built with the e2e helpers: the test
 * topology with one consumer (`root:consumers:c1`), the owners provider
 * bound there, the dep-ctrl export bound there too (for Locks), and a
 * tenant (`user-1`) who may read and delete VPCs, Subnets, VirtualMachines
 * and Networks, with the webhook and the controller running.
 *
 * Two worlds in it, one after the other:
 *
 * - the demo of `deno task dev`, in the namespace `demo`
 *   ({@linkcode setUpDemo}): a VPC `core` that the VirtualMachine `vm-1`
 *   refers to (rule `vm-vpc`), `vm-1` locked by the Lock `keep-vm`, and a
 *   Subnet `s-1` that belongs to the Network `net-a` while its switch is on
 *   (owner rule `subnet-owner`);
 * - a chain of {@linkcode CHAIN_LENGTH} objects in the namespace `chain`
 *   ({@linkcode setUpChain}): with a second rule `vpc-vm` (a VPC names a
 *   VirtualMachine in a label; the two rules make a cycle of types, which
 *   is still enforced), `vm-1` refers to `vpc-1`, which names `vm-2`, which
 *   refers to `vpc-2`, ... up to `vpc-<n>`, which names nothing: each
 *   object is held by the one before it, and `why --recursive` on the last
 *   one walks all of them;
 * - a namespace of {@linkcode HELD_OBJECTS} objects in the namespace `held`
 *   ({@linkcode setUpHeldNamespace}), {@linkcode HELD_COUNT} of them held:
 *   VPCs, five referred to by the namespace's five VirtualMachines and five
 *   locked, for `why namespace/held`.
 *
 * @module
 */
import {
  applyObjects,
  bindExport,
  bindOwners,
  buildTopology,
  type ComponentProcess,
  DEP_CTRL_EXPORT,
  dependencyRule,
  grantWebhookReads,
  type KcpServer,
  labelPath,
  namespaceObject,
  networkObject,
  ownerRule,
  ownersProvider,
  startController,
  startWebhook,
  subnetObject,
  vmVpcRule,
  VWC_CLAIM,
  waitForDeleteDenial,
  type WebhookProcess,
} from "../testing/mod.ts";

/** The network provider's workspace. */
export const NETWORK = "root:providers:network";
/** The compute provider's workspace. */
export const COMPUTE = "root:providers:compute";
/** The owners provider's workspace. */
export const OWNERS = "root:providers:owners";
/** The tenant's workspace. */
export const CONSUMER = "root:consumers:c1";
/** The demo's namespace. */
export const DEMO_NAMESPACE = "demo";
/** The chain's namespace. */
export const CHAIN_NAMESPACE = "chain";
/** How many objects the chain has: VirtualMachines and VPCs, in turn. */
export const CHAIN_LENGTH = 50;
/** The namespace of many objects, a few held. */
export const HELD_NAMESPACE = "held";
/** How many objects it has (VPCs and VirtualMachines). */
export const HELD_OBJECTS = 1_000;
/** How many of them are held: half by a VirtualMachine, half by a Lock. */
export const HELD_COUNT = 10;

/** The label the owner rule reads on a Subnet. */
const OWNER_LABEL = "network.example.com/owner";
/** The label through which a VPC names a VirtualMachine (rule `vpc-vm`). */
const VM_LABEL = "example.com/vm";

/** An object the bench asks about, as `why` and `kubectl delete` take it. */
export interface BenchTarget {
  /** Its type as typed: `vpc`, `subnet`. */
  type: string;
  /** Its namespace. */
  namespace: string;
  /** Its name. */
  name: string;
}

/** The running system and the tenant's kubeconfig. */
export interface PluginWorld {
  /** The tenant's kubeconfig, for `root:consumers:c1`. */
  tenant: string;
  /** The webhook. */
  webhook: WebhookProcess;
  /** The controller. */
  controller: ComponentProcess;
}

/** A tenant who may read and delete the types the walks visit. */
function tenantRbac(user: string): unknown[] {
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "plugin-bench-tenant" },
      rules: [
        { nonResourceURLs: ["/"], verbs: ["access"] },
        {
          apiGroups: [
            "network.example.com",
            "compute.example.com",
            "owners.example.com",
          ],
          resources: ["vpcs", "subnets", "virtualmachines", "networks"],
          verbs: ["get", "list", "delete"],
        },
        {
          apiGroups: [""],
          resources: ["namespaces"],
          verbs: ["get", "list", "delete"],
        },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "plugin-bench-tenant" },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "plugin-bench-tenant",
      },
      subjects: [{
        apiGroup: "rbac.authorization.k8s.io",
        kind: "User",
        name: user,
      }],
    },
  ];
}

/**
 * Builds the workspaces, the tenant's namespaces and RBAC, and starts the
 * webhook and the controller. Stop them with {@linkcode stopWorld}.
 */
export async function setUpWorld(kcp: KcpServer): Promise<PluginWorld> {
  await buildTopology(kcp, {
    networkPath: NETWORK,
    computePath: COMPUTE,
    consumerPaths: [CONSUMER],
  });
  await ownersProvider(kcp, OWNERS);
  await bindOwners(kcp, { consumer: CONSUMER, ownersPath: OWNERS });
  await bindExport(kcp, CONSUMER, {
    exportPath: "root:dep-ctrl",
    exportName: DEP_CTRL_EXPORT,
    acceptClaims: [VWC_CLAIM],
  });
  await applyObjects(kcp, CONSUMER, [
    namespaceObject(DEMO_NAMESPACE),
    namespaceObject(CHAIN_NAMESPACE),
    ...tenantRbac(kcp.identity("user").user),
  ]);
  const tenant = await kcp.kubeconfig("user", CONSUMER);
  const webhook = await startWebhook(kcp, { args: ["--log-level=info"] });
  try {
    const controller = await startController(kcp, {
      webhook,
      args: ["--log-level=info"],
    });
    return { tenant, webhook, controller };
  } catch (error) {
    await webhook.stop();
    throw error;
  }
}

/** Stops the controller, then the webhook. */
export async function stopWorld(world: PluginWorld): Promise<void> {
  await world.controller.stop();
  await world.webhook.stop();
}

function vpc(
  namespace: string,
  name: string,
  labels?: Record<string, string>,
): Record<string, unknown> {
  return {
    apiVersion: "network.example.com/v1alpha1",
    kind: "VPC",
    metadata: { name, namespace, ...(labels ? { labels } : {}) },
    spec: { cidr: "10.0.0.0/16" },
  };
}

function vm(
  namespace: string,
  name: string,
  vpcName: string,
): Record<string, unknown> {
  return {
    apiVersion: "compute.example.com/v1alpha1",
    kind: "VirtualMachine",
    metadata: { name, namespace },
    spec: { vpcRef: { name: vpcName } },
  };
}

/** The demo's objects `why` is asked about. */
export interface Demo {
  /** The VPC `core`: held by `vm-1`, which its Lock holds. */
  vpc: BenchTarget;
  /** The Subnet `s-1`: held by its Network `net-a`, which nothing holds. */
  subnet: BenchTarget;
}

/**
 * The demo's rules and objects (see the module's documentation); returns
 * once kcp denies a delete of the VPC, the VirtualMachine and the Subnet
 * for what holds them.
 */
export async function setUpDemo(kcp: KcpServer): Promise<Demo> {
  const ns = DEMO_NAMESPACE;
  await applyObjects(kcp, COMPUTE, [
    vmVpcRule(NETWORK),
  ]);
  await applyObjects(kcp, OWNERS, [
    ownerRule("subnet-owner", {
      owner: "Network",
      fieldRef: { from: "Target", path: labelPath(OWNER_LABEL) },
      when: "object.spec.deletionProtection == true",
      networkPath: NETWORK,
    }),
  ]);
  await grantWebhookReads(kcp);
  await applyObjects(kcp, CONSUMER, [
    vpc(ns, "core"),
    vm(ns, "vm-1", "core"),
    {
      apiVersion: "dependencies.opendefense.cloud/v1alpha1",
      kind: "Lock",
      metadata: { name: "keep-vm", namespace: ns },
      spec: {
        target: {
          apiExportRef: { path: COMPUTE, name: "compute.example.com" },
          group: "compute.example.com",
          version: "v1alpha1",
          resource: "virtualmachines",
          name: "vm-1",
        },
        reason: "the VM of record",
        operations: ["Delete"],
      },
    },
    networkObject(ns, "net-a", { deletionProtection: true }),
    subnetObject(ns, "s-1", { labels: { [OWNER_LABEL]: "net-a" } }),
  ]);
  const at = (type: string, name: string) => ({
    workspace: CONSUMER,
    type,
    namespace: ns,
    name,
  });
  await waitForDeleteDenial(
    kcp,
    at("vpc", "core"),
    /still referenced by VirtualMachine\/vm-1 /,
  );
  await waitForDeleteDenial(
    kcp,
    at("virtualmachine", "vm-1"),
    /locked by Lock demo\/keep-vm/,
  );
  await waitForDeleteDenial(
    kcp,
    at("subnet", "s-1"),
    /it belongs to Network\/net-a /,
  );
  return {
    vpc: { type: "vpc", namespace: ns, name: "core" },
    subnet: { type: "subnet", namespace: ns, name: "s-1" },
  };
}

/** The chain's objects in order: `vm-1`, `vpc-1`, `vm-2`, ... */
export function chainNames(): {
  kind: "VirtualMachine" | "VPC";
  name: string;
}[] {
  return Array.from({ length: CHAIN_LENGTH }, (_, i) => {
    const n = Math.floor(i / 2) + 1;
    return i % 2 === 0
      ? { kind: "VirtualMachine", name: `vm-${n}` }
      : { kind: "VPC", name: `vpc-${n}` };
  });
}

/**
 * The rule `vpc-vm` and the chain's objects (see the module's
 * documentation); returns the chain's last object, the one `why` is asked
 * about, once kcp denies a delete of it and of the object before it.
 */
export async function setUpChain(kcp: KcpServer): Promise<BenchTarget> {
  const ns = CHAIN_NAMESPACE;
  await applyObjects(kcp, NETWORK, [
    dependencyRule("vpc-vm", {
      dependent: "VPC",
      dependencies: [{
        path: COMPUTE,
        resource: "virtualmachines",
        field: labelPath(VM_LABEL),
      }],
    }),
  ]);
  await grantWebhookReads(kcp);
  const names = chainNames();
  const objects = names.map((object, i) => {
    const next = names[i + 1]?.name;
    return object.kind === "VirtualMachine" ? vm(ns, object.name, next!) : vpc(
      ns,
      object.name,
      next === undefined ? undefined : { [VM_LABEL]: next },
    );
  });
  await applyObjects(kcp, CONSUMER, objects);
  const last = names[names.length - 1]!;
  const before = names[names.length - 2]!;
  // The chain has an even length: it ends with a VPC held by a VM.
  await waitForDeleteDenial(kcp, {
    workspace: CONSUMER,
    type: "vpc",
    namespace: ns,
    name: last.name,
  }, new RegExp(`still referenced by VirtualMachine/${before.name} `));
  await waitForDeleteDenial(kcp, {
    workspace: CONSUMER,
    type: "virtualmachine",
    namespace: ns,
    name: before.name,
  }, new RegExp(`still referenced by VPC/${names[names.length - 3]!.name} `));
  return { type: "vpc", namespace: ns, name: last.name };
}

/**
 * The namespace `held` (see the module's documentation): VPCs `vpc-0000`
 * on and the VirtualMachines `vm-0` to `vm-4`, {@linkcode HELD_OBJECTS} in
 * all; `vm-<i>` refers to `vpc-000<i>`, and Locks hold `vpc-0005` to
 * `vpc-0009`. Returns once kcp denies a delete of the last of each.
 */
export async function setUpHeldNamespace(kcp: KcpServer): Promise<void> {
  const ns = HELD_NAMESPACE;
  const half = HELD_COUNT / 2;
  const vpcs = HELD_OBJECTS - half;
  const name = (i: number) => `vpc-${String(i).padStart(4, "0")}`;
  await applyObjects(kcp, CONSUMER, [namespaceObject(ns)]);
  await applyObjects(kcp, CONSUMER, [
    ...Array.from({ length: vpcs }, (_, i) => vpc(ns, name(i))),
    ...Array.from({ length: half }, (_, i) => vm(ns, `vm-${i}`, name(i))),
    ...Array.from({ length: half }, (_, i) => ({
      apiVersion: "dependencies.opendefense.cloud/v1alpha1",
      kind: "Lock",
      metadata: { name: `keep-${i}`, namespace: ns },
      spec: {
        target: {
          apiExportRef: { path: NETWORK, name: "network.example.com" },
          group: "network.example.com",
          version: "v1alpha1",
          resource: "vpcs",
          name: name(half + i),
        },
        reason: "kept for the bench",
        operations: ["Delete"],
      },
    })),
  ]);
  const at = (i: number) => ({
    workspace: CONSUMER,
    type: "vpc",
    namespace: ns,
    name: name(i),
  });
  await waitForDeleteDenial(
    kcp,
    at(half - 1),
    new RegExp(`still referenced by VirtualMachine/vm-${half - 1} `),
  );
  await waitForDeleteDenial(
    kcp,
    at(HELD_COUNT - 1),
    new RegExp(`locked by Lock ${ns}/keep-${half - 1}`),
  );
}
