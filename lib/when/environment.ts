/**
 * The one CEL environment of every `when`, and the running of a planned
 * `when` in it. The environment is the standard library with its functions
 * over strings and bytes costed (`./costs.ts`), `matches()` compiled and
 * charged per evaluation, and {@linkcode RANGE_FUNCTION}, which charges a
 * comprehension's iterations; all of them charge the evaluation running now
 * ({@linkcode runProgram} sets it, evaluation being synchronous).
 *
 * @example Running a planned `when`
 * ```ts
 * import { parse, plan } from "@bufbuild/cel";
 * import { ENV, runProgram } from "./environment.ts";
 *
 * const program = plan(ENV, parse("object.spec.replicas > 2"));
 * runProgram(program, { spec: { replicas: 3 } }, undefined); // { ok: true, value: true }
 * ```
 *
 * @module
 */
import {
  celEnv,
  celFunc,
  type CelInput,
  CelScalar,
  celType,
  isCelError,
  isCelList,
  isCelMap,
  type plan,
} from "@bufbuild/cel";
import { costedFuncs } from "./costs.ts";
import { BudgetExceeded, Evaluation } from "./evaluation.ts";
import { WHEN_COST_LIMIT, type WhenBudget, type WhenResult } from "./limits.ts";
import { describe, failure } from "./messages.ts";

/** A planned `when`, as `@bufbuild/cel`'s `plan()` returns it. */
export type Program = ReturnType<typeof plan>;

/**
 * The evaluation running now, if any: evaluation is synchronous, and the
 * hooks of {@linkcode ENV}, shared by all `when`s, charge it.
 */
let active: Evaluation | undefined;

/**
 * The function the compiler wraps around the range of every comprehension
 * (its name is no CEL identifier, so no `when` can call it): before the
 * first iteration, charges for each element (each key of a map) the node
 * count of the comprehension's body, plus, for a string element, 1 per 64
 * characters for each use of the iteration variable in the body. That is
 * the work of the iterations that the views of the object do not see:
 * evaluating the body, and the strings that the iteration variable holds,
 * used as many times as it is named (`x + x + x`).
 */
export const RANGE_FUNCTION = "@budgeted_range";

/**
 * The one environment: the standard library, its functions over strings and
 * bytes costed (`./costs.ts`), `matches()` budgeted, and
 * {@linkcode RANGE_FUNCTION}. Its functions charge the evaluation that
 * {@linkcode runProgram} runs, and throw when called outside one.
 */
export const ENV = celEnv({
  funcs: [
    ...costedFuncs(celEnv().funcs, (units) => current().charge(units)),
    celFunc(
      RANGE_FUNCTION,
      [CelScalar.DYN, CelScalar.INT, CelScalar.INT],
      CelScalar.DYN,
      (range, nodes, uses) => {
        const evaluation = current();
        const items = isCelList(range)
          ? range
          : isCelMap(range)
          ? range.keys()
          : [];
        for (const item of items) {
          const length = typeof item === "string" ? item.length : 0;
          evaluation.charge(Number(nodes) + Number(uses) * (length >> 6));
        }
        return range;
      },
    ),
  ],
  re2: {
    compile: (pattern: string) => current().regex(pattern),
  },
});

/** The evaluation running now. */
function current(): Evaluation {
  if (active === undefined) throw new Error("no evaluation is running");
  return active;
}

/**
 * Runs a program planned in {@linkcode ENV} over one object, bound to
 * `object`, within {@linkcode WHEN_COST_LIMIT} and what is left of `budget`
 * (taking from it what the evaluation spends). Never throws.
 *
 * @param program The planned `when`.
 * @param object The decoded JSON of the object.
 * @param budget The review's shared budget, if any.
 * @returns The bool, or why there is none.
 */
export function runProgram(
  program: Program,
  object: unknown,
  budget: WhenBudget | undefined,
): WhenResult {
  const limit = Math.min(WHEN_COST_LIMIT, budget?.remaining ?? Infinity);
  const shared = limit < WHEN_COST_LIMIT;
  if (limit <= 0) return failure(new BudgetExceeded(true).message);
  const evaluation = new Evaluation(limit);
  const previous = active;
  active = evaluation;
  try {
    return evaluate(program, object, evaluation, shared);
  } finally {
    active = previous;
    if (budget !== undefined) budget.remaining -= evaluation.spent;
  }
}

/** Runs `program` within `evaluation`, set as the active one. */
function evaluate(
  program: Program,
  object: unknown,
  evaluation: Evaluation,
  shared: boolean,
): WhenResult {
  try {
    const bindings: Record<string, CelInput> = Object.create(null);
    bindings.object = evaluation.toCel(object);
    const result = program(bindings);
    if (evaluation.exceeded) return failure(new BudgetExceeded(shared).message);
    if (isCelError(result)) return failure(result.message);
    if (typeof result !== "boolean") {
      return failure(
        `the condition evaluated to ${celType(result).name}, not bool`,
      );
    }
    return { ok: true, value: result };
  } catch (error) {
    if (evaluation.exceeded) return failure(new BudgetExceeded(shared).message);
    return failure(describe(error));
  }
}
