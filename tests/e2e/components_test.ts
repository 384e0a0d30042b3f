/**
 * The suites that restart kcp, on one kcp, one after another, each starting
 * and stopping its own processes (which is why they keep a kcp apart from
 * the grouped suites):
 *
 * - `harness_steps.ts` (`root:harness`): the harness itself, a provider's
 *   export bound and read back; a kcp restart. First: an identity with no
 *   grant in `system:admin` yet is refused.
 * - `webhook_steps.ts` (`root:hook`): the webhook alone, the test writing
 *   its configuration; a kcp restart; status truth. Before any rule: it
 *   counts the rules the webhook holds from none.
 * - `controller_steps.ts` (`root`, its network provider at
 *   `root:org:team:network`): configurations follow the rules at any depth,
 *   with status on every rule; a leader change and a kcp restart; status
 *   truth. The webhook suite's rule stays: the controller serves it too,
 *   and no assertion here reaches outside its own workspaces.
 */
import { kcpTest, worldPaths } from "../../testing/mod.ts";
import { controllerSteps } from "./controller_steps.ts";
import { harnessSteps } from "./harness_steps.ts";
import { webhookSteps } from "./webhook_steps.ts";

kcpTest(
  "harness, webhook and controller on one kcp: a consumer creates a provider's VPC and reads it by path and by name; the webhook protects referenced objects across workspaces, following rules live; the controller makes webhook configurations follow the rules at any depth, with status on every rule; each lives through a kcp restart",
  async (kcp, step) => {
    await harnessSteps(kcp, step, worldPaths("root:harness"));
    await webhookSteps(kcp, step, worldPaths("root:hook"));
    await controllerSteps(kcp, step);
  },
);
