/**
 * The bounds of a `when` and the shapes of its results: the limits of a
 * compile and of an evaluation, the budget shared by a review's evaluations,
 * the cost of a regular expression, and the result types. A leaf of the
 * package: it imports nothing of it, so that the compiler, the checker and
 * the evaluation all draw on it without importing each other in a circle.
 * The package's documentation (`./when.ts`) has what the limits mean.
 *
 * @example A review's budget
 * ```ts
 * import { WHEN_COST_LIMIT, WhenBudget } from "./limits.ts";
 *
 * const budget = new WhenBudget(2 * WHEN_COST_LIMIT);
 * budget.remaining; // 1_000_000
 * ```
 *
 * @module
 */

/** Longest `when` accepted, in characters. */
export const MAX_WHEN_LENGTH = 1024;

/**
 * Most nodes in a `when`'s parsed AST, after the expansion of macros
 * (`exists` and the like expand to about six nodes besides their arguments).
 */
export const MAX_WHEN_NODES = 512;

/**
 * The budget of one evaluation, in units: a lookup or an iteration step in
 * the object is 1, a string read is 1 more per 64 characters, a
 * comprehension is the node count of its predicate per element, a function
 * over strings 1 per `CHARS_PER_UNIT` (`./costs.ts`) characters it reads and
 * produces, a `matches()` is {@linkcode regexCost} (the module's
 * documentation has the details). A unit is at most some 40 to 55 ns of
 * CPU.
 */
export const WHEN_COST_LIMIT = 500_000;

/** Most instructions in the RE2 program of a `matches()` pattern. */
export const MAX_REGEX_PROGRAM_SIZE = 256;

/** Longest error message of a compile or an evaluation, in characters. */
export const MAX_WHEN_ERROR_LENGTH = 500;

/** A compiled `when`, evaluated over one object at a time. */
export interface CompiledWhen {
  /** The `when`'s CEL source, as given. */
  readonly source: string;
  /**
   * Evaluates the `when` over one object, the decoded JSON of a
   * Kubernetes object bound to `object`. Never throws.
   *
   * @param object The object.
   * @returns Its value, or why there is none: a field that is not there, a
   * type error, a result that is not a bool, the budget exceeded.
   */
  evaluate(
    object: unknown,
    options?: { budget?: WhenBudget },
  ): WhenResult;
}

/**
 * A budget shared by several evaluations (those of one admission review),
 * in the units of {@linkcode WHEN_COST_LIMIT}: each evaluation may
 * spend at most what is left of it (and at most its own limit), and what it
 * spends is taken from it. Spent, an evaluation fails at once.
 */
export class WhenBudget {
  /** The units left. */
  remaining: number;

  /** A budget of `units`. */
  constructor(units: number) {
    this.remaining = units;
  }
}

/** The outcome of one evaluation: a bool, or a one-line error. */
export type WhenResult =
  | { ok: true; value: boolean }
  | { ok: false; error: string };

/** The outcome of a compile: the compiled `when`, or a one-line error. */
export type WhenCompile =
  | { ok: true; when: CompiledWhen }
  | { ok: false; error: string };

/**
 * The cost, in budget units, of running an RE2 program of `programSize`
 * instructions over `textLength` characters. Calibrated on the RE2 port's
 * worst case, a pattern that defeats its DFA (`(a|b)*a(a|b)(a|b)...`): its
 * NFA fallback costs some 0.05 to 0.1 ns per character and squared
 * instruction, and its DFA some 5 to 27 ns per character and instruction.
 *
 * @param textLength Characters in the text.
 * @param programSize Instructions in the compiled pattern.
 * @returns The units to charge.
 */
export function regexCost(textLength: number, programSize: number): number {
  return 1 + Math.ceil(textLength * programSize * (programSize + 64) / 1024);
}
