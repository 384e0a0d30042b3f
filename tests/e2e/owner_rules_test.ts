/**
 * The owner rules' suites on one kcp, one after another, each in a world of
 * its own (`worldPaths`) and with components of its own, started in its
 * first step and stopped by its SIGTERM step:
 *
 * - `owners_when_steps.ts` (`root:when`): `when` and `protectWhile`, then
 *   status truth. First: the reads `controller grants` prints cover every
 *   rule on the kcp, and its first grant must name Networks alone with
 *   `get`, which the owners suite's later rules (`get` and `list` on
 *   Networks and Projects) would change.
 * - `owners_steps.ts` (`root:owners`): reference sources and tenancy, then
 *   status truth.
 * - `owner_teardown_steps.ts` (`root:unheld`, `root:held`): a Project's
 *   delete removes what it owns in dependency order with kcp's garbage
 *   collector, or is held by an `Exists` owner rule until let go; status
 *   truth. Its rules close no type cycle with the owners suites' rules
 *   (types are global: its `projects.network.example.com` are not the
 *   owners provider's `projects.owners.example.com`).
 */
import { componentTest, sigtermStep, worldPaths } from "../../testing/mod.ts";
import { ownerTeardownSteps } from "./owner_teardown_steps.ts";
import { ownersSteps } from "./owners_steps.ts";
import { ownersWhenSteps } from "./owners_when_steps.ts";

componentTest(
  "owners on one kcp: `when` on the owner switches its protection, failing closed; under protectWhile: Active an owner being deleted lets go; a Subnet cannot be deleted while the Network or Project it (or its Namespace) names exists, in its own tenant; deleting a Project removes what it owns in dependency order with kcp's garbage collector, and an Exists owner rule holds its foreground delete until a second delete, the namespace's delete or switching to Active lets it go",
  {},
  async (world, step) => {
    await ownersWhenSteps(world, step, worldPaths("root:when"));
    await sigtermStep(world, step);
    await ownersSteps(world, step, worldPaths("root:owners"));
    await sigtermStep(world, step);
    await ownerTeardownSteps(world, step);
    await world.stopComponents();
  },
);
