/**
 * The CEL environment of a `when`, and the running of a planned `when` in
 * it ({@linkcode WhenEnvironment}): the standard library with its functions
 * over strings and bytes costed (`./costs.ts`), `matches()` compiled and
 * charged per evaluation, and {@linkcode RANGE_FUNCTION}, which charges a
 * comprehension's iterations; all of them charge the evaluation the
 * environment runs now.
 *
 * @example Running a planned `when`
 * ```ts
 * import { parse } from "@bufbuild/cel";
 * import { WhenEnvironment } from "./environment.ts";
 *
 * const environment = new WhenEnvironment();
 * const program = environment.plan(parse("object.spec.replicas > 2"));
 * environment.run(program, { spec: { replicas: 3 } }, undefined); // { ok: true, value: true }
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
  plan,
} from "@bufbuild/cel";
import { costedFuncs } from "./costs.ts";
import { BudgetExceeded, Evaluation } from "./evaluation.ts";
import { WHEN_COST_LIMIT, type WhenBudget, type WhenResult } from "./limits.ts";
import { describe, failure } from "./messages.ts";

/** A planned `when`, as `@bufbuild/cel`'s `plan()` returns it. */
export type Program = ReturnType<typeof plan>;

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
 * A CEL environment for `when`s and the evaluation running in it: the
 * standard library, its functions over strings and bytes costed
 * (`./costs.ts`), `matches()` budgeted, and {@linkcode RANGE_FUNCTION}.
 * Its functions charge the evaluation that {@linkcode WhenEnvironment.run}
 * runs (evaluation is synchronous, so one at a time), and throw when
 * called outside one. Each compiled `when` has its own: nothing is shared
 * between them, or between the components' tests.
 */
export class WhenEnvironment {
  /** The evaluation running now, if any. */
  #active: Evaluation | undefined;
  /** The environment programs are planned in. */
  readonly env: ReturnType<typeof celEnv> = celEnv({
    funcs: [
      ...costedFuncs(celEnv().funcs, (units) => this.#current().charge(units)),
      celFunc(
        RANGE_FUNCTION,
        [CelScalar.DYN, CelScalar.INT, CelScalar.INT],
        CelScalar.DYN,
        (range, nodes, uses) => {
          const evaluation = this.#current();
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
      compile: (pattern: string) => this.#current().regex(pattern),
    },
  });

  /** `parsed`, planned in this environment. */
  plan(parsed: Parameters<typeof plan>[1]): Program {
    return plan(this.env, parsed);
  }

  /**
   * Runs a program planned in this environment over one object, bound to
   * `object`, within {@linkcode WHEN_COST_LIMIT} and what is left of
   * `budget` (taking from it what the evaluation spends). Never throws.
   *
   * @param program The planned `when`.
   * @param object The decoded JSON of the object.
   * @param budget The review's shared budget, if any.
   * @returns The bool, or why there is none.
   */
  run(
    program: Program,
    object: unknown,
    budget: WhenBudget | undefined,
  ): WhenResult {
    const limit = Math.min(WHEN_COST_LIMIT, budget?.remaining ?? Infinity);
    const shared = limit < WHEN_COST_LIMIT;
    if (limit <= 0) return failure(new BudgetExceeded(true).message);
    const evaluation = new Evaluation(limit);
    const previous = this.#active;
    this.#active = evaluation;
    try {
      return evaluate(program, object, evaluation, shared);
    } finally {
      this.#active = previous;
      if (budget !== undefined) budget.remaining -= evaluation.spent;
    }
  }

  /** The evaluation running now. */
  #current(): Evaluation {
    if (this.#active === undefined) {
      throw new Error("no evaluation is running");
    }
    return this.#active;
  }
}

/**
 * The names of the environment's functions (the standard library's, costed
 * or not, and {@linkcode RANGE_FUNCTION}): what the checker accepts. Read
 * once from a fresh environment, never changed.
 */
export const FUNCTION_NAMES: ReadonlySet<string> = new Set(
  [...new WhenEnvironment().env.funcs].map((f) => f.name),
);

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
