/**
 * The suites of tenants, their Locks and their teardowns, on one kcp, one
 * after another, each in a world of its own and with components of its own,
 * started in its first step and stopped at its end:
 *
 * - `tenancy_steps.ts` (`root`): a tenant's Locks and rules reach only its
 *   own objects; status truth. First: it waits for the webhook to judge
 *   every rule there is.
 * - `locks_steps.ts` (`root:locks`): a Lock denies the delete (and the
 *   update) of its object until it is deleted; status truth.
 * - `teardown_steps.ts` (`root:teardown`): a namespace and a whole
 *   workspace go in dependency order; status truth.
 */
import { componentTest, worldPaths } from "../../testing/mod.ts";
import { locksSteps } from "./locks_steps.ts";
import { teardownSteps } from "./teardown_steps.ts";
import { tenancySteps } from "./tenancy_steps.ts";

componentTest(
  "tenants on one kcp: a tenant's Locks and rules reach only its own objects, and every Enforced status is true; a Lock denies the delete (and, if asked, the update) of its object with its reason until the Lock is deleted; a namespace and a whole workspace go in dependency order, and Locks do not hold a workspace being deleted",
  {},
  async (world, step) => {
    await tenancySteps(world, step);
    await world.stopComponents();
    await locksSteps(world, step, worldPaths("root:locks"));
    await world.stopComponents();
    await teardownSteps(world, step, worldPaths("root:teardown"));
    await world.stopComponents();
  },
);
