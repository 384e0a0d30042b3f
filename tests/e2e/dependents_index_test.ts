/**
 * The dependents index's suites on one kcp, one after another, each in a
 * world of its own (`worldPaths`) and with components of its own, started
 * in its first step and stopped by its SIGTERM step:
 *
 * - `index_status_steps.ts` (`root:indexed`): the rule's `Indexed`
 *   condition, the controller with `--dependents-index` too. First: its
 *   `WebhookCannotWatch` names the endpoint slices' grant as missing, which
 *   the later suites apply (`manifests/kcp/system-admin/dependents-index`).
 * - `dependents_index_steps.ts` (`root:idx`): 1 000 back-to-back rounds
 *   over four consumers, never a wrong allow, the index answering. It
 *   waits for its own index's feed to sync (the status suite's rule is
 *   indexed too).
 * - `index_faults_steps.ts` (`root:faults`): no watch granted, then
 *   granted, then kcp restarted under the running race. Last: it restarts
 *   kcp, and it takes the index's watch away from every rule (the earlier
 *   suites' too) until its step that grants it.
 */
import { componentTest, sigtermStep, worldPaths } from "../../testing/mod.ts";
import { dependentsIndexSteps } from "./dependents_index_steps.ts";
import { indexFaultsSteps } from "./index_faults_steps.ts";
import { indexStatusSteps } from "./index_status_steps.ts";

componentTest(
  "the dependents index on one kcp: a rule says Indexed=False WebhookCannotWatch, naming the grants, while it is enforced by listing, and Indexed once they are applied; a VM created and its VPC deleted back to back is always denied, 1 000 times; with no watch granted and with kcp restarted mid-race, never a wrong allow",
  {},
  async (world, step) => {
    await indexStatusSteps(world, step, worldPaths("root:indexed"));
    await sigtermStep(world, step);
    await dependentsIndexSteps(world, step, worldPaths("root:idx"));
    await sigtermStep(world, step);
    await indexFaultsSteps(world, step, worldPaths("root:faults"));
    await sigtermStep(world, step);
  },
);
