/**
 * The world of the Lock steps: a tenant (`c1`) with namespaces `team-a` and
 * `team-b` that locks its VPC `core` with {@linkcode TEAM_A_LOCK}, another
 * tenant (`c2`) with an object of the same name, and the kubectl arguments
 * that update the locked VPC ({@linkcode relabel}).
 *
 * ```ts
 * import { componentTest, lockManifest, worldPaths } from "./mod.ts";
 * import { locksWorld, TEAM_A_LOCK } from "./locks_world.ts";
 *
 * componentTest("a Lock", {}, async (world, step) => {
 *   const { kcp, c1, vpcTarget } = locksWorld(world, worldPaths("root:locks"));
 *   await step("lock the VPC", async () => {
 *     const lock = lockManifest("prod", { ...TEAM_A_LOCK, target: vpcTarget });
 *     await kcp.kubectlOk(["apply", "-f", "-"], {
 *       workspace: c1,
 *       stdin: JSON.stringify(lock),
 *     });
 *   });
 * });
 * ```
 *
 * @module
 */
import type { ComponentWorld, WorldPaths } from "./component_suite.ts";
import type { KcpServer } from "./kcp_server.ts";
import { exportedTarget, type LockTarget } from "./objects.ts";

/** The reason of the Locks on the VPC `core`, quoted in their denials. */
export const LOCK_REASON = "production VPC, ask #netops";

/** What the Lock steps' Locks are, but for their target: in team-a, for Delete. */
export const TEAM_A_LOCK: {
  namespace: string;
  reason: string;
  operations: string[];
} = {
  namespace: "team-a",
  reason: LOCK_REASON,
  operations: ["Delete"],
};

/** The workspaces of the Lock steps, their kcp and the locked VPC. */
export interface LocksWorld {
  /** The test's kcp. */
  kcp: KcpServer;
  /** The network provider, whose VPCs are locked. */
  network: string;
  /** The tenant that binds the dep-ctrl export and writes Locks. */
  c1: string;
  /** Another tenant, bound to the same provider, with objects of the same names. */
  c2: string;
  /** The target of a Lock on the VPC `core`. */
  vpcTarget: LockTarget;
}

/** The Lock steps' world under `paths`. */
export function locksWorld(
  world: ComponentWorld,
  paths: WorldPaths,
): LocksWorld {
  return {
    kcp: world.kcp,
    network: paths.network,
    c1: paths.consumer("c1"),
    c2: paths.consumer("c2"),
    vpcTarget: exportedTarget(paths.network, {
      resource: "vpcs",
      name: "core",
    }),
  };
}

/**
 * kubectl arguments that label the VPC `core` in `namespace` with a value
 * never used before. kubectl sends no request at all when the label already
 * has the value asked for (or has one and `--overwrite` is missing), so a
 * repeated `tier=silver` would look "allowed" without reaching admission.
 */
export function relabel(namespace: string): () => string[] {
  return () => [
    "label",
    "vpc",
    "core",
    "-n",
    namespace,
    `tier=t-${crypto.randomUUID().slice(0, 8)}`,
    "--overwrite",
  ];
}
