/**
 * The suites of providers' rules meeting the webhook's reads and other
 * exports, on one kcp, one after another, each in a world of its own
 * (`worldPaths`) and with components of its own, started in its first step
 * and stopped at its end:
 *
 * - `lookalike_steps.ts` (`root:lookalike`): a tenant's look-alike export.
 *   First: its rule must say WebhookCannotRead before any grant of
 *   VirtualMachines.
 * - `providers_steps.ts` (`root:twins`): two providers export the same
 *   group/resource; status truth.
 * - `day2_steps.ts` (`root:day2`): a rule for a new type, granted with
 *   `controller grants`; status truth. No suite before it grants
 *   VPCAttachments.
 */
import { componentTest, worldPaths } from "../../testing/mod.ts";
import { day2Steps } from "./day2_steps.ts";
import { lookalikeSteps } from "./lookalike_steps.ts";
import { providersSteps } from "./providers_steps.ts";

componentTest(
  "providers' rules on one kcp: a tenant's rule about its own copy of a provider's type reaches no other tenant; a rule about one provider's type neither protects nor blocks another provider's type of the same name; day 2: a provider adds a rule for a new type, the shipped grants tool makes it Enforced, and the grant survives the base manifests",
  {},
  async (world, step) => {
    await lookalikeSteps(world, step, worldPaths("root:lookalike"));
    await world.stopComponents();
    await providersSteps(world, step, worldPaths("root:twins"));
    await world.stopComponents();
    await day2Steps(world, step, worldPaths("root:day2"));
    await world.stopComponents();
  },
);
