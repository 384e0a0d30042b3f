/**
 * The world of the `kubectl dependencies graph` end-to-end steps
 * (`tests/e2e/plugin_graph_steps.ts`): the providers under a prefix, the
 * compute provider's three rules and the four types they draw, the edges
 * `graph -o json` prints, and the admin's kubeconfig once written.
 *
 * ```ts ignore
 * import { pluginGraphWorld } from "./plugin_graph_world.ts";
 * import { worldPaths } from "./component_suite.ts";
 *
 * const w = pluginGraphWorld(worldPaths("root:graph"));
 * console.log(w.compute, w.rules);
 * ```
 *
 * @module
 */
import type { WorldPaths } from "./component_suite.ts";

/** An edge `graph -o json` prints, as the steps compare them. */
export interface EdgeJson {
  /** The dependent type. */
  from: string;
  /** The type it depends on. */
  to: string;
  /** The rule's name. */
  ruleName: string;
  /** The rule's workspace path, when the controller resolved it. */
  workspace: string | null;
  /** The rule's Ready status. */
  ready: string;
}

/** What the graph steps act on and keep, from {@linkcode pluginGraphWorld}. */
export interface PluginGraphWorld {
  /** The network provider. */
  readonly network: string;
  /** The compute provider, whose rules are drawn. */
  readonly compute: string;
  /** The compute provider's rules. */
  readonly rules: readonly string[];
  /** The types the rules connect, sorted. */
  readonly types: readonly string[];
  /** The compute provider's admin kubeconfig, once the first step wrote it. */
  admin: string;
}

/** The graph world under `paths`: no kubeconfig yet. */
export function pluginGraphWorld(paths: WorldPaths): PluginGraphWorld {
  return {
    network: paths.network,
    compute: paths.compute,
    rules: ["vm-vpc", "vm-nics", "attachment-vpc"],
    types: [
      "subnets.network.example.com",
      "virtualmachines.compute.example.com",
      "vpcattachments.compute.example.com",
      "vpcs.network.example.com",
    ],
    admin: "",
  };
}
