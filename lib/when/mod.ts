/**
 * A rule's optional `when` condition: a CEL expression over one Kubernetes
 * object, bound to `object`. {@linkcode compileCondition} checks and compiles
 * it once; the {@linkcode CompiledCondition} evaluates it per object within a
 * {@linkcode ConditionBudget} shared by one review, so that a tenant's
 * expression costs a bounded amount of work. Nothing here reads kcp or knows
 * the rule's API: the rules name a condition, the controller and the webhook
 * compile and run it.
 *
 * @example A condition on one object
 * ```ts
 * import {
 *   compileCondition,
 *   CONDITION_COST_LIMIT,
 *   ConditionBudget,
 * } from "./mod.ts";
 *
 * const compiled = compileCondition("object.spec.deletionProtection == true");
 * if (compiled.ok) {
 *   const budget = new ConditionBudget(CONDITION_COST_LIMIT);
 *   compiled.condition.evaluate({ spec: { deletionProtection: true } }, {
 *     budget,
 *   }); // { ok: true, value: true }
 * }
 * ```
 *
 * @module
 */
export * from "./condition.ts";
