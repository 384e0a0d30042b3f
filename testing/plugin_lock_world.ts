/**
 * The world of the `kubectl dependencies lock` and `unlock` end-to-end
 * steps (`tests/e2e/plugin_lock_steps.ts`): the providers and the consumer
 * under a prefix, the tenant's kubeconfig once written and the plugin run
 * with it, the Locks of team-a as the tenant lists them, the time a Lock
 * written with `--for` ends, and a wait until a delete goes through.
 *
 * ```ts ignore
 * import { componentTest, worldPaths } from "./mod.ts";
 * import { pluginLockWorld } from "./plugin_lock_world.ts";
 *
 * componentTest("lock", {}, async (world, step) => {
 *   const w = pluginLockWorld(world, worldPaths("root:lock"));
 *   await step("lock", async () => {
 *     w.tenant = await world.kcp.kubeconfig("user", w.c1);
 *     await w.plugin(["lock", "vpc/core", "-n", "team-a", "--reason", "r"]);
 *   });
 * });
 * ```
 *
 * @module
 */
import type { ComponentWorld, WorldPaths } from "./component_suite.ts";
import { attempt } from "./expect.ts";
import type { KcpApi } from "./kcp_server.ts";
import { runPlugin } from "./plugin.ts";
import type { CommandResult } from "./process.ts";
import { waitFor } from "./wait.ts";

/** The reason the tenant gives its Lock on `vpc/core`: that of the Locks steps. */
export { LOCK_REASON } from "./locks_world.ts";

/** What the lock steps act on and keep, from {@linkcode pluginLockWorld}. */
export interface PluginLockWorld {
  /** The network provider. */
  readonly network: string;
  /** The compute provider. */
  readonly compute: string;
  /** The consumer. */
  readonly c1: string;
  /** The tenant's kubeconfig, once written. */
  tenant: string;
  /** Runs `kubectl dependencies <args>` with the tenant's kubeconfig. */
  plugin(args: string[]): Promise<CommandResult>;
  /** `kubectl get locks -n team-a` in the consumer, as the tenant. */
  locksInTeamA(): Promise<string>;
  /** When the Lock written with `--for` ends, once written. */
  expiresAt: string;
}

/** The lock world under `paths` on the kcp of `world`: no tenant yet. */
export function pluginLockWorld(
  world: ComponentWorld,
  paths: WorldPaths,
): PluginLockWorld {
  const c1 = paths.consumer("c1");
  const w: PluginLockWorld = {
    network: paths.network,
    compute: paths.compute,
    c1,
    tenant: "",
    plugin: (args) => runPlugin(args, { kubeconfig: w.tenant }),
    locksInTeamA: async () =>
      await world.kcp.kubectlOk(["get", "locks", "-n", "team-a"], {
        identity: "user",
        workspace: c1,
      }),
    expiresAt: "",
  };
  return w;
}

/** Waits until `args` (a kubectl delete) goes through in `workspace`. */
export async function waitForAllowed(
  kcp: KcpApi,
  workspace: string,
  args: string[],
): Promise<void> {
  await waitFor(`kubectl ${args.join(" ")} to be allowed`, async () => {
    const error = await attempt(kcp, workspace, args);
    if (error === "") return true;
    throw new Error(`last answer: ${error.trim()}`);
  }, { timeoutMs: 60_000, intervalMs: 250 });
}
