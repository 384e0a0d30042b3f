/**
 * The kubectl plugin's suites on one kcp, one after another, each in a world
 * of its own (`worldPaths`) and with components of its own, started in its
 * first step and stopped at its end:
 *
 * - `plugin_graph_steps.ts` (`root:graph`): a provider draws its
 *   DependencyRules as JSON, DOT, SVG and HTML.
 * - `plugin_why_steps.ts` (`root:why`): what holds an object, followed with
 *   `--recursive`; ends with the SIGTERM step.
 * - `plugin_lock_steps.ts` (`root:lock`): a tenant locks and unlocks a bound
 *   VPC and a Namespace.
 *
 * The lock suite goes last: it widens the webhook's reads with the
 * system-admin overlay, which stays.
 */
import { componentTest, sigtermStep, worldPaths } from "../../testing/mod.ts";
import { pluginGraphSteps } from "./plugin_graph_steps.ts";
import { pluginLockSteps } from "./plugin_lock_steps.ts";
import { pluginWhySteps } from "./plugin_why_steps.ts";

componentTest(
  "plugin graph, why and lock on one kcp: a provider draws its DependencyRules as JSON, DOT, SVG and HTML; why names what holds an object (references, owners, Locks), follows them with --recursive, and exits 0, 1 or 2; a tenant locks and unlocks a bound VPC and a Namespace by what it types after kubectl",
  {},
  async (world, step) => {
    await pluginGraphSteps(world, step, worldPaths("root:graph"));
    await world.stopComponents();
    await pluginWhySteps(world, step, worldPaths("root:why"));
    await sigtermStep(world, step);
    await pluginLockSteps(world, step, worldPaths("root:lock"));
    await world.stopComponents();
  },
);
