/**
 * The world of the references e2e suite: the test topology at `root`, where
 * rules read every element of a list (`.spec.nics[*].subnetRef.name`), a
 * namespace beside the name (`fieldRef.namespacePath`), and a cluster-scoped
 * dependent (VPCAttachment) protects namespaced VPCs. Here: its workspaces
 * and targets, the objects it writes, the fields as its denials show them,
 * and the wait for the webhook to hold a number of rules.
 *
 * ```ts
 * import { componentTest } from "./mod.ts";
 * import { nicField, referencesWorld, vmWithNics } from "./references_world.ts";
 *
 * componentTest("references", {}, async (world, step) => {
 *   const w = referencesWorld(world);
 *   await step("a VM with two NICs", () => {
 *     console.log(w.subnet("default", "subnet-a"), nicField(1));
 *     console.log(vmWithNics("default", "vm", [{ name: "subnet-a" }]));
 *     return Promise.resolve();
 *   });
 * });
 * ```
 *
 * @module
 */
import { type ComponentWorld, worldPaths } from "./component_suite.ts";
import { validRules, type WebhookProcess } from "./components.ts";
import { type NamespacedTarget, targetsOf } from "./expect.ts";
import { vmManifest } from "./objects.ts";
import type { Topology } from "./topology.ts";
import { waitFor } from "./wait.ts";

/** A reference as the fixtures' schemas hold it: a name, maybe a namespace. */
export interface ObjectRef {
  /** The object's name. */
  name: string;
  /** Its namespace, if the reference names one. */
  namespace?: string;
}

/** A VM whose NICs name the subnets `refs`, in order. */
export function vmWithNics(
  namespace: string,
  name: string,
  refs: ObjectRef[],
): unknown {
  return vmManifest(name, {
    namespace,
    spec: { nics: refs.map((subnetRef) => ({ subnetRef })) },
  });
}

/** A cluster-scoped VPCAttachment naming a VPC. */
export function vpcAttachment(name: string, vpcRef: ObjectRef): unknown {
  return {
    apiVersion: "compute.example.com/v1alpha1",
    kind: "VPCAttachment",
    metadata: { name },
    spec: { vpcRef },
  };
}

/** `.spec.nics[<index>].subnetRef.name` as a denial shows it, escaped for a RegExp. */
export function nicField(index: number): string {
  return `\\.spec\\.nics\\[${index}\\]\\.subnetRef\\.name`;
}

/** `(.spec.vpcRef.name)` as a denial shows it, escaped for a RegExp. */
export const VPC_REF_FIELD = "\\(\\.spec\\.vpcRef\\.name\\)";

/** Waits until the webhook holds `count` valid rules. */
export async function waitForValidRules(
  webhook: WebhookProcess,
  count: number,
): Promise<void> {
  await waitFor(
    `the webhook to hold ${count} valid rules`,
    async () => (await validRules(webhook)) === count || undefined,
    { timeoutMs: 30_000, intervalMs: 200 },
  );
}

/** What the references suite acts on, from {@linkcode referencesWorld}. */
export interface ReferencesWorld {
  /** The network provider: `root:providers:network`. */
  readonly network: string;
  /** The compute provider, which holds the rules: `root:providers:compute`. */
  readonly compute: string;
  /** The CIDR of every VPC and Subnet. */
  readonly cidr: string;
  /** A Subnet in the consumer `root:consumers:c1`. */
  subnet(namespace: string, name: string): NamespacedTarget;
  /** A VPC in the consumer `root:consumers:c1`. */
  vpc(namespace: string, name: string): NamespacedTarget;
  /**
   * The topology, once the first step has built it.
   *
   * @throws {Error} If read before.
   */
  topo: Topology;
  /** The consumer's workspace, from the topology once the first step has built it. */
  c1: string;
  /**
   * The running webhook (the suite's components, started in its first
   * step).
   */
  readonly webhook: WebhookProcess;
}

/** The references suite's world at `root`, on the kcp of `world`. */
export function referencesWorld(world: ComponentWorld): ReferencesWorld {
  const paths = worldPaths("root");
  const consumer = paths.consumer("c1");
  let topo: Topology | undefined;
  return {
    network: paths.network,
    compute: paths.compute,
    cidr: "10.0.0.0/16",
    subnet: targetsOf(consumer, "subnets"),
    vpc: targetsOf(consumer, "vpcs"),
    get topo(): Topology {
      if (topo === undefined) throw new Error("the topology is not built yet");
      return topo;
    },
    set topo(value: Topology) {
      topo = value;
    },
    c1: "",
    get webhook() {
      return world.components().webhook;
    },
  };
}
