/**
 * A rule's optional `when`: a CEL expression over one Kubernetes
 * object, bound to `object`. {@linkcode compileWhen} checks and compiles
 * it once; the {@linkcode CompiledWhen} evaluates it per object within a
 * {@linkcode WhenBudget} shared by one review, so that a tenant's
 * expression costs a bounded amount of work. Nothing here reads kcp or knows
 * the rule's API: the rules hold a `when`, the controller and the webhook
 * compile and run it.
 *
 * @example A `when` over one object
 * ```ts
 * import {
 *   compileWhen,
 *   WHEN_COST_LIMIT,
 *   WhenBudget,
 * } from "./mod.ts";
 *
 * const compiled = compileWhen("object.spec.deletionProtection == true");
 * if (compiled.ok) {
 *   const budget = new WhenBudget(WHEN_COST_LIMIT);
 *   compiled.when.evaluate({ spec: { deletionProtection: true } }, {
 *     budget,
 *   }); // { ok: true, value: true }
 * }
 * ```
 *
 * @module
 */
export * from "./limits.ts";
export { compileWhen, type CompileWhenOptions } from "./when.ts";
export { WhenEnvironment } from "./environment.ts";
export {
  CHARS_PER_UNIT,
  IN_LIST_UNITS,
  QUADRATIC_PARSE_DIVISOR,
} from "./costs.ts";
