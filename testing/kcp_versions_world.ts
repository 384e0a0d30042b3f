/**
 * The world of `tests/e2e/kcp_versions_test.ts`, the product on the kcp
 * release the rest of the suite does not run on
 * ({@linkcode OTHER_KCP_VERSION}): a network and a compute provider, an
 * owners provider, and one consumer bound to all of them and to the
 * dep-ctrl export (for Locks), with the webhook and the controller as
 * processes ({@linkcode kcpVersionsWorld}).
 *
 * @module
 */
import { applyObjects, bindExport } from "./apis.ts";
import type { ComponentWorld } from "./component_suite.ts";
import { type NamespacedTarget, targetsOf } from "./expect.ts";
import {
  KCP_VERSIONS,
  type KcpVersion,
  kcpVersionFromEnv,
} from "./kcp/binaries.ts";
import type { KcpServer } from "./kcp_server.ts";
import { bindOwners, namespaceObject, ownersProvider } from "./owners.ts";
import { buildTopology, DEP_CTRL_EXPORT, VWC_CLAIM } from "./topology.ts";

/** The kcp release the rest of the suite does not run on (`KCP_VERSION`). */
export const OTHER_KCP_VERSION: KcpVersion = KCP_VERSIONS.find((v) =>
  v !== kcpVersionFromEnv()
)!;

/** The workspaces and names of the world, and how it is built. */
export interface KcpVersionsWorld {
  /** The kcp of {@linkcode OTHER_KCP_VERSION}. */
  kcp: KcpServer;
  /** `root:providers:network`: VPCs, Subnets. */
  network: string;
  /** `root:providers:compute`: VirtualMachines; the reference rule. */
  compute: string;
  /** `root:providers:owners`: Networks; the owner rule. */
  owners: string;
  /** `root:consumers:c1`, the tenant's workspace. */
  c1: string;
  /** The label of a Subnet that names its owning Network. */
  ownerLabel: string;
  /** A VPC of `c1`, by namespace and name. */
  vpc(namespace: string, name: string): NamespacedTarget;
  /**
   * The providers, the owners provider and `c1` bound to all of them and
   * to dep-ctrl (for Locks), its namespace `team-a`; then the webhook and
   * the controller as processes.
   */
  build(): Promise<void>;
}

/** The world on `world`'s kcp; {@linkcode KcpVersionsWorld.build} builds it. */
export function kcpVersionsWorld(world: ComponentWorld): KcpVersionsWorld {
  const { kcp } = world;
  const network = "root:providers:network";
  const compute = "root:providers:compute";
  const owners = "root:providers:owners";
  const c1 = "root:consumers:c1";
  return {
    kcp,
    network,
    compute,
    owners,
    c1,
    ownerLabel: "network.example.com/owner",
    vpc: targetsOf(c1, "vpc"),
    async build() {
      await buildTopology(kcp, {
        networkPath: network,
        computePath: compute,
        consumerPaths: [c1],
      });
      await ownersProvider(kcp, owners);
      await bindOwners(kcp, { consumer: c1, ownersPath: owners });
      await bindExport(kcp, c1, {
        exportPath: "root:dep-ctrl",
        exportName: DEP_CTRL_EXPORT,
        acceptClaims: [VWC_CLAIM],
      });
      await applyObjects(kcp, c1, [namespaceObject("team-a")]);
      await world.startComponents();
    },
  };
}
