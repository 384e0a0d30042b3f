/**
 * The worlds of the providers' rules e2e suites, each the test topology
 * under a prefix: a tenant's look-alike export ({@linkcode lookalikeWorld}),
 * two providers exporting the same group/resource
 * ({@linkcode providersWorld}), and day 2, a provider adding a rule for a new
 * type ({@linkcode day2World}, with the rule as the provider writes it,
 * {@linkcode attachmentRule}).
 *
 * ```ts
 * import { componentTest, worldPaths } from "./mod.ts";
 * import { day2World } from "./provider_rules_world.ts";
 *
 * componentTest("day 2", {}, async (world, step) => {
 *   const w = day2World(worldPaths("root:day2"));
 *   await step("the rule", async () => {
 *     await world.kcp.kubectlOk(["apply", "-f", "-"], {
 *       workspace: w.compute,
 *       stdin: w.attachmentRule,
 *     });
 *   });
 * });
 * ```
 *
 * @module
 */
import type { ComponentWorld, WorldPaths } from "./component_suite.ts";
import type { WebhookProcess } from "./components.ts";
import type { DeleteTarget } from "./delete_checks.ts";
import type { Topology } from "./topology.ts";

/** What the look-alike suite acts on, from {@linkcode lookalikeWorld}. */
export interface LookalikeWorld {
  /** The network provider. */
  readonly network: string;
  /** The compute provider, which exports VirtualMachines. */
  readonly compute: string;
  /** The consumer c1, bound to the providers. */
  readonly c1: string;
  /** The tenant that exports its own VirtualMachines: `<prefix>:tenants:t1`. */
  readonly tenant: string;
  /** The compute provider's fixtures (`testing/fixtures/compute/`), which the tenant applies too. */
  readonly computeFixtures: string;
}

/** The look-alike world under `paths`. */
export function lookalikeWorld(paths: WorldPaths): LookalikeWorld {
  return {
    network: paths.network,
    compute: paths.compute,
    c1: paths.consumer("c1"),
    tenant: `${paths.prefix}:tenants:t1`,
    computeFixtures: new URL("./fixtures/compute/", import.meta.url).pathname,
  };
}

/** What the twin providers' suite acts on, from {@linkcode providersWorld}. */
export interface ProvidersWorld {
  /** The first network provider. */
  readonly network: string;
  /** The second network provider: `<prefix>:providers:network2`. */
  readonly network2: string;
  /** The compute provider, which holds the rules. */
  readonly compute: string;
  /** Bound to the first network provider's VPCs. */
  readonly c1: string;
  /** Bound to the second network provider's VPCs. */
  readonly c3: string;
  /**
   * The topology, once the first step has built it.
   *
   * @throws {Error} If read before.
   */
  topo: Topology;
  /** The running webhook (the suite's components, started in its first step). */
  readonly webhook: WebhookProcess;
}

/** The twin providers' world under `paths`, on the kcp of `world`. */
export function providersWorld(
  world: ComponentWorld,
  paths: WorldPaths,
): ProvidersWorld {
  let topo: Topology | undefined;
  return {
    network: paths.network,
    network2: `${paths.prefix}:providers:network2`,
    compute: paths.compute,
    c1: paths.consumer("c1"),
    c3: paths.consumer("c3"),
    get topo(): Topology {
      if (topo === undefined) throw new Error("the topology is not built yet");
      return topo;
    },
    set topo(value: Topology) {
      topo = value;
    },
    get webhook() {
      return world.components().webhook;
    },
  };
}

/**
 * The day-2 rule, as the provider writes it (YAML): VPCAttachments refer to
 * the VPCs of the network provider at `network`.
 */
export function attachmentRule(network: string): string {
  return `apiVersion: dependencies.opendefense.cloud/v1alpha1
kind: DependencyRule
metadata:
  name: vpcattachment-vpc
spec:
  dependent:
    apiExportName: compute.example.com
    group: compute.example.com
    version: v1alpha1
    kind: VPCAttachment
    resource: vpcattachments
  dependencies:
    - apiExportRef: { path: ${network}, name: network.example.com }
      group: network.example.com
      version: v1alpha1
      resource: vpcs
      fieldRef:
        path: .spec.vpcRef.name
        namespacePath: .spec.vpcRef.namespace
`;
}

/** What the day-2 suite acts on, from {@linkcode day2World}. */
export interface Day2World {
  /** The network provider. */
  readonly network: string;
  /** The compute provider, which holds the rules. */
  readonly compute: string;
  /** The consumer c1. */
  readonly c1: string;
  /** The VPC the day-2 rule protects, as a user deletes it. */
  readonly core: DeleteTarget;
  /** {@linkcode attachmentRule} for the world's network provider. */
  readonly attachmentRule: string;
}

/** The day-2 world under `paths`. */
export function day2World(paths: WorldPaths): Day2World {
  const c1 = paths.consumer("c1");
  return {
    network: paths.network,
    compute: paths.compute,
    c1,
    core: { workspace: c1, type: "vpc", namespace: "default", name: "core" },
    attachmentRule: attachmentRule(paths.network),
  };
}
