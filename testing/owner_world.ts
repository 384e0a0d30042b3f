/**
 * The world of the owners e2e suites (`owners.ts`): the test topology under
 * a prefix, an owners provider at `<prefix>:providers:owners` that exports
 * Networks and Projects and holds the owner rules, and consumers c1 and c2
 * (another tenant, bound to the same providers, with objects of the same
 * names); the labels the rules read, one per rule so that each is seen
 * alone, and the `when` switch on the owner.
 *
 * ```ts
 * import { componentTest, worldPaths } from "./mod.ts";
 * import { ownerWorld } from "./owner_world.ts";
 *
 * componentTest("owners", {}, async (world, step) => {
 *   const w = ownerWorld(world, worldPaths("root:owners"));
 *   await step("a Subnet's uid", async () => {
 *     console.log(w.owners, await w.uidOf(["subnet", "s-1", "-n", "team-a"]));
 *   });
 * });
 * ```
 *
 * @module
 */
import type { ComponentWorld, WorldPaths } from "./component_suite.ts";
import { type NamespacedTarget, targetsOf } from "./expect.ts";

export { escape } from "./_status_truth_shared.ts";

/** The label by which a Subnet names the Network that owns it (the fakes' too). */
export { OWNER_LABEL } from "./review_fixtures.ts";
/** The label by which a Namespace names the Project its Subnets belong to. */
export const PROJECT_LABEL = "owners.example.com/project";
/** The label a rule with a `when` on the owner reads. */
export const GUARDED_BY_LABEL = "network.example.com/guarded-by";
/** The label a rule whose `when` does not compile reads. */
export const BADLY_GUARDED_BY_LABEL = "network.example.com/badly-guarded-by";
/** The label a rule with `protectWhile: Active` reads. */
export const ACTIVE_OWNER_LABEL = "network.example.com/active-owner";
/** The `when` on the owner: its `spec.deletionProtection` switch. */
export const PROTECTION_SWITCH = "object.spec.deletionProtection == true";

/** What the owners suites act on, from {@linkcode ownerWorld}. */
export interface OwnerWorld {
  /** The network provider (Subnets, what the owner rules protect). */
  readonly network: string;
  /** The compute provider. */
  readonly compute: string;
  /** The owners provider: exports Networks and Projects, holds the owner rules. */
  readonly owners: string;
  /** The consumer c1. */
  readonly c1: string;
  /** Another tenant, bound to the same providers, with objects of the same names. */
  readonly c2: string;
  /** The Subnet `name` in `namespace` of c1. */
  subnet(namespace: string, name: string): NamespacedTarget;
  /** The same Subnet in c2. */
  inC2(target: NamespacedTarget): NamespacedTarget;
  /** `metadata.uid` of an object in c1 (or `workspace`), `args` naming it for `kubectl get`. */
  uidOf(args: string[], workspace?: string): Promise<string>;
  /** `root:dep-ctrl`'s path, once the first step has built the topology. */
  depCtrl: string;
}

/** The owners world under `paths` on the kcp of `world`. */
export function ownerWorld(
  world: ComponentWorld,
  paths: WorldPaths,
): OwnerWorld {
  const c1 = paths.consumer("c1");
  const c2 = paths.consumer("c2");
  return {
    network: paths.network,
    compute: paths.compute,
    owners: `${paths.prefix}:providers:owners`,
    c1,
    c2,
    subnet: targetsOf(c1, "subnet"),
    inC2: (target) => ({ ...target, workspace: c2 }),
    uidOf: (args, workspace = c1) =>
      world.kcp.kubectlOk(
        ["get", ...args, "-o", "jsonpath={.metadata.uid}"],
        { workspace },
      ),
    depCtrl: "",
  };
}
