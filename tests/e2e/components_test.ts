/**
 * The components' own suites on one kcp, one after another, each starting
 * and stopping its own processes, and each restarting kcp once under them
 * (which is why they keep a kcp apart from the grouped suites):
 *
 * - `webhook_steps.ts` (`root:hook`): the webhook alone, the test writing
 *   its configuration; a kcp restart; status truth. First: it counts the
 *   rules the webhook holds from none.
 * - `controller_steps.ts` (`root`, its network provider at
 *   `root:org:team:network`): configurations follow the rules at any depth,
 *   with status on every rule; a leader change and a kcp restart; status
 *   truth. The webhook suite's rule stays: the controller serves it too,
 *   and no assertion here reaches outside its own workspaces.
 */
import { kcpTest, worldPaths } from "../../testing/mod.ts";
import { controllerSteps } from "./controller_steps.ts";
import { webhookSteps } from "./webhook_steps.ts";

kcpTest(
  "components on one kcp: the webhook protects referenced objects across workspaces, following rules live; the controller makes webhook configurations follow the rules at any depth, with status on every rule; both live through a kcp restart",
  async (kcp, step) => {
    await webhookSteps(kcp, step, worldPaths("root:hook"));
    await controllerSteps(kcp, step);
  },
);
