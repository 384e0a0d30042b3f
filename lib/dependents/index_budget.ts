/**
 * Room several dependents indexes share: the webhook's
 * `--index-max-dependents` bounds every index together, not each one, so
 * that its memory stays bounded whatever the number of dependent types.
 *
 * @module
 */

/** Options of {@linkcode IndexBudget}. */
export interface IndexBudgetOptions {
  /** Most dependents kept by every index together. */
  maxDependents: number;
  /** Most references kept by every index together. @default {Infinity} */
  maxReferences?: number;
}

/**
 * What the indexes sharing it keep, counted against its limits. An index
 * asks {@linkcode IndexBudget.fits} before it keeps more and says what it
 * keeps and lets go of with {@linkcode IndexBudget.count}.
 *
 * @example
 * ```ts
 * import { IndexBudget } from "./index_budget.ts";
 *
 * const budget = new IndexBudget({ maxDependents: 2 });
 * budget.count(2, 2);
 * console.log(budget.fits(1, 1)); // false
 * ```
 */
export class IndexBudget {
  /** Most dependents kept together. */
  readonly maxDependents: number;
  /** Most references kept together. */
  readonly maxReferences: number;
  #dependents = 0;
  #references = 0;

  /** @throws {RangeError} When a limit is negative or not a number. */
  constructor(options: IndexBudgetOptions) {
    const maxReferences = options.maxReferences ?? Infinity;
    for (
      const [what, limit] of [
        ["maxDependents", options.maxDependents],
        ["maxReferences", maxReferences],
      ] as const
    ) {
      if (!(limit >= 0)) {
        throw new RangeError(`${what} must be at least 0, not ${limit}`);
      }
    }
    this.maxDependents = options.maxDependents;
    this.maxReferences = maxReferences;
  }

  /** Dependents kept now, by every index together. */
  get dependents(): number {
    return this.#dependents;
  }

  /** References kept now, by every index together. */
  get references(): number {
    return this.#references;
  }

  /** Whether `dependents` and `references` more (or fewer, negative) stay within the limits. */
  fits(dependents: number, references: number): boolean {
    return this.#dependents + dependents <= this.maxDependents &&
      this.#references + references <= this.maxReferences;
  }

  /**
   * Counts what an index now keeps more (positive) or no longer keeps
   * (negative).
   *
   * @throws {RangeError} When more is given back than was counted: an
   * index's own accounting is wrong.
   */
  count(dependents: number, references: number): void {
    const d = this.#dependents + dependents;
    const r = this.#references + references;
    if (d < 0 || r < 0) {
      throw new RangeError(
        `an index gave back more than it kept (${d} dependents, ${r} references)`,
      );
    }
    this.#dependents = d;
    this.#references = r;
  }
}
