/**
 * The suites of what a rule reads and how it is checked, on one kcp, one
 * after another, each in a world of its own and with components of its own,
 * started in its first step and stopped at its end:
 *
 * - `references_steps.ts` (`root`): list paths and namespace paths, then
 *   status truth; ends with the SIGTERM step. First: it counts the rules the
 *   webhook holds from none.
 * - `rule_checks_steps.ts` (`root:checks`): a type its APIExport does not
 *   serve, a field its schema does not have; status truth.
 */
import { componentTest, sigtermStep, worldPaths } from "../../testing/mod.ts";
import { referencesSteps } from "./references_steps.ts";
import { ruleChecksSteps } from "./rule_checks_steps.ts";

componentTest(
  "rules on one kcp: list paths name the element, namespace paths reach across namespaces and from cluster scope; a type its APIExport does not serve is reported and never protected, and fixing it in place enforces the rule",
  {},
  async (world, step) => {
    await referencesSteps(world, step);
    await sigtermStep(world, step);
    await ruleChecksSteps(world, step, worldPaths("root:checks"));
    await world.stopComponents();
  },
);
