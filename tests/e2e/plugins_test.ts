/**
 * The suites of what providers and tenants see of the rules (the
 * controller's graph page, the kubectl plugin) on one kcp, one after
 * another, each in a world of its own (`worldPaths`) and with components of
 * its own, started in its first step and stopped at its end:
 *
 * - `graph_page_steps.ts` (`root`): the controller's graph page in a real
 *   browser. First: the page shows every rule on the kcp, and must show its
 *   own alone. Its rules stay; types are global, so its cycle (Subnets and
 *   VPCs protect each other) takes in a later suite's rule only while
 *   `why`'s `vpc-vm` (VPC to VirtualMachine) exists, and no Ready is
 *   asserted meanwhile.
 * - `plugin_graph_steps.ts` (`root:graph`): a provider draws its
 *   DependencyRules as JSON, DOT, SVG and HTML.
 * - `plugin_why_steps.ts` (`root:why`): what holds an object, followed with
 *   `--recursive`, what keeps a namespace the tenant deleted in Terminating
 *   (`why namespace/<ns>`, in a namespace of its own), an owner deleted in
 *   the foreground that waits for a held Subnet, and `why workspace` (held in
 *   c1, nothing held in c2); ends with the SIGTERM step.
 * - `plugin_lock_steps.ts` (`root:lock`): a tenant locks and unlocks a bound
 *   VPC and a Namespace, and locks a VPC for 45 s, after which its delete
 *   goes through and the Lock shows Expired.
 *
 * The lock suite goes last: it widens the webhook's reads with the
 * system-admin overlay, which stays.
 */
import { componentTest, sigtermStep, worldPaths } from "../../testing/mod.ts";
import { graphPageSteps } from "./graph_page_steps.ts";
import { pluginGraphSteps } from "./plugin_graph_steps.ts";
import { pluginLockSteps } from "./plugin_lock_steps.ts";
import { pluginWhySteps } from "./plugin_why_steps.ts";

componentTest(
  "graph page, plugin graph, why and lock on one kcp: a real browser shows every type, rule dependency and cycle the controller watches, with tenant text as text; a provider draws its DependencyRules as JSON, DOT, SVG and HTML; why names what holds an object (references, owners, Locks), follows them with --recursive, and exits 0, 1 or 2; a tenant locks and unlocks a bound VPC and a Namespace by what it types after kubectl",
  {},
  async (world, step) => {
    await graphPageSteps(world, step);
    await world.stopComponents();
    await pluginGraphSteps(world, step, worldPaths("root:graph"));
    await world.stopComponents();
    await pluginWhySteps(world, step, worldPaths("root:why"));
    await sigtermStep(world, step);
    await pluginLockSteps(world, step, worldPaths("root:lock"));
    await world.stopComponents();
  },
);
